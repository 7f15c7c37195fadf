/* decompile.h -- a saved inference program turned back into .pd source (`pdlang decompile`):
 * its feed targets as data(), its parameters as param() with the file's names, each op as
 * op("type", Slot = var, ..., attribute = value, ...) in the program's order (a comment gives
 * its index), then load() of the model's parameters and save() of its fetch targets, so that
 * `pdlang run` of the script writes the same program again. A run of block 0's ops that a
 * stdlib layer (fc, conv, batch_norm, max_pool / avg_pool) or a builtin (matmul, the
 * activations, the elementwise operators) compiles to is written as that call: the script is
 * compiled (pd_compile) and each call's ops compared with the model's before it is kept. Names are kept where they are
 * identifiers of the language; others become one (dots and other characters as '_', a 'v_'
 * before a digit, a keyword or a builtin's name, a number after a clash). Control flow is
 * written as the language's while / if / else statements where its structure maps back to
 * them (a while op; a conditional_block on one element, the one on its logical_not as the
 * else, static.nn.cond's select_input as the assignment of its output in each branch; the
 * pair on the rows of a condition, split_lod_tensor before, merge_lod_tensor after; a
 * recurrent op that pdlang's for over sequences makes as `for (t in x) { ... }`, its memories
 * named as their initial states, assigned at the end of the body, its other outputs emitted,
 * the sequence_pool ops of the memories' last steps left to the for), kept
 * when that script compiles to the model's ops (copies and block ops aside); else, and where
 * it does not map, an op that runs a block is written op(...) { ... }.
 *
 * Ownership: the caller owns m and out; the text is appended to out. */
#ifndef PD_DECOMPILE_H
#define PD_DECOMPILE_H

#include "base/base.h"
#include "vm/run/model.h"

/* Append the script of model m (loaded from model_path, which the script's load() names) that
 * saves its outputs to save_as. PD_EUNSUPPORTED (the message names the op and why) for what the
 * script cannot say: a recurrent op that no for statement writes (it names its block's vars in
 * attributes), ops that run
 * several blocks, inputs without a shape, attribute types a script cannot set and non-finite
 * float attributes; PD_ENOMEM. */
pd_status pd_decompile(const pd_model *m, const char *model_path, const char *save_as,
                       pd_buf *out, pd_error *err);

#endif /* PD_DECOMPILE_H */
