/* fuse_gated.c -- the part of the fuse_rnn pass (vm/passes/fuse_rnn.h) that recognises the step
 * blocks of stdlib/layers.pd's lstm and gru, after hoisting, and makes each loop one fused_lstm
 * or fused_gru op (vm/ops/rnn_fused.c). */
#include "config.h"
#include "vm/passes/fuse_rnn.h"

#include <stdio.h>
#include <string.h>

#include "vm/ops/ops.h"

enum { MAX_PAT = 24 };

/* A match in progress: the step block, the ops the pattern used (indices; repeats allowed). */
typedef struct pat {
  const pd_block *step;
  int used[MAX_PAT], n;
} pat;

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static const char *one_arg(const pd_slot *s) {
  return s && s->nargs == 1 && strcmp(s->args[0], PD_EMPTY_VAR_NAME) != 0 ? s->args[0] : NULL;
}
static const char *in1(const pd_op_desc *op, const char *slot) {
  return one_arg(pd_op_input(op, slot));
}
static bool no_in(const pd_op_desc *op, const char *slot) {
  const pd_slot *s = pd_op_input(op, slot);
  return !s || s->nargs == 0;
}

static int64_t int_attr(const pd_op_desc *op, const char *name, int64_t def) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a) return def;
  return a->type == PD_ATTR_INT ? a->v.i : a->type == PD_ATTR_LONG ? a->v.l : def;
}

/* A var of the step block alone, of rank 2. */
static bool local2(const pd_block *step, const char *name) {
  const pd_var_desc *d = name ? pd_block_find_var_local(step, name) : NULL;
  return d && d->type == PD_VAR_LOD_TENSOR && d->ndims == 2;
}

/* The op of the step block of kind `kind` that writes var (as output number *pos of its one
 * output slot "Out"); recorded as used. NULL when none does. */
static const pd_op_desc *writer(pat *m, const char *var, pd_op_kind kind, int *pos) {
  if (!var || !local2(m->step, var)) return NULL;
  for (int i = 0; i < m->step->nops; i++) {
    const pd_op_desc *op = m->step->ops[i];
    const pd_slot *o = pd_op_output(op, "Out");
    if (!o || op->noutputs != 1) continue;
    for (int a = 0; a < o->nargs; a++) {
      if (!is(o->args[a], var)) continue;
      if (!pd_opdef_is(op, kind) || m->n >= MAX_PAT) return NULL;
      m->used[m->n++] = i;
      if (pos) *pos = a;
      return op;
    }
  }
  return NULL;
}

/* var = unary(x): x, or NULL. */
static const char *unary(pat *m, const char *var, pd_op_kind kind) {
  const pd_op_desc *op = writer(m, var, kind, NULL);
  return op ? in1(op, "X") : NULL;
}

/* var = binary(x, y) (elementwise ops with axis -1, mul of rank-2 operands): *x, *y. */
static bool binary(pat *m, const char *var, pd_op_kind kind, const char **x, const char **y) {
  const pd_op_desc *op = writer(m, var, kind, NULL);
  if (!op) return false;
  if (kind == PD_OP_mul ? int_attr(op, "x_num_col_dims", 1) != 1 ||
                              int_attr(op, "y_num_col_dims", 1) != 1
                        : int_attr(op, "axis", -1) != -1)
    return false;
  *x = in1(op, "X");
  *y = in1(op, "Y");
  return *x && *y;
}

/* var is output number want of split(src, num) along the last of two axes: src. */
static const char *split_of(pat *m, const char *var, int num, int want) {
  int pos = -1;
  const pd_op_desc *op = writer(m, var, PD_OP_split, &pos);
  const pd_attr *sec = op ? pd_op_attr(op, "sections") : NULL;
  if (!op || pos != want || int_attr(op, "num", 0) != num || pd_op_output(op, "Out")->nargs != num ||
      (int_attr(op, "axis", 0) != 1 && int_attr(op, "axis", 0) != -1) || (sec && sec->n > 0) ||
      !no_in(op, "AxisTensor") || !no_in(op, "SectionsTensorList"))
    return NULL;
  return in1(op, "X");
}

/* Did the match use every op of the step block (and no more than `count` distinct ones)? */
static bool covers(const pat *m, int count) {
  if (m->step->nops != count) return false;
  int distinct = 0;
  for (int i = 0; i < m->n; i++) {
    bool seen = false;
    for (int j = 0; j < i && !seen; j++) seen = m->used[j] == m->used[i];
    distinct += !seen;
  }
  return distinct == count;
}

/* x = mul(mem, W), W a rank-2 var from outside the step block: W. */
static const char *recurrent_product(pat *m, const char *x, const char *mem) {
  const char *a, *w;
  if (!binary(m, x, PD_OP_mul, &a, &w) || !is(a, mem) || pd_block_find_var_local(m->step, w))
    return NULL;
  const pd_var_desc *wd = pd_block_find_var(m->step, w);
  return wd && wd->ndims == 2 ? w : NULL;
}

/* ---- LSTM: with h the memory hm (previous) / hs (new), c likewise, u the step input:
 *   p = mul(hm, W); a = u + p; i, f, g, o = split(a, 4, axis 1)
 *   cs = sigmoid(f) * cm + sigmoid(i) * tanh(g); hs = sigmoid(o) * tanh(cs)
 * (every add and multiply either way round). */

/* var = sigmoid(s) * other (either order): s. */
static const char *sig_times(pat *m, const char *var, const char *other, pd_op_kind okind,
                             const char **oin) {
  const char *x, *y;
  if (!binary(m, var, PD_OP_elementwise_mul, &x, &y)) return NULL;
  for (int swap = 0; swap < 2; swap++) {
    const char *sv = swap ? y : x, *ov = swap ? x : y;
    pat save = *m;
    const char *s = unary(m, sv, PD_OP_sigmoid);
    if (s && !other && oin && (*oin = unary(m, ov, okind))) return s;
    if (s && other && is(ov, other)) return s;
    *m = save;
  }
  return NULL;
}

static bool lstm_cell(pat *m, const char *u, const char *hm, const char *hs, const char *cm,
                      const char *cs, const char **w) {
  const char *tc = NULL, *o = sig_times(m, hs, NULL, PD_OP_tanh, &tc);
  const char *x, *y;
  if (!o || !is(tc, cs) || !binary(m, cs, PD_OP_elementwise_add, &x, &y)) return false;
  const char *f = NULL, *i = NULL, *g = NULL;
  for (int swap = 0; swap < 2 && !g; swap++) {
    pat save = *m;
    f = sig_times(m, swap ? y : x, cm, 0, NULL);
    i = f ? sig_times(m, swap ? x : y, NULL, PD_OP_tanh, &g) : NULL;
    if (!i || !g) {
      *m = save;
      g = NULL;
    }
  }
  if (!g) return false;
  const char *a = split_of(m, i, 4, 0);
  if (!a || !is(split_of(m, f, 4, 1), a) || !is(split_of(m, g, 4, 2), a) ||
      !is(split_of(m, o, 4, 3), a) || !binary(m, a, PD_OP_elementwise_add, &x, &y))
    return false;
  *w = recurrent_product(m, is(x, u) ? y : is(y, u) ? x : NULL, hm);
  return *w && covers(m, 12);
}

/* ---- GRU: with h the memory hm / hs, u the step input:
 *   xr, xz, xn = split(u, 3); p = mul(hm, W); q = p + b; hr, hz, hn = split(q, 3)
 *   r = sigmoid(xr + hr); z = sigmoid(xz + hz); n = tanh(xn + r * hn)
 *   hs = scale(z, -1, bias 1) * n + z * hm */

/* var = add(a, b) with a from split(src_a) at pos and b from split(src_b) at pos (either
 * order): true. */
static bool add_of_splits(pat *m, const char *var, const char *ua, int pos, const char **hsrc,
                          const char **hpart) {
  const char *x, *y;
  if (!binary(m, var, PD_OP_elementwise_add, &x, &y)) return false;
  for (int swap = 0; swap < 2; swap++) {
    pat save = *m;
    const char *xs = swap ? y : x, *hv = swap ? x : y;
    if (is(split_of(m, xs, 3, pos), ua)) {
      const char *src = split_of(m, hv, 3, pos);
      if (src && (!*hsrc || is(src, *hsrc))) {
        *hsrc = src;
        if (hpart) *hpart = hv;
        return true;
      }
    }
    *m = save;
  }
  return false;
}

static bool one_minus(pat *m, const char *var, const char *z) {
  int pos;
  const pd_op_desc *op = writer(m, var, PD_OP_scale, &pos);
  const pd_attr *sc = op ? pd_op_attr(op, "scale") : NULL, *b = op ? pd_op_attr(op, "bias") : NULL;
  const pd_attr *after = op ? pd_op_attr(op, "bias_after_scale") : NULL;
  return op && is(in1(op, "X"), z) && no_in(op, "ScaleTensor") && sc &&
         sc->type == PD_ATTR_FLOAT && sc->v.f == -1.0f && b && b->type == PD_ATTR_FLOAT &&
         b->v.f == 1.0f && (!after || (after->type == PD_ATTR_BOOLEAN && after->v.b));
}

static bool gru_cell(pat *m, const char *u, const char *hm, const char *hs, const char **w,
                     const char **bias) {
  const char *x, *y, *n = NULL, *z = NULL;
  if (!binary(m, hs, PD_OP_elementwise_add, &x, &y)) return false;
  /* one side (1 - z) * n, the other z * hm */
  for (int swap = 0; swap < 2 && !n; swap++) {
    pat save = *m;
    const char *a, *b, *c, *d;
    if (binary(m, swap ? y : x, PD_OP_elementwise_mul, &a, &b) &&
        binary(m, swap ? x : y, PD_OP_elementwise_mul, &c, &d)) {
      z = is(c, hm) ? d : is(d, hm) ? c : NULL;
      for (int s2 = 0; z && s2 < 2 && !n; s2++) {
        pat inner = *m;
        if (one_minus(m, s2 ? b : a, z)) n = s2 ? a : b;
        else *m = inner;
      }
    }
    if (!n) *m = save;
  }
  const char *zr = n ? unary(m, z, PD_OP_sigmoid) : NULL, *nr = n ? unary(m, n, PD_OP_tanh) : NULL;
  const char *q = NULL, *r = NULL, *hn = NULL;
  if (!zr || !nr || !add_of_splits(m, zr, u, 1, &q, NULL) || !binary(m, nr, PD_OP_elementwise_add,
                                                                       &x, &y))
    return false;
  /* nr = xn + r * hn */
  for (int swap = 0; swap < 2 && !hn; swap++) {
    pat save = *m;
    const char *a, *b;
    if (is(split_of(m, swap ? y : x, 3, 2), u) &&
        binary(m, swap ? x : y, PD_OP_elementwise_mul, &a, &b)) {
      for (int s2 = 0; s2 < 2 && !hn; s2++) {
        pat inner = *m;
        const char *rv = s2 ? b : a, *hv = s2 ? a : b;
        if (is(split_of(m, hv, 3, 2), q) && (r = unary(m, rv, PD_OP_sigmoid))) hn = hv;
        else *m = inner;
      }
    }
    if (!hn) *m = save;
  }
  if (!hn || !add_of_splits(m, r, u, 0, &q, NULL) || !binary(m, q, PD_OP_elementwise_add, &x, &y))
    return false;
  for (int swap = 0; swap < 2; swap++) {
    pat save = *m;
    const char *pv = swap ? y : x, *bv = swap ? x : y;
    const pd_var_desc *bd = pd_block_find_var(m->step, bv);
    if (!pd_block_find_var_local(m->step, bv) && bd && bd->ndims == 1 &&
        (*w = recurrent_product(m, pv, hm))) {
      *bias = bv;
      return covers(m, 15);
    }
    *m = save;
  }
  return false;
}

/* ---- The rewrite */

/* A new var of outer named after base (base.suffix, made unique), [-1, cols] with one LoD
 * level, dtype dt: its name (owned by outer), or NULL when out of memory. */
static const char *new_seq_var(pd_block *outer, const char *base, const char *suffix,
                               pd_dtype dt, int64_t cols) {
  char name[256];
  for (int k = 0;; k++) {
    if (k) snprintf(name, sizeof name, "%s.%s_%d", base, suffix, k);
    else snprintf(name, sizeof name, "%s.%s", base, suffix);
    if (!pd_block_find_var(outer, name)) break;
  }
  pd_var_desc *v = pd_block_var(outer, name);
  int64_t dims[2] = {-1, cols};
  if (!v || pd_var_set_shape(v, 2, dims)) return NULL;
  v->dtype = dt;
  v->lod_level = 1;
  return v->name;
}

/* The initial value of memory number i of the loop, or NULL. */
static const char *initial(const pd_op_desc *op, int i) {
  const pd_slot *s = pd_op_input(op, "initial_states");
  return s && i < s->nargs && strcmp(s->args[i], PD_EMPTY_VAR_NAME) != 0 ? s->args[i] : NULL;
}

static bool attr_strings(const pd_op_desc *op, const char *name, int n, const char **out) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a || a->type != PD_ATTR_STRINGS || a->n != n) return false;
  for (int i = 0; i < n; i++) out[i] = a->strings[i];
  return true;
}

/* Is every output of the loop one of the n vars of keep (and keep[0] among them)? *has receives
 * for each whether it is. */
static bool outputs_among(const pd_op_desc *op, const char *const *keep, int n, bool *has) {
  const pd_slot *o = pd_op_output(op, "outputs");
  for (int k = 0; k < n; k++) has[k] = false;
  for (int a = 0; o && a < o->nargs; a++) {
    bool found = false;
    for (int k = 0; k < n && !found; k++)
      if (is(o->args[a], keep[k])) found = has[k] = true;
    if (!found) return false;
  }
  return has[0];
}

pd_status pd_fuse_gated_loop(pd_program *p, pd_block *outer, int at, bool *done,
                             pd_error *err) {
  *done = false;
  pd_op_desc *op = outer->ops[at];
  const pd_attr *sa = pd_op_attr(op, "sub_block"), *pp = pd_op_attr(op, "param_products");
  const pd_block *step = sa && sa->type == PD_ATTR_BLOCK ? pd_program_block(p, sa->v.i) : NULL;
  const pd_slot *ins = pd_op_input(op, "inputs");
  if (!step || step == outer || step->parent_idx != outer->idx || (pp && pp->n > 0) || !ins ||
      ins->nargs != 1 || !pd_fuse_rnn_leaf_block(p, step->idx))
    return PD_OK;
  const char *u = ins->args[0];
  const pd_var_desc *ud = pd_block_find_var(outer, u);
  if (!ud || ud->lod_level != 1 || ud->ndims != 2 || !local2(step, u)) return PD_OK;
  const char *ex[2], *states[2], *w = NULL, *bias = NULL;
  bool lstm = false, gru = false;
  int hi = 0;
  if (attr_strings(op, "ex_states", 2, ex) && attr_strings(op, "states", 2, states)) {
    for (hi = 0; hi < 2 && !lstm; hi++) {
      pat m = {.step = step};
      lstm = lstm_cell(&m, u, ex[hi], states[hi], ex[1 - hi], states[1 - hi], &w);
    }
    hi--;
  } else if (attr_strings(op, "ex_states", 1, ex) && attr_strings(op, "states", 1, states)) {
    pat m = {.step = step};
    gru = gru_cell(&m, u, ex[0], states[0], &w, &bias);
  }
  if (!lstm && !gru) return PD_OK;
  const char *keep[2] = {states[hi], lstm ? states[1 - hi] : NULL};
  bool has[2];
  if (!outputs_among(op, keep, lstm ? 2 : 1, has)) return PD_OK;
  const pd_var_desc *wd = pd_block_find_var(outer, w);
  int64_t hid = wd && wd->ndims == 2 ? wd->dims[1] : -1;
  const char *h0 = initial(op, hi), *c0 = lstm ? initial(op, 1 - hi) : NULL;
  const char *cell = lstm && has[1] ? states[1 - hi] : NULL, *gate = NULL;
  bool made_cell = false;
  pd_op_desc *f = pd_block_add_op(outer, lstm ? "fused_lstm" : "fused_gru", at);
  if (!f) goto nomem;
  if (lstm && !cell) {
    if (!(cell = new_seq_var(outer, states[hi], "cell", ud->dtype, hid >= 0 ? hid / 4 : -1)))
      goto nomem;
    made_cell = true;
  }
  if (!(gate = new_seq_var(outer, states[hi], "gate", ud->dtype,
                           hid >= 0 ? (lstm ? hid : hid / 3 * 4) : -1)))
    goto nomem;
  if (pd_op_copy_loc(f, op) || pd_op_set_input(f, "Input", 1, &u) ||
      (h0 && pd_op_set_input(f, "H0", 1, &h0)) || (c0 && pd_op_set_input(f, "C0", 1, &c0)) ||
      pd_op_set_input(f, "Weight", 1, &w) || (bias && pd_op_set_input(f, "Bias", 1, &bias)) ||
      pd_op_set_output(f, "Hidden", 1, &states[hi]) ||
      (cell && pd_op_set_output(f, "Cell", 1, &cell)) ||
      pd_op_set_output(f, "BatchGate", 1, &gate) ||
      pd_op_set_attr_bool(f, "is_reverse", pd_op_attr(op, "reverse") &&
                                               pd_op_attr(op, "reverse")->type == PD_ATTR_BOOLEAN &&
                                               pd_op_attr(op, "reverse")->v.b))
    goto nomem;
  /* Shapes the loop would only reject at run time keep the loop. */
  pd_error e = {0};
  pd_status st = pd_opdef_prepare(f, outer, &e);
  pd_error_clear(&e);
  if (st == PD_ENOMEM) goto nomem;
  if (st) {
    pd_block_remove_op(outer, at);
    pd_block_remove_var(outer, gate);
    if (made_cell) pd_block_remove_var(outer, cell);
    return PD_OK;
  }
  const char *scopes = one_arg(pd_op_output(op, "step_scopes"));
  char *kept = scopes ? pd_strdup(scopes) : NULL;
  if (scopes && !kept) goto nomem;
  pd_block_remove_op(outer, at + 1);
  if (kept) pd_block_remove_var(outer, kept);
  pd_free(kept);
  *done = true;
  return PD_OK;
nomem:
  return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}
