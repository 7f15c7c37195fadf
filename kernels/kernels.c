/* kernels.c -- the backend-independent half of kernels.h: op names, shape rules (broadcast,
 * reduce, conv/pool output sizes), aligned host memory and the Philox random generator; and
 * the argument checks and stride helpers both backends share (kernels_int.h). */
#include "config.h"
#include "kernels/kernels.h"
#include "kernels/kernels_int.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define PD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PD_ASAN 1
#endif
#endif
#ifdef PD_ASAN
/* A cached block is poisoned: a use after pd_k_host_free is still reported. */
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- Names ---- */

#define PD_K_NAME_(e, name) name,
static const char *const binop_names[] = {PD_K_BINOP_LIST(PD_K_NAME_)};
static const char *const cmpop_names[] = {PD_K_CMPOP_LIST(PD_K_NAME_)};
static const char *const logop_names[] = {PD_K_LOGOP_LIST(PD_K_NAME_)};
static const char *const unop_names[] = {PD_K_UNOP_LIST(PD_K_NAME_)};
static const char *const redop_names[] = {PD_K_REDOP_LIST(PD_K_NAME_)};
#undef PD_K_NAME_
#define PD_K_ACT_NAME_(e, name, nparams) name,
static const char *const act_names[] = {PD_K_ACT_LIST(PD_K_ACT_NAME_)};
#undef PD_K_ACT_NAME_
#define PD_K_ACT_NPARAMS_(e, name, nparams) nparams,
static const int act_nparams[] = {PD_K_ACT_LIST(PD_K_ACT_NPARAMS_)};
#undef PD_K_ACT_NPARAMS_
_Static_assert(PD_ARRAY_LEN(binop_names) == PD_K_BINOP_COUNT_, "binop names out of sync");
_Static_assert(PD_ARRAY_LEN(cmpop_names) == PD_K_CMPOP_COUNT_, "cmpop names out of sync");
_Static_assert(PD_ARRAY_LEN(logop_names) == PD_K_LOGOP_COUNT_, "logop names out of sync");
_Static_assert(PD_ARRAY_LEN(unop_names) == PD_K_UNOP_COUNT_, "unop names out of sync");
_Static_assert(PD_ARRAY_LEN(redop_names) == PD_K_REDOP_COUNT_, "redop names out of sync");
_Static_assert(PD_ARRAY_LEN(act_names) == PD_K_ACT_COUNT_, "act names out of sync");

static const char *name_of(const char *const *names, int count, int v) {
  return v >= 0 && v < count ? names[v] : "?";
}

static int index_of(const char *const *names, int count, const char *name) {
  for (int i = 0; i < count; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

const char *pd_k_binop_name(pd_k_binop op) { return name_of(binop_names, PD_K_BINOP_COUNT_, op); }
const char *pd_k_cmpop_name(pd_k_cmpop op) { return name_of(cmpop_names, PD_K_CMPOP_COUNT_, op); }
const char *pd_k_logop_name(pd_k_logop op) { return name_of(logop_names, PD_K_LOGOP_COUNT_, op); }
const char *pd_k_unop_name(pd_k_unop op) { return name_of(unop_names, PD_K_UNOP_COUNT_, op); }
const char *pd_k_redop_name(pd_k_redop op) { return name_of(redop_names, PD_K_REDOP_COUNT_, op); }
int pd_k_binop_from_name(const char *n) { return index_of(binop_names, PD_K_BINOP_COUNT_, n); }
int pd_k_cmpop_from_name(const char *n) { return index_of(cmpop_names, PD_K_CMPOP_COUNT_, n); }
int pd_k_logop_from_name(const char *n) { return index_of(logop_names, PD_K_LOGOP_COUNT_, n); }
int pd_k_unop_from_name(const char *n) { return index_of(unop_names, PD_K_UNOP_COUNT_, n); }
int pd_k_redop_from_name(const char *n) { return index_of(redop_names, PD_K_REDOP_COUNT_, n); }
const char *pd_k_act_name(pd_k_act op) { return name_of(act_names, PD_K_ACT_COUNT_, op); }
int pd_k_act_from_name(const char *n) { return index_of(act_names, PD_K_ACT_COUNT_, n); }

/* ---- The checks of the activations with parameters (kernels_int.h) ---- */

int pd_k_act_nparams(pd_k_act op) {
  return (unsigned)op < PD_K_ACT_COUNT_ ? act_nparams[op] : 0;
}

void pd_k_act_canon(pd_k_act *op, const double *p, double q[3]) {
  q[0] = q[1] = q[2] = 0;
  for (int i = 0; i < pd_k_act_nparams(*op); i++) q[i] = p[i];
  if (*op == PD_K_SILU) { /* swish with beta 1 */
    *op = PD_K_SWISH;
    q[0] = 1;
  }
}

pd_status pd_k_act_check(pd_k_act op, pd_dtype dt, int64_t n, const double *p) {
  if ((unsigned)op >= PD_K_ACT_COUNT_ || n < 0) return PD_EINVAL;
  if (pd_k_act_nparams(op) > 0 && !p) return PD_EINVAL;
  if ((op == PD_K_SOFTPLUS || op == PD_K_HARD_SWISH) && p[op == PD_K_SOFTPLUS ? 0 : 1] == 0)
    return PD_EINVAL;  /* softplus's beta, hard_swish's scale: divisors */
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  return PD_OK;
}

/* ---- The checks of the optimizer updates (kernels_int.h) ---- */

pd_status pd_k_opt_check(pd_dtype dt, int64_t n, const pd_k_opt *o, const void *p,
                         const void *g, const void *const *s, void *p_out, void *const *s_out) {
  if (!o || (unsigned)o->kind >= PD_K_OPT_COUNT_ || n < 0) return PD_EINVAL;
  const double hyper[] = {o->lr, o->beta1, o->beta2, o->eps, o->decay, o->mu, o->rescale, o->l2,
                          o->rho};
  for (size_t i = 0; i < sizeof hyper / sizeof hyper[0]; i++)
    if (!isfinite(hyper[i])) return PD_EINVAL;
  int ns = pd_k_opt_nstates(o);
  if (n > 0) {
    if (!p || !g || !p_out || (ns > 0 && (!s || !s_out))) return PD_EINVAL;
    for (int i = 0; i < ns; i++)
      if (!s[i] || !s_out[i]) return PD_EINVAL;
  }
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  return PD_OK;
}

pd_status pd_k_unscale_check(pd_dtype dt, int64_t n, const void *x, double inv_scale,
                             const void *out, const bool *found) {
  if (n < 0 || !found || !isfinite(inv_scale) || (n > 0 && (!x || !out))) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  return PD_OK;
}

/* ---- Shapes ---- */

int64_t pd_k_numel(int nd, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] != 0 && n > INT64_MAX / dims[i]) return -1;
    n *= dims[i];
  }
  return n;
}

static bool shape_ok(int nd, const int64_t *dims) {
  return nd >= 0 && nd <= PD_K_MAX_DIMS && (nd == 0 || dims) && pd_k_numel(nd, dims) >= 0;
}

pd_status pd_k_broadcast_dims(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                              int axis, int *out_nd, int64_t *out_dims, int64_t *xpad,
                              int64_t *ypad) {
  if (!shape_ok(xnd, xdims) || !shape_ok(ynd, ydims) || axis < -1) return PD_EINVAL;
  int64_t xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS];
  int nd = xnd > ynd ? xnd : ynd;
  if (axis == -1) {  /* NumPy: right-aligned */
    for (int i = 0; i < nd; i++) {
      xp[i] = i < nd - xnd ? 1 : xdims[i - (nd - xnd)];
      yp[i] = i < nd - ynd ? 1 : ydims[i - (nd - ynd)];
    }
  } else {  /* Fluid: the smaller operand starts at dim `axis` of the larger one */
    bool x_small = xnd < ynd;
    const int64_t *big = x_small ? ydims : xdims, *small = x_small ? xdims : ydims;
    int snd = x_small ? xnd : ynd;
    while (axis + snd > nd && snd > 0 && small[snd - 1] == 1) snd--;  /* trailing 1s */
    if (axis + snd > nd) return PD_ESHAPE;
    int64_t *bp = x_small ? yp : xp, *sp = x_small ? xp : yp;
    for (int i = 0; i < nd; i++) {
      bp[i] = big[i];
      sp[i] = i >= axis && i < axis + snd ? small[i - axis] : 1;
    }
  }
  for (int i = 0; i < nd; i++) {
    if (xp[i] != yp[i] && xp[i] != 1 && yp[i] != 1) return PD_ESHAPE;
  }
  for (int i = 0; i < nd; i++) {
    out_dims[i] = xp[i] == 1 ? yp[i] : xp[i];
    if (xpad) xpad[i] = xp[i];
    if (ypad) ypad[i] = yp[i];
  }
  *out_nd = nd;
  return PD_OK;
}

pd_status pd_k_broadcast_shape(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                               int axis, int *out_nd, int64_t *out_dims) {
  return pd_k_broadcast_dims(xnd, xdims, ynd, ydims, axis, out_nd, out_dims, NULL, NULL);
}

pd_status pd_k_reduce_shape(int nd, const int64_t *dims, int naxes, const int *axes,
                            bool keep_dim, int *out_nd, int64_t *out_dims) {
  if (!shape_ok(nd, dims) || naxes < 0 || naxes > nd || (naxes && !axes)) return PD_EINVAL;
  bool red[PD_K_MAX_DIMS] = {false};
  for (int i = 0; i < naxes; i++) {
    int a = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (a < 0 || a >= nd || red[a]) return PD_EINVAL;
    red[a] = true;
  }
  int o = 0;
  for (int i = 0; i < nd; i++) {
    bool r = naxes == 0 || red[i];
    if (!r) out_dims[o++] = dims[i];
    else if (keep_dim) out_dims[o++] = 1;
  }
  *out_nd = o;
  return PD_OK;
}

/* Output size of a sliding window: (in + pads - window) / stride + 1, rounded up in ceil mode;
 * -1 when the window does not fit. */
static int64_t window_out(int64_t in, int64_t pads, int64_t window, int64_t stride, bool ceil) {
  int64_t span = in + pads - window;
  if (span < 0) return -1;
  return (ceil ? (span + stride - 1) / stride : span / stride) + 1;
}

pd_status pd_k_conv2d_setup(pd_k_conv2d *p) {
  if (p->n < 0 || p->c < 1 || p->h < 1 || p->w < 1 || p->oc < 1 || p->kh < 1 || p->kw < 1 ||
      p->groups < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dil_h < 1 || p->dil_w < 1 ||
      p->pad_top < 0 || p->pad_bottom < 0 || p->pad_left < 0 || p->pad_right < 0)
    return PD_EINVAL;
  if (p->c % p->groups || p->oc % p->groups) return PD_ESHAPE;
  if (p->kh > (INT64_MAX - 1) / p->dil_h || p->kw > (INT64_MAX - 1) / p->dil_w) return PD_EINVAL;
  int64_t ekh = p->dil_h * (p->kh - 1) + 1, ekw = p->dil_w * (p->kw - 1) + 1;
  p->oh = window_out(p->h, p->pad_top + p->pad_bottom, ekh, p->stride_h, false);
  p->ow = window_out(p->w, p->pad_left + p->pad_right, ekw, p->stride_w, false);
  if (p->oh < 1 || p->ow < 1) return PD_ESHAPE;
  int64_t sizes[] = {p->n, p->c, p->h, p->w}, osizes[] = {p->n, p->oc, p->oh, p->ow};
  int64_t col[] = {p->c, p->kh, p->kw, p->oh, p->ow};
  if (pd_k_numel(4, sizes) < 0 || pd_k_numel(4, osizes) < 0 || pd_k_numel(5, col) < 0)
    return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_pool2d_setup(pd_k_pool2d *p) {
  if ((p->type != PD_K_POOL_MAX && p->type != PD_K_POOL_AVG) || p->n < 0 || p->c < 0 ||
      p->h < 1 || p->w < 1 || p->kh < 1 || p->kw < 1 || p->stride_h < 1 || p->stride_w < 1 ||
      p->pad_top < 0 || p->pad_bottom < 0 || p->pad_left < 0 || p->pad_right < 0)
    return PD_EINVAL;
  /* Every window must reach the input: padding on either side narrower than the window. */
  if (p->pad_top >= p->kh || p->pad_left >= p->kw || p->pad_bottom >= p->kh ||
      p->pad_right >= p->kw)
    return PD_EINVAL;
  p->oh = window_out(p->h, p->pad_top + p->pad_bottom, p->kh, p->stride_h, p->ceil_mode);
  p->ow = window_out(p->w, p->pad_left + p->pad_right, p->kw, p->stride_w, p->ceil_mode);
  if (p->oh < 1 || p->ow < 1) return PD_ESHAPE;
  /* In ceil mode, drop a last window that would start past the input (as PyTorch does). */
  if ((p->oh - 1) * p->stride_h - p->pad_top >= p->h) p->oh--;
  if ((p->ow - 1) * p->stride_w - p->pad_left >= p->w) p->ow--;
  int64_t sizes[] = {p->n, p->c, p->h, p->w};
  if (pd_k_numel(4, sizes) < 0) return PD_EINVAL;
  return PD_OK;
}

/* ---- Shared by the backends (kernels_int.h) ---- */

void pd_k_contig_strides(int nd, const int64_t *dims, int64_t *strides) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

pd_status pd_k_broadcast_strides(int xnd, const int64_t *xdims, int ynd, const int64_t *ydims,
                                 int axis, int *nd, int64_t *od, int64_t *xp, int64_t *yp,
                                 int64_t (*str)[PD_K_MAX_DIMS]) {
  pd_status st = pd_k_broadcast_dims(xnd, xdims, ynd, ydims, axis, nd, od, xp, yp);
  if (st) return st;
  pd_k_contig_strides(*nd, od, str[0]);
  pd_k_contig_strides(*nd, xp, str[1]);
  pd_k_contig_strides(*nd, yp, str[2]);
  for (int d = 0; d < *nd; d++) {
    if (xp[d] == 1) str[1][d] = 0;
    if (yp[d] == 1) str[2][d] = 0;
  }
  return PD_OK;
}

int pd_k_merge_dims(int nd, const int64_t *dims, int nops, const int64_t (*strides)[PD_K_MAX_DIMS],
                    int64_t *out_dims, int64_t (*out_strides)[PD_K_MAX_DIMS], int64_t *numel) {
  *numel = 1;
  int m = 0;
  for (int d = 0; d < nd; d++) {
    *numel *= dims[d];
    if (dims[d] == 1) continue;
    /* Merge d into the previous kept dim when, for every operand, stepping the outer dim once
     * is the same as stepping the inner one dims[d] times. */
    bool merge = m > 0;
    for (int k = 0; merge && k < nops; k++)
      merge = out_strides[k][m - 1] == strides[k][d] * dims[d];
    if (merge) {
      out_dims[m - 1] *= dims[d];
      for (int k = 0; k < nops; k++) out_strides[k][m - 1] = strides[k][d];
    } else {
      out_dims[m] = dims[d];
      for (int k = 0; k < nops; k++) out_strides[k][m] = strides[k][d];
      m++;
    }
  }
  if (m == 0) {  /* a single element (or none) */
    out_dims[0] = 1;
    for (int k = 0; k < nops; k++) out_strides[k][0] = 0;
    m = 1;
  }
  return m;
}

pd_status pd_k_reduced_mask(int nd, const int64_t *dims, int naxes, const int *axes, bool *red) {
  int ond;
  int64_t od[PD_K_MAX_DIMS];
  pd_status st = pd_k_reduce_shape(nd, dims, naxes, axes, false, &ond, od);
  if (st) return st;
  for (int d = 0; d < nd; d++) red[d] = naxes == 0;
  for (int i = 0; i < naxes; i++) red[axes[i] < 0 ? axes[i] + nd : axes[i]] = true;
  return PD_OK;
}

pd_status pd_k_gemm_check(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          int64_t lda, int64_t ldb, int64_t ldc) {
  if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return PD_EINVAL;
  int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
  if (lda < (a_cols > 1 ? a_cols : 1) || ldb < (b_cols > 1 ? b_cols : 1) ||
      ldc < (n > 1 ? n : 1) || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
    return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_gemm_lp_check(pd_dtype lp, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                             int64_t n, int64_t k, int64_t lda, int64_t stride_a, int64_t ldb,
                             int64_t stride_b, int64_t ldc, int64_t stride_c) {
  if (lp != PD_BF16 && lp != PD_FP16) return PD_EUNSUPPORTED;
  pd_status st = pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (st) return st;
  return batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0 ? PD_EINVAL : PD_OK;
}

pd_status pd_k_gemm_act_check(pd_k_unop act, bool grad, pd_dtype dt, bool trans_a, bool trans_b,
                              int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                              int64_t ldc, const void *h, int64_t ldh) {
  if (!pd_dtype_is_kernel_float(dt)) return PD_EUNSUPPORTED;
  if (act != PD_K_TANH && act != PD_K_SIGMOID && act != PD_K_RELU) return PD_EINVAL;
  pd_status st = pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc);
  if (st) return st;
  if (grad && (!h || ldh < (n > 1 ? n : 1))) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_random_check(pd_dtype dt, int64_t n, const pd_k_rng *rng, double a, double b,
                            bool normal) {
  if (!pd_dtype_is_kernel_float(dt)) return PD_EUNSUPPORTED;
  if (n < 0 || !rng || !isfinite(a) || !isfinite(b) || (!normal && b < a) || (normal && b < 0))
    return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_parts_check(pd_dtype dt, int nparts, const int64_t *sizes, int64_t pre,
                           int64_t post, int64_t *total) {
  if (pd_dtype_size(dt) == 0 || nparts < 0 || pre < 0 || post < 0) return PD_EINVAL;
  int64_t t = 0;
  for (int k = 0; k < nparts; k++) {
    if (sizes[k] < 0 || sizes[k] > INT64_MAX - t) return PD_EINVAL;
    t += sizes[k];
  }
  int64_t all[] = {pre, t, post, (int64_t)pd_dtype_size(dt)};
  if (pd_k_numel(4, all) < 0) return PD_EINVAL;
  *total = t;
  return PD_OK;
}

pd_status pd_k_rows_check(pd_dtype dt, int64_t nrows, int64_t width, int64_t nids) {
  if (!pd_dtype_is_kernel_float(dt)) return PD_EUNSUPPORTED;
  int64_t a[] = {nrows, width}, b[] = {nids, width};
  if (pd_k_numel(2, a) < 0 || pd_k_numel(2, b) < 0) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_strided_check(pd_dtype dt, int nd, const int64_t *od, const int64_t *sd,
                             const int64_t *sstr, int64_t off) {
  size_t sz = pd_dtype_size(dt);
  if (sz != 1 && sz != 2 && sz != 4 && sz != 8) return PD_EUNSUPPORTED;
  if (nd < 0 || nd > PD_K_MAX_DIMS || off < 0 || pd_k_numel(nd, od) < 0) return PD_EINVAL;
  for (int k = 0; k < nd; k++)
    if (sd[k] < 1 || sstr[k] < 0) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_where_check(pd_dtype dt, int nd, const int64_t *od, const int64_t *cstr,
                           const int64_t *xstr, const int64_t *ystr) {
  size_t sz = pd_dtype_size(dt);
  if (sz != 1 && sz != 2 && sz != 4 && sz != 8) return PD_EUNSUPPORTED;
  if (nd < 0 || nd > PD_K_MAX_DIMS || pd_k_numel(nd, od) < 0) return PD_EINVAL;
  for (int k = 0; k < nd; k++)
    if (cstr[k] < 0 || xstr[k] < 0 || ystr[k] < 0) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_pad_check(pd_dtype dt, int nd, const int64_t *xd, const int64_t *before,
                         const int64_t *after, pd_k_pad_mode mode, bool grad, int64_t *od) {
  if ((unsigned)mode >= PD_K_PAD_COUNT_ || nd < 0 || nd > PD_K_MAX_DIMS) return PD_EINVAL;
  for (int k = 0; k < nd; k++) {
    int64_t b = before[k], a = after[k], n = xd[k];
    if (n < 0 || b < 0 || a < 0 || b > INT64_MAX - n || a > INT64_MAX - n - b) return PD_EINVAL;
    if (mode != PD_K_PAD_CONSTANT && (b || a) && (n == 0 || (mode == PD_K_PAD_REFLECT &&
                                                             (b >= n || a >= n))))
      return PD_EINVAL;
    od[k] = n + b + a;
  }
  if (pd_k_numel(nd, xd) < 0 || pd_k_numel(nd, od) < 0) return PD_EINVAL;
  if (dt != PD_FP32 && dt != PD_FP64 && (grad || (dt != PD_INT32 && dt != PD_INT64)))
    return PD_EUNSUPPORTED;
  return PD_OK;
}

pd_status pd_k_slices_check(int64_t pre, int64_t n, int64_t post) {
  if (pre < 0 || n < 1 || post < 1) return PD_EINVAL;
  int64_t sizes[] = {pre, n, post};
  return pd_k_numel(3, sizes) < 0 ? PD_EINVAL : PD_OK;
}

pd_status pd_k_attention_check(const pd_k_attention *a) {
  if (a->batch < 0 || a->sq < 0 || a->sk < 1 || a->heads < 1 || a->d < 1 || a->dv < 1 ||
      !(a->scale == a->scale))
    return PD_EINVAL;
  for (int i = 0; i < 4; i++)
    if (a->bias_strides[i] < 0) return PD_EINVAL;
  int64_t qd[] = {a->batch, a->sq, a->heads, a->d > a->dv ? a->d : a->dv};
  int64_t kd[] = {a->batch, a->sk, a->heads, a->d > a->dv ? a->d : a->dv};
  int64_t sd[] = {a->sq, a->sk};
  return pd_k_numel(4, qd) < 0 || pd_k_numel(4, kd) < 0 || pd_k_numel(2, sd) < 0 ? PD_EINVAL
                                                                                 : PD_OK;
}

pd_status pd_k_conv2d_check(const pd_k_conv2d *p) {
  pd_k_conv2d q = *p;
  if (pd_k_conv2d_setup(&q) || q.oh != p->oh || q.ow != p->ow) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_conv_epilogue_check(pd_dtype dt, const pd_k_conv_epilogue *ep) {
  if (!ep) return PD_OK;
  switch (ep->kind) {
    case PD_K_EPI_NONE: return PD_OK;
    case PD_K_EPI_UNOP: return (unsigned)ep->unop < PD_K_UNOP_COUNT_ ? PD_OK : PD_EINVAL;
    case PD_K_EPI_ACT: return pd_k_act_check(ep->act, dt, 0, ep->p);
    default: return PD_EINVAL;
  }
}

pd_status pd_k_pool2d_check(pd_dtype dt, const pd_k_pool2d *p) {
  if (!pd_dtype_is_kernel_float(dt)) return PD_EUNSUPPORTED;
  pd_k_pool2d q = *p;
  if (pd_k_pool2d_setup(&q) || q.oh != p->oh || q.ow != p->ow) return PD_EINVAL;
  return PD_OK;
}

pd_status pd_k_conv_begin(pd_k_conv_plan *cp, pd_dtype dt, const pd_k_conv2d *p) {
  if (!pd_dtype_is_kernel_float(dt)) return PD_EUNSUPPORTED;
  pd_status st = pd_k_conv2d_check(p);
  if (st) return st;
  cp->dt = dt;
  cp->sz = pd_dtype_size(dt);
  cp->g = p->groups;
  cp->cg = p->c / p->groups;
  cp->ocg = p->oc / p->groups;
  cp->kdim = cp->cg * p->kh * p->kw;
  cp->ohw = p->oh * p->ow;
  cp->rows = p->c * p->kh * p->kw;
  cp->in_img = p->c * p->h * p->w;
  cp->out_img = p->oc * cp->ohw;
  /* The GEMMs' sizes and leading dims must fit BLAS's int (setup bounded their products). */
  if (cp->kdim > INT_MAX || cp->ohw > INT_MAX || cp->ocg > INT_MAX) return PD_EINVAL;
  cp->direct = p->kh == 1 && p->kw == 1 && p->stride_h == 1 && p->stride_w == 1 &&
               p->pad_top == 0 && p->pad_bottom == 0 && p->pad_left == 0 && p->pad_right == 0;
  return PD_OK;
}

/* ---- Host memory ----
 * A training step creates its temporaries in a fresh scope and frees them at its end; blocks of
 * a few hundred KiB and up then went back to the kernel (glibc unmaps or trims them) and came
 * back as fresh zero pages next step: on LeNet at batch 64, 1600 page faults a step and as much
 * system time as user time. Freed blocks of at least CACHE_MIN bytes are therefore kept, by size
 * class (four per power of two, so a block is at most 25% larger than asked), up to CACHE_MAX
 * bytes in all or twice the most the process ever had live at once, whichever is larger, and
 * handed out again for the next request of their class, or of one of the CACHE_SPAN - 1
 * classes below it where its own has none. The cache is bounded, so memory stays flat however
 * many steps run (at most three times the live peak where the sizes keep changing; the peak
 * where they repeat); pd_k_host_trim gives it all back. (A fixed 256 MiB had a DB text detector
 * at 4 x 640 x 640, 380 MiB at its peak, map fresh pages for a third of its tensors every run:
 * 2.15 s a run on one thread, 1.29 s with them kept. Kept up to the live peak, each class
 * serving its own, the same detector at 16 images mapped 1.6 GB of fresh pages a run, a third
 * of its time in the kernel's page faults: 1.0 s a run on two threads; now 0.56 s, and a peak
 * of 1004 MiB against 1236.) Smaller blocks
 * go straight to pd_malloc (allocation-failure tests keep reaching them). CACHE_MIN is 4 KiB:
 * an RNN step makes and frees a few [32, H] fp32 tensors per time step, which glibc gave back
 * to the kernel (heap trimming) at the end of the step and faulted in again at the next (3-9%
 * of a training step at hidden 256 with 32 KiB tensors; at hidden 32, 4 KiB tensors, 57 page
 * faults and ~0.1 ms a step of `pdlang run` while the cache started at 16 KiB). */
#define CACHE_MIN ((size_t)4 << 10)
#define CACHE_MAX ((size_t)256 << 20)
#define CACHE_MIN_LOG 12            /* log2(CACHE_MIN) */
#define CACHE_SPAN 5 /* a request takes a block of its class or of the 4 above (up to 2x) */
#define CACHE_CLASSES (4 * (48 - CACHE_MIN_LOG))  /* classes up to 2^48 bytes */

/* Stored just below each aligned block. */
typedef struct host_hdr {
  void *raw;               /* what pd_malloc returned */
  size_t cap;              /* usable bytes from the aligned pointer; 0: not cacheable */
  size_t size;             /* bytes asked for by the pd_k_host_alloc that handed it out */
  struct host_hdr *next;   /* free-list link while cached */
} host_hdr;

/* Live-byte accounting (pd_k_host_stats): lock-free, so that the small blocks, which never
 * take the cache's lock, do not start taking one. */
static struct {
  atomic_size_t live, peak;
  atomic_size_t high;   /* the highest `live` ever (no reset): the cache's bound past CACHE_MAX */
  atomic_uint_least64_t allocs;
} usage;

static void raise_to(atomic_size_t *mark, size_t now) {
  size_t was = atomic_load_explicit(mark, memory_order_relaxed);
  while (now > was && !atomic_compare_exchange_weak_explicit(mark, &was, now,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

static void usage_add(size_t n) {
  size_t now = atomic_fetch_add_explicit(&usage.live, n, memory_order_relaxed) + n;
  raise_to(&usage.peak, now);
  raise_to(&usage.high, now);
  atomic_fetch_add_explicit(&usage.allocs, 1, memory_order_relaxed);
}

static struct {
  pthread_mutex_t lock;
  host_hdr *free[CACHE_CLASSES];
  size_t bytes;            /* cached, in all classes */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The class of a request of n >= CACHE_MIN bytes and its rounded size; -1 past the last. */
static int size_class(size_t n, size_t *cap) {
  int lg = 63 - __builtin_clzll((unsigned long long)n);  /* 2^lg <= n < 2^(lg+1) */
  size_t base = (size_t)1 << lg, step = base >> 2;
  size_t sub = (n - base + step - 1) / step;             /* 0..4 */
  if (sub == 4) {
    lg++;
    sub = 0;
    base <<= 1;
    step <<= 1;
  }
  int c = (lg - CACHE_MIN_LOG) * 4 + (int)sub;
  if (c >= CACHE_CLASSES) return -1;
  *cap = base + sub * step;
  return c;
}

void *pd_k_host_alloc(size_t nbytes) {
  size_t cap = nbytes;
  int c = nbytes >= CACHE_MIN ? size_class(nbytes, &cap) : -1;
  if (c >= 0) {
    pthread_mutex_lock(&cache.lock);
    host_hdr *h = NULL;
    for (int k = c; k < c + CACHE_SPAN && k < CACHE_CLASSES && !h; k++)
      if ((h = cache.free[k])) {
        cache.free[k] = h->next;
        cache.bytes -= h->cap;
      }
    pthread_mutex_unlock(&cache.lock);
    if (h) {
      UNPOISON(h + 1, h->cap);
      h->size = nbytes;
      usage_add(nbytes);
      return h + 1;
    }
  } else {
    cap = nbytes;
  }
  /* Over-allocate, align up past the header. */
  size_t extra = PD_K_ALIGN - 1 + sizeof(host_hdr);
  if (cap > SIZE_MAX - extra) return NULL;
  char *raw = pd_malloc(cap + extra);
  if (!raw) return NULL;
  uintptr_t a = ((uintptr_t)raw + extra) & ~(uintptr_t)(PD_K_ALIGN - 1);
  host_hdr *h = (host_hdr *)a - 1;
  h->raw = raw;
  h->cap = c >= 0 ? cap : 0;
  h->size = nbytes;
  h->next = NULL;
  usage_add(nbytes);
  return (void *)a;
}

void pd_k_host_free(void *p) {
  if (!p) return;
  host_hdr *h = (host_hdr *)p - 1;
  atomic_fetch_sub_explicit(&usage.live, h->size, memory_order_relaxed);
  if (h->cap) {
    size_t cap;
    int c = size_class(h->cap, &cap);  /* cap is a class size: maps back to its class */
    pthread_mutex_lock(&cache.lock);
    size_t high = atomic_load_explicit(&usage.high, memory_order_relaxed);
    bool keep = cache.bytes + h->cap <= (2 * high > CACHE_MAX ? 2 * high : CACHE_MAX);
    if (keep) {
      /* Poisoned before it is on the free list: once the lock is released another thread may
       * take it and unpoison it, and a late poison would then mark its live block. */
      POISON(p, h->cap);
      h->next = cache.free[c];
      cache.free[c] = h;
      cache.bytes += h->cap;
    }
    pthread_mutex_unlock(&cache.lock);
    if (keep) return;
  }
  pd_free(h->raw);
}

void pd_k_host_trim(void) {
  pthread_mutex_lock(&cache.lock);
  host_hdr *lists[CACHE_CLASSES];
  memcpy(lists, cache.free, sizeof lists);
  memset(cache.free, 0, sizeof cache.free);
  cache.bytes = 0;
  pthread_mutex_unlock(&cache.lock);
  for (int c = 0; c < CACHE_CLASSES; c++) {
    for (host_hdr *h = lists[c], *next; h; h = next) {
      next = h->next;
      pd_free(h->raw);
    }
  }
}

size_t pd_k_host_cached(void) {
  pthread_mutex_lock(&cache.lock);
  size_t n = cache.bytes;
  pthread_mutex_unlock(&cache.lock);
  return n;
}

void pd_k_host_stats(pd_k_host_usage *out) {
  out->live = atomic_load_explicit(&usage.live, memory_order_relaxed);
  out->peak = atomic_load_explicit(&usage.peak, memory_order_relaxed);
  out->allocs = (uint64_t)atomic_load_explicit(&usage.allocs, memory_order_relaxed);
  out->cached = pd_k_host_cached();
  if (out->peak < out->live) out->peak = out->live; /* a reset raced an allocation */
}

void pd_k_host_stats_reset(void) {
  atomic_store_explicit(&usage.peak, atomic_load_explicit(&usage.live, memory_order_relaxed),
                        memory_order_relaxed);
  atomic_store_explicit(&usage.allocs, 0, memory_order_relaxed);
}

/* ---- Philox4x32-10 ---- */

void pd_k_rng_init(pd_k_rng *rng, uint64_t seed) {
  rng->seed = seed;
  rng->offset = 0;
}

static inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi) {
  uint64_t p = (uint64_t)a * b;
  *hi = (uint32_t)(p >> 32);
  return (uint32_t)p;
}

void pd_k_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;  /* the Weyl sequence bumps the key between rounds */
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}
