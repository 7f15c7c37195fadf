/* decompile_attn.c -- the decompiler's stdlib multi_head_attention calls: the run of block 0's
 * ops that a call compiles to and save keeps (q, k and v each projected by linear's mul and
 * add, split into heads by reshape2 and transpose2; the scores, scale and matmul_v2; the ops
 * that make the mask of the call's argument and its add; softmax, dropout, the product with v;
 * the heads joined by transpose2 and reshape2 and projected by a fourth linear) is a group
 * written as one call, its parameters by their names (`names = [...]`); so is the run that
 * causal_mask(T) compiles to, the mask of a causal attention. Like every group, each is kept
 * only when the script's call compiles to those very ops (decompile.c's verify). */
#include "config.h"

#include <string.h>

#include "lang/decompile_int.h"

static const pd_loc nowhere = {0};

/* What an attention group's ops say of its call. */
typedef struct attninfo {
  const char *in[3];       /* q, k, v */
  const char *names[8];    /* the weights and biases of the projections of q, k, v and out */
  int heads;
  const char *mask;        /* the var the call takes as its mask, NULL when none */
  const pd_op_desc *drop;  /* the dropout of the weights, NULL when none */
  const char *out;         /* the call's result */
  int n;                   /* its ops */
} attninfo;

static bool op_is(const pd_op_desc *op, const char *type) { return !strcmp(op->type, type); }

/* The one var of op's input slot / output slot. */
static const char *in1(const pd_op_desc *op, const char *slot) {
  return one_var(pd_op_input(op, slot));
}
static const char *out1(const pd_op_desc *op) { return one_var(pd_op_output(op, "Out")); }

/* Whether op's INTS attribute name holds the n values of want. */
static bool ints_are(const pd_op_desc *op, const char *name, int n, const int *want) {
  const pd_attr *a = pd_op_attr(op, name);
  if (!a || a->type != PD_ATTR_INTS || a->n != n) return false;
  for (int k = 0; k < n; k++)
    if (a->ints[k] != want[k]) return false;
  return true;
}

/* linear's two ops at b->ops[p]: mul of *x by a parameter, the add of a parameter; its output
 * (NULL when they are not), the parameters' names into names[0..1]. */
static const char *linear_at(const layers *ls, const pd_block *b, int p, const char **x,
                             const char **names) {
  if (p + 1 >= b->nops || !op_is(b->ops[p], "mul") || !op_is(b->ops[p + 1], "elementwise_add"))
    return NULL;
  const pd_op_desc *mul = b->ops[p], *add = b->ops[p + 1];
  *x = in1(mul, "X");
  names[0] = in1(mul, "Y");
  names[1] = in1(add, "Y");
  if (!*x || !names[0] || !names[1] || !pd_strmap_find(&ls->params, names[0]) ||
      !pd_strmap_find(&ls->params, names[1]) || !same_var(in1(add, "X"), out1(mul)))
    return NULL;
  return out1(add);
}

/* One projection at b->ops[p]: linear, reshape2 to [0, 0, heads, -1], transpose2 to [0, 2, 1,
 * 3] (4 ops); its output, NULL when not. */
static const char *heads_at(const layers *ls, const pd_block *b, int p, const char **x,
                            const char **names, int *heads) {
  static const int perm[] = {0, 2, 1, 3};
  const char *y = linear_at(ls, b, p, x, names);
  if (!y || p + 3 >= b->nops) return NULL;
  const pd_op_desc *r = b->ops[p + 2], *t = b->ops[p + 3];
  const pd_attr *sh = pd_op_attr(r, "shape");
  if (!op_is(r, "reshape2") || !same_var(in1(r, "X"), y) || !sh || sh->type != PD_ATTR_INTS ||
      sh->n != 4 || !ints_are(r, "shape", 4, (const int[]){0, 0, sh->ints[2], -1}) ||
      sh->ints[2] < 1 || !op_is(t, "transpose2") || !same_var(in1(t, "X"), out1(r)) ||
      !ints_are(t, "axis", 4, perm))
    return NULL;
  *heads = sh->ints[2];
  return out1(t);
}

/* Whether b->ops[lo..hi] write v. */
static bool written(const pd_block *b, int lo, int hi, const char *v) {
  for (int i = lo; i <= hi; i++)
    for (int j = 0; j < b->ops[i]->noutputs; j++)
      for (int k = 0; k < b->ops[i]->outputs[j].nargs; k++)
        if (!strcmp(b->ops[i]->outputs[j].args[k], v)) return true;
  return false;
}

/* The mask of the call whose ops b->ops[lo..hi] make from it the addend of the scores (the
 * one var they read that none of them writes), NULL when there is not one such var. */
static const char *mask_source(const pd_block *b, int lo, int hi) {
  const char *src = NULL;
  for (int i = lo; i <= hi; i++)
    for (int j = 0; j < b->ops[i]->ninputs; j++)
      for (int k = 0; k < b->ops[i]->inputs[j].nargs; k++) {
        const char *v = b->ops[i]->inputs[j].args[k];
        if (!strcmp(v, PD_EMPTY_VAR_NAME) || written(b, lo, i - 1, v)) continue;
        if (src && strcmp(src, v)) return NULL;
        src = v;
      }
  return src;
}

/* Whether each var that b->ops[first..first+n) write, but out, is written once and read by
 * those ops only (no other op, no fetch), and is no parameter. */
static bool sealed(const layers *ls, const pd_block *b, int first, int n, const char *out,
                   bool *oom_) {
  pd_strmap in;
  pd_strmap_init(&in, false);
  for (int i = first; i < first + n && !*oom_; i++)
    for (int j = 0; j < b->ops[i]->ninputs && !*oom_; j++)
      for (int k = 0; k < b->ops[i]->inputs[j].nargs && !*oom_; k++) {
        pd_strmap_entry *e = pd_strmap_add(&in, b->ops[i]->inputs[j].args[k], NULL);
        if (e) e->val.i++;
        else *oom_ = true;
      }
  bool ok = !*oom_;
  for (int i = first; ok && i < first + n; i++)
    for (int j = 0; ok && j < b->ops[i]->noutputs; j++)
      for (int k = 0; ok && k < b->ops[i]->outputs[j].nargs; k++) {
        const char *v = b->ops[i]->outputs[j].args[k];
        if (!strcmp(v, PD_EMPTY_VAR_NAME) || !strcmp(v, out)) continue;
        ok = count(&ls->writes, v) == 1 && count(&ls->reads, v) == count(&in, v) &&
             !pd_strmap_find(&ls->params, v);
      }
  pd_strmap_free(&in);
  return ok;
}

/* Read the attention ops from b->ops[i] on into a; false when they are not a call's. */
static bool attn_info(const layers *ls, const pd_block *b, int i, attninfo *a, bool *oom_) {
  static const int perm[] = {0, 2, 1, 3};
  *a = (attninfo){0};
  const char *h[3];
  int hs[3];
  for (int k = 0; k < 3; k++)
    if (!(h[k] = heads_at(ls, b, i + 4 * k, &a->in[k], &a->names[2 * k], &hs[k])) ||
        hs[k] != hs[0])
      return false;
  a->heads = hs[0];
  int p = i + 12;  /* the scores: q's heads scaled, times k's transposed */
  if (p + 1 >= b->nops || !op_is(b->ops[p], "scale") || !same_var(in1(b->ops[p], "X"), h[0]) ||
      !op_is(b->ops[p + 1], "matmul_v2") || !same_var(in1(b->ops[p + 1], "X"), out1(b->ops[p])) ||
      !same_var(in1(b->ops[p + 1], "Y"), h[1]))
    return false;
  const char *s = out1(b->ops[p + 1]);
  p += 2;
  int add = p;  /* the add of the mask, the ops before it since p make the addend */
  while (add < b->nops && add < p + 8 &&
         !(op_is(b->ops[add], "elementwise_add") && same_var(in1(b->ops[add], "X"), s)) &&
         !op_is(b->ops[add], "softmax"))
    add++;
  if (add < b->nops && op_is(b->ops[add], "elementwise_add") &&
      same_var(in1(b->ops[add], "X"), s)) {
    const char *y = in1(b->ops[add], "Y");
    a->mask = add == p ? y : mask_source(b, p, add - 1);
    if (!a->mask || !y || (add > p && !written(b, p, add - 1, y))) return false;
    s = out1(b->ops[add]);
    p = add + 1;
  }
  if (p + 4 >= b->nops || !op_is(b->ops[p], "softmax") || !same_var(in1(b->ops[p], "X"), s))
    return false;
  const char *w = out1(b->ops[p++]);
  if (op_is(b->ops[p], "dropout") && same_var(in1(b->ops[p], "X"), w)) {
    const pd_attr *dp = pd_op_attr(b->ops[p], "dropout_prob");
    if (!dp || dp->type != PD_ATTR_FLOAT) return false;
    a->drop = b->ops[p];
    w = out1(b->ops[p++]);
  }
  /* the weights times v's heads, the heads joined ([0, 0, d]) and projected */
  if (p + 4 >= b->nops || !op_is(b->ops[p], "matmul_v2") || !same_var(in1(b->ops[p], "X"), w) ||
      !same_var(in1(b->ops[p], "Y"), h[2]) || !op_is(b->ops[p + 1], "transpose2") ||
      !same_var(in1(b->ops[p + 1], "X"), out1(b->ops[p])) ||
      !ints_are(b->ops[p + 1], "axis", 4, perm) || !op_is(b->ops[p + 2], "reshape2") ||
      !same_var(in1(b->ops[p + 2], "X"), out1(b->ops[p + 1])))
    return false;
  const char *x;
  a->out = linear_at(ls, b, p + 3, &x, &a->names[6]);
  a->n = p + 5 - i;
  /* q, k, v and the mask are the script's vars (a parameter only the group reads would not be) */
  for (int k = 0; k < 4; k++)
    if (pd_strmap_find(&ls->params, k < 3 ? a->in[k] : a->mask ? a->mask : "")) return false;
  return a->out && same_var(x, out1(b->ops[p + 2])) && sealed(ls, b, i, a->n, a->out, oom_);
}

bool pd_dc_attn_group(layers *ls, const pd_block *b, int i, group *g, bool *oom_) {
  attninfo a;
  if (!attn_info(ls, b, i, &a, oom_)) return false;
  *g = (group){.kind = G_ATTN, .first = i, .n = a.n};
  return pd_dc_group_ok(ls, b, g);
}

pd_status pd_dc_put_attn(dc *d, group *g) {
  attninfo a;
  bool oom_ = false;
  if (!attn_info(d->ls, d->b, g->first, &a, &oom_))
    return oom_ ? oom(d) : pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s) is no "
                                        "longer an attention layer's", g->first,
                                        d->b->ops[g->first]->type);
  const char *ids[5] = {0};
  for (int k = 0; k < 4; k++) {
    const char *v = k < 3 ? a.in[k] : a.mask;
    if (!v) continue;
    if (!pd_dc_defined(d, d->b, v))
      return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "ops %d-%d (attention) read a var "
                          "which no op before them writes", g->first, g->first + g->n - 1);
    if (!(ids[k] = pd_dc_ident(d, d->b, v))) return oom(d);
  }
  if (!(ids[4] = pd_dc_ident(d, d->b, a.out))) return oom(d);
  pd_buf *o = d->out;
  pd_buf_printf(o, "%s = multi_head_attention(%s, %s, %s, %d", ids[4], ids[0], ids[1], ids[2],
                a.heads);
  if (ids[3]) pd_buf_printf(o, ", mask = %s", ids[3]);
  if (a.drop) {
    pd_buf_puts(o, ", dropout = ");
    pd_status st = pd_dc_put_float(d, a.drop, "dropout_prob",
                                   pd_op_attr(a.drop, "dropout_prob")->v.f, true);
    if (st) return st;
  }
  pd_buf_puts(o, ", names = [");
  for (int k = 0; k < 8; k++) {
    if (k) pd_buf_puts(o, ", ");
    pd_dc_put_str(o, a.names[k]);
  }
  pd_buf_printf(o, "])  # ops %d-%d\n", g->first, g->first + g->n - 1);
  return PD_OK;
}

/* The length T of the causal_mask(T) whose ops start at b->ops[i] (range(T)'s assign_value,
 * reshape2 to [T, 1] and [1, T], greater_equal, cast, scale by 1 less 1, scale by 1e9), 0 when
 * they are not its; *out its result. */
static int causal_at(const layers *ls, const pd_block *b, int i, const char **out, bool *oom_) {
  static const char *const types[] = {"assign_value", "reshape2", "reshape2", "greater_equal",
                                      "cast", "scale", "scale"};
  if (i + 6 >= b->nops) return 0;
  for (int k = 0; k < 7; k++)
    if (!op_is(b->ops[i + k], types[k]) || !out1(b->ops[i + k])) return 0;
  const pd_op_desc *const *o = (const pd_op_desc *const *)&b->ops[i];
  const pd_attr *sh = pd_op_attr(o[0], "shape");
  if (!sh || sh->type != PD_ATTR_INTS || sh->n != 1 || sh->ints[0] < 1) return 0;
  int t = sh->ints[0];
  if (!same_var(in1(o[1], "X"), out1(o[0])) || !same_var(in1(o[2], "X"), out1(o[0])) ||
      !ints_are(o[1], "shape", 2, (const int[]){t, 1}) ||
      !ints_are(o[2], "shape", 2, (const int[]){1, t}) ||
      !same_var(in1(o[3], "X"), out1(o[1])) || !same_var(in1(o[3], "Y"), out1(o[2])))
    return 0;
  for (int k = 4; k < 7; k++)
    if (!same_var(in1(o[k], "X"), out1(o[k - 1]))) return 0;
  *out = out1(o[6]);
  return sealed(ls, b, i, 7, *out, oom_) ? t : 0;
}

bool pd_dc_causal_group(layers *ls, const pd_block *b, int i, group *g, bool *oom_) {
  const char *out;
  if (!causal_at(ls, b, i, &out, oom_)) return false;
  *g = (group){.kind = G_CAUSAL, .first = i, .n = 7};
  return pd_dc_group_ok(ls, b, g);
}

pd_status pd_dc_put_causal(dc *d, group *g) {
  const char *out;
  bool oom_ = false;
  int t = causal_at(d->ls, d->b, g->first, &out, &oom_);
  if (!t)
    return oom_ ? oom(d) : pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (%s) is no "
                                        "longer a causal mask's", g->first,
                                        d->b->ops[g->first]->type);
  const char *y = pd_dc_ident(d, d->b, out);
  if (!y) return oom(d);
  pd_buf_printf(d->out, "%s = causal_mask(%d)  # ops %d-%d\n", y, t, g->first,
                g->first + g->n - 1);
  return PD_OK;
}
