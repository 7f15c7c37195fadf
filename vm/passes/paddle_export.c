/* paddle_export.c -- save's rewriting of an inference program into ops PaddlePaddle 3.3 runs
 * (vm/passes/paddle_export.h): sequences as padded batches with lengths, gated loops as `rnn`
 * ops, other loops as `while` ops over the time steps, the pooling of a loop's memory as its
 * final value. */
#include "config.h"
#include "vm/passes/paddle_export.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/strmap.h"
#include "vm/ops/ops.h"
#include "vm/passes/fuse_rnn.h"
#include "vm/passes/hoist.h"
#include "vm/passes/prune.h"
#include "vm/run/tensor.h"

/* ---------------------------------------------------------------- renaming */

static int rename_args(pd_op_desc *op, const char *from, const char *to) {
  for (int io = 0; io < 2; io++) {
    pd_slot *slots = io ? op->outputs : op->inputs;
    for (int s = 0; s < (io ? op->noutputs : op->ninputs); s++)
      for (int k = 0; k < slots[s].nargs; k++)
        if (strcmp(slots[s].args[k], from) == 0) {
          char *n = pd_strdup(to);
          if (!n) return -1;
          pd_free(slots[s].args[k]);
          slots[s].args[k] = n;
        }
  }
  return 0;
}

/* Rename, in block b and the blocks nested in it, the args that mean the var `decl` (declared in
 * the block `owner`): a block that declares its own var of that name is left alone. */
static int rename_in(pd_program *p, const pd_block *owner, const pd_var_desc *decl,
                     const char *from, const char *to) {
  for (int bi = 0; bi < p->nblocks; bi++) {
    pd_block *b = p->blocks[bi];
    const pd_block *own = NULL;
    if (pd_block_find_var_visible(b, from, &own) != decl || own != owner) continue;
    for (int i = 0; i < b->nops; i++)
      if (rename_args(b->ops[i], from, to)) return -1;
  }
  return 0;
}

int pd_program_rename_var(pd_program *p, const char *from, const char *to) {
  pd_block *b0 = p->blocks[0];
  pd_var_desc *v = pd_block_find_var_local(b0, from);
  if (!v || pd_program_has_var_name(p, to)) return -1;
  char *old = pd_strdup(from);
  int rc = !old || rename_in(p, b0, v, from, to) || pd_block_rename_var(b0, v, to) ? -1 : 0;
  pd_free(old);
  return rc;
}

/* ---------------------------------------------------------------- the rewriting state */

typedef struct ex {
  pd_program *p;
  pd_block *b0;
  int at;            /* where the next op of block 0 goes */
  pd_loc loc;        /* the source location of the op being rewritten */
  const pd_op_desc *src;  /* that op (its location and calls go on the ops it becomes) */
  pd_error *err;
  pd_status st;      /* the first failure */
  pd_strmap seq;     /* padded sequence var -> its lengths var (a name of block 0) */
  pd_strmap fin;     /* a loop's stacked memory -> the var of its final value */
  pd_strmap rev;     /* ... -> 1 when the loop ran in reverse */
  pd_strmap nocell;  /* an lstm's per-step cells, which its rnn op does not write */
  const char *zn1, *zn1_len;  /* zeros [N, 1] of dtype zn1_dt for the lengths zn1_len */
  pd_dtype zn1_dt;
} ex;

static void oom(ex *e) {
  if (!e->st) e->st = pd_error_set(e->err, PD_ENOMEM, e->loc, "out of memory");
}

static pd_status refuse(ex *e, const pd_op_desc *op, const char *fmt, const char *what) {
  if (e->st) return e->st;
  char msg[256];
  snprintf(msg, sizeof msg, fmt, what);
  pd_loc l = pd_op_user_loc(op);
  e->st = pd_error_set(e->err, PD_EUNSUPPORTED, l,
                       "op %s cannot be written for PaddlePaddle: %s (see doc/language.md, "
                       "\"Models for PaddlePaddle\")",
                       op->type, msg);
  return e->st;
}

static const char *lengths_of(const ex *e, const char *var) {
  return var ? pd_strmap_get_ptr(&e->seq, var) : NULL;
}

/* A new var of block b named hint.K: dtype, shape. Its name (owned by the program), or NULL. */
static const char *new_var(ex *e, pd_block *b, const char *hint, pd_dtype dt, int nd,
                           const int64_t *dims) {
  if (e->st) return NULL;
  int64_t k = pd_program_free_suffix(e->p, hint);
  char name[256];
  snprintf(name, sizeof name, "%s.%lld", hint, (long long)k);
  pd_var_desc *v = k < 0 ? NULL : pd_block_var(b, name);
  if (!v || pd_var_set_shape(v, nd, dims)) {
    oom(e);
    return NULL;
  }
  v->dtype = dt;
  return v->name;
}

static int var_rank(const ex *e, pd_block *b, const char *name, int64_t *dims) {
  const pd_var_desc *v = name ? pd_block_find_var(b, name) : NULL;
  if (!v) return -1;
  for (int i = 0; i < v->ndims && dims; i++) dims[i] = v->dims[i];
  (void)e;
  return v->ndims;
}
static pd_dtype var_dtype(pd_block *b, const char *name) {
  const pd_var_desc *v = name ? pd_block_find_var(b, name) : NULL;
  return v ? v->dtype : PD_FP32;
}

/* A new op of type in block b: in block 0 at e->at (which moves on), else at b's end. */
static pd_op_desc *add_op(ex *e, pd_block *b, const char *type) {
  if (e->st) return NULL;
  pd_op_desc *op = pd_block_add_op(b, type, b == e->b0 ? e->at : -1);
  if (!op || (e->src ? pd_op_copy_loc(op, e->src) : pd_op_set_loc(op, e->loc))) {
    oom(e);
    return NULL;
  }
  if (b == e->b0) e->at++;
  return op;
}

static void set_in(ex *e, pd_op_desc *op, const char *slot, int n, const char *const *names) {
  if (op && !e->st && pd_op_set_input(op, slot, n, names)) oom(e);
}
static void set_out(ex *e, pd_op_desc *op, const char *slot, int n, const char *const *names) {
  if (op && !e->st && pd_op_set_output(op, slot, n, names)) oom(e);
}
static void attr_i(ex *e, pd_op_desc *op, const char *name, int v) {
  if (op && !e->st && pd_op_set_attr_int(op, name, v)) oom(e);
}
static void attr_f(ex *e, pd_op_desc *op, const char *name, float v) {
  if (op && !e->st && pd_op_set_attr_float(op, name, v)) oom(e);
}
static void attr_b(ex *e, pd_op_desc *op, const char *name, bool v) {
  if (op && !e->st && pd_op_set_attr_bool(op, name, v)) oom(e);
}
static void attr_is(ex *e, pd_op_desc *op, const char *name, int n, const int32_t *v) {
  if (op && !e->st && pd_op_set_attr_ints(op, name, n, v)) oom(e);
}

/* Out = type(X) into `out` (a new var of dtype dt and shape nd/dims when out is NULL). */
static const char *unary(ex *e, pd_block *b, const char *type, const char *x, const char *out,
                         pd_dtype dt, int nd, const int64_t *dims) {
  if (!out) out = new_var(e, b, type, dt, nd, dims);
  pd_op_desc *op = add_op(e, b, type);
  set_in(e, op, "X", 1, &x);
  set_out(e, op, "Out", 1, &out);
  return e->st ? NULL : out;
}

/* The ops whose Out comes with an XShape (transpose2, squeeze2, unsqueeze2). */
static const char *shaped(ex *e, pd_block *b, const char *type, const char *attr, int n,
                          const int32_t *v, const char *x, const char *out, pd_dtype dt, int nd,
                          const int64_t *dims) {
  out = unary(e, b, type, x, out, dt, nd, dims);
  const char *xs = new_var(e, b, type, dt, -1, NULL);
  pd_op_desc *op = e->st ? NULL : b->ops[b == e->b0 ? e->at - 1 : b->nops - 1];
  set_out(e, op, "XShape", 1, &xs);
  attr_is(e, op, attr, n, v);
  return e->st ? NULL : out;
}

static const char *transpose(ex *e, pd_block *b, const char *x, const char *out, int n,
                             const int32_t *perm) {
  int64_t d[8], od[8];
  int nd = var_rank(e, b, x, d);
  for (int i = 0; i < nd && i < 8; i++) od[i] = d[perm[i]];
  return shaped(e, b, "transpose2", "axis", n, perm, x, out, var_dtype(b, x), nd == n ? n : -1,
                od);
}

static const char *scale(ex *e, pd_block *b, const char *x, float s, float bias) {
  int64_t d[8] = {0};
  int nd = var_rank(e, b, x, d);
  const char *out = unary(e, b, "scale", x, NULL, var_dtype(b, x), nd, d);
  pd_op_desc *op = e->st ? NULL : b->ops[b == e->b0 ? e->at - 1 : b->nops - 1];
  attr_f(e, op, "scale", s);
  attr_f(e, op, "bias", bias);
  attr_b(e, op, "bias_after_scale", true);
  return out;
}

static const char *cast(ex *e, pd_block *b, const char *x, pd_dtype to) {
  int64_t d[8] = {0};
  int nd = var_rank(e, b, x, d);
  const char *out = unary(e, b, "cast", x, NULL, to, nd, d);
  pd_op_desc *op = e->st ? NULL : b->ops[b == e->b0 ? e->at - 1 : b->nops - 1];
  attr_i(e, op, "in_dtype", (int)var_dtype(b, x));
  attr_i(e, op, "out_dtype", (int)to);
  return out;
}

static const char *binary(ex *e, pd_block *b, const char *type, const char *x, const char *y,
                          const char *out, pd_dtype dt, int nd, const int64_t *dims) {
  if (!out) out = new_var(e, b, type, dt, nd, dims);
  pd_op_desc *op = add_op(e, b, type);
  set_in(e, op, "X", 1, &x);
  set_in(e, op, "Y", 1, &y);
  set_out(e, op, "Out", 1, &out);
  attr_i(e, op, "axis", -1);
  if (op && strstr(type, "than")) attr_b(e, op, "force_cpu", false);
  return e->st ? NULL : out;
}

static const char *fill(ex *e, pd_block *b, pd_dtype dt, int nd, const int64_t *dims, float v) {
  const char *out = new_var(e, b, "fill_constant", dt, nd, dims);
  pd_op_desc *op = add_op(e, b, "fill_constant");
  set_out(e, op, "Out", 1, &out);
  attr_i(e, op, "dtype", (int)dt);
  if (op && !e->st && pd_op_set_attr_longs(op, "shape", nd, dims)) oom(e);
  attr_f(e, op, "value", v);
  char s[32];
  snprintf(s, sizeof s, "%g", (double)v);
  if (op && !e->st && pd_op_set_attr_string(op, "str_value", s)) oom(e);
  attr_b(e, op, "force_cpu", false);
  return e->st ? NULL : out;
}

/* slice(x, axis, [start, end)), dropping the axis when drop. */
static const char *slice(ex *e, pd_block *b, const char *x, int axis, int start, int end,
                         bool drop, const char *out) {
  int64_t d[8] = {0};
  int nd = var_rank(e, b, x, d);
  if (nd > 0 && axis < nd) {
    d[axis] = -1;
    if (drop) {
      for (int i = axis; i + 1 < nd; i++) d[i] = d[i + 1];
      nd--;
    }
  }
  if (!out) out = new_var(e, b, "slice", var_dtype(b, x), nd, d);
  pd_op_desc *op = add_op(e, b, "slice");
  set_in(e, op, "Input", 1, &x);
  set_out(e, op, "Out", 1, &out);
  int32_t a[1] = {axis}, s[1] = {start}, en[1] = {end}, one[1] = {1};
  attr_is(e, op, "axes", 1, a);
  attr_is(e, op, "starts", 1, s);
  attr_is(e, op, "ends", 1, en);
  attr_is(e, op, "infer_flags", 1, one);
  attr_is(e, op, "decrease_axis", drop ? 1 : 0, a);
  return e->st ? NULL : out;
}

static const char *concat(ex *e, pd_block *b, int n, const char *const *xs, int axis,
                          const char *out) {
  int64_t d[8] = {0};
  int nd = var_rank(e, b, xs[0], d);
  if (nd > axis) d[axis] = -1;
  if (!out) out = new_var(e, b, "concat", var_dtype(b, xs[0]), nd, d);
  pd_op_desc *op = add_op(e, b, "concat");
  set_in(e, op, "X", n, xs);
  set_out(e, op, "Out", 1, &out);
  attr_i(e, op, "axis", axis);
  return e->st ? NULL : out;
}

/* zeros [N, 1] of dtype dt, N the lengths' count. */
static const char *zeros_n1(ex *e, const char *lengths, pd_dtype dt) {
  if (e->zn1 && e->zn1_len == lengths && e->zn1_dt == dt) return e->zn1;
  e->zn1_len = lengths;
  e->zn1_dt = dt;
  const char *f = cast(e, e->b0, lengths, dt);
  const char *z = f ? scale(e, e->b0, f, 0.0f, 0.0f) : NULL;
  const int32_t one[1] = {1};
  int64_t d[2] = {-1, 1};
  return e->zn1 = z ? shaped(e, e->b0, "unsqueeze2", "axes", 1, one, z, NULL, dt, 2, d) : NULL;
}

/* A loop's initial memory s ([H], or [N, H]) as [N, H]; s NULL: zeros [N, hid]. */
static const char *batch_state(ex *e, const char *s, const char *lengths, pd_dtype dt,
                               int64_t hid) {
  int64_t d[8] = {0};
  int nd = s ? var_rank(e, e->b0, s, d) : 1;
  if (nd == 2) return s;
  if (!s) {
    int64_t h[1] = {hid};
    s = fill(e, e->b0, dt, 1, h, 0.0f);
  }
  int64_t od[2] = {-1, hid};
  const char *z = zeros_n1(e, lengths, dt);
  return z ? binary(e, e->b0, "elementwise_add", z, s, NULL, dt, 2, od) : NULL;
}

/* Mark a var of block 0 a padded sequence: [rows, D...] -> [N, T, D...], no LoD. */
static void make_seq(ex *e, const char *name, const char *lengths) {
  pd_var_desc *v = pd_block_find_var_local(e->b0, name);
  if (!v || e->st) return;
  if (pd_strmap_get_ptr(&e->seq, name)) return;
  if (v->ndims >= 1 && v->ndims < 7) {
    int64_t d[8] = {0};
    d[0] = v->dims[0];
    d[1] = -1;
    for (int i = 1; i < v->ndims; i++) d[i + 1] = v->dims[i];
    if (pd_var_set_shape(v, v->ndims + 1, d)) oom(e);
  }
  v->lod_level = 0;
  if (pd_strmap_set_ptr(&e->seq, name, (void *)lengths)) oom(e);
}

static int writer_of(const pd_block *b, int before, const char *name) {
  for (int i = before - 1; i >= 0; i--) {
    const pd_op_desc *op = b->ops[i];
    for (int s = 0; s < op->noutputs; s++)
      for (int k = 0; k < op->outputs[s].nargs; k++)
        if (strcmp(op->outputs[s].args[k], name) == 0) return i;
  }
  return -1;
}

static const char *in_arg(const pd_op_desc *op, const char *slot) {
  const char *s = pd_op_input1(op, slot);
  return s && strcmp(s, PD_EMPTY_VAR_NAME) != 0 ? s : NULL;
}

/* ---------------------------------------------------------------- gated loops -> rnn */

/* A fused_lstm / fused_gru op and what its rnn op needs: the sequence x whose projection
 * x W_ih + b (the hoisted mul and elementwise_add) is its Input, the weights, the initial
 * states. */
typedef struct gated {
  const pd_op_desc *f;
  bool lstm, rev;
  const char *x, *wih, *bih, *whh, *bhh, *s0[2];
  int64_t hid, in, g;
} gated;

/* Match the op at b0->ops[i]; false (nothing refused) when it does not fit. Its x must be a
 * padded sequence already when seq (a later op's, not yet: the walk has not reached it). */
static bool match_gated(ex *e, int i, gated *m, bool seq) {
  pd_block *b0 = e->b0;
  const pd_op_desc *f = b0->ops[i];
  memset(m, 0, sizeof *m);
  m->f = f;
  m->lstm = strcmp(f->type, "fused_lstm") == 0;
  if (!m->lstm && strcmp(f->type, "fused_gru") != 0) return false;
  const char *u = in_arg(f, "Input");
  m->whh = in_arg(f, "Weight");
  int ia = u ? writer_of(b0, i, u) : -1;
  const pd_op_desc *add = ia >= 0 ? b0->ops[ia] : NULL;
  if (!add || strcmp(add->type, "elementwise_add") != 0) return false;
  const char *mo = in_arg(add, "X");
  m->bih = in_arg(add, "Y");
  int im = mo ? writer_of(b0, ia, mo) : -1;
  if (im < 0 || strcmp(b0->ops[im]->type, "mul") != 0) {
    const char *t = mo;
    mo = m->bih, m->bih = t;
    im = mo ? writer_of(b0, ia, mo) : -1;
  }
  const pd_op_desc *mul = im >= 0 ? b0->ops[im] : NULL;
  m->x = mul && strcmp(mul->type, "mul") == 0 ? in_arg(mul, "X") : NULL;
  m->wih = mul ? in_arg(mul, "Y") : NULL;
  int64_t dw[8], di[8], db[8];
  if (!m->x || (seq && !lengths_of(e, m->x)) || var_rank(e, b0, m->wih, di) != 2 ||
      var_rank(e, b0, m->whh, dw) != 2 || var_rank(e, b0, m->bih, db) != 1)
    return false;
  m->hid = dw[0], m->in = di[0], m->g = dw[1];
  m->bhh = m->lstm ? NULL : in_arg(f, "Bias");
  m->s0[0] = in_arg(f, "H0");
  m->s0[1] = m->lstm ? in_arg(f, "C0") : NULL;
  const pd_attr *ra = pd_op_attr(f, "is_reverse");
  m->rev = ra && ra->v.b;
  return true;
}

/* The var that name copies (through assign ops of block 0 before op `before`), or name. */
static const char *copied(const ex *e, const char *name, int before) {
  for (int w; name && (w = writer_of(e->b0, before, name)) >= 0; before = w) {
    const pd_op_desc *op = e->b0->ops[w];
    if (strcmp(op->type, "assign") != 0) break;
    name = in_arg(op, "X");
  }
  return name;
}

/* A reverse loop of the same kind, input and sizes after the forward one at i, whose initial
 * states are ready at i (or made by a fill_constant between them, which moves up to i): the
 * two are one bidirectional rnn op. Its index, else -1. */
static int find_pair(ex *e, int i, const gated *fw, gated *bw) {
  pd_block *b0 = e->b0;
  for (int j = i + 1; j < b0->nops; j++) {
    if (!match_gated(e, j, bw, false) || !bw->rev || bw->lstm != fw->lstm || bw->hid != fw->hid ||
        bw->in != fw->in || strcmp(copied(e, bw->x, j), copied(e, fw->x, i)) != 0)
      continue;
    int moves[2], nm = 0;
    for (int k = 0; k < 2; k++) {
      int w = bw->s0[k] ? writer_of(b0, j, bw->s0[k]) : -1;
      if (w <= i) continue;
      const pd_op_desc *op = b0->ops[w];
      if (strcmp(op->type, "fill_constant") != 0 || op->ninputs > 0) return -1;
      moves[nm++] = w;
    }
    for (int k = 0; k < nm; k++) {  /* move the fill_constant ops up, before the forward op */
      pd_op_desc *op = b0->ops[moves[k]];
      memmove(&b0->ops[i + 1], &b0->ops[i], sizeof *b0->ops * (size_t)(moves[k] - i));
      b0->ops[i++] = op;
      if (k + 1 < nm && moves[k + 1] < moves[k]) moves[k + 1]++;
    }
    return j;  /* unchanged: the moves stay below it */
  }
  return -1;
}

/* One direction's weights in Paddle's layout: w[0..1] weight_ih, weight_hh; w[2..3] the biases
 * (zeros for a missing direction). */
static void dir_weights(ex *e, const gated *m, bool zero, pd_dtype dt, const char **w) {
  const int32_t t2[2] = {1, 0};
  int64_t gi[2] = {m->g, m->in}, gh[2] = {m->g, m->hid}, gg[1] = {m->g};
  if (zero) {
    w[0] = fill(e, e->b0, dt, 2, gi, 0.0f);
    w[1] = fill(e, e->b0, dt, 2, gh, 0.0f);
    w[2] = w[3] = fill(e, e->b0, dt, 1, gg, 0.0f);
    return;
  }
  w[0] = transpose(e, e->b0, m->wih, NULL, 2, t2);
  w[1] = transpose(e, e->b0, m->whh, NULL, 2, t2);
  w[2] = m->bih;
  w[3] = m->lstm ? fill(e, e->b0, dt, 1, gg, 0.0f) : m->bhh;
}

/* The outputs of one direction d of the rnn op: its Hidden (and Cell) vars padded batch-major
 * from Out's half d, its final states from State's entry d. */
static void dir_outputs(ex *e, const gated *m, int d, int dirs, const char *L, const char *out,
                        const char *const *state) {
  const int32_t tm3[3] = {1, 0, 2};
  pd_block *b0 = e->b0;
  const char *o = dirs == 2 ? slice(e, b0, out, 2, (int)(d * m->hid), (int)((d + 1) * m->hid),
                                    false, NULL)
                            : out;
  const char *hs = pd_op_output1(m->f, "Hidden");
  const char *cs = m->lstm ? pd_op_output1(m->f, "Cell") : NULL;
  char *hsn = hs ? pd_strdup(hs) : NULL, *csn = cs ? pd_strdup(cs) : NULL;
  if (!hsn || (cs && !csn)) oom(e);
  if (!e->st) make_seq(e, hsn, L);
  if (csn && !e->st) make_seq(e, csn, L);
  if (csn && !e->st && pd_strmap_set_int(&e->nocell, csn, 1)) oom(e);
  if (!e->st) transpose(e, b0, o, hsn, 3, tm3);
  for (int k = 0; k < (m->lstm ? 2 : 1) && !e->st; k++) {
    const char *name = k ? csn : hsn;
    const char *fv = slice(e, b0, state[k], 0, d, d + 1, true, NULL);
    if (!e->st && (pd_strmap_set_ptr(&e->fin, name, (void *)fv) ||
                   pd_strmap_set_int(&e->rev, name, m->rev)))
      oom(e);
  }
  pd_free(hsn);
  pd_free(csn);
}

/* fused_lstm / fused_gru at e->b0->ops[i]: one rnn op. A reverse loop alone is the reverse half
 * of a bidirectional rnn (the forward half's weights zero); a forward loop with a reverse one
 * over the same input (find_pair) is one bidirectional rnn with both. */
static pd_status gated_to_rnn(ex *e, int i) {
  pd_block *b0 = e->b0;
  gated m[2];
  if (!match_gated(e, i, &m[0], true))
    return refuse(e, b0->ops[i], "its input projection is not %s",
                  "mul(x, W_ih) + b on a sequence x");
  int j = m[0].rev ? -1 : find_pair(e, i, &m[0], &m[1]);
  if (j >= 0) {  /* the moves may have shifted the forward op */
    while (b0->ops[i] != m[0].f) i++;
  }
  bool pair = j >= 0;
  int dirs = pair || m[0].rev ? 2 : 1;
  const gated *fw = m[0].rev ? NULL : &m[0], *bw = pair ? &m[1] : m[0].rev ? &m[0] : NULL;
  const gated *g = &m[0];
  const char *L = lengths_of(e, g->x);
  pd_dtype dt = var_dtype(b0, g->x);
  e->at = i;
  const int32_t tm3[3] = {1, 0, 2}, zero[1] = {0};
  const char *xt = transpose(e, b0, g->x, NULL, 3, tm3);
  const char *w[8], *dw[2][4];
  dir_weights(e, fw ? fw : g, !fw, dt, dw[0]);
  if (dirs == 2) dir_weights(e, bw, false, dt, dw[1]);
  for (int d = 0; d < dirs; d++) {
    w[2 * d] = dw[d][0], w[2 * d + 1] = dw[d][1];
    w[2 * dirs + 2 * d] = dw[d][2], w[2 * dirs + 2 * d + 1] = dw[d][3];
  }
  const char *pre[2], *state[2];
  int64_t sd[3] = {dirs, -1, g->hid}, od[3] = {-1, -1, dirs * g->hid}, d1[3] = {1, -1, g->hid};
  for (int k = 0; k < (g->lstm ? 2 : 1); k++) {
    const char *s1[2];
    for (int d = 0; d < dirs; d++) {
      const gated *md = d == 0 ? (fw ? fw : bw) : bw;
      const char *s0 = batch_state(e, md->s0[k], L, dt, g->hid);
      s1[d] = s0 ? shaped(e, b0, "unsqueeze2", "axes", 1, zero, s0, NULL, dt, 3, d1) : NULL;
    }
    pre[k] = dirs == 2 && s1[0] && s1[1] ? concat(e, b0, 2, s1, 0, NULL) : s1[0];
    state[k] = new_var(e, b0, "rnn.state", dt, 3, sd);
  }
  const char *out = new_var(e, b0, "rnn.out", dt, 3, od);
  const char *res = new_var(e, b0, "rnn.reserve", dt, -1, NULL);
  const char *drop = new_var(e, b0, "rnn.dropout_state", PD_UINT8, -1, NULL);
  pd_op_desc *r = add_op(e, b0, "rnn");
  set_in(e, r, "Input", 1, &xt);
  set_in(e, r, "PreState", g->lstm ? 2 : 1, pre);
  set_in(e, r, "WeightList", 4 * dirs, w);
  set_in(e, r, "SequenceLength", 1, &L);
  set_out(e, r, "Out", 1, &out);
  set_out(e, r, "State", g->lstm ? 2 : 1, state);
  set_out(e, r, "Reserve", 1, &res);
  set_out(e, r, "DropoutState", 1, &drop);
  attr_f(e, r, "dropout_prob", 0.0f);
  attr_b(e, r, "is_bidirec", dirs == 2);
  attr_i(e, r, "input_size", (int)g->in);
  attr_i(e, r, "hidden_size", (int)g->hid);
  attr_i(e, r, "num_layers", 1);
  if (r && !e->st && pd_op_set_attr_string(r, "mode", g->lstm ? "LSTM" : "GRU")) oom(e);
  attr_i(e, r, "seed", 0);
  attr_b(e, r, "is_test", true);
  if (fw) dir_outputs(e, fw, 0, dirs, L, out, state);
  if (bw) dir_outputs(e, bw, 1, dirs, L, out, state);
  if (e->st) return e->st;
  /* The fused ops go: the reverse one first (it is after the forward one). */
  if (pair) {
    int k = e->at;
    while (k < b0->nops && b0->ops[k] != bw->f) k++;
    if (k < b0->nops) pd_block_remove_op(b0, k);
  }
  pd_block_remove_op(b0, e->at);  /* the forward (or only) fused op, now after its rnn op */
  return PD_OK;
}

/* ---------------------------------------------------------------- other loops -> while */

/* Add to *xs (cap 256) every name that the ops of block b (and the blocks nested in it) read
 * and that means a var of block 0. */
static void outer_reads(ex *e, const pd_block *b, const char **xs, int *n) {
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int s = 0; s < op->ninputs; s++)
      for (int k = 0; k < op->inputs[s].nargs; k++) {
        const char *a = op->inputs[s].args[k];
        const pd_block *own = NULL;
        if (!pd_block_find_var_visible(b, a, &own) || own != e->b0) continue;
        bool seen = false;
        for (int j = 0; j < *n && !seen; j++) seen = strcmp(xs[j], a) == 0;
        if (!seen && *n < 256) xs[(*n)++] = a;
      }
    for (int a = 0; a < op->nattrs; a++)
      if (op->attrs[a].type == PD_ATTR_BLOCK) {
        const pd_block *sb = pd_program_block(e->p, op->attrs[a].v.i);
        if (sb && sb != b) outer_reads(e, sb, xs, n);
      }
  }
}

/* In the step block sb, rename its own var `from` (and the args meaning it) to a new name. */
static const char *rename_local(ex *e, pd_block *sb, const char *from) {
  pd_var_desc *v = pd_block_find_var_local(sb, from);
  if (!v || e->st) return NULL;
  int64_t k = pd_program_free_suffix(e->p, from);
  char to[256];
  snprintf(to, sizeof to, "%s.%lld", from, (long long)k);
  char *old = pd_strdup(from);
  if (k < 0 || !old || rename_in(e->p, sb, v, old, to) || pd_block_rename_var(sb, v, to)) oom(e);
  pd_free(old);
  return e->st ? NULL : v->name;
}

static const pd_attr *strings(const pd_op_desc *op, const char *name) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == PD_ATTR_STRINGS ? a : NULL;
}

enum { MAX_LOOP = 32 };

static pd_status loop_to_while(ex *e, int i) {
  pd_block *b0 = e->b0;
  pd_op_desc *r = b0->ops[i];
  const pd_slot *ins = pd_op_input(r, "inputs"), *init = pd_op_input(r, "initial_states");
  const pd_slot *outs = pd_op_output(r, "outputs");
  const pd_attr *sa = strings(r, "states"), *xa = strings(r, "ex_states"),
                *ba = pd_op_attr(r, "sub_block"), *ra = pd_op_attr(r, "reverse");
  pd_block *sb = ba ? pd_program_block(e->p, ba->v.i) : NULL;
  bool rev = ra && ra->v.b;
  if (!ins || ins->nargs < 1 || !sa || !xa || !sb || sa->n > MAX_LOOP ||
      (outs && outs->nargs > MAX_LOOP) || ins->nargs > MAX_LOOP)
    return refuse(e, r, "%s", "a loop of this shape (at most 32 inputs, outputs, memories)");
  const char *L = lengths_of(e, ins->args[0]);
  for (int k = 0; k < ins->nargs; k++)
    if (!L || lengths_of(e, ins->args[k]) != L)
      return refuse(e, r, "input %s is not a sequence of the loop's batch", ins->args[k]);
  for (int bi = 0; bi < e->p->nblocks; bi++)
    if (e->p->blocks[bi]->parent_idx == sb->idx)
      return refuse(e, r, "%s", "a loop with a block inside");
  char **states = sa->strings, **exs = xa->strings;
  int nst = sa->n, nout = outs ? outs->nargs : 0;
  /* Copies of the names the rewrite renames or removes. */
  char *in_n[MAX_LOOP] = {0}, *out_n[MAX_LOOP] = {0}, *st_n[MAX_LOOP] = {0}, *ex_n[MAX_LOOP] = {0},
       *s0_n[MAX_LOOP] = {0};
  int nin = ins->nargs;
  for (int k = 0; k < nin; k++)
    if (!(in_n[k] = pd_strdup(ins->args[k]))) oom(e);
  for (int k = 0; k < nout; k++)
    if (!(out_n[k] = pd_strdup(outs->args[k]))) oom(e);
  for (int k = 0; k < nst; k++)
    if (!(st_n[k] = pd_strdup(states[k])) || !(ex_n[k] = pd_strdup(exs[k])) ||
        !(s0_n[k] = pd_strdup(init && k < init->nargs ? init->args[k] : "")))
      oom(e);
  pd_dtype dt = PD_FP32;
  const char *xt[MAX_LOOP], *ex_outer[MAX_LOOP], *acc[MAX_LOOP];
  int64_t hid[MAX_LOOP];
  for (int k = 0; k < nout && !e->st; k++) {
    int64_t d[8] = {0};
    pd_var_desc *sv = pd_block_find_var_local(sb, out_n[k]);
    if (!sv || sv->ndims != 2 || sv->dims[1] <= 0) {
      refuse(e, r, "output %s is not rows of a known width", out_n[k]);
      break;
    }
    hid[k] = sv->dims[1];
    dt = sv->dtype;
    (void)d;
  }
  e->at = i;
  const int32_t tm3[3] = {1, 0, 2}, zero[1] = {0}, one[1] = {1};
  /* Before the loop: time-major inputs, T, the counter and the condition, the memories as
   * [N, H], and each output's stack, which starts with one row of zeros (dropped after). */
  for (int k = 0; k < nin && !e->st; k++) {
    int64_t d[8] = {0};
    int nd = var_rank(e, b0, in_n[k], d);
    int32_t perm[8] = {1, 0, 2, 3, 4, 5, 6, 7};
    xt[k] = nd >= 2 && nd <= 8 ? transpose(e, b0, in_n[k], NULL, nd, perm) : NULL;
    if (!xt[k] && !e->st) refuse(e, r, "input %s has an unknown rank", in_n[k]);
  }
  int64_t one_d[1] = {1}, nd1[1] = {-1};
  const char *shp = e->st ? NULL : new_var(e, b0, "shape", PD_INT32, 1, nd1);
  pd_op_desc *so = add_op(e, b0, "shape");
  set_in(e, so, "Input", 1, &xt[0]);
  set_out(e, so, "Out", 1, &shp);
  const char *t32 = shp ? slice(e, b0, shp, 0, 0, 1, false, NULL) : NULL;
  const char *tn = t32 ? cast(e, b0, t32, PD_INT64) : NULL;
  const char *ctr = NULL, *lim = NULL;
  if (rev) {
    ctr = new_var(e, b0, "step", PD_INT64, 1, one_d);
    pd_op_desc *inc = add_op(e, b0, "increment");
    set_in(e, inc, "X", 1, &tn);
    set_out(e, inc, "Out", 1, &ctr);
    attr_f(e, inc, "step", -1.0f);
    lim = fill(e, b0, PD_INT64, 1, one_d, 0.0f);
  } else {
    ctr = fill(e, b0, PD_INT64, 1, one_d, 0.0f);
    lim = tn;
  }
  const char *cond = rev ? binary(e, b0, "greater_equal", ctr, lim, NULL, PD_BOOL, 1, one_d)
                         : binary(e, b0, "less_than", ctr, lim, NULL, PD_BOOL, 1, one_d);
  for (int k = 0; k < nst && !e->st; k++) {
    pd_var_desc *xv = pd_block_find_var_local(sb, ex_n[k]);
    int64_t h = xv && xv->ndims == 2 ? xv->dims[1] : -1;
    if (h <= 0 || !*s0_n[k]) {
      refuse(e, r, "memory %s is not rows of a known width", ex_n[k]);
      break;
    }
    dt = xv->dtype;
    int64_t d2[2] = {-1, h};
    const char *s = batch_state(e, s0_n[k], L, dt, h);
    ex_outer[k] = new_var(e, b0, ex_n[k], dt, 2, d2);
    unary(e, b0, "assign", s, ex_outer[k], dt, 2, d2);
  }
  for (int k = 0; k < nout && !e->st; k++) {
    int64_t d1[3] = {1, -1, hid[k]}, d3[3] = {-1, -1, hid[k]};
    const char *z = batch_state(e, NULL, L, dt, hid[k]);
    const char *z1 = z ? shaped(e, b0, "unsqueeze2", "axes", 1, zero, z, NULL, dt, 3, d1) : NULL;
    acc[k] = new_var(e, b0, "stack", dt, 3, d3);
    unary(e, b0, "assign", z1, acc[k], dt, 3, d3);
  }
  /* The step block: step t of each input, the body, the masked memories and outputs. */
  const char *step_in[MAX_LOOP];
  for (int k = 0; k < nin && !e->st; k++) step_in[k] = rename_local(e, sb, in_n[k]);
  const char *step_val[MAX_LOOP];   /* a state's new value in the step, after renaming */
  for (int k = 0; k < nst && !e->st; k++) {
    const char *local = pd_block_find_var_local(sb, st_n[k]) ? st_n[k] : NULL;
    step_val[k] = local && pd_block_find_var_local(b0, st_n[k]) ? rename_local(e, sb, st_n[k])
                                                                  : local;
    if (!step_val[k] && !e->st) refuse(e, r, "memory %s is not written in the loop", st_n[k]);
  }
  const char *out_val[MAX_LOOP];
  for (int k = 0; k < nout && !e->st; k++) {
    out_val[k] = NULL;
    for (int j = 0; j < nst; j++)
      if (strcmp(st_n[j], out_n[k]) == 0) out_val[k] = step_val[j];
    if (!out_val[k])
      out_val[k] = pd_block_find_var_local(sb, out_n[k]) && pd_block_find_var_local(b0, out_n[k])
                       ? rename_local(e, sb, out_n[k]) : out_n[k];
  }
  /* The memories' previous values: vars of block 0 now (ex_outer), read under their names. */
  for (int k = 0; k < nst && !e->st; k++) {
    for (int oi = 0; oi < sb->nops; oi++)
      if (rename_args(sb->ops[oi], ex_n[k], ex_outer[k])) oom(e);
    pd_block_remove_var(sb, ex_n[k]);
  }
  /* Step t of each input at the block's start. */
  for (int k = 0; k < nin && !e->st; k++) {
    int64_t d[8] = {0};
    int nd = var_rank(e, b0, xt[k], d);
    const char *g = new_var(e, sb, "gather", var_dtype(b0, xt[k]), nd, d);
    pd_op_desc *go = pd_block_add_op(sb, "gather", 2 * k);
    if (!go || pd_op_copy_loc(go, r)) oom(e);
    set_in(e, go, "X", 1, &xt[k]);
    set_in(e, go, "Index", 1, &ctr);
    set_out(e, go, "Out", 1, &g);
    attr_i(e, go, "axis", 0);
    const char *xs = new_var(e, sb, "squeeze2", var_dtype(b0, xt[k]), -1, NULL);
    pd_op_desc *sq = pd_block_add_op(sb, "squeeze2", 2 * k + 1);
    if (!sq || pd_op_copy_loc(sq, r)) oom(e);
    set_in(e, sq, "X", 1, &g);
    set_out(e, sq, "Out", 1, &step_in[k]);
    set_out(e, sq, "XShape", 1, &xs);
    attr_is(e, sq, "axes", 1, zero);
  }
  int64_t n1[2] = {-1, 1}, nn[1] = {-1};
  const char *mb = binary(e, sb, "less_than", ctr, L, NULL, PD_BOOL, 1, nn);
  const char *mf = mb ? cast(e, sb, mb, dt) : NULL;
  const char *m = mf ? shaped(e, sb, "unsqueeze2", "axes", 1, one, mf, NULL, dt, 2, n1) : NULL;
  const char *m1 = m ? scale(e, sb, m, -1.0f, 1.0f) : NULL;
  const char *masked[MAX_LOOP];
  for (int k = 0; k < nst && !e->st; k++) {
    int64_t d2[2] = {-1, -1};
    masked[k] = binary(e, sb, "elementwise_mul", step_val[k], m, NULL, dt, 2, d2);
    const char *keep = binary(e, sb, "elementwise_mul", ex_outer[k], m1, NULL, dt, 2, d2);
    const char *nv = binary(e, sb, "elementwise_add", masked[k], keep, NULL, dt, 2, d2);
    unary(e, sb, "assign", nv, ex_outer[k], dt, 2, d2);
  }
  for (int k = 0; k < nout && !e->st; k++) {
    const char *v = NULL;
    int64_t d2[2] = {-1, hid[k]}, d1[3] = {1, -1, hid[k]};
    for (int j = 0; j < nst; j++)
      if (out_val[k] == step_val[j]) v = masked[j];
    if (!v) v = binary(e, sb, "elementwise_mul", out_val[k], m, NULL, dt, 2, d2);
    const char *v1 = shaped(e, sb, "unsqueeze2", "axes", 1, zero, v, NULL, dt, 3, d1);
    const char *two[2] = {rev ? v1 : acc[k], rev ? acc[k] : v1};
    const char *c = v1 ? concat(e, sb, 2, two, 0, NULL) : NULL;
    unary(e, sb, "assign", c, acc[k], dt, 3, d1);
  }
  pd_op_desc *inc = add_op(e, sb, "increment");
  set_in(e, inc, "X", 1, &ctr);
  set_out(e, inc, "Out", 1, &ctr);
  attr_f(e, inc, "step", rev ? -1.0f : 1.0f);
  const char *nc = rev ? binary(e, sb, "greater_equal", ctr, lim, NULL, PD_BOOL, 1, one_d)
                       : binary(e, sb, "less_than", ctr, lim, NULL, PD_BOOL, 1, one_d);
  unary(e, sb, "assign", nc, cond, PD_BOOL, 1, one_d);
  /* The while op, then the stacks as the loop's outputs [N, T, H] and the final memories. */
  const char *xs[256];
  int nx = 0;
  if (!e->st) outer_reads(e, sb, xs, &nx);
  const char *wout[2 * MAX_LOOP + 2];
  int nw = 0;
  for (int k = 0; k < nst; k++) wout[nw++] = ex_outer[k];
  for (int k = 0; k < nout; k++) wout[nw++] = acc[k];
  wout[nw++] = ctr;
  wout[nw++] = cond;
  pd_var_desc *ss = e->st ? NULL : pd_block_var(b0, new_var(e, b0, "while.step_scopes", dt, -1,
                                                              NULL));
  if (ss) ss->type = PD_VAR_STEP_SCOPES;
  const char *ssn = ss ? ss->name : NULL;
  pd_op_desc *w = add_op(e, b0, "while");
  set_in(e, w, "X", nx, xs);
  set_in(e, w, "Condition", 1, &cond);
  set_out(e, w, "Out", nw, wout);
  set_out(e, w, "StepScopes", 1, &ssn);
  if (w && !e->st && pd_op_set_attr_block(w, "sub_block", sb->idx)) oom(e);
  attr_b(e, w, "is_test", true);
  for (int k = 0; k < nout && !e->st; k++) {
    const char *sl = slice(e, b0, acc[k], 0, rev ? 0 : 1, rev ? -1 : INT_MAX, false, NULL);
    make_seq(e, out_n[k], L);
    transpose(e, b0, sl, out_n[k], 3, tm3);
    for (int j = 0; j < nst; j++)
      if (strcmp(st_n[j], out_n[k]) == 0 &&
          (pd_strmap_set_ptr(&e->fin, out_n[k], (void *)ex_outer[j]) ||
           pd_strmap_set_int(&e->rev, out_n[k], rev)))
        oom(e);
  }
  if (!e->st) pd_block_remove_op(b0, e->at);  /* the recurrent op */
  for (int k = 0; k < MAX_LOOP; k++)
    pd_free(in_n[k]), pd_free(out_n[k]), pd_free(st_n[k]), pd_free(ex_n[k]), pd_free(s0_n[k]);
  return e->st;
}

/* ---------------------------------------------------------------- the walk over block 0 */

static bool reads_seq(const ex *e, const pd_op_desc *op) {
  for (int s = 0; s < op->ninputs; s++)
    for (int k = 0; k < op->inputs[s].nargs; k++)
      if (lengths_of(e, op->inputs[s].args[k])) return true;
  return false;
}

/* The lengths of the first sequence among op's inputs. */
static const char *op_lengths(const ex *e, const pd_op_desc *op) {
  for (int s = 0; s < op->ninputs; s++)
    for (int k = 0; k < op->inputs[s].nargs; k++) {
      const char *l = lengths_of(e, op->inputs[s].args[k]);
      if (l) return l;
    }
  return NULL;
}

static void outputs_seq(ex *e, const pd_op_desc *op, const char *L) {
  for (int s = 0; s < op->noutputs; s++)
    if (strcmp(op->outputs[s].param, "XShape") != 0)
      for (int k = 0; k < op->outputs[s].nargs; k++) make_seq(e, op->outputs[s].args[k], L);
}

/* reduce_TYPE of x over axis 1 (the time steps) into out. */
static const char *reduce_t(ex *e, const char *type, const char *x, const char *out) {
  int64_t d[8] = {0};
  int nd = var_rank(e, e->b0, x, d);
  for (int i = 1; i + 1 < nd; i++) d[i] = d[i + 1];
  out = unary(e, e->b0, type, x, out, var_dtype(e->b0, x), nd - 1, d);
  pd_op_desc *op = e->st ? NULL : e->b0->ops[e->at - 1];
  const int32_t one[1] = {1};
  attr_is(e, op, "dim", 1, one);
  attr_b(e, op, "keep_dim", false);
  attr_b(e, op, "reduce_all", false);
  return out;
}

/* v ([N]) as [N, 1, ...] of rank nd. */
static const char *col(ex *e, const char *v, int nd) {
  int32_t axes[8];
  int64_t d[8] = {-1};
  for (int i = 1; i < nd && i < 8; i++) axes[i - 1] = i, d[i] = 1;
  return shaped(e, e->b0, "unsqueeze2", "axes", nd - 1, axes, v, NULL, var_dtype(e->b0, v), nd, d);
}

/* sequence_pool of a padded sequence x [N, T, D...] (lengths L [N]) into out [N, D...]: a
 * reduction over T of the steps within each length, masked by the positions t + 1 (a cumsum of
 * ones) compared with the lengths. AVERAGE and SQRT divide by the length (1 for an empty
 * sequence, whose sum is 0); MAX sets the steps past the length to -3e38 first; FIRST is step 0;
 * LAST the step at length - 1. */
static void pool_padded(ex *e, const pd_op_desc *op, const char *x, const char *L,
                        const char *type, const char *out) {
  int64_t d[8] = {0};
  int nd = var_rank(e, e->b0, x, d);
  pd_dtype dt = var_dtype(e->b0, x);
  if (nd < 3 || nd > 8 || !pd_dtype_is_float(dt)) {
    refuse(e, op, "a sequence_pool (%s) of a sequence pdlang cannot mask", type);
    return;
  }
  if (strcmp(type, "FIRST") == 0) {
    slice(e, e->b0, x, 1, 0, 1, true, out);
    return;
  }
  const char *one = x;
  for (int a = 2; a < nd && one; a++) one = slice(e, e->b0, one, a, 0, 1, false, NULL);
  const char *ones = one ? scale(e, e->b0, one, 0.0f, 1.0f) : NULL;
  int64_t pd[8] = {0};
  var_rank(e, e->b0, ones, pd);
  const char *pos = ones ? unary(e, e->b0, "cumsum", ones, NULL, dt, nd, pd) : NULL;
  attr_i(e, e->st ? NULL : e->b0->ops[e->at - 1], "axis", 1);
  const char *lf = pos ? cast(e, e->b0, L, dt) : NULL;
  const char *lr = lf ? col(e, lf, nd) : NULL;
  bool last = strcmp(type, "LAST") == 0;
  const char *cmp = lr ? binary(e, e->b0, last ? "equal" : "less_equal", pos, lr, NULL, PD_BOOL,
                                nd, pd)
                       : NULL;
  const char *m = cmp ? cast(e, e->b0, cmp, dt) : NULL;
  const char *xm = m ? binary(e, e->b0, "elementwise_mul", x, m, NULL, dt, nd, d) : NULL;
  if (!xm) return;
  if (strcmp(type, "MAX") == 0) {
    const char *big = scale(e, e->b0, m, 3.0e38f, -3.0e38f); /* 0 within, -3e38 past */
    const char *xb = big ? binary(e, e->b0, "elementwise_add", xm, big, NULL, dt, nd, d) : NULL;
    if (xb) reduce_t(e, "reduce_max", xb, out);
    return;
  }
  if (last || strcmp(type, "SUM") == 0) {
    reduce_t(e, "reduce_sum", xm, out);
    return;
  }
  if (strcmp(type, "AVERAGE") != 0 && strcmp(type, "SQRT") != 0) {
    refuse(e, op, "a sequence_pool of type %s", type);
    return;
  }
  const char *sum = reduce_t(e, "reduce_sum", xm, NULL);
  int64_t one1[1] = {1}, n1[1] = {-1};
  const char *f1 = sum ? fill(e, e->b0, dt, 1, one1, 1.0f) : NULL;
  const char *n = f1 ? binary(e, e->b0, "elementwise_max", lf, f1, NULL, dt, 1, n1) : NULL;
  if (n && type[0] == 'S') n = unary(e, e->b0, "sqrt", n, NULL, dt, 1, n1);
  const char *nc = n ? col(e, n, nd - 1) : NULL;
  int64_t od[8] = {0};
  var_rank(e, e->b0, sum, od);
  if (nc) binary(e, e->b0, "elementwise_div", sum, nc, out, dt, nd - 1, od);
}

static void bump_attr(ex *e, pd_op_desc *op, const char *name, int def) {
  const pd_attr *a = pd_op_attr(op, name);
  attr_i(e, op, name, (a && a->type == PD_ATTR_INT ? a->v.i : def) + 1);
}

/* One op of block 0 that reads a sequence (or a loop): rewritten, or refused. Returns the index
 * of the next op to look at. */
static int rewrite_op(ex *e, int i) {
  pd_op_desc *op = e->b0->ops[i];
  e->loc = op->loc;
  e->src = op;
  const char *L = op_lengths(e, op);
  const pd_opdef *d = pd_opdef_lookup(op->type);
  if (strcmp(op->type, "recurrent") == 0) {
    loop_to_while(e, i);
    return e->at;
  }
  if (strcmp(op->type, "fused_lstm") == 0 || strcmp(op->type, "fused_gru") == 0) {
    gated_to_rnn(e, i);
    return e->at;
  }
  for (int s = 0; s < op->ninputs && strcmp(op->type, "sequence_pool") != 0; s++)
    for (int k = 0; k < op->inputs[s].nargs; k++)
      if (pd_strmap_find(&e->nocell, op->inputs[s].args[k]))
        return refuse(e, op, "it reads the cell state of every step of an lstm (%s): the rnn "
                      "op gives the last one only", op->inputs[s].args[k]), i;
  if (strcmp(op->type, "sequence_pool") == 0) {
    const char *x = in_arg(op, "X"), *out = pd_op_output1(op, "Out");
    const pd_attr *pt = pd_op_attr(op, "pooltype");
    const char *fv = x ? pd_strmap_get_ptr(&e->fin, x) : NULL;
    int64_t rev = 0;
    pd_strmap_get_int(&e->rev, x ? x : "", &rev);
    const char *want = rev ? "FIRST" : "LAST";
    if (!pt || pt->type != PD_ATTR_STRING || !out || !x || !L)
      return refuse(e, op, "%s", "a sequence_pool without its input, output or pooltype"), i;
    char *o = pd_strdup(out), *xs = pd_strdup(x);
    if (!o || !xs) {
      pd_free(o), pd_free(xs);
      oom(e);
      return i;
    }
    e->at = i;
    if (fv && strcmp(pt->v.s, want) == 0) /* a loop's last memory: its final value */
      unary(e, e->b0, "assign", fv, o, var_dtype(e->b0, fv), -1, NULL);
    else
      pool_padded(e, op, xs, L, pt->v.s, o);
    pd_free(o), pd_free(xs);
    if (!e->st) pd_block_remove_op(e->b0, e->at);
    return e->at;
  }
  if (strcmp(op->type, "mul") == 0 || strcmp(op->type, "fc") == 0) {
    bool mul = op->type[0] == 'm';
    if (lengths_of(e, in_arg(op, mul ? "Y" : "W")) ||
        !lengths_of(e, in_arg(op, mul ? "X" : "Input")))
      return refuse(e, op, "%s", "its weight is a sequence"), i;
    bump_attr(e, op, mul ? "x_num_col_dims" : "in_num_col_dims", 1);
  } else if (d && (d->flags & PD_OPF_ROW_XY)) {
    const pd_attr *ax = pd_op_attr(op, "axis");
    const char *x = in_arg(op, "X"), *y = in_arg(op, "Y");
    /* a value aligned with an axis of the rows after the first (fc's bias, axis 1) is aligned
     * one axis further in the padded [N, T, ...] */
    bool shifted = !lengths_of(e, y) && ax && ax->type == PD_ATTR_INT && ax->v.i >= 1;
    if (!lengths_of(e, x) || (lengths_of(e, y) && lengths_of(e, y) != lengths_of(e, x)) ||
        (!lengths_of(e, y) && ax && ax->v.i != -1 && !shifted))
      return refuse(e, op, "%s", "its operands are not a sequence and rows of the same batch or "
                    "a value broadcast along the last axes or an axis after the first"), i;
    if (shifted) bump_attr(e, op, "axis", 0);
  } else if (strcmp(op->type, "lookup_table") == 0) {
    if (lengths_of(e, in_arg(op, "W"))) return refuse(e, op, "%s", "its table is a sequence"), i;
  } else if (!(strcmp(op->type, "assign") == 0 ||
               (d && (d->flags & PD_OPF_ROW_X) && op->ninputs <= 1))) {
    return refuse(e, op, "%s", "it reads a batch of sequences"), i;
  }
  outputs_seq(e, op, L);
  return i + 1;
}

/* ---------------------------------------------------------------- an if over rows */

/* Whether op computes row i of its outputs from row i of its row inputs alone (and whole
 * tensors otherwise): then it gives the same rows run on all of a batch as on a part. */
static bool row_wise(const pd_op_desc *op) {
  const pd_opdef *d = pd_opdef_lookup(op->type);
  return (d && (d->flags & PD_OPF_ROW_ANY)) || strcmp(op->type, "assign") == 0 ||
         strcmp(op->type, "fill_constant") == 0 || strcmp(op->type, "fc") == 0 ||
         strcmp(op->type, "cast") == 0;
}

/* An if over a batch's rows (split_lod_tensor, a conditional_block a side, merge_lod_tensor),
 * which PaddlePaddle 2.5 on lacks, as both sides computed on every row and `where` choosing
 * each row's: the splits become copies, the blocks' ops (row-wise ones only) move into block 0,
 * each merge is where(mask, true side, false side), the mask [N, 1] broadcast to the side's
 * shape by adding zeros made from it (cast to bool and back, times 0: no NaN comes through). */
static void rows_if_to_where(ex *e) {
  pd_block *b0 = e->b0;
  for (int i = 0; i < b0->nops && !e->st; i++) {
    pd_op_desc *op = b0->ops[i];
    e->loc = op->loc;
    e->src = op;
    if (strcmp(op->type, "split_lod_tensor") == 0) {
      const char *x = pd_op_input1(op, "X");
      const char *sides[2] = {pd_op_output1(op, "OutTrue"), pd_op_output1(op, "OutFalse")};
      char *xs = x ? pd_strdup(x) : NULL, *o[2] = {NULL, NULL};
      for (int k = 0; k < 2; k++) o[k] = sides[k] ? pd_strdup(sides[k]) : NULL;
      if (!xs) {
        refuse(e, op, "%s", "a split without its input");
      } else {
        e->at = i + 1;
        for (int k = 0; k < 2 && !e->st; k++)
          if (o[k]) unary(e, b0, "assign", xs, o[k], var_dtype(b0, xs), -1, NULL);
        if (!e->st) pd_block_remove_op(b0, i);
        i = e->at - 2;
      }
      pd_free(xs), pd_free(o[0]), pd_free(o[1]);
    } else if (strcmp(op->type, "conditional_block") == 0) {
      const pd_attr *sc = pd_op_attr(op, "is_scalar_condition");
      const pd_attr *sb = pd_op_attr(op, "sub_block");
      if (sc && sc->type == PD_ATTR_BOOLEAN && sc->v.b) continue;
      pd_block *body = sb && sb->type == PD_ATTR_BLOCK ? pd_program_block(e->p, sb->v.i) : NULL;
      if (!body) {
        refuse(e, op, "%s", "an if over rows without its block");
        break;
      }
      for (int k = 0; k < body->nops; k++)
        if (!row_wise(body->ops[k])) {
          char what[160];
          snprintf(what, sizeof what, "an if over a batch's rows whose block has %s, which is "
                   "not row-wise (PaddlePaddle runs both sides on every row)", body->ops[k]->type);
          e->src = body->ops[k];
          refuse(e, body->ops[k], "%s", what);
          break;
        }
      for (int k = 0; k < body->nvars && !e->st; k++) {
        const pd_var_desc *v = body->vars[k];
        pd_var_desc *nv = pd_block_find_var_local(b0, v->name) ? NULL : pd_block_var(b0, v->name);
        if (!nv || pd_var_set_shape(nv, v->ndims, v->dims)) {
          if (nv) oom(e);
          else refuse(e, op, "an if over rows whose block declares %s again", v->name);
          break;
        }
        nv->dtype = v->dtype, nv->type = v->type, nv->lod_level = v->lod_level;
      }
      for (int k = 0; k < body->nops && !e->st; k++)
        if (!pd_block_copy_op(b0, i + 1 + k, body->ops[k])) oom(e);
      if (e->st) break;
      int n = body->nops;
      while (body->nops) pd_block_remove_op(body, body->nops - 1);
      pd_block_remove_op(b0, i);
      i += n - 1;
    } else if (strcmp(op->type, "merge_lod_tensor") == 0) {
      const char *m = pd_op_input1(op, "Mask"), *t = pd_op_input1(op, "InTrue");
      const char *f = pd_op_input1(op, "InFalse"), *out = pd_op_output1(op, "Out");
      if (!m || !t || !f || !out) {
        refuse(e, op, "%s", "a merge without its mask, sides or output");
        break;
      }
      char *names = NULL;
      size_t lm = strlen(m) + 1, lt = strlen(t) + 1, lf = strlen(f) + 1, lo = strlen(out) + 1;
      if (!(names = pd_malloc(lm + lt + lf + lo))) {
        oom(e);
        break;
      }
      char *M = memcpy(names, m, lm), *Ts = memcpy(names + lm, t, lt);
      char *Fs = memcpy(names + lm + lt, f, lf), *O = memcpy(names + lm + lt + lf, out, lo);
      int64_t d[8] = {0};
      int nd = var_rank(e, b0, Ts, d);
      pd_dtype dt = var_dtype(b0, Ts);
      e->at = i;
      const char *tb = cast(e, b0, Ts, PD_BOOL);
      const char *tf = tb ? cast(e, b0, tb, dt) : NULL;
      const char *z = tf ? scale(e, b0, tf, 0.0f, 0.0f) : NULL;
      const char *mf = z ? cast(e, b0, M, dt) : NULL;
      const char *mz = mf ? binary(e, b0, "elementwise_add", z, mf, NULL, dt, nd, d) : NULL;
      const char *cb = mz ? cast(e, b0, mz, PD_BOOL) : NULL;
      pd_op_desc *w = cb ? add_op(e, b0, "where") : NULL;
      set_in(e, w, "Condition", 1, &cb);
      set_in(e, w, "X", 1, (const char *const *)&Ts);
      set_in(e, w, "Y", 1, (const char *const *)&Fs);
      set_out(e, w, "Out", 1, (const char *const *)&O);
      pd_free(names);
      if (e->st) break;
      pd_block_remove_op(b0, e->at);
      i = e->at - 1;
    }
  }
}

bool pd_program_needs_paddle_export(const pd_program *p) {
  const pd_block *b0 = p->blocks[0];
  for (int i = 0; i < b0->nvars; i++)
    if (b0->vars[i]->lod_level > 0) return true;
  for (int i = 0; i < b0->nops; i++)
    if (strcmp(b0->ops[i]->type, "recurrent") == 0 ||
        strcmp(b0->ops[i]->type, "split_lod_tensor") == 0)
      return true;
  return false;
}

pd_status pd_program_for_paddle(const pd_program *in, int nfeed, const char *const *feed_names,
                                int ntargets, const char *const *targets, pd_program **out,
                                const char ***feeds, int *nfeeds, pd_error *err) {
  *out = NULL;
  *feeds = NULL;
  *nfeeds = 0;
  ex e = {.err = err};
  pd_strmap_init(&e.seq, true);
  pd_strmap_init(&e.fin, true);
  pd_strmap_init(&e.rev, true);
  pd_strmap_init(&e.nocell, true);
  const char **fl = pd_calloc((size_t)(2 * nfeed + 1), sizeof *fl);
  if (!fl || !(e.p = pd_program_clone(in))) oom(&e);
  if (!e.st) e.st = pd_program_hoist(e.p, NULL, err);
  int nf = 0;
  if (!e.st) e.b0 = e.p->blocks[0];
  /* An if over rows first: its blocks' ops join block 0, where the rest may rewrite them. */
  if (!e.st) rows_if_to_where(&e);
  /* The lstm and gru layers' loops first, while their inputs are still sequences. */
  for (int i = 0; !e.st && e.b0 && i < e.b0->nops; i++) {
    bool done;
    if (strcmp(e.b0->ops[i]->type, "recurrent") == 0)
      e.st = pd_fuse_gated_loop(e.p, e.b0, i, &done, err);
  }
  /* The sequence inputs: padded rows, and their lengths beside them. */
  for (int k = 0; k < nfeed && !e.st; k++) {
    pd_var_desc *v = pd_block_find_var_local(e.b0, feed_names[k]);
    fl[nf++] = v ? v->name : feed_names[k];
    if (!v || v->lod_level == 0) continue;
    if (v->lod_level > 1) {
      e.st = pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0}, "input %s holds nested "
                          "sequences (%d LoD levels), which a model for PaddlePaddle cannot take "
                          "(one level: padded rows and lengths)", v->name, v->lod_level);
      break;
    }
    char ln[256];
    snprintf(ln, sizeof ln, "%s%s", v->name, PD_EXPORT_LENGTHS_SUFFIX);
    if (pd_program_has_var_name(e.p, ln)) {
      e.st = pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0}, "the lengths of sequence input %s "
                          "would be the input %s, but the model has a var of that name", v->name,
                          ln);
      break;
    }
    int64_t n1[1] = {-1};
    pd_var_desc *lv = pd_block_var(e.b0, ln);
    if (!lv || pd_var_set_shape(lv, 1, n1)) {
      oom(&e);
      break;
    }
    lv->dtype = PD_INT64;
    lv->stop_gradient = true;
    fl[nf++] = lv->name;
    make_seq(&e, v->name, lv->name);
  }
  for (int i = 0; !e.st && e.b0 && i < e.b0->nops;) {
    const pd_op_desc *op = e.b0->ops[i];
    if (strcmp(op->type, "recurrent") == 0 || reads_seq(&e, op)) i = rewrite_op(&e, i);
    else i++;
  }
  for (int k = 0; k < ntargets && !e.st; k++)
    if (pd_strmap_find(&e.nocell, targets[k]))
      e.st = pd_error_set(err, PD_EUNSUPPORTED, (pd_loc){0}, "%s is the cell state of "
                          "every step of an lstm, which the rnn op of a model for PaddlePaddle "
                          "does not give (its last one, the lstm's third result, it does)",
                          targets[k]);
  if (!e.st) e.st = pd_program_prune(e.p, ntargets, targets, out, err);
  if (!e.st) {
    /* the feed names, now in *out */
    for (int k = 0; k < nf; k++) {
      const pd_var_desc *v = pd_block_find_var_local((*out)->blocks[0], fl[k]);
      fl[k] = v ? v->name : fl[k];
      if (!v) {
        /* an input that only the dropped ops read: still one of the model's inputs */
        pd_var_desc *nv = pd_block_var((*out)->blocks[0], fl[k]);
        const pd_var_desc *ov = pd_block_find_var_local(e.p->blocks[0], fl[k]);
        if (!nv || !ov || pd_var_set_shape(nv, ov->ndims, ov->dims)) {
          oom(&e);
          break;
        }
        nv->dtype = ov->dtype;
        fl[k] = nv->name;
      }
    }
  }
  pd_program_free(e.p);
  pd_strmap_free(&e.seq);
  pd_strmap_free(&e.fin);
  pd_strmap_free(&e.rev);
  pd_strmap_free(&e.nocell);
  if (e.st) {
    pd_program_free(*out);
    *out = NULL;
    pd_free(fl);
    return e.st;
  }
  *feeds = fl;
  *nfeeds = nf;
  return PD_OK;
}

/* ---------------------------------------------------------------- feeding padded inputs */

bool pd_export_padded_input(const pd_program *p, const char *name) {
  char ln[256];
  snprintf(ln, sizeof ln, "%s%s", name, PD_EXPORT_LENGTHS_SUFFIX);
  const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], name);
  const pd_var_desc *l = pd_block_find_var_local(p->blocks[0], ln);
  if (!v || !l || v->lod_level != 0 || v->ndims < 3 || l->dtype != PD_INT64 || l->ndims != 1)
    return false;
  for (int i = 0; i < p->blocks[0]->nops; i++) {
    const pd_op_desc *op = p->blocks[0]->ops[i];
    const char *o = pd_op_output1(op, "Out");
    if (strcmp(op->type, "feed") == 0 && o && strcmp(o, ln) == 0) return true;
  }
  return false;
}

pd_status pd_export_pad_rows(pd_dtype dt, int nd, const int64_t *dims, const void *rows,
                             int64_t nseq, const int64_t *lengths, pd_tensor *out) {
  if (nd < 1 || nd + 1 > PD_TENSOR_MAX_DIMS || nseq < 1) return PD_ESHAPE;
  int64_t total = 0, t = 1, w = 1;
  for (int64_t i = 0; i < nseq; i++) {
    if (lengths[i] < 0) return PD_ESHAPE;
    total += lengths[i];
    if (lengths[i] > t) t = lengths[i];
  }
  if (total != dims[0]) return PD_ESHAPE;
  int64_t pd[PD_TENSOR_MAX_DIMS];
  pd[0] = nseq;
  pd[1] = t;
  for (int k = 1; k < nd; k++) w *= dims[k], pd[k + 1] = dims[k];
  pd_tensor p;
  pd_tensor_init(&p);
  if (pd_tensor_resize(&p, dt, nd + 1, pd)) return PD_ENOMEM;
  size_t es = pd_dtype_size(dt), row = (size_t)w * es;
  char *dst = pd_tensor_data(&p);
  const char *src = rows;
  memset(dst, 0, (size_t)(nseq * t) * row);
  for (int64_t i = 0; i < nseq; i++) {
    if (lengths[i]) memcpy(dst + (size_t)(i * t) * row, src, (size_t)lengths[i] * row);
    src += (size_t)lengths[i] * row;
  }
  pd_tensor_release(out);
  *out = p;
  return PD_OK;
}
