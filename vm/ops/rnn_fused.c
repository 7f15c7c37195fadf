/* rnn_fused.c -- fused_lstm and fused_gru, the gated loops of stdlib/layers.pd's lstm and gru that
 * the fuse_rnn pass (vm/passes/fuse_gated.c) makes into one op each: one GEMM a step for all
 * gates against the recurrent weight (the input projection hoisted out of the loop), the gate
 * arithmetic on the rows of the step, the activations kept for the backward pass. Shape
 * functions, kernels and gradient kernels. The steps are the backend's whole-sequence kernels
 * (kernels.h: lstm_seq, gru_seq and their gradients; the CPU's rnn_seq.c, the CUDA backend's
 * kernels/rnn_steps.c), given the plan and the batch-major tensors; the op makes the plan, the
 * initial states in the plan's order and the state gradients back (copy_rows, reduce: backend
 * calls, at the op's place), so the ops run on the GPU too. Also Fluid's own lstm and gru (the
 * dynamic_lstm and dynamic_gru layers), whose gate order, peepholes, GRU reset form and
 * activations differ: the same plan, their steps on the host (the end of the file). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "vm/ops/infershape.h"
#include "vm/ops/kern.h"

/* ================================================================ shape functions */

/* Input [T, G H] (one LoD level), Weight [H, G H], H0 (and C0) [H] or [sequences, H], Bias:
 * H from Weight; Hidden (and Cell) [T, H] with Input's LoD, BatchGate [T, gate_cols]; fluid:
 * Fluid's lstm and gru. proj (lstmp): H and P from ProjWeight [H, P], Weight [P, 4 H], H0 [P]
 * or [sequences, P]; Projection [T, P] instead of Hidden, and OrderedP0 [sequences, P]. */
static pd_status infer_gated(pd_infer_ctx *c, int gates, int gate_cols, bool lstm, bool fluid,
                             bool proj) {
  const pd_var_desc *x, *w, *s = NULL;
  pd_infer_dims d, wd, sd;
  char s1[PD_DIMS_BUF], s2[PD_DIMS_BUF];
  pd_status st = pd_infer_in(c, "Input", 0, &x, &d);
  if (!st) st = pd_infer_in(c, "Weight", 0, &w, &wd);
  if (st) return st;
  if (x->lod_level != 1 || (d.n >= 0 && d.n != 2))
    return pd_infer_fail(c, PD_ESHAPE, "Input must be a batch of sequences of rows ([T, %d H], "
                         "one LoD level); it is %s with %d LoD levels", gates,
                         pd_infer_dims_str(&d, s1), x->lod_level);
  const char *wr = proj ? "P" : "H";
  if (w->dtype != x->dtype || (wd.n >= 0 && wd.n != 2))
    return pd_infer_fail(c, PD_ESHAPE, "Weight must be [%s, %d H] with Input's dtype; it is %s",
                         wr, gates, pd_infer_dims_str(&wd, s2));
  /* hid: H; rec: the recurrent state's width (Weight's rows: H, or lstmp's P) */
  int64_t rec = wd.n == 2 ? wd.d[0] : -1, hid = rec;
  if (proj) {
    if ((st = pd_infer_in(c, "ProjWeight", 0, &s, &sd))) return st;
    if (s->dtype != x->dtype || (sd.n >= 0 && sd.n != 2) ||
        (sd.n == 2 && !pd_infer_dim_compatible(sd.d[1], rec)))
      return pd_infer_fail(c, PD_ESHAPE, "ProjWeight must be [H, P] with Input's dtype and "
                           "Weight's P rows (Weight is %s); it is %s",
                           pd_infer_dims_str(&wd, s2), pd_infer_dims_str(&sd, s1));
    hid = sd.n == 2 ? sd.d[0] : -1;
    if (rec < 0 && sd.n == 2) rec = sd.d[1];
  }
  if (wd.n == 2 && ((hid >= 0 && wd.d[1] >= 0 && wd.d[1] != gates * hid) ||
                    (d.n == 2 && !pd_infer_dim_compatible(d.d[1], wd.d[1]))))
    return pd_infer_fail(c, PD_ESHAPE, "Weight must be [%s, %d H] and Input [T, %d H]%s: "
                         "Weight is %s, Input %s", wr, gates, gates,
                         proj ? " (H: ProjWeight's rows)" : "", pd_infer_dims_str(&wd, s2),
                         pd_infer_dims_str(&d, s1));
  const char *states[2] = {"H0", lstm ? "C0" : NULL};
  for (int i = 0; i < 2 && states[i]; i++) {
    if (pd_infer_nin(c, states[i]) == 0) continue;
    if ((st = pd_infer_in(c, states[i], 0, &s, &sd))) return st;
    const char *sw = i == 0 ? wr : "H";
    if (s->dtype != x->dtype ||
        (sd.n >= 0 && (sd.n < 1 || sd.n > 2 ||
                       !pd_infer_dim_compatible(sd.d[sd.n - 1], i == 0 ? rec : hid))))
      return pd_infer_fail(c, PD_ESHAPE, "%s must be [%s] or [sequences, %s] with Weight's %s "
                           "and Input's dtype (Weight is %s); it is %s", states[i], sw, sw, sw,
                           pd_infer_dims_str(&wd, s2), pd_infer_dims_str(&sd, s1));
  }
  /* Bias: fused_gru's [3 H]; Fluid's gru [1, 3 H] (optional), lstm [1, 4 H] or [1, 7 H]. */
  int64_t bcols = gates == 4 ? (pd_infer_attr_bool(c, "use_peepholes") ? 7 : 4) : 3;
  if ((!lstm || fluid) && pd_infer_nin(c, "Bias") > 0) {
    if ((st = pd_infer_in(c, "Bias", 0, &s, &sd))) return st;
    int n = fluid ? 2 : 1;
    if (s->dtype != x->dtype ||
        (sd.n >= 0 && (sd.n != n || (n == 2 && !pd_infer_dim_compatible(sd.d[0], 1)) ||
                       (hid >= 0 && !pd_infer_dim_compatible(sd.d[n - 1], bcols * hid)))))
      return pd_infer_fail(c, PD_ESHAPE, "Bias must be [%s%lld H] with Weight's H and Input's "
                           "dtype (Weight is %s); it is %s", fluid ? "1, " : "",
                           (long long)bcols, pd_infer_dims_str(&wd, s2),
                           pd_infer_dims_str(&sd, s1));
  }
  pd_infer_dims o = {.n = 2, .d = {d.n == 2 ? d.d[0] : -1, rec}};
  if ((st = pd_infer_set_out(c, proj ? "Projection" : "Hidden", 0, &o, x->dtype, 1))) return st;
  o.d[1] = hid;
  if (lstm && (st = pd_infer_set_out(c, "Cell", 0, &o, x->dtype, 1))) return st;
  /* Fluid's other [T, H] values: lstm's BatchCellPreAct, gru's BatchResetHiddenPrev and
   * BatchHidden (and lstmp's). */
  const char *more[3] = {"BatchCellPreAct", "BatchResetHiddenPrev", "BatchHidden"};
  for (int i = 0; i < 3 && fluid; i++)
    if (pd_infer_nout(c, more[i]) > 0 && (st = pd_infer_set_out(c, more[i], 0, &o, x->dtype, 1)))
      return st;
  if (proj && pd_infer_nout(c, "OrderedP0") > 0) {
    pd_infer_dims p0 = {.n = 2, .d = {-1, rec}};
    if ((st = pd_infer_set_out(c, "OrderedP0", 0, &p0, x->dtype, 0))) return st;
  }
  o.d[1] = hid >= 0 ? gate_cols * hid : -1;
  if (pd_infer_nout(c, "BatchGate") > 0)
    return pd_infer_set_out(c, "BatchGate", 0, &o, x->dtype, 1);
  return PD_OK;
}

/* fused_lstm: BatchGate holds the activated gates i, f, g, o of every row. */
pd_status pd_infer_fused_lstm(pd_infer_ctx *c) {
  return infer_gated(c, 4, 4, true, false, false);
}

/* fused_gru: BatchGate holds r, z, n and h W_hn + b_hn of every row. */
pd_status pd_infer_fused_gru(pd_infer_ctx *c) {
  return infer_gated(c, 3, 4, false, false, false);
}

/* lstm (Fluid's): BatchGate holds c~, i, f, o; BatchCellPreAct act_cell(c). */
pd_status pd_infer_lstm(pd_infer_ctx *c) {
  return infer_gated(c, 4, 4, true, true, false);
}

/* lstmp (Fluid's lstm with a recurrent projection): lstm's values, and Projection, BatchHidden,
 * OrderedP0. */
pd_status pd_infer_lstmp(pd_infer_ctx *c) {
  return infer_gated(c, 4, 4, true, true, true);
}

/* gru (Fluid's): BatchGate holds u, r, c. */
pd_status pd_infer_gru(pd_infer_ctx *c) {
  return infer_gated(c, 3, 3, false, true, false);
}

/* ================================================================ the plan */

/* The batch time-major: step k is rows koff[k] .. koff[k + 1] - 1, one per sequence still
 * running (a prefix of the sequences by length), time-major row i being row row[i] of Input. */
typedef struct gplan {
  pd_dtype dt;
  size_t es;
  int64_t nseq, total, hid, maxlen;
  int64_t rec;             /* the recurrent state's width: hid, or lstmp's projection P */
  pd_tensor lod;           /* a copy of Input's LoD */
  const int64_t *off;
  int64_t *order, *koff, *row;
  bool rev;
  /* At the op's place, for the backend: order and nseq zeros, one after the other. */
  const pd_exec_ctx *ctx;
  int64_t *ids;
  const int64_t *at_order, *at_zero;
  void *at_tmp;
} gplan;

static void gplan_free(gplan *p) {
  pd_free(p->order);
  pd_free(p->koff);
  pd_free(p->row);
  pd_free(p->ids);
  if (p->ctx) pd_ctx_scratch_free(p->ctx, p->at_tmp);
  pd_tensor_release(&p->lod);
}

static int64_t running(const gplan *p, int64_t k) { return p->koff[k + 1] - p->koff[k]; }

/* Check Input [T, gates H] (one LoD level), Weight [H, gates H], the initial states and Bias
 * (GRU), and the forward outputs given to the gradient (fwd: Hidden, Cell, BatchGate); make the
 * plan. proj (lstmp): ProjWeight [H, P] too, Weight [P, 4 H], H0 [P] or [sequences, P] (the
 * recurrent state is the projection), and the gradient's Projection [T, P] and BatchHidden. p is
 * ready for gplan_free whatever the result. */
static pd_status gplan_make(pd_exec_ctx *ctx, gplan *p, int gates, int gate_cols, bool lstm,
                            bool grad, bool proj) {
  memset(p, 0, sizeof *p);
  pd_tensor_init(&p->lod);
  p->ctx = ctx;
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *pw = proj ? pd_ctx_in(ctx, "ProjWeight") : NULL;
  char a[96], b[96];
  if (!x || !w || (proj && !pw))
    return pd_ctx_fail(ctx, PD_EINVAL, "Input, Weight%s must be given",
                       proj ? " and ProjWeight" : "");
  if (x->ndims != 2 || x->nlod != 1)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Input must be a batch of sequences of rows ([T, %d H], "
                       "one LoD level); it is %s with %d LoD levels", gates,
                       pd_ctx_shape_str(x, a, sizeof a), x->nlod);
  p->dt = x->dtype;
  if (!is_float(p->dt))
    return pd_ctx_fail(ctx, PD_ETYPE, "Input must be float32 or float64, it is %s",
                       pd_dtype_name(p->dt));
  p->es = pd_dtype_size(p->dt);
  p->total = x->dims[0];
  if (w->ndims == 2) p->rec = p->hid = w->dims[0];
  if (pw) {
    if (pw->dtype != p->dt || pw->ndims != 2 || pw->dims[0] * gates != x->dims[1])
      return pd_ctx_fail(ctx, PD_ESHAPE, "ProjWeight must be [H, P] %s with Input [T, %d H]: "
                         "ProjWeight is %s %s, Input %s", pd_dtype_name(p->dt), gates,
                         pd_ctx_shape_str(pw, a, sizeof a), pd_dtype_name(pw->dtype),
                         pd_ctx_shape_str(x, b, sizeof b));
    p->hid = pw->dims[0];
    p->rec = pw->dims[1];
  }
  if (w->dtype != p->dt || w->ndims != 2 || w->dims[0] != p->rec ||
      w->dims[1] != gates * p->hid || x->dims[1] != gates * p->hid)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Weight must be [%s, %d H] %s and Input [T, %d H]: "
                       "Weight is %s %s, Input %s", proj ? "P" : "H", gates,
                       pd_dtype_name(p->dt), gates, pd_ctx_shape_str(w, a, sizeof a),
                       pd_dtype_name(w->dtype), pd_ctx_shape_str(x, b, sizeof b));
  pd_status st = pd_tensor_validate_lod(x, ctx->err);
  if (st) return pd_ctx_fail(ctx, st, "Input: %s", ctx->err && ctx->err->msg ? ctx->err->msg
                                                                              : "bad LoD");
  p->nseq = x->lod[0].n - 1;
  const char *states[2] = {"H0", lstm ? "C0" : NULL};
  for (int i = 0; i < 2 && states[i]; i++) {
    const pd_tensor *s = pd_ctx_in(ctx, states[i]);
    int64_t cols = i ? p->hid : p->rec;
    if (s && (s->dtype != p->dt || !((s->ndims == 1 && s->dims[0] == cols) ||
                                     (s->ndims == 2 && s->dims[0] == p->nseq &&
                                      s->dims[1] == cols))))
      return pd_ctx_fail(ctx, PD_ESHAPE, "%s must be [%lld] (one state for every sequence) or "
                         "[%lld, %lld] (one per sequence) %s; it is %s %s", states[i],
                         (long long)cols, (long long)p->nseq, (long long)cols,
                         pd_dtype_name(p->dt), pd_ctx_shape_str(s, a, sizeof a),
                         pd_dtype_name(s->dtype));
  }
  if (grad) {
    const char *fwd[4] = {proj ? "Projection" : "Hidden", "BatchGate", lstm ? "Cell" : NULL,
                          proj ? "BatchHidden" : NULL};
    for (int i = 0; i < 4 && fwd[i]; i++) {
      const pd_tensor *t = pd_ctx_in(ctx, fwd[i]);
      int64_t cols = i == 1 ? gate_cols * p->hid : i == 0 ? p->rec : p->hid;
      if (!t || t->dtype != p->dt || t->ndims != 2 || t->dims[0] != p->total ||
          t->dims[1] != cols)
        return pd_ctx_fail(ctx, PD_ESHAPE, "%s (a forward value) must be [%lld, %lld] %s; it "
                           "is %s", fwd[i], (long long)p->total, (long long)cols,
                           pd_dtype_name(p->dt), t ? pd_ctx_shape_str(t, a, sizeof a)
                                                   : "missing");
    }
  }
  if (pd_tensor_copy_lod(&p->lod, x)) return nomem(ctx);
  p->off = p->lod.lod[0].offsets;
  for (int64_t s = 0; s < p->nseq; s++)
    if (p->off[s + 1] - p->off[s] > p->maxlen) p->maxlen = p->off[s + 1] - p->off[s];
  p->order = pd_malloc(sizeof *p->order * (size_t)(p->nseq + 1));
  p->koff = pd_malloc(sizeof *p->koff * (size_t)(p->maxlen + 1));
  p->row = pd_malloc(sizeof *p->row * (size_t)(p->total + 1));
  if (!p->order || !p->koff || !p->row || !pd_seq_by_length(p->off, p->nseq, p->order))
    return nomem(ctx);
  p->rev = pd_ctx_attr_bool(ctx, "is_reverse");
  int64_t i = 0, n = p->nseq;
  for (int64_t k = 0; k < p->maxlen; k++) {
    while (n > 0 && p->off[p->order[n - 1] + 1] - p->off[p->order[n - 1]] <= k) n--;
    p->koff[k] = i;
    for (int64_t r = 0; r < n; r++) {
      int64_t s = p->order[r], len = p->off[s + 1] - p->off[s];
      p->row[i++] = p->off[s] + (p->rev ? len - 1 - k : k);
    }
  }
  p->koff[p->maxlen] = i;
  /* The index lists at the op's place. */
  size_t nids = (size_t)(2 * p->nseq);
  if (!(p->ids = pd_malloc(sizeof *p->ids * (nids + 1)))) return nomem(ctx);
  memcpy(p->ids, p->order, sizeof *p->ids * (size_t)p->nseq);
  memset(p->ids + p->nseq, 0, sizeof *p->ids * (size_t)(p->nseq + 1));
  pd_status ps;
  const int64_t *at = pd_ctx_at_place(ctx, p->ids, sizeof *p->ids * (nids + 1), &p->at_tmp, &ps);
  if (!at) return ps;
  p->at_order = at;
  p->at_zero = at + p->nseq;
  return PD_OK;
}

/* fused_gru's Bias: [3 H]. */
static pd_status gru_bias(const pd_exec_ctx *ctx, const gplan *p) {
  const pd_tensor *bias = pd_ctx_in(ctx, "Bias");
  char a[96];
  if (!bias || bias->dtype != p->dt || bias->ndims != 1 || bias->dims[0] != 3 * p->hid)
    return pd_ctx_fail(ctx, PD_ESHAPE, "Bias must be [%lld] %s; it is %s",
                       (long long)(3 * p->hid), pd_dtype_name(p->dt),
                       bias ? pd_ctx_shape_str(bias, a, sizeof a) : "missing");
  return PD_OK;
}

/* The backend's copy_rows, n rows of cols elements, with an error at the op. */
static pd_status rows(const gplan *p, int64_t n, int64_t cols, const void *src,
                      const int64_t *sids, void *dst, const int64_t *dids) {
  const pd_exec_ctx *ctx = p->ctx;
  return pd_ctx_check(ctx, ctx->k->copy_rows(p->dt, n, cols, src, sids, dst, dids), "copy_rows");
}

/* n zeros at dst. */
static pd_status zero(const gplan *p, int64_t n, void *dst) {
  const pd_exec_ctx *ctx = p->ctx;
  return n ? pd_ctx_check(ctx, ctx->k->fill(p->dt, n, dst, 0.0), "fill") : PD_OK;
}

/* A state's initial rows in the sequences' order, [nseq, cols] (zeros without it). */
static pd_status init_rows(const gplan *p, const pd_tensor *s, int64_t cols, char *dst) {
  if (!s) return zero(p, p->nseq * cols, dst);
  return rows(p, p->nseq, cols, pd_tensor_data(s), s->ndims == 1 ? p->at_zero : p->at_order,
              dst, NULL);
}

/* A state's gradient from its rows (as wide as the state) in the sequences' order (the sequences
 * running at step 0): scattered to the state's rows, or summed when the state is one shared row. */
static pd_status state_grad(const pd_exec_ctx *ctx, const gplan *p, const pd_tensor *s,
                            pd_tensor *ds, const char *src) {
  if (!ds || !s) return PD_OK;
  pd_status st = pd_ctx_resize(ctx, ds, p->dt, s->ndims, s->dims);
  if (st || (st = zero(p, pd_tensor_numel(ds), pd_tensor_data(ds)))) return st;
  int64_t n0 = p->maxlen ? running(p, 0) : 0, cols = s->dims[s->ndims - 1];
  if (n0 == 0) return PD_OK;
  if (s->ndims == 2) return rows(p, n0, cols, src, NULL, pd_tensor_data(ds), p->at_order);
  int64_t dims[2] = {n0, cols};
  int axis = 0;
  return pd_ctx_check(ctx, ctx->k->reduce(PD_K_RSUM, p->dt, 2, dims, src, 1, &axis,
                                          pd_tensor_data(ds)),
                      "reduce");
}

/* ================================================================ helpers */

/* An output must not be bound to any input. */
static pd_status distinct(const pd_exec_ctx *ctx, const pd_tensor *const *ins, int nin,
                          pd_tensor *const *outs, int nout) {
  for (int i = 0; i < nin; i++)
    for (int o = 0; o < nout; o++)
      if (ins[i] && ins[i] == outs[o])
        return pd_ctx_fail(ctx, PD_EINVAL, "an output is bound to one of the inputs");
  for (int o = 0; o < nout; o++)
    for (int q = o + 1; q < nout; q++)
      if (outs[o] && outs[o] == outs[q])
        return pd_ctx_fail(ctx, PD_EINVAL, "two outputs are bound to one var");
  return PD_OK;
}

/* ================================================================ whole sequences */

/* Where the backend has a whole-sequence kernel (kernels.h: lstm_seq etc.; the CPU's), the op
 * hands it the plan and the batch-major tensors: it reads and writes their rows in place. */
static pd_k_rnn_seq seq_of(const pd_exec_ctx *ctx, const gplan *p) {
  pd_k_rnn_seq s = {p->dt, p->hid, p->nseq, p->maxlen, p->koff, p->row, 0,
                    amp_precision(ctx, p->dt)}; /* under amp, the products in bf16 / fp16 */
  return s;
}

/* Output o resized to [T, cols] with Input's LoD, its data in *data; when o is not bound, a
 * scratch buffer of that size (*scratch, to free). */
static pd_status seq_out(const pd_exec_ctx *ctx, const gplan *p, pd_tensor *o, int64_t cols,
                         char **data, char **scratch) {
  *scratch = NULL;
  if (!o) {
    pd_status st = PD_OK;
    *scratch = *data = pd_ctx_scratch(ctx, (size_t)(p->total * cols) * p->es + 1, &st);
    return st;
  }
  int64_t dims[2] = {p->total, cols};
  pd_status st = pd_ctx_resize(ctx, o, p->dt, 2, dims);
  if (!st) st = pd_ctx_check(ctx, pd_tensor_copy_lod(o, &p->lod), "lod");
  *data = st ? NULL : pd_tensor_data(o);
  return st;
}

/* Weight's (or Bias's) gradient resized like the forward input, or scratch when not bound. */
static pd_status seq_like(const pd_exec_ctx *ctx, pd_tensor *o, const pd_tensor *like,
                          char **data, char **scratch) {
  *scratch = NULL;
  if (!o) {
    pd_status st = PD_OK;
    *scratch = *data = pd_ctx_scratch(ctx, pd_tensor_nbytes(like) + 1, &st);
    return st;
  }
  pd_status st = pd_ctx_resize(ctx, o, like->dtype, like->ndims, like->dims);
  *data = st ? NULL : pd_tensor_data(o);
  return st;
}

/* fused_lstm through lstm_seq: outs are Hidden, Cell, BatchGate. */
static pd_status lstm_whole(pd_exec_ctx *ctx, const gplan *p, const pd_tensor *x,
                            const pd_tensor *w, const pd_tensor *h0, const pd_tensor *c0,
                            pd_tensor *const *outs) {
  int64_t H = p->hid, cols[3] = {H, H, 4 * H};
  size_t rb = (size_t)H * p->es;
  char *data[3] = {0}, *scratch[3] = {0}, *init[2] = {0};
  size_t sizes[2] = {rb * (size_t)p->nseq, rb * (size_t)p->nseq};
  pd_status st = PD_OK;
  for (int i = 0; i < 3 && !st; i++) st = seq_out(ctx, p, outs[i], cols[i], &data[i], &scratch[i]);
  if (!st) st = pd_ctx_scratch_n(ctx, 2, init, sizes);
  if (!st) {
    pd_k_rnn_seq s = seq_of(ctx, p);
    if (!(st = init_rows(p, h0, p->hid, init[0])) &&
        !(st = init_rows(p, c0, p->hid, init[1])))
      st = pd_ctx_check(ctx, ctx->k->lstm_seq(&s, pd_tensor_data(x), pd_tensor_data(w), init[0],
                                              init[1], data[0], data[1], data[2]),
                        "lstm");
    pd_ctx_scratch_free_n(ctx, 2, init);
  }
  pd_ctx_scratch_free_n(ctx, 3, scratch);
  return st;
}

/* fused_lstm_grad through lstm_seq_grad: outs are Input@GRAD, Weight@GRAD, H0@GRAD, C0@GRAD. */
static pd_status lstm_whole_grad(pd_exec_ctx *ctx, const gplan *p, const pd_tensor *const *in,
                                 pd_tensor *const *outs) {
  /* in: Weight, H0, C0, Hidden, Cell, BatchGate, Hidden@GRAD, Cell@GRAD */
  const pd_tensor *w = in[0], *h0 = in[1], *c0 = in[2];
  size_t rb = (size_t)p->hid * p->es, N = (size_t)p->nseq;
  char *dx, *dw, *scratch[2] = {0}, *buf[4] = {0};
  size_t sizes[4] = {rb * N, rb * N, rb * N, rb * N};
  pd_status st = seq_out(ctx, p, outs[0], 4 * p->hid, &dx, &scratch[0]);
  if (!st) st = seq_like(ctx, outs[1], w, &dw, &scratch[1]);
  if (!st) st = pd_ctx_scratch_n(ctx, 4, buf, sizes);
  if (!st) {
    pd_k_rnn_seq s = seq_of(ctx, p);
    if (!(st = init_rows(p, h0, p->hid, buf[0])) &&
        !(st = init_rows(p, c0, p->hid, buf[1])))
      st = pd_ctx_check(ctx, ctx->k->lstm_seq_grad(&s, pd_tensor_data(w), buf[0], buf[1],
                                                   pd_tensor_data(in[3]), pd_tensor_data(in[4]),
                                                   pd_tensor_data(in[5]),
                                                   in[6] ? pd_tensor_data(in[6]) : NULL,
                                                   in[7] ? pd_tensor_data(in[7]) : NULL, dx,
                                                   dw, buf[2], buf[3]),
                        "lstm gradients");
    if (!st) st = state_grad(ctx, p, h0, outs[2], buf[2]);
    if (!st) st = state_grad(ctx, p, c0, outs[3], buf[3]);
    pd_ctx_scratch_free_n(ctx, 4, buf);
  }
  pd_ctx_scratch_free_n(ctx, 2, scratch);
  return st;
}

/* fused_gru through gru_seq: outs are Hidden, BatchGate. */
static pd_status gru_whole(pd_exec_ctx *ctx, const gplan *p, const pd_tensor *x,
                           const pd_tensor *w, const pd_tensor *bias, const pd_tensor *h0,
                           pd_tensor *const *outs) {
  int64_t H = p->hid, cols[2] = {H, 4 * H};
  char *data[2] = {0}, *scratch[2] = {0}, *init[1] = {0};
  size_t sizes[1] = {(size_t)H * p->es * (size_t)p->nseq};
  pd_status st = PD_OK;
  for (int i = 0; i < 2 && !st; i++) st = seq_out(ctx, p, outs[i], cols[i], &data[i], &scratch[i]);
  if (!st) st = pd_ctx_scratch_n(ctx, 1, init, sizes);
  if (!st) {
    pd_k_rnn_seq s = seq_of(ctx, p);
    if (!(st = init_rows(p, h0, p->hid, init[0])))
      st = pd_ctx_check(ctx, ctx->k->gru_seq(&s, pd_tensor_data(x), pd_tensor_data(w),
                                             pd_tensor_data(bias), init[0], data[0], data[1]),
                        "gru");
    pd_ctx_scratch_free_n(ctx, 1, init);
  }
  pd_ctx_scratch_free_n(ctx, 2, scratch);
  return st;
}

/* fused_gru_grad through gru_seq_grad: outs are Input@GRAD, Weight@GRAD, H0@GRAD, Bias@GRAD. */
static pd_status gru_whole_grad(pd_exec_ctx *ctx, const gplan *p, const pd_tensor *const *in,
                                pd_tensor *const *outs) {
  /* in: Weight, H0, Bias, Hidden, BatchGate, Hidden@GRAD */
  const pd_tensor *w = in[0], *h0 = in[1];
  size_t rb = (size_t)p->hid * p->es, N = (size_t)p->nseq;
  char *dx, *dw, *db, *scratch[3] = {0}, *buf[2] = {0};
  size_t sizes[2] = {rb * N, rb * N};
  pd_status st = seq_out(ctx, p, outs[0], 3 * p->hid, &dx, &scratch[0]);
  if (!st) st = seq_like(ctx, outs[1], w, &dw, &scratch[1]);
  if (!st) st = seq_like(ctx, outs[3], in[2], &db, &scratch[2]);
  if (!st) st = pd_ctx_scratch_n(ctx, 2, buf, sizes);
  if (!st) {
    pd_k_rnn_seq s = seq_of(ctx, p);
    if (!(st = init_rows(p, h0, p->hid, buf[0])))
      st = pd_ctx_check(ctx, ctx->k->gru_seq_grad(&s, pd_tensor_data(w), buf[0],
                                                  pd_tensor_data(in[3]), pd_tensor_data(in[4]),
                                                  in[5] ? pd_tensor_data(in[5]) : NULL, dx, dw,
                                                  db, buf[1]),
                        "gru gradients");
    if (!st) st = state_grad(ctx, p, h0, outs[2], buf[1]);
    pd_ctx_scratch_free_n(ctx, 2, buf);
  }
  pd_ctx_scratch_free_n(ctx, 3, scratch);
  return st;
}

/* ================================================================ fused_lstm */

/* The backend's whole-sequence kernels (kernels.h: the CPU's rnn_seq.c; the CUDA backend's
 * composes them of a GEMM and a cell kernel a step, kernels/rnn_steps.c). */
static pd_status need_seq(pd_exec_ctx *ctx, bool have) {
  return have ? PD_OK
              : pd_ctx_fail(ctx, PD_EUNSUPPORTED, "the %s backend has no whole-sequence "
                            "recurrence kernels", ctx->k->name);
}

pd_status pd_kernel_fused_lstm(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 4, 4, true, false, false);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *c0 = pd_ctx_in(ctx, "C0");
  pd_tensor *outs[3] = {pd_ctx_out(ctx, "Hidden"), pd_ctx_out(ctx, "Cell"),
                        pd_ctx_out(ctx, "BatchGate")};
  const pd_tensor *ins[4] = {x, w, h0, c0};
  if (!st && !outs[0]) st = pd_ctx_fail(ctx, PD_EINVAL, "Hidden must be given");
  if (!st) st = distinct(ctx, ins, 4, outs, 3);
  if (!st) st = need_seq(ctx, ctx->k->lstm_seq);
  if (!st) st = lstm_whole(ctx, &p, x, w, h0, c0, outs);
  gplan_free(&p);
  return st;
}

/* From the last step back (the kernel's): the gradients of h and c (their own plus what step
 * k + 1 carried back) give the gates' pre-activation gradients dG_k (Input's gradient); h_k-1
 * gets dG_k W^T, c_k-1 dc f; Weight's gradient is the sum over the steps of h_k-1^T dG_k. */
pd_status pd_kernel_fused_lstm_grad(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 4, 4, true, true, false);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *c0 = pd_ctx_in(ctx, "C0");
  const pd_tensor *hid = pd_ctx_in(ctx, "Hidden"), *cell = pd_ctx_in(ctx, "Cell");
  const pd_tensor *gate = pd_ctx_in(ctx, "BatchGate");
  const pd_tensor *dhid = pd_ctx_in(ctx, "Hidden@GRAD"), *dcell = pd_ctx_in(ctx, "Cell@GRAD");
  pd_tensor *outs[4] = {pd_ctx_out(ctx, "Input@GRAD"), pd_ctx_out(ctx, "Weight@GRAD"),
                        h0 ? pd_ctx_out(ctx, "H0@GRAD") : NULL,
                        c0 ? pd_ctx_out(ctx, "C0@GRAD") : NULL};
  const pd_tensor *ins[9] = {x, w, h0, c0, hid, cell, gate, dhid, dcell};
  if (!st) st = distinct(ctx, ins, 9, outs, 4);
  const pd_tensor *dgrads[2] = {dhid, dcell};
  for (int i = 0; i < 2 && !st; i++)
    if (dgrads[i] && (dgrads[i]->dtype != p.dt || pd_tensor_numel(dgrads[i]) != p.total * p.hid))
      st = pd_ctx_fail(ctx, PD_ESHAPE, "%s must have [%lld, %lld] %s elements",
                       i ? "Cell@GRAD" : "Hidden@GRAD", (long long)p.total, (long long)p.hid,
                       pd_dtype_name(p.dt));
  if (!st) st = need_seq(ctx, ctx->k->lstm_seq_grad);
  if (!st) {
    const pd_tensor *seq_in[8] = {w, h0, c0, hid, cell, gate, dhid, dcell};
    st = lstm_whole_grad(ctx, &p, seq_in, outs);
  }
  gplan_free(&p);
  return st;
}

/* ================================================================ fused_gru */

/* Per step k (the kernel's): P = h_k-1 W (one GEMM for r, z and n), then the gate math with
 * Bias (b_hh) and Input (x W_ih + b_ih); r, z, n and P_n + b_n are kept for the gradient. */
pd_status pd_kernel_fused_gru(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 3, 4, false, false, false);
  if (!st) st = gru_bias(ctx, &p);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *bias = pd_ctx_in(ctx, "Bias");
  pd_tensor *outs[2] = {pd_ctx_out(ctx, "Hidden"), pd_ctx_out(ctx, "BatchGate")};
  const pd_tensor *ins[4] = {x, w, h0, bias};
  if (!st && !outs[0]) st = pd_ctx_fail(ctx, PD_EINVAL, "Hidden must be given");
  if (!st) st = distinct(ctx, ins, 4, outs, 2);
  if (!st) st = need_seq(ctx, ctx->k->gru_seq);
  if (!st) st = gru_whole(ctx, &p, x, w, bias, h0, outs);
  gplan_free(&p);
  return st;
}

/* From the last step back (the kernel's): dh (its own plus what step k + 1 carried back) gives
 * the gradients of Input's row (r, z, n pre-activations) and of h_k-1 W + b (r, z and r dn);
 * h_k-1 gets dh z + those times W^T. Weight's gradient is sum h_k-1^T dP_k, Bias's the column
 * sums. */
pd_status pd_kernel_fused_gru_grad(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 3, 4, false, true, false);
  if (!st) st = gru_bias(ctx, &p);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight");
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *bias = pd_ctx_in(ctx, "Bias");
  const pd_tensor *hid = pd_ctx_in(ctx, "Hidden"), *gate = pd_ctx_in(ctx, "BatchGate");
  const pd_tensor *dhid = pd_ctx_in(ctx, "Hidden@GRAD");
  pd_tensor *outs[4] = {pd_ctx_out(ctx, "Input@GRAD"), pd_ctx_out(ctx, "Weight@GRAD"),
                        h0 ? pd_ctx_out(ctx, "H0@GRAD") : NULL, pd_ctx_out(ctx, "Bias@GRAD")};
  const pd_tensor *ins[7] = {x, w, h0, bias, hid, gate, dhid};
  if (!st) st = distinct(ctx, ins, 7, outs, 4);
  if (!st && dhid && (dhid->dtype != p.dt || pd_tensor_numel(dhid) != p.total * p.hid))
    st = pd_ctx_fail(ctx, PD_ESHAPE, "Hidden@GRAD must have [%lld, %lld] %s elements",
                     (long long)p.total, (long long)p.hid, pd_dtype_name(p.dt));
  if (!st) st = need_seq(ctx, ctx->k->gru_seq_grad);
  if (!st) {
    const pd_tensor *seq_in[6] = {w, h0, bias, hid, gate, dhid};
    st = gru_whole_grad(ctx, &p, seq_in, outs);
  }
  gplan_free(&p);
  return st;
}

/* ================================================================ Fluid's lstm and gru */

/* Fluid's own recurrences (the dynamic_lstm and dynamic_gru layers of Fluid 1.x), on the host:
 * their gate order, peepholes, GRU reset form and activations are not the fused ones', so
 * they run on the same plan with the step's products through the backend's GEMM and the gate
 * arithmetic here, in double. */

typedef enum fact { FA_SIGMOID, FA_TANH, FA_RELU, FA_IDENTITY } fact;

static fact fact_of(const pd_exec_ctx *ctx, const char *attr) {
  const char *s = pd_ctx_attr_str(ctx, attr);
  return !strcmp(s, "sigmoid") ? FA_SIGMOID : !strcmp(s, "tanh") ? FA_TANH
         : !strcmp(s, "relu")  ? FA_RELU    : FA_IDENTITY;
}

static double fact_f(fact a, double v) {
  switch (a) {
    case FA_SIGMOID: return 1 / (1 + exp(-v));
    case FA_TANH: return tanh(v);
    case FA_RELU: return v > 0 ? v : 0;
    default: return v;
  }
}

/* The derivative at the input whose activation is y, from y. */
static double fact_d(fact a, double y) {
  switch (a) {
    case FA_SIGMOID: return y * (1 - y);
    case FA_TANH: return 1 - y * y;
    case FA_RELU: return y > 0 ? 1 : 0;
    default: return 1;
  }
}

static double get(const void *b, pd_dtype dt, int64_t i) {
  return dt == PD_FP32 ? (double)((const float *)b)[i] : ((const double *)b)[i];
}

static void put(void *b, pd_dtype dt, int64_t i, double v) {
  if (dt == PD_FP32) ((float *)b)[i] = (float)v;
  else ((double *)b)[i] = v;
}

/* C (ldc) = A op(B) + beta C through the backend, A [m, k] (lda), B [k, n] or [n, k]. */
static pd_status mm(const pd_exec_ctx *ctx, pd_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                    int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                    double beta, void *c, int64_t ldc) {
  if (m == 0 || n == 0) return PD_OK;
  return k_check(ctx, ctx->k->gemm(dt, ta, tb, m, n, k, 1.0, a, ld(lda), b, ld(ldb), beta, c,
                                   ld(ldc)),
                 dt);
}

/* The previous state (cols wide) of time-major row r of step k: the state output's row of step
 * k - 1, or the initial row r (the sequences' order) at step 0. */
static const char *prev_row(const gplan *p, int64_t k, int64_t r, int64_t cols,
                            const char *out, const char *init) {
  size_t rb = (size_t)cols * p->es;
  return k ? out + (size_t)p->row[p->koff[k - 1] + r] * rb : init + (size_t)r * rb;
}

/* Bias: [1, cols] (or [cols]) with Input's dtype; NULL and fine when absent and optional. */
static pd_status fluid_bias(const pd_exec_ctx *ctx, const gplan *p, int64_t cols,
                            const char *why, const pd_tensor **bias) {
  char a[96];
  const pd_tensor *b = *bias = pd_ctx_in(ctx, "Bias");
  if (!b && !why) return PD_OK;
  if (!b || b->dtype != p->dt || pd_tensor_numel(b) != cols || b->ndims > 2 ||
      (b->ndims == 2 && b->dims[0] != 1))
    return pd_ctx_fail(ctx, PD_ESHAPE, "Bias must be [1, %lld] %s%s; it is %s", (long long)cols,
                       pd_dtype_name(p->dt), why ? why : "",
                       b ? pd_ctx_shape_str(b, a, sizeof a) : "missing");
  return PD_OK;
}

/* Outputs resized to [T, cols[i]] with Input's LoD (scratch where not bound). */
static pd_status fluid_outs(const pd_exec_ctx *ctx, const gplan *p, int n, pd_tensor *const *o,
                            const int64_t *cols, char **data, char **scratch) {
  pd_status st = PD_OK;
  for (int i = 0; i < n && !st; i++) st = seq_out(ctx, p, o[i], cols[i], &data[i], &scratch[i]);
  return st;
}

/* Fluid's lstm and lstmp: Input [T, 4H] holds x W_x of the gates c~, i, f, o; Bias [1, 4H]
 * their biases (use_peepholes: [1, 7H], then W_ic, W_fc, W_oc). Per step, with g = x + b + r' W
 * (r', c' the previous states: lstm's r is its hidden state h, lstmp's the projection of h):
 *   c~ = act_cand(g_c), i = act_gate(g_i + W_ic c'), f = act_gate(g_f + W_fc c'),
 *   c = clip(f c' + i c~, cell_clip), o = act_gate(g_o + W_oc c), h = o act_cell(c),
 *   lstm: r = h; lstmp: r = clip(act_proj(h ProjWeight), proj_clip)
 * where clip(v, m) bounds v to [-m, m] when m > 0 (lstmp's attributes; lstm has none) and
 * act_proj is cell_activation unless proj_activation is identity: PaddlePaddle's kernel reads
 * proj_activation only to tell identity from the rest. BatchGate keeps c~, i, f, o;
 * BatchCellPreAct act_cell(c); lstmp's BatchHidden h, OrderedP0 the initial projections (H0's
 * rows, or zeros) in the plan's order (sequences by length). One implementation, the proj
 * flag telling them apart. */

typedef struct flstm {
  bool proj, peep;
  fact ag, ac, an, ap;   /* gate, cell, candidate, projection */
  double cclip, pclip;   /* 0: no clipping */
} flstm;

static flstm flstm_of(const pd_exec_ctx *ctx, bool proj) {
  flstm f = {proj, pd_ctx_attr_bool(ctx, "use_peepholes"), fact_of(ctx, "gate_activation"),
             fact_of(ctx, "cell_activation"), fact_of(ctx, "candidate_activation"),
             FA_IDENTITY, 0, 0};
  if (proj) {
    f.ap = fact_of(ctx, "proj_activation") == FA_IDENTITY ? FA_IDENTITY : f.ac;
    f.cclip = pd_ctx_attr_float(ctx, "cell_clip");
    f.pclip = pd_ctx_attr_float(ctx, "proj_clip");
  }
  return f;
}

/* v bounded to [-m, m] when m > 0. */
static double clip_to(double v, double m) {
  return m > 0 ? (v < -m ? -m : v > m ? m : v) : v;
}

/* Whether a value bounded to m (clip_to) lets its gradient through: m <= 0, or strictly inside
 * (-m, m). */
static bool inside(double v, double m) { return m <= 0 || (v > -m && v < m); }

/* lstmp's OrderedP0: the initial projections in the plan's order, [sequences, P]. */
static pd_status ordered_p0(const pd_exec_ctx *ctx, const gplan *p, pd_tensor *o,
                            const char *init) {
  int64_t dims[2] = {p->nseq, p->rec};
  pd_status st = pd_ctx_resize(ctx, o, p->dt, 2, dims);
  if (!st && p->nseq) memcpy(pd_tensor_data(o), init, (size_t)(p->nseq * p->rec) * p->es);
  return st;
}

static pd_status fluid_lstm(pd_exec_ctx *ctx, bool proj) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 4, 4, true, false, proj);
  flstm f = flstm_of(ctx, proj);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight"), *bias = NULL;
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *c0 = pd_ctx_in(ctx, "C0");
  const pd_tensor *pw = proj ? pd_ctx_in(ctx, "ProjWeight") : NULL;
  const char *oname = proj ? "Projection" : "Hidden";
  /* Hidden (Projection), Cell, BatchGate, BatchCellPreAct, BatchHidden, OrderedP0 */
  pd_tensor *outs[6] = {pd_ctx_out(ctx, oname), pd_ctx_out(ctx, "Cell"),
                        pd_ctx_out(ctx, "BatchGate"), pd_ctx_out(ctx, "BatchCellPreAct"),
                        proj ? pd_ctx_out(ctx, "BatchHidden") : NULL,
                        proj ? pd_ctx_out(ctx, "OrderedP0") : NULL};
  if (!st) st = fluid_bias(ctx, &p, (f.peep ? 7 : 4) * p.hid,
                           f.peep ? " (use_peepholes)" : " (no peepholes)", &bias);
  const pd_tensor *ins[6] = {x, w, h0, c0, bias, pw};
  if (!st && !outs[0]) st = pd_ctx_fail(ctx, PD_EINVAL, "%s must be given", oname);
  if (!st) st = distinct(ctx, ins, 6, outs, 6);
  int64_t H = p.hid, R = p.rec, cols[5] = {R, H, 4 * H, H, H};
  char *o[5] = {0}, *scratch[5] = {0}, *buf[4] = {0};
  size_t rb = (size_t)H * p.es, N = (size_t)p.nseq;
  size_t sizes[4] = {(size_t)R * p.es * N, rb * N, 4 * rb * N, rb * N};
  if (!st) st = fluid_outs(ctx, &p, proj ? 5 : 4, outs, cols, o, scratch);
  if (!st) st = pd_ctx_scratch_n(ctx, 4, buf, sizes);
  if (!st && !(st = init_rows(&p, h0, R, buf[0]))) st = init_rows(&p, c0, H, buf[1]);
  if (!st && outs[5]) st = ordered_p0(ctx, &p, outs[5], buf[0]);
  pd_dtype dt = p.dt;
  const char *xd = st ? NULL : pd_tensor_data(x), *b = st ? NULL : pd_tensor_data(bias);
  /* the recurrent state r of every running sequence, c, the gates' pre-activations, h */
  char *rs = buf[0], *cs = buf[1], *g = buf[2], *hs = buf[3];
  for (int64_t k = 0; k < p.maxlen && !st; k++) {
    int64_t n = running(&p, k);
    for (int64_t r = 0; r < n; r++)
      for (int64_t q = 0; q < 4 * H; q++)
        put(g, dt, r * 4 * H + q, get(xd, dt, p.row[p.koff[k] + r] * 4 * H + q) + get(b, dt, q));
    if ((st = mm(ctx, dt, false, false, n, 4 * H, R, rs, R, pd_tensor_data(w), 4 * H, 1.0, g,
                 4 * H)))
      break;
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r], gr = r * 4 * H;
      for (int64_t j = 0; j < H; j++) {
        double cp = get(cs, dt, r * H + j);
        double cand = fact_f(f.an, get(g, dt, gr + j));
        double ig = fact_f(f.ag, get(g, dt, gr + H + j) +
                                     (f.peep ? get(b, dt, 4 * H + j) * cp : 0));
        double fg = fact_f(f.ag, get(g, dt, gr + 2 * H + j) +
                                     (f.peep ? get(b, dt, 5 * H + j) * cp : 0));
        double c = clip_to(fg * cp + ig * cand, f.cclip);
        double og = fact_f(f.ag, get(g, dt, gr + 3 * H + j) +
                                     (f.peep ? get(b, dt, 6 * H + j) * c : 0));
        double a = fact_f(f.ac, c), gates[4] = {cand, ig, fg, og};
        for (int q = 0; q < 4; q++) put(o[2], dt, row * 4 * H + q * H + j, gates[q]);
        put(o[proj ? 4 : 0], dt, row * H + j, og * a);
        put(o[1], dt, row * H + j, c);
        put(o[3], dt, row * H + j, a);
        put(hs, dt, r * H + j, og * a);
        put(cs, dt, r * H + j, c);
      }
    }
    if (!proj) {
      memcpy(rs, hs, (size_t)n * rb);
      continue;
    }
    if ((st = mm(ctx, dt, false, false, n, R, H, hs, H, pd_tensor_data(pw), R, 0.0, rs, R)))
      break;
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r];
      for (int64_t q = 0; q < R; q++) {
        double v = clip_to(fact_f(f.ap, get(rs, dt, r * R + q)), f.pclip);
        put(rs, dt, r * R + q, v);
        put(o[0], dt, row * R + q, v);
      }
    }
  }
  pd_ctx_scratch_free_n(ctx, 4, buf);
  pd_ctx_scratch_free_n(ctx, 5, scratch);
  gplan_free(&p);
  return st;
}

/* lstm_grad and lstmp_grad, from the last step back. lstmp: r's gradient (Projection's plus
 * what step k + 1 carried back), through the clip and act_proj, gives ProjWeight's (h^T dr)
 * and h's (dr ProjWeight^T); lstm: h's is Hidden's plus the carried one. Then dh and dc (Cell's
 * plus the carried one; none where the cell was clipped) give the pre-activations' gradients dG
 * (Input's rows), the peepholes' and Bias's sums; r' gets dG W^T, c' dc f + the peepholes'
 * terms; Weight's gradient is the sum of r'^T dG. */
static pd_status fluid_lstm_grad(pd_exec_ctx *ctx, bool proj) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 4, 4, true, true, proj);
  flstm f = flstm_of(ctx, proj);
  const char *oname = proj ? "Projection" : "Hidden";
  const char *dname = proj ? "Projection@GRAD" : "Hidden@GRAD";
  const pd_tensor *w = pd_ctx_in(ctx, "Weight"), *bias = NULL;
  const pd_tensor *pw = proj ? pd_ctx_in(ctx, "ProjWeight") : NULL;
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0"), *c0 = pd_ctx_in(ctx, "C0");
  const pd_tensor *out = pd_ctx_in(ctx, oname), *cell = pd_ctx_in(ctx, "Cell");
  const pd_tensor *gate = pd_ctx_in(ctx, "BatchGate");
  const pd_tensor *bh = proj ? pd_ctx_in(ctx, "BatchHidden") : NULL;
  const pd_tensor *dout = pd_ctx_in(ctx, dname), *dcell = pd_ctx_in(ctx, "Cell@GRAD");
  pd_tensor *outs[6] = {pd_ctx_out(ctx, "Input@GRAD"), pd_ctx_out(ctx, "Weight@GRAD"),
                        pd_ctx_out(ctx, "Bias@GRAD"), h0 ? pd_ctx_out(ctx, "H0@GRAD") : NULL,
                        c0 ? pd_ctx_out(ctx, "C0@GRAD") : NULL,
                        proj ? pd_ctx_out(ctx, "ProjWeight@GRAD") : NULL};
  int64_t H = p.hid, R = p.rec, nb = (f.peep ? 7 : 4) * H;
  if (!st) st = fluid_bias(ctx, &p, nb, f.peep ? " (use_peepholes)" : " (no peepholes)", &bias);
  const pd_tensor *ins[12] = {pd_ctx_in(ctx, "Input"), w, h0, c0, bias, out, cell, gate, dout,
                              dcell, pw, bh};
  if (!st) st = distinct(ctx, ins, 12, outs, 6);
  const pd_tensor *dg_in[2] = {dout, dcell};
  for (int i = 0; i < 2 && !st; i++)
    if (dg_in[i] &&
        (dg_in[i]->dtype != p.dt || pd_tensor_numel(dg_in[i]) != p.total * (i ? H : R)))
      st = pd_ctx_fail(ctx, PD_ESHAPE, "%s must have [%lld, %lld] %s elements",
                       i ? "Cell@GRAD" : dname, (long long)p.total, (long long)(i ? H : R),
                       pd_dtype_name(p.dt));
  pd_dtype dt = p.dt;
  size_t rb = (size_t)H * p.es, pb = (size_t)R * p.es, N = (size_t)p.nseq;
  char *dx = NULL, *dw = NULL, *db = NULL, *dpw = NULL, *scratch[4] = {0}, *buf[8] = {0};
  size_t sizes[8] = {pb * N, rb * N, pb * N, rb * N, 4 * rb * N, (size_t)nb * sizeof(double),
                     rb * N, pb * N};
  if (!st) st = seq_out(ctx, &p, outs[0], 4 * H, &dx, &scratch[0]);
  if (!st) st = seq_like(ctx, outs[1], w, &dw, &scratch[1]);
  if (!st) st = seq_like(ctx, outs[2], bias, &db, &scratch[2]);
  if (!st && proj) st = seq_like(ctx, outs[5], pw, &dpw, &scratch[3]);
  if (!st) st = pd_ctx_scratch_n(ctx, 8, buf, sizes);
  if (!st && !(st = init_rows(&p, h0, R, buf[0]))) st = init_rows(&p, c0, H, buf[1]);
  if (!st) st = zero(&p, pd_tensor_numel(w), dw);
  if (!st && proj) st = zero(&p, pd_tensor_numel(pw), dpw);
  /* buf: r0's and c0's rows, dr and dc (carried), dG, Bias's sums, h then dh, dr of the step */
  char *drs = buf[2], *dcs = buf[3], *dgs = buf[4], *hs = buf[6], *drb = buf[7];
  double *dbias = (double *)buf[5];
  if (!st) {
    memset(drs, 0, pb * N);
    memset(dcs, 0, rb * N);
    memset(dbias, 0, (size_t)nb * sizeof(double));
  }
  const char *b = st ? NULL : pd_tensor_data(bias), *gd = st ? NULL : pd_tensor_data(gate);
  const char *od = st ? NULL : pd_tensor_data(out), *cd = st ? NULL : pd_tensor_data(cell);
  const char *bhd = bh && !st ? pd_tensor_data(bh) : NULL;
  const char *dod = dout ? pd_tensor_data(dout) : NULL;
  const char *dcd = dcell ? pd_tensor_data(dcell) : NULL;
  for (int64_t k = p.maxlen - 1; k >= 0 && !st; k--) {
    int64_t n = running(&p, k);
    /* h's gradient into hs: lstm's directly; lstmp's through the projection. */
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r];
      for (int64_t q = 0; q < R; q++) {
        double d = get(drs, dt, r * R + q) + (dod ? get(dod, dt, row * R + q) : 0);
        if (proj) {
          double v = get(od, dt, row * R + q);
          put(drb, dt, r * R + q, inside(v, f.pclip) ? d * fact_d(f.ap, v) : 0);
        } else {
          put(hs, dt, r * H + q, d);
        }
      }
      if (proj) memcpy(hs + (size_t)r * rb, bhd + (size_t)row * rb, rb);
    }
    if (proj && ((st = mm(ctx, dt, true, false, H, R, n, hs, H, drb, R, 1.0, dpw, R)) ||
                 (st = mm(ctx, dt, false, true, n, H, R, drb, R, pd_tensor_data(pw), R, 0.0, hs,
                          H))))
      break;
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r], gr = row * 4 * H;
      const char *cprev = prev_row(&p, k, r, H, cd, buf[1]);
      for (int64_t j = 0; j < H; j++) {
        double cp = get(cprev, dt, j), c = get(cd, dt, row * H + j);
        double cand = get(gd, dt, gr + j), ig = get(gd, dt, gr + H + j);
        double fg = get(gd, dt, gr + 2 * H + j), og = get(gd, dt, gr + 3 * H + j);
        double dh = get(hs, dt, r * H + j);
        double dc = get(dcs, dt, r * H + j) + (dcd ? get(dcd, dt, row * H + j) : 0);
        double a = fact_f(f.ac, c);
        double dop = dh * a * fact_d(f.ag, og);
        dc += dh * og * fact_d(f.ac, a) + (f.peep ? dop * get(b, dt, 6 * H + j) : 0);
        if (!inside(c, f.cclip)) dc = 0;
        double dcand = dc * ig * fact_d(f.an, cand), dip = dc * cand * fact_d(f.ag, ig);
        double dfp = dc * cp * fact_d(f.ag, fg), d[4] = {dcand, dip, dfp, dop};
        double dcp = dc * fg;
        if (f.peep) {
          dcp += dip * get(b, dt, 4 * H + j) + dfp * get(b, dt, 5 * H + j);
          dbias[4 * H + j] += dip * cp;
          dbias[5 * H + j] += dfp * cp;
          dbias[6 * H + j] += dop * c;
        }
        put(dcs, dt, r * H + j, dcp);
        for (int q = 0; q < 4; q++) {
          put(dgs, dt, r * 4 * H + q * H + j, d[q]);
          put(dx, dt, gr + q * H + j, d[q]);
          dbias[q * H + j] += d[q];
        }
      }
    }
    /* Weight's gradient: r'^T dG, r' gathered into drs's rows (their carried values are read;
     * drs becomes dG W^T right after). */
    for (int64_t r = 0; r < n; r++)
      memcpy(drs + (size_t)r * pb, prev_row(&p, k, r, R, od, buf[0]), pb);
    if ((st = mm(ctx, dt, true, false, R, 4 * H, n, drs, R, dgs, 4 * H, 1.0, dw, 4 * H)) ||
        (st = mm(ctx, dt, false, true, n, R, 4 * H, dgs, 4 * H, pd_tensor_data(w), 4 * H, 0.0,
                 drs, R)))
      break;
  }
  for (int64_t q = 0; q < nb && !st; q++) put(db, dt, q, dbias[q]);
  if (!st) st = state_grad(ctx, &p, h0, outs[3], drs);
  if (!st) st = state_grad(ctx, &p, c0, outs[4], dcs);
  pd_ctx_scratch_free_n(ctx, 8, buf);
  pd_ctx_scratch_free_n(ctx, 4, scratch);
  gplan_free(&p);
  return st;
}

pd_status pd_kernel_lstm(pd_exec_ctx *ctx) { return fluid_lstm(ctx, false); }
pd_status pd_kernel_lstm_grad(pd_exec_ctx *ctx) { return fluid_lstm_grad(ctx, false); }
pd_status pd_kernel_lstmp(pd_exec_ctx *ctx) { return fluid_lstm(ctx, true); }
pd_status pd_kernel_lstmp_grad(pd_exec_ctx *ctx) { return fluid_lstm_grad(ctx, true); }

/* Fluid's gru: Input [T, 3H] holds x W_x of the update gate u, the reset gate r and the
 * candidate; Bias [1, 3H] (optional) their biases; Weight's memory holds W_ur [H, 2H] then
 * W_c [H, H]. Per step, with g = x + b:
 *   u, r = act_gate(g_ur + h' W_ur), c = act(g_c + (r h') W_c),
 *   h = u c + (1 - u) h' (origin_mode: u h' + (1 - u) c).
 * BatchGate keeps u, r, c; BatchResetHiddenPrev r h'; BatchHidden h. */
pd_status pd_kernel_gru(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 3, 3, false, false, false);
  const pd_tensor *x = pd_ctx_in(ctx, "Input"), *w = pd_ctx_in(ctx, "Weight"), *bias = NULL;
  const pd_tensor *h0 = pd_ctx_in(ctx, "H0");
  pd_tensor *outs[4] = {pd_ctx_out(ctx, "Hidden"), pd_ctx_out(ctx, "BatchGate"),
                        pd_ctx_out(ctx, "BatchResetHiddenPrev"), pd_ctx_out(ctx, "BatchHidden")};
  if (!st) st = fluid_bias(ctx, &p, 3 * p.hid, NULL, &bias);
  const pd_tensor *ins[4] = {x, w, h0, bias};
  if (!st && !outs[0]) st = pd_ctx_fail(ctx, PD_EINVAL, "Hidden must be given");
  if (!st) st = distinct(ctx, ins, 4, outs, 4);
  int64_t H = p.hid, cols[4] = {H, 3 * H, H, H};
  char *o[4] = {0}, *scratch[4] = {0}, *buf[3] = {0};
  size_t rb = (size_t)H * p.es, N = (size_t)p.nseq, sizes[3] = {rb * N, rb * N, 3 * rb * N};
  if (!st) st = fluid_outs(ctx, &p, 4, outs, cols, o, scratch);
  if (!st) st = pd_ctx_scratch_n(ctx, 3, buf, sizes);
  if (!st) st = init_rows(&p, h0, p.hid, buf[0]);
  fact ag = fact_of(ctx, "gate_activation"), an = fact_of(ctx, "activation");
  bool origin = pd_ctx_attr_bool(ctx, "origin_mode");
  pd_dtype dt = p.dt;
  const char *xd = st ? NULL : pd_tensor_data(x), *b = bias ? pd_tensor_data(bias) : NULL;
  const char *wur = st ? NULL : pd_tensor_data(w), *wc = wur ? wur + 2 * rb * (size_t)H : NULL;
  char *hs = buf[0], *rh = buf[1], *g = buf[2];
  for (int64_t k = 0; k < p.maxlen && !st; k++) {
    int64_t n = running(&p, k);
    for (int64_t r = 0; r < n; r++)
      for (int64_t q = 0; q < 3 * H; q++)
        put(g, dt, r * 3 * H + q,
            get(xd, dt, p.row[p.koff[k] + r] * 3 * H + q) + (b ? get(b, dt, q) : 0));
    if ((st = mm(ctx, dt, false, false, n, 2 * H, H, hs, H, wur, 2 * H, 1.0, g, 3 * H))) break;
    for (int64_t r = 0; r < n; r++)
      for (int64_t j = 0; j < H; j++) {
        double u = fact_f(ag, get(g, dt, r * 3 * H + j));
        double rg = fact_f(ag, get(g, dt, r * 3 * H + H + j));
        put(g, dt, r * 3 * H + j, u);
        put(g, dt, r * 3 * H + H + j, rg);
        put(rh, dt, r * H + j, rg * get(hs, dt, r * H + j));
      }
    if ((st = mm(ctx, dt, false, false, n, H, H, rh, H, wc, H, 1.0, g + 2 * rb, 3 * H))) break;
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r];
      for (int64_t j = 0; j < H; j++) {
        double u = get(g, dt, r * 3 * H + j), hp = get(hs, dt, r * H + j);
        double c = fact_f(an, get(g, dt, r * 3 * H + 2 * H + j));
        double h = origin ? u * hp + (1 - u) * c : u * c + (1 - u) * hp;
        double gates[3] = {u, get(g, dt, r * 3 * H + H + j), c};
        for (int q = 0; q < 3; q++) put(o[1], dt, row * 3 * H + q * H + j, gates[q]);
        put(o[2], dt, row * H + j, get(rh, dt, r * H + j));
        put(o[3], dt, row * H + j, h);
        put(o[0], dt, row * H + j, h);
        put(hs, dt, r * H + j, h);
      }
    }
  }
  pd_ctx_scratch_free_n(ctx, 3, buf);
  pd_ctx_scratch_free_n(ctx, 4, scratch);
  gplan_free(&p);
  return st;
}

/* gru_grad, from the last step back: dh (Hidden's gradient plus what step k + 1 carried back)
 * gives du, dc and h's direct part; dc's pre-activation gradient (Input's candidate columns)
 * times W_c^T is (r h')'s, which gives r's and more of h''s; u's and r's pre-activation
 * gradients (Input's first 2H columns) times W_ur^T the rest of h''s. Weight's gradient: the
 * sums of h'^T [du, dr] and (r h')^T dc; Bias's the column sums of Input's. */
pd_status pd_kernel_gru_grad(pd_exec_ctx *ctx) {
  gplan p;
  pd_status st = gplan_make(ctx, &p, 3, 3, false, true, false);
  const pd_tensor *w = pd_ctx_in(ctx, "Weight"), *bias = NULL, *h0 = pd_ctx_in(ctx, "H0");
  const pd_tensor *hid = pd_ctx_in(ctx, "Hidden"), *gate = pd_ctx_in(ctx, "BatchGate");
  const pd_tensor *dhid = pd_ctx_in(ctx, "Hidden@GRAD");
  pd_tensor *outs[4] = {pd_ctx_out(ctx, "Input@GRAD"), pd_ctx_out(ctx, "Weight@GRAD"), NULL,
                        h0 ? pd_ctx_out(ctx, "H0@GRAD") : NULL};
  if (!st) st = fluid_bias(ctx, &p, 3 * p.hid, NULL, &bias);
  if (bias) outs[2] = pd_ctx_out(ctx, "Bias@GRAD");
  const pd_tensor *ins[7] = {pd_ctx_in(ctx, "Input"), w, h0, bias, hid, gate, dhid};
  if (!st) st = distinct(ctx, ins, 7, outs, 4);
  int64_t H = p.hid;
  if (!st && dhid && (dhid->dtype != p.dt || pd_tensor_numel(dhid) != p.total * H))
    st = pd_ctx_fail(ctx, PD_ESHAPE, "Hidden@GRAD must have [%lld, %lld] %s elements",
                     (long long)p.total, (long long)H, pd_dtype_name(p.dt));
  pd_dtype dt = p.dt;
  size_t rb = (size_t)H * p.es, N = (size_t)p.nseq;
  char *dx = NULL, *dw = NULL, *db = NULL, *scratch[3] = {0}, *buf[6] = {0};
  size_t sizes[6] = {rb * N, rb * N, rb * N, rb * N, 3 * rb * N, 3 * (size_t)H * sizeof(double)};
  if (!st) st = seq_out(ctx, &p, outs[0], 3 * H, &dx, &scratch[0]);
  if (!st) st = seq_like(ctx, outs[1], w, &dw, &scratch[1]);
  if (!st && bias) st = seq_like(ctx, outs[2], bias, &db, &scratch[2]);
  if (!st) st = pd_ctx_scratch_n(ctx, 6, buf, sizes);
  if (!st) st = init_rows(&p, h0, p.hid, buf[0]);
  if (!st) st = zero(&p, pd_tensor_numel(w), dw);
  /* buf: h0's rows, dh (carried), h' of the step, r h' then its gradient, dG, Bias's sums */
  char *dhs = buf[1], *hps = buf[2], *rhs = buf[3], *dgs = buf[4];
  double *dbias = (double *)buf[5];
  if (!st) {
    memset(dhs, 0, rb * N);
    memset(dbias, 0, 3 * (size_t)H * sizeof(double));
  }
  fact ag = fact_of(ctx, "gate_activation"), an = fact_of(ctx, "activation");
  bool origin = pd_ctx_attr_bool(ctx, "origin_mode");
  const char *gd = st ? NULL : pd_tensor_data(gate), *hd = st ? NULL : pd_tensor_data(hid);
  const char *dhd = dhid ? pd_tensor_data(dhid) : NULL;
  const char *wur = st ? NULL : pd_tensor_data(w), *wc = wur ? wur + 2 * rb * (size_t)H : NULL;
  char *dwc = dw ? dw + 2 * rb * (size_t)H : NULL;
  for (int64_t k = p.maxlen - 1; k >= 0 && !st; k--) {
    int64_t n = running(&p, k);
    /* dh into dhs: h's direct part stays there; dc's pre-activation into dG. */
    for (int64_t r = 0; r < n; r++) {
      int64_t row = p.row[p.koff[k] + r], gr = row * 3 * H;
      const char *hprev = prev_row(&p, k, r, H, hd, buf[0]);
      memcpy(hps + (size_t)r * rb, hprev, rb);
      for (int64_t j = 0; j < H; j++) {
        double hp = get(hprev, dt, j), u = get(gd, dt, gr + j), c = get(gd, dt, gr + 2 * H + j);
        double dh = get(dhs, dt, r * H + j) + (dhd ? get(dhd, dt, row * H + j) : 0);
        double du = origin ? dh * (hp - c) : dh * (c - hp);
        double dc = (origin ? dh * (1 - u) : dh * u) * fact_d(an, c);
        put(dhs, dt, r * H + j, origin ? dh * u : dh * (1 - u));
        put(dgs, dt, r * 3 * H + j, du * fact_d(ag, u));
        put(dgs, dt, r * 3 * H + 2 * H + j, dc);
        put(rhs, dt, r * H + j, get(gd, dt, gr + H + j) * hp);
      }
    }
    /* W_c's gradient (r h')^T dc, then r h''s gradient into rhs. */
    if ((st = mm(ctx, dt, true, false, H, H, n, rhs, H, dgs + 2 * rb, 3 * H, 1.0, dwc, H)) ||
        (st = mm(ctx, dt, false, true, n, H, H, dgs + 2 * rb, 3 * H, wc, H, 0.0, rhs, H)))
      break;
    for (int64_t r = 0; r < n; r++) {
      int64_t gr = p.row[p.koff[k] + r] * 3 * H;
      for (int64_t j = 0; j < H; j++) {
        double drh = get(rhs, dt, r * H + j), rg = get(gd, dt, gr + H + j);
        double hp = get(hps, dt, r * H + j);
        put(dgs, dt, r * 3 * H + H + j, drh * hp * fact_d(ag, rg));
        put(dhs, dt, r * H + j, get(dhs, dt, r * H + j) + drh * rg);
      }
      for (int64_t q = 0; q < 3 * H; q++) {
        double v = get(dgs, dt, r * 3 * H + q);
        put(dx, dt, gr + q, v);
        dbias[q] += v;
      }
    }
    /* W_ur's gradient h'^T [du, dr]; h' gets [du, dr] W_ur^T. */
    if ((st = mm(ctx, dt, true, false, H, 2 * H, n, hps, H, dgs, 3 * H, 1.0, dw, 2 * H)) ||
        (st = mm(ctx, dt, false, true, n, H, 2 * H, dgs, 3 * H, wur, 2 * H, 1.0, dhs, H)))
      break;
  }
  for (int64_t q = 0; db && q < 3 * H && !st; q++) put(db, dt, q, dbias[q]);
  if (!st) st = state_grad(ctx, &p, h0, outs[3], dhs);
  pd_ctx_scratch_free_n(ctx, 6, buf);
  pd_ctx_scratch_free_n(ctx, 3, scratch);
  gplan_free(&p);
  return st;
}
