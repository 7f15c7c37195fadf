/* decompile_int.h -- what the decompiler's files share: lang/decompile.c (the names, the
 * attributes' text, the layers' groups, the verification and pd_decompile),
 * lang/decompile_cf.c (the ops of each block written, control flow as the language's if /
 * while, and the whole script), lang/decompile_rnn.c (lstm / gru) and lang/decompile_attn.c
 * (multi_head_attention, causal_mask). Internal to the decompiler; its functions are pd_dc_*,
 * external symbols of the library that are no part of any API.
 *
 * Memory: a dc's maps own their keys; the identifiers are heap strings owned by `taken`'s values
 * (freed by decompile.c's dc_free); the model and the output buffer are the caller's. */
#ifndef PD_DECOMPILE_INT_H
#define PD_DECOMPILE_INT_H

#include <stdio.h>
#include <string.h>

#include "base/strmap.h"
#include "lang/decompile.h"
#include "train/unit.h"
#include "vm/ops/ops.h"

/* The state of one script being written. */
typedef struct dc {
  const pd_model *m;
  const pd_block *b;
  pd_buf *out;
  pd_error *err;
  pd_strmap ident;   /* "BLOCK:name" (the block declaring the var) -> its identifier (heap
                        strings, owned by taken's values, freed at the end) */
  pd_strmap taken;   /* identifiers used */
  int depth;         /* block ops around the op being written (its indentation) */
  bool oom;          /* a key could not be made (defined() said no) */
  struct layers *ls;  /* the layer calls proposed for block 0's ops (NULL: none) */
  size_t scanned;    /* out->data up to here has been counted in line */
  int line;          /* out's line (1-based) at `scanned` */
  bool readable;     /* control flow as the language's if / while where it maps back */
  bool rebind;       /* writing such a body: an op's write of a var made before is written as
                        an assignment of its name (`y = op(...)`, `y = x` for assign) */
  int lifted;        /* the if / while statements written */
  const pd_strmap *reads; /* var name -> how many op inputs (any block) and fetches name it */
  const pd_strmap *writes; /* var name -> how many op outputs name it */
  pd_strmap consumed;     /* "BLOCK:INDEX" of the ops an if on one element stands for
                             besides its conditional_block (its else's, cast, select_input) */
} dc;

/* ---- Layers: runs of block 0's ops written as one call (decompile.c) ---- */

typedef enum gkind { G_UNARY, G_BINARY, G_MATMUL, G_POOL, G_FC, G_CONV, G_BN, G_RNN, G_ATTN,
                     G_CAUSAL } gkind;

typedef struct group {
  gkind kind;
  int first, n;     /* block 0's ops first .. first + n - 1 */
  bool act;         /* its last op is an activation (act = fn) */
  char *sig;        /* its kind, its ops' types and attributes (heap) */
  int line;         /* its line in the script written last */
  int nlines;       /* the lines it takes (0: one); a bidirectional rnn op is two calls */
  int key;          /* G_RNN: the index of its rnn op */
} group;

typedef struct layers {
  group *groups;    /* ngroups, in the order of their ops */
  int ngroups;
  group **at;       /* at[i]: the group whose first op is block 0's op i, else NULL */
  bool any_layer;   /* a group calls a stdlib layer: the script imports "layers" */
  bool seq;         /* a G_RNN group: the padded sequence inputs are written as sequences
                       (their lengths not at all), the script checked through save's steps */
  pd_strmap reads;  /* var name -> how many op inputs (of any block) and fetch targets name it */
  pd_strmap writes; /* var name -> how many op outputs name it */
  pd_strmap params; /* the parameters */
  pd_strmap outside;  /* the vars an op outside the layers' groups (of any block) names */
  pd_strmap inside;   /* the vars a layer's group names */
  pd_strmap rejected; /* the sigs of groups that compiled to other ops (copied keys) */
} layers;

/* ---- Small helpers, static inline (each file's own copy, no symbol) ---- */

/* PD_ENOMEM, with the message "out of memory" in d->err. */
static inline pd_status oom(dc *d) {
  return pd_error_set(d->err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}

/* The indentation of d->depth. */
static inline void indent(dc *d) { pd_buf_printf(d->out, "%*s", 4 * d->depth, ""); }

/* " of block N" after an op's index in messages, for an op of a block under block 0, in buf. */
static inline const char *of_block(char buf[32], const pd_block *b) {
  buf[0] = 0;
  if (b->idx) snprintf(buf, 32, " of block %d", b->idx);
  return buf;
}

/* The count of key in m (0 when absent). */
static inline int64_t count(const pd_strmap *m, const char *key) {
  int64_t v = 0;
  return pd_strmap_get_int(m, key, &v) ? v : 0;
}

/* The one var of an op's slot, NULL when the slot is absent, empty or names several. */
static inline const char *one_var(const pd_slot *s) {
  return s && s->nargs == 1 && strcmp(s->args[0], PD_EMPTY_VAR_NAME) ? s->args[0] : NULL;
}

/* Whether a slot names no var (no args, or only the empty var). */
static inline bool slot_empty(const pd_slot *s) {
  for (int k = 0; k < s->nargs; k++)
    if (strcmp(s->args[k], PD_EMPTY_VAR_NAME)) return false;
  return true;
}

/* Whether a and b are the same var (false when either is NULL). */
static inline bool same_var(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* ---- decompile.c: names and text ---- */

/* The key of var name as an op of block b names it: the block that declares it (b itself for a
 * var no block declares) and the name. Heap string; NULL on out of memory. */
char *pd_dc_var_key(const pd_block *b, const char *name);
/* The identifier of var name as block b sees it (made and remembered at its first use), or NULL
 * on out of memory. */
const char *pd_dc_ident(dc *d, const pd_block *blk, const char *name);
/* Whether var name, as block b sees it, has an identifier already (d->oom set when the key
 * could not be made). */
bool pd_dc_defined(dc *d, const pd_block *b, const char *name);
/* s as a string literal of the language; dims as a list `[2, -1]`. */
void pd_dc_put_str(pd_buf *b, const char *s);
void pd_dc_put_dims(pd_buf *b, int nd, const int64_t *dims);
/* `, name = value` for an attribute a script can set; nothing for a list type it cannot set
 * when the list is empty (the registry's default), else PD_EUNSUPPORTED. */
pd_status pd_dc_put_attr(dc *d, const pd_op_desc *op, const pd_attr *a);

/* v as a float literal of op's attribute attr that reads back as the same value (single: as
 * a float32); PD_EUNSUPPORTED for a value no script can write (inf, nan). */
pd_status pd_dc_put_float(dc *d, const pd_op_desc *op, const char *attr, double v, bool single);

/* ---- decompile.c: ops and their slots ---- */

/* Whether every slot of op that names a var is one of ins / outs (NULL-terminated). */
bool pd_dc_only_slots(const pd_op_desc *op, const char *const *ins, const char *const *outs);
/* The builtin that writes op as fn(x), or NULL (dropout's Mask, which the builtin writes
 * too, is for the caller to check unread). */
const char *pd_dc_unary_fn(const pd_op_desc *op);
/* The operator that writes the elementwise op (axis -1), or NULL. */
const char *pd_dc_binary_sym(const pd_op_desc *op);
/* `, name = value` of op's attributes that the registry knows but those at its default (a
 * BLOCK and is_test left out), into b; PD_EUNSUPPORTED for one a script cannot write. */
pd_status pd_dc_attrs_given(const pd_op_desc *op, pd_buf *b);
/* One group as `y = call  # ops i-j`. */
pd_status pd_dc_put_group(dc *d, group *g);

/* Complete g (kind, first, n, act set) with its sig; false when it was rejected before (or on
 * out of memory: then no group). */
bool pd_dc_group_ok(layers *ls, const pd_block *b, group *g);

/* ---- decompile_rnn.c: save's rnn ops as the stdlib's lstm / gru calls ---- */

/* The group of the rnn op at b->ops[r] (Paddle's rnn op as save writes the stdlib's lstm and
 * gru layers: vm/passes/paddle_export.h), its ops from `from` on at the earliest; prev[0..np)
 * the rnn groups found before it (whose ops may make what this one reads of the lengths).
 * false when it is not one. */
bool pd_dc_rnn_group(layers *ls, const pd_block *b, int r, int from, const group *prev, int np,
                     group *g);
/* The group g (G_RNN) as lstm / gru calls, one a direction, `# ops i-j`. */
pd_status pd_dc_put_rnn(dc *d, group *g);
/* Whether feed `name` of d's model is written as a sequence (1), left out as the lengths of
 * one (2), or as it is (0). */
int pd_dc_seq_feed(const dc *d, const char *name);
/* The program that the unit's (last) save action writes, by save's own steps
 * (pd_run_save_program), into *out (pd_program_free): what a script written with d->ls->seq
 * compiles to, compared with a saved model. PD_ENOMEM; another failure is PD_EUNSUPPORTED. */
pd_status pd_dc_saved_program(const pd_unit *u, pd_program **out);

/* ---- decompile_attn.c: the stdlib's multi_head_attention and causal_mask calls ---- */

/* The group (G_ATTN) of the ops from b->ops[i] on that a multi_head_attention call compiles to
 * (*oom_ set when memory ran out); false when they are not, or it was rejected before. */
bool pd_dc_attn_group(layers *ls, const pd_block *b, int i, group *g, bool *oom_);
/* The group g (G_ATTN) as `y = multi_head_attention(...)  # ops i-j`. */
pd_status pd_dc_put_attn(dc *d, group *g);
/* The group (G_CAUSAL) of the ops from b->ops[i] on that causal_mask(T) compiles to; false
 * when they are not, or it was rejected before. */
bool pd_dc_causal_group(layers *ls, const pd_block *b, int i, group *g, bool *oom_);
/* The group g (G_CAUSAL) as `y = causal_mask(T)  # ops i-j`. */
pd_status pd_dc_put_causal(dc *d, group *g);

/* ---- decompile_cf.c ---- */

/* The script of d->m with the groups of d->ls (NULL: none), appended to d->out: data() of the
 * feeds, param() of params[0..np) (a layer's own left out), the ops of block 0 (with
 * d->readable, control flow as if / while where it maps back), load() and save(). */
pd_status pd_dc_write_script(dc *d, const char *model_path, const char *save_as,
                             const char **params, int np);

#endif /* PD_DECOMPILE_INT_H */
