/* reduce.cuh -- the generic reduction of the CUDA backend (templates, included by reduce.cu):
 * out[o] = fin(op-fold of src(offsets) over the reduced part of an N-d index space), where the
 * index space is split into kept dims (one output each, row-major) and reduced dims, and src
 * reads up to PD_KCU_MAX_OPS operands through their own strides. reduce uses it over x;
 * binary_grad over the broadcast output space (src = the gradient expression).
 *
 * Two kernels: one thread per output looping over its reduced elements in row-major order (when
 * outputs are many, or the reduced count is small, or the innermost dim is kept so that
 * neighbouring threads read neighbouring elements), and one block per output (times `splits`
 * blocks for few outputs with long reductions, whose partial results a second kernel combines
 * in order). The result does not depend on timing: every order is fixed by the launch shape. */
#ifndef PD_KERNELS_CUDA_REDUCE_CUH
#define PD_KERNELS_CUDA_REDUCE_CUH

#include "kernels/cuda/cuda_int.h"

/* Kept groups (k outputs) and reduced groups (r elements each), outermost first; per operand,
 * the strides of each group. nr >= 1 (a group of size 1 when nothing is reduced). */
typedef struct pd_kcu_red {
  int nk, nr, nops;
  int64_t k, r;
  int64_t kdims[PD_K_MAX_DIMS], rdims[PD_K_MAX_DIMS];
  int64_t kstr[PD_KCU_MAX_OPS][PD_K_MAX_DIMS], rstr[PD_KCU_MAX_OPS][PD_K_MAX_DIMS];
} pd_kcu_red;

/* Build the groups of an index space dims[nd] with red[d] marking reduced dims: size-1 dims
 * are dropped, and a dim merges into the group before it when that group is of the same kind,
 * was the last one formed, and the merge keeps every operand's strides. */
static inline void pd_kcu_red_init(pd_kcu_red *g, int nd, const int64_t *dims, const bool *red,
                                   int nops, const int64_t (*str)[PD_K_MAX_DIMS]) {
  g->nk = g->nr = 0;
  g->nops = nops;
  g->k = g->r = 1;
  int last = -1;  /* 0: the last group formed is kept, 1: reduced */
  for (int d = 0; d < nd; d++) {
    if (red[d]) g->r *= dims[d];
    else g->k *= dims[d];
    if (dims[d] == 1) continue;
    int kind = red[d] ? 1 : 0;
    int64_t *gd = kind ? g->rdims : g->kdims;
    int64_t(*gs)[PD_K_MAX_DIMS] = kind ? g->rstr : g->kstr;
    int *cnt = kind ? &g->nr : &g->nk;
    bool merge = last == kind && *cnt > 0;
    for (int k = 0; merge && k < nops; k++) merge = gs[k][*cnt - 1] == str[k][d] * dims[d];
    if (merge) {
      gd[*cnt - 1] *= dims[d];
      for (int k = 0; k < nops; k++) gs[k][*cnt - 1] = str[k][d];
    } else {
      gd[*cnt] = dims[d];
      for (int k = 0; k < nops; k++) gs[k][*cnt] = str[k][d];
      (*cnt)++;
    }
    last = kind;
  }
  if (g->nr == 0) {
    g->rdims[0] = 1;
    for (int k = 0; k < nops; k++) g->rstr[k][0] = 0;
    g->nr = 1;
  }
  for (int k = nops; k < PD_KCU_MAX_OPS; k++) {
    for (int d = 0; d < g->nk; d++) g->kstr[k][d] = 0;
    for (int d = 0; d < g->nr; d++) g->rstr[k][d] = 0;
  }
}

/* Offsets of output o's first element. */
template <int NOPS>
__device__ __forceinline__ void pd_kcu_red_kept(const pd_kcu_red &g, int64_t o, int64_t *off) {
#pragma unroll
  for (int k = 0; k < NOPS; k++) off[k] = 0;
  for (int d = g.nk - 1; d >= 0; d--) {
    int64_t idx = o % g.kdims[d];
    o /= g.kdims[d];
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] += idx * g.kstr[k][d];
  }
}

/* Add the offsets of reduced element r (row-major over the first `ng` reduced groups). */
template <int NOPS>
__device__ __forceinline__ void pd_kcu_red_add(const pd_kcu_red &g, int ng, int64_t r,
                                               int64_t *off) {
  if (ng == 1) {
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] += r * g.rstr[k][0];
    return;
  }
  for (int d = ng - 1; d >= 0; d--) {
    int64_t idx = r % g.rdims[d];
    r /= g.rdims[d];
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] += idx * g.rstr[k][d];
  }
}

/* One thread per output; the reduced elements in row-major order, the innermost group as one
 * strided run. */
template <int NOPS, typename A, typename Out, typename Src, typename Op, typename Fin>
__global__ void pd_kcu_red_serial(const __grid_constant__ pd_kcu_red g, Src src, Op op, Fin fin,
                                  Out *out) {
  PD_KCU_LOOP(o, g.k) {
    int64_t base[NOPS];
    pd_kcu_red_kept<NOPS>(g, o, base);
    A acc = op.identity();
    int64_t inner = g.rdims[g.nr - 1], outer = g.r / inner;
    for (int64_t ro = 0; ro < outer; ro++) {
      int64_t off[NOPS];
#pragma unroll
      for (int k = 0; k < NOPS; k++) off[k] = base[k];
      if (g.nr > 1) pd_kcu_red_add<NOPS>(g, g.nr - 1, ro, off);
      for (int64_t j = 0; j < inner; j++) {
        int64_t at[NOPS];
#pragma unroll
        for (int k = 0; k < NOPS; k++) at[k] = off[k] + j * g.rstr[k][g.nr - 1];
        acc = op(acc, src(at));
      }
    }
    out[o] = fin(acc);
  }
}

/* Block (blockIdx.x = output, blockIdx.y = split) over reduced elements [split * chunk, ...):
 * threads stride through them, then a block-wide combine; one split writes the output, more
 * write partial[o * splits + split]. */
template <int NOPS, typename A, typename Out, typename Src, typename Op, typename Fin>
__global__ void pd_kcu_red_block(const __grid_constant__ pd_kcu_red g, Src src, Op op, Fin fin,
                                 Out *out, A *partial, int64_t chunk) {
  int64_t o = blockIdx.x, split = blockIdx.y;
  int64_t r0 = split * chunk, r1 = r0 + chunk < g.r ? r0 + chunk : g.r;
  int64_t base[NOPS];
  pd_kcu_red_kept<NOPS>(g, o, base);
  A acc = op.identity();
  for (int64_t r = r0 + threadIdx.x; r < r1; r += blockDim.x) {
    int64_t off[NOPS];
#pragma unroll
    for (int k = 0; k < NOPS; k++) off[k] = base[k];
    pd_kcu_red_add<NOPS>(g, g.nr, r, off);
    acc = op(acc, src(off));
  }
  acc = pd_kcu_block_reduce(acc, op);
  if (threadIdx.x == 0) {
    if (gridDim.y == 1) out[o] = fin(acc);
    else partial[o * gridDim.y + split] = acc;
  }
}

template <typename A, typename Out, typename Op, typename Fin>
__global__ void pd_kcu_red_combine(int64_t k, int64_t splits, const A *partial, Op op, Fin fin,
                                   Out *out) {
  PD_KCU_LOOP(o, k) {
    A acc = op.identity();
    for (int64_t s = 0; s < splits; s++) acc = op(acc, partial[o * splits + s]);
    out[o] = fin(acc);
  }
}

template <typename A, typename Out, typename Op, typename Fin>
__global__ void pd_kcu_red_empty(int64_t k, Op op, Fin fin, Out *out) {
  PD_KCU_LOOP(o, k) out[o] = fin(op.identity());
}

/* Run the reduction described by g (operand 0's strides steer the choice of kernel). */
template <int NOPS, typename A, typename Out, typename Src, typename Op, typename Fin>
static pd_status pd_kcu_red_run(const pd_kcu_red &g, Src src, Op op, Fin fin, Out *out) {
  if (g.k == 0) return PD_OK;
  cudaStream_t q = pd_kcu_stream;
  if (g.r == 0) {
    pd_kcu_red_empty<A, Out, Op, Fin><<<pd_kcu_blocks(g.k), PD_KCU_THREADS, 0, q>>>(g.k, op, fin,
                                                                                    out);
    PD_KCU_LAUNCHED("reduction kernel");
    return PD_OK;
  }
  bool inner_kept = g.nk > 0 && g.kstr[0][g.nk - 1] == 1;
  bool serial = g.r <= 32 || g.k > INT32_MAX || (g.k >= 4096 && (inner_kept || g.r < 1024));
  if (serial) {
    pd_kcu_red_serial<NOPS, A, Out, Src, Op, Fin>
        <<<pd_kcu_blocks(g.k), PD_KCU_THREADS, 0, q>>>(g, src, op, fin, out);
    PD_KCU_LAUNCHED("reduction kernel");
    return PD_OK;
  }
  /* Few outputs: split each reduction so that about 2048 blocks run, each over >= 4096
   * elements. */
  int64_t splits = 1;
  if (g.k < 2048) {
    int64_t want = (2048 + g.k - 1) / g.k, by_size = (g.r + 4095) / 4096;
    splits = want < by_size ? want : by_size;
    if (splits > 1024) splits = 1024;
    if (splits < 1) splits = 1;
  }
  int64_t chunk = (g.r + splits - 1) / splits;
  splits = (g.r + chunk - 1) / chunk;
  A *partial = NULL;
  if (splits > 1) {
    partial = (A *)pd_kcu_scratch((size_t)(g.k * splits) * sizeof(A));
    if (!partial) return PD_ENOMEM;
  }
  dim3 grid((unsigned)g.k, (unsigned)splits);
  pd_kcu_red_block<NOPS, A, Out, Src, Op, Fin>
      <<<grid, pd_kcu_row_threads(chunk), 0, q>>>(g, src, op, fin, out, partial, chunk);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && splits > 1) {
    pd_kcu_red_combine<A, Out, Op, Fin>
        <<<pd_kcu_blocks(g.k), PD_KCU_THREADS, 0, q>>>(g.k, splits, partial, op, fin, out);
    e = cudaGetLastError();
  }
  pd_k_dev_free(partial);  /* stream order: reused only by later work */
  if (e != cudaSuccess) return pd_kcu_cuda_fail("reduction kernel", e);
  return PD_OK;
}

#endif /* PD_KERNELS_CUDA_REDUCE_CUH */
