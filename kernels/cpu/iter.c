/* iter.c -- the strided N-operand iterator behind the elementwise, broadcast and gradient
 * kernels: drops size-1 dims, merges dims that are contiguous for every operand, and walks the
 * rest one inner run at a time, split across threads by flat element range. */
#include "config.h"
#include "kernels/cpu/cpu.h"

void pd_kcpu_iter_init(pd_kcpu_iter *it, int nd, const int64_t *dims, int nops,
                       const int64_t (*strides)[PD_K_MAX_DIMS], const size_t *esize) {
  it->nops = nops;
  for (int k = 0; k < nops; k++) it->esize[k] = esize[k];
  it->nd = pd_k_merge_dims(nd, dims, nops, strides, it->dims, it->strides, &it->numel);
}

typedef struct run_ctx {
  const pd_kcpu_iter *it;
  void *const *base;
  pd_kcpu_loop_fn *loop;
  const void *arg;
} run_ctx;

static void run_range(void *vctx, int64_t begin, int64_t end) {
  const run_ctx *c = vctx;
  const pd_kcpu_iter *it = c->it;
  int nd = it->nd, nops = it->nops;
  int64_t idx[PD_K_MAX_DIMS], step[PD_KCPU_MAX_OPS];
  char *ptr[PD_KCPU_MAX_OPS];
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rem % it->dims[d];
    rem /= it->dims[d];
  }
  for (int k = 0; k < nops; k++) step[k] = it->strides[k][nd - 1];
  int64_t inner = it->dims[nd - 1];
  for (int64_t i = begin; i < end;) {
    for (int k = 0; k < nops; k++) {
      int64_t off = 0;
      for (int d = 0; d < nd; d++) off += idx[d] * it->strides[k][d];
      ptr[k] = c->base[k] ? (char *)c->base[k] + off * (int64_t)it->esize[k] : NULL;
    }
    int64_t len = inner - idx[nd - 1];
    if (len > end - i) len = end - i;
    c->loop(ptr, step, len, c->arg);
    i += len;
    idx[nd - 1] += len;
    for (int d = nd - 1; d > 0 && idx[d] == it->dims[d]; d--) {
      idx[d] = 0;
      idx[d - 1]++;
    }
  }
}

void pd_kcpu_iter_run(const pd_kcpu_iter *it, void *const *base, pd_kcpu_loop_fn *loop,
                      const void *arg, bool parallel, int64_t grain) {
  run_ctx c = {it, base, loop, arg};
  pd_kcpu_parallel(it->numel, parallel ? grain : INT64_MAX, run_range, &c);
}

pd_status pd_kcpu_bcast_iter(pd_kcpu_iter *it, int xnd, const int64_t *xdims, int ynd,
                             const int64_t *ydims, int axis, size_t out_size, size_t x_size,
                             size_t y_size) {
  int nd;
  int64_t od[PD_K_MAX_DIMS], xp[PD_K_MAX_DIMS], yp[PD_K_MAX_DIMS], s[3][PD_K_MAX_DIMS];
  pd_status st = pd_k_broadcast_strides(xnd, xdims, ynd, ydims, axis, &nd, od, xp, yp, s);
  if (st) return st;
  size_t sizes[3] = {out_size, x_size, y_size};
  pd_kcpu_iter_init(it, nd, od, 3, (const int64_t(*)[PD_K_MAX_DIMS])s, sizes);
  return PD_OK;
}
