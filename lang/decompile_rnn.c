/* decompile_rnn.c -- the decompiler's stdlib lstm and gru calls in a model that save wrote for
 * PaddlePaddle (vm/passes/paddle_export.h): each layer's recurrence is there Paddle's `rnn` op,
 * with the transpose2 ops of its input, weights and outputs, its initial states broadcast over
 * the lengths and the slices of its final states; a forward and a reverse layer over the same
 * input are one bidirectional rnn op, a reverse one alone the reverse half of one. Such a run
 * of ops is a group written as one call a direction; the script then takes the padded inputs as
 * sequences and is checked through save's own steps (pd_dc_saved_program). */
#include "config.h"

#include <stdlib.h>

#include "lang/decompile_int.h"
#include "train/run.h"
#include "vm/passes/paddle_export.h"

static const pd_loc nowhere = {0};

static bool is(const pd_op_desc *op, const char *type) { return !strcmp(op->type, type); }

/* How many of op's inputs name v. */
static int reads_in(const pd_op_desc *op, const char *v) {
  int n = 0;
  for (int j = 0; j < op->ninputs; j++)
    for (int k = 0; k < op->inputs[j].nargs; k++) n += !strcmp(op->inputs[j].args[k], v);
  return n;
}

static bool writes(const pd_op_desc *op, const char *v) {
  for (int j = 0; j < op->noutputs; j++)
    for (int k = 0; k < op->outputs[j].nargs; k++)
      if (!strcmp(op->outputs[j].args[k], v)) return true;
  return false;
}

/* The index of the op of b->ops[lo..hi] that writes v, else -1. */
static int writer(const pd_block *b, int lo, int hi, const char *v) {
  for (int i = v ? lo : hi + 1; i <= hi; i++)
    if (writes(b->ops[i], v)) return i;
  return -1;
}

/* The first int of op's INTS attribute name, else -1. */
static int first_int(const pd_op_desc *op, const char *name) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == PD_ATTR_INTS && a->n >= 1 ? a->ints[0] : -1;
}

/* What a G_RNN group's rnn op stands for: one lstm / gru call a direction present. */
typedef struct rnninfo {
  bool lstm;
  int hidden, dirs;
  bool has[2];          /* direction d written (forward, reverse) */
  const char *wih[2];   /* its W_ih parameter, named P.w_0 */
  size_t plen[2];       /* the length of its prefix P */
  const char *x;        /* the layers' input */
  const char *hs[2], *st[2][2];  /* the vars of their outputs (hs, h, c), NULL when none */
} rnninfo;

/* The parameter that weight list entry w is the transpose2 of (a group op), else NULL. */
static const char *transposed(const layers *ls, const pd_block *b, const group *g, const char *w) {
  int k = writer(b, g->first, g->key - 1, w);
  const char *p = k >= 0 && is(b->ops[k], "transpose2") ? one_var(pd_op_input(b->ops[k], "X"))
                                                         : NULL;
  return p && pd_strmap_find(&ls->params, p) ? p : NULL;
}

/* Whether the name v is prefix[0..n) followed by sfx. */
static bool named(const char *v, const char *prefix, size_t n, const char *sfx) {
  return v && strlen(v) == n + strlen(sfx) && !strncmp(v, prefix, n) && !strcmp(v + n, sfx);
}

/* Read g's rnn op and the ops around it into ri; false when they are not what save writes
 * for the stdlib's layers. */
static bool rnn_info(const layers *ls, const pd_block *b, const group *g, rnninfo *ri) {
  const pd_op_desc *r = b->ops[g->key];
  *ri = (rnninfo){0};
  const pd_attr *mode = pd_op_attr(r, "mode"), *nl = pd_op_attr(r, "num_layers");
  const pd_attr *hid = pd_op_attr(r, "hidden_size"), *bi = pd_op_attr(r, "is_bidirec");
  const pd_attr *dp = pd_op_attr(r, "dropout_prob");
  if (!mode || mode->type != PD_ATTR_STRING || !mode->v.s || !nl || nl->type != PD_ATTR_INT ||
      nl->v.i != 1 || !hid || hid->type != PD_ATTR_INT || hid->v.i < 1 || !bi ||
      bi->type != PD_ATTR_BOOLEAN || !dp || dp->type != PD_ATTR_FLOAT || dp->v.f != 0.0f)
    return false;
  ri->lstm = !strcmp(mode->v.s, "LSTM");
  if (!ri->lstm && strcmp(mode->v.s, "GRU")) return false;
  ri->hidden = hid->v.i;
  ri->dirs = bi->v.b ? 2 : 1;
  const pd_slot *wl = pd_op_input(r, "WeightList"), *ps = pd_op_input(r, "PreState");
  const pd_slot *out = pd_op_output(r, "Out"), *state = pd_op_output(r, "State");
  int nst = ri->lstm ? 2 : 1;
  if (!wl || wl->nargs != 4 * ri->dirs || !ps || ps->nargs != nst || !one_var(out) || !state ||
      state->nargs != nst || !one_var(pd_op_input(r, "SequenceLength")))
    return false;
  /* the input: transpose2 (time-major) of the for's copy (assign) of x */
  const char *in = one_var(pd_op_input(r, "Input"));
  int t = writer(b, g->first, g->key - 1, in);
  if (t < 0 || !is(b->ops[t], "transpose2")) return false;
  ri->x = one_var(pd_op_input(b->ops[t], "X"));
  int c = writer(b, g->first, t - 1, ri->x);
  if (c >= 0 && is(b->ops[c], "assign")) ri->x = one_var(pd_op_input(b->ops[c], "X"));
  else if (c >= 0) return false;
  if (!ri->x || writer(b, g->first, g->first + g->n - 1, ri->x) >= 0) return false;
  for (int d = 0; d < ri->dirs; d++) {
    const char *w0 = wl->args[2 * d], *w1 = wl->args[2 * d + 1];
    const char *b0 = wl->args[2 * ri->dirs + 2 * d], *b1 = wl->args[2 * ri->dirs + 2 * d + 1];
    int z = writer(b, g->first, g->key - 1, w0);
    if (d == 0 && ri->dirs == 2 && z >= 0 && is(b->ops[z], "fill_constant")) continue;
    const char *p0 = transposed(ls, b, g, w0), *p1 = transposed(ls, b, g, w1);
    size_t n = p0 ? strlen(p0) : 0;
    if (n < 5 || strcmp(p0 + n - 4, ".w_0")) return false;
    n -= 4;
    int zb = writer(b, g->first, g->key - 1, b1);
    if (!named(p1, p0, n, ".w_1") || !named(b0, p0, n, ".b_0") ||
        !pd_strmap_find(&ls->params, b0) ||
        (ri->lstm ? zb < 0 || !is(b->ops[zb], "fill_constant")
                  : !named(b1, p0, n, ".b_1") || !pd_strmap_find(&ls->params, b1)))
      return false;
    ri->has[d] = true;
    ri->wih[d] = p0;
    ri->plen[d] = n;
  }
  if (!ri->has[0] && !ri->has[1]) return false;
  /* the outputs: hs as the transpose2 of Out (of its half), the final states as slices of
   * State (and the assign of one that stands for the last step's sequence_pool) */
  for (int i = g->key + 1; i < g->first + g->n; i++) {
    const pd_op_desc *op = b->ops[i];
    const char *x = one_var(pd_op_input(op, is(op, "slice") ? "Input" : "X"));
    const char *y = one_var(pd_op_output(op, "Out"));
    if (!x || !y) return false;
    if (is(op, "transpose2")) {
      int d = 0;
      if (strcmp(x, one_var(out))) {
        int s = writer(b, g->key + 1, i - 1, x);
        const pd_op_desc *so = s >= 0 ? b->ops[s] : NULL;
        if (!so || !is(so, "slice") || strcmp(one_var(pd_op_input(so, "Input")), one_var(out)) ||
            first_int(so, "axes") != 2 || first_int(so, "starts") % ri->hidden)
          return false;
        d = first_int(so, "starts") / ri->hidden;
      }
      if (d >= ri->dirs || ri->hs[d]) return false;
      ri->hs[d] = y;
    }
    for (int k = 0; k < nst && is(op, "slice"); k++) {
      int d = first_int(op, "starts");
      if (strcmp(x, state->args[k]) || first_int(op, "axes") != 0 || d < 0 || d >= ri->dirs)
        continue;
      ri->st[d][k] = y;
    }
    for (int d = 0; d < ri->dirs && is(op, "assign"); d++) {
      if (same_var(ri->hs[d], x)) ri->hs[d] = y;
      for (int k = 0; k < nst; k++)
        if (same_var(ri->st[d][k], x)) ri->st[d][k] = y;
    }
  }
  return true;
}

/* The ops that may stand before an rnn op in its group (its input's copy and transposition,
 * its weights', the zero states and their broadcast over the lengths), and after it. */
static const char *const before_ops[] = {"fill_constant", "assign", "transpose2", "cast", "scale",
                                         "unsqueeze2", "elementwise_add", "concat"};
static const char *const after_ops[] = {"slice", "transpose2", "assign"};

static bool one_of(const pd_op_desc *op, const char *const *types, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (is(op, types[k])) return true;
  return false;
}

/* Whether var v, an input of a group op that no group op writes, is one the layers may read:
 * a parameter, the input x, the lengths, or what an earlier rnn group made of them. */
static bool outer_ok(const layers *ls, const pd_block *b, const char *v, const char *x,
                     const char *len, const group *prev, int np) {
  if (pd_strmap_find(&ls->params, v) || same_var(v, x) || same_var(v, len)) return true;
  for (int k = 0; k < np; k++)
    if (writer(b, prev[k].first, prev[k].first + prev[k].n - 1, v) >= 0) return true;
  return false;
}

bool pd_dc_rnn_group(layers *ls, const pd_block *b, int r, int from, const group *prev, int np,
                     group *g) {
  if (!is(b->ops[r], "rnn")) return false;
  int z = r;
  while (z + 1 < b->nops && one_of(b->ops[z + 1], after_ops, PD_ARRAY_LEN(after_ops))) {
    const pd_op_desc *op = b->ops[z + 1];
    bool inner = op->ninputs > 0;
    for (int j = 0; j < op->ninputs && inner; j++)
      for (int k = 0; k < op->inputs[j].nargs && inner; k++)
        inner = writer(b, r, z, op->inputs[j].args[k]) >= 0;
    if (!inner) break;
    z++;
  }
  /* before it, the ops whose outputs only the group reads (and, the lengths' broadcast, later
   * rnn groups' additions) */
  int a = r;
  while (a - 1 >= from && one_of(b->ops[a - 1], before_ops, PD_ARRAY_LEN(before_ops))) {
    const pd_op_desc *op = b->ops[a - 1];
    bool lens = is(op, "cast") || is(op, "scale") || is(op, "unsqueeze2");
    bool only = true;
    for (int j = 0; j < op->noutputs && only; j++)
      for (int k = 0; k < op->outputs[j].nargs && only; k++) {
        const char *v = op->outputs[j].args[k];
        if (!strcmp(v, PD_EMPTY_VAR_NAME)) continue;
        int64_t within = 0;
        for (int q = a; q < b->nops; q++)
          if (q <= z || (lens && is(b->ops[q], "elementwise_add"))) within += reads_in(b->ops[q], v);
        only = within == count(&ls->reads, v) && count(&ls->writes, v) == 1 &&
               !pd_strmap_find(&ls->params, v);
      }
    if (!only) break;
    a--;
  }
  *g = (group){.kind = G_RNN, .first = a, .n = z - a + 1, .key = r};
  rnninfo ri;
  if (!rnn_info(ls, b, g, &ri)) return false;
  g->nlines = ri.has[0] + ri.has[1];
  const char *len = one_var(pd_op_input(b->ops[r], "SequenceLength"));
  for (int i = a; i <= z; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int j = 0; j < op->ninputs; j++)
      for (int k = 0; k < op->inputs[j].nargs; k++) {
        const char *v = op->inputs[j].args[k];
        if (strcmp(v, PD_EMPTY_VAR_NAME) && writer(b, a, i - 1, v) < 0 &&
            !outer_ok(ls, b, v, ri.x, len, prev, np)) {
          return false;
        }
      }
  }
  return pd_dc_group_ok(ls, b, g);
}

/* The identifier of output v of a call, or of a name of its own (P.what#, which no var has)
 * when the model has no such var. */
static const char *out_ident(dc *d, const char *v, const char *prefix, size_t n,
                             const char *what) {
  if (v) return pd_dc_ident(d, d->b, v);
  char name[300];
  snprintf(name, sizeof name, "%.*s.%s#", (int)(n < 200 ? n : 200), prefix, what);
  return pd_dc_ident(d, d->b, name);
}

pd_status pd_dc_put_rnn(dc *d, group *g) {
  rnninfo ri;
  if (!rnn_info(d->ls, d->b, g, &ri))
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (rnn) is no longer a layer",
                        g->key);
  if (!pd_dc_defined(d, d->b, ri.x))
    return pd_error_set(d->err, PD_EUNSUPPORTED, nowhere, "op %d (rnn) reads a var which no op "
                        "before it writes", g->key);
  const char *x = pd_dc_ident(d, d->b, ri.x);
  if (!x) return oom(d);
  bool first = true;
  for (int d_ = 0; d_ < 2; d_++) {
    if (!ri.has[d_]) continue;
    const char *p = ri.wih[d_];
    size_t n = ri.plen[d_];
    const char *ids[3] = {out_ident(d, ri.hs[d_], p, n, "hs"),
                          out_ident(d, ri.st[d_][0], p, n, "h"),
                          ri.lstm ? out_ident(d, ri.st[d_][1], p, n, "c") : ""};
    if (!ids[0] || !ids[1] || !ids[2]) return oom(d);
    if (!first) indent(d);
    pd_buf_printf(d->out, "%s, %s%s%s = %s(%s, %d", ids[0], ids[1], ri.lstm ? ", " : "", ids[2],
                  ri.lstm ? "lstm" : "gru", x, ri.hidden);
    if (d_ == 1) pd_buf_puts(d->out, ", reverse = true");
    pd_buf_printf(d->out, ", name = ");
    char *prefix = pd_malloc(n + 1);
    if (!prefix) return oom(d);
    memcpy(prefix, p, n);
    prefix[n] = 0;
    pd_dc_put_str(d->out, prefix);
    pd_free(prefix);
    pd_buf_printf(d->out, ")  # ops %d-%d%s\n", g->first, g->first + g->n - 1,
                  first ? "" : " (the rnn op's reverse half)");
    first = false;
  }
  return PD_OK;
}

int pd_dc_seq_feed(const dc *d, const char *name) {
  if (!d->ls || !d->ls->seq) return 0;
  const pd_program *p = d->m->program;
  if (pd_export_padded_input(p, name)) return 1;
  size_t n = strlen(name), k = strlen(PD_EXPORT_LENGTHS_SUFFIX);
  for (int i = 0; n > k && !strcmp(name + n - k, PD_EXPORT_LENGTHS_SUFFIX) && i < d->m->nfeeds;
       i++) {
    const char *f = d->m->feeds[i].var;
    if (strlen(f) == n - k && !strncmp(f, name, n - k) && pd_export_padded_input(p, f)) return 2;
  }
  return 0;
}

pd_status pd_dc_saved_program(const pd_unit *u, pd_program **out) {
  *out = NULL;
  const pd_action *a = NULL;
  for (int i = 0; i < u->nactions; i++)
    if (u->actions[i].kind == PD_ACTION_SAVE && u->actions[i].nargs > 1) a = &u->actions[i];
  if (!a) return PD_EUNSUPPORTED;
  const char **targets = pd_calloc((size_t)a->nargs, sizeof *targets);
  if (!targets) return PD_ENOMEM;
  int nt = 0;
  for (int i = 1; i < a->nargs; i++) targets[nt++] = a->args[i]->str;
  const char **feeds = NULL;
  int nf = 0;
  pd_error e = {0};
  pd_status st = pd_run_save_program(NULL, u->main, a, nt, targets, out, &feeds, &nf, &e);
  pd_error_clear(&e);
  pd_free(feeds);
  pd_free(targets);
  if (st && *out) {
    pd_program_free(*out);
    *out = NULL;
  }
  return st == PD_ENOMEM || !st ? st : PD_EUNSUPPORTED;
}
