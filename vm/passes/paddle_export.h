/* paddle_export.h -- the pass that `save(path, target)` runs on its copy of the inference
 * program so that PaddlePaddle 3.3's legacy executor runs it (and pdlang too): the recurrent
 * constructs become ops Paddle has, and batches of sequences become padded tensors.
 *
 * Sequences. Paddle 3.3 keeps no op that turns a LoD batch into time steps (sequence_pad,
 * lod_rank_table, lod_tensor_to_array are gone), so a sequence input x (a data var with one LoD
 * level, rows [*, D...]) is written as two inputs, the way paddle.nn.LSTM takes them:
 *     x          [N, T, D...]  each sequence's rows, batch-major, zeros after its length
 *     x_lengths  int64 [N]     each sequence's length (Paddle's SequenceLength)
 * A var computed from sequences is likewise [N, T, ...]; its rows past a sequence's length are
 * zeros where a loop or an rnn op writes them and unspecified after row-wise ops.
 *
 * Ops, block 0 (after pd_program_hoist, as training does):
 *   - a recurrent op that pd_fuse_gated_loop recognises (stdlib/layers.pd's lstm, gru) becomes
 *     Paddle's `rnn` op (mode LSTM or GRU, weights transposed to Paddle's [G H, in] by transpose2
 *     ops, a zero bias_hh for the LSTM's one bias), with transpose2 to and from time-major; a
 *     forward loop and a later reverse loop of the same kind and sizes over the same input (up
 *     to assign copies) are one bidirectional rnn (the fill_constant ops that make the reverse
 *     loop's initial states move up before it), and a reverse loop alone is the reverse half of
 *     a bidirectional rnn whose forward half has zero weights;
 *   - any other recurrent op (a `for` loop) becomes a `while` op over the time steps t = 0 .. T-1
 *     (T-1 .. 0 when reverse): its body gathers step t of each input, runs the loop's step block,
 *     keeps a sequence's memories unchanged once t is past its length (mask m = t < length:
 *     new = m * step + (1 - m) * old), and concatenates the masked per-step outputs;
 *   - sequence_pool LAST (FIRST for a reverse loop) of a loop's memory is the memory's final
 *     value; any other sequence_pool is a reduction over the padded steps masked by the
 *     lengths (the positions, a cumsum of ones, compared with them); row-wise ops (mul, fc, elementwise ops with a non-sequence operand, unary maps,
 *     lookup_table, assign) work on the padded rows (mul's x_num_col_dims and fc's
 *     in_num_col_dims count the time dim).
 * Anything else that reads a sequence (another sequence op, a nested loop) is
 * refused (PD_EUNSUPPORTED), naming the op and its source location: save then writes the
 * program as pdlang runs it, for pdlang only, with a note.
 *
 * Ownership: `in` is not changed. On success *out is a new program (the caller frees it) whose
 * inputs are *feeds (*nfeeds names, an array the caller frees with pd_free; the names belong to
 * *out). On failure *out is NULL. */
#ifndef PD_PADDLE_EXPORT_H
#define PD_PADDLE_EXPORT_H

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/run/tensor.h"

/* The suffix of the lengths input beside a sequence input: "x" -> "x_lengths". */
#define PD_EXPORT_LENGTHS_SUFFIX "_lengths"

pd_status pd_program_for_paddle(const pd_program *in, int nfeed, const char *const *feed_names,
                                int ntargets, const char *const *targets, pd_program **out,
                                const char ***feeds, int *nfeeds, pd_error *err);

/* Whether input `name` of a saved program p is a padded sequence input: p also has the input
 * name_lengths (int64, rank 1) and `name` has rank 3 or more. pdlang's own callers then take
 * the sequences as rows and lengths too (pdlang exec --lengths, pd_state_feed_sequences) and
 * pad them with pd_export_pad_rows. */
bool pd_export_padded_input(const pd_program *p, const char *name);

/* rows [sum of lengths, D...] (dtype dt, nd dims, contiguous) as [nseq, T, D...] (T the
 * longest length, at least 1; zeros after each length) into out (its storage replaced). The
 * lengths must add up to dims[0] (PD_ESHAPE otherwise); PD_ENOMEM. */
pd_status pd_export_pad_rows(pd_dtype dt, int nd, const int64_t *dims, const void *rows,
                             int64_t nseq, const int64_t *lengths, pd_tensor *out);

/* Whether p has anything pd_program_for_paddle changes (a recurrent op, a sequence input). */
bool pd_program_needs_paddle_export(const pd_program *p);

/* Rename the var `from` of block 0 to `to` (which no block declares) in its declaration and in
 * every op argument that names it, in every block where the name means block 0's var. 0, or -1
 * on out of memory, an unknown `from` or a `to` already declared. */
int pd_program_rename_var(pd_program *p, const char *from, const char *to);

#endif /* PD_PADDLE_EXPORT_H */
