/* gemm.cu -- the CUDA backend's matrix products through cuBLAS (Sgemm/Dgemm and their
 * StridedBatched forms), row-major by the usual transposition: row-major C = op(A) op(B) is
 * column-major C^T = op(B)^T op(A)^T, so cuBLAS gets B before A and n before m. A product with
 * an empty inner dimension or alpha 0 only scales C by beta (beta == 0 clears it), as on the
 * CPU. gemm_lp, the products of mixed precision, at the end. */
#include "config.h"
#include "kernels/cuda/cuda_int.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <limits.h>

/* C_i = beta * C_i for `batch` m x n matrices (beta == 0 writes 0, NaN or not). */
template <typename T>
__global__ void scale_c_kernel(int64_t batch, int64_t m, int64_t n, T beta, T *c, int64_t ldc,
                               int64_t stride_c) {
  PD_KCU_LOOP(t, batch * m * n) {
    int64_t j = t % n, i = t / n % m, b = t / (m * n);
    T *p = c + b * stride_c + i * ldc + j;
    *p = beta == (T)0 ? (T)0 : *p * beta;
  }
}

static pd_status scale_c(pd_dtype dt, int64_t batch, int64_t m, int64_t n, double beta, void *c,
                         int64_t ldc, int64_t stride_c) {
  unsigned nb = pd_kcu_blocks(batch * m * n);
  if (dt == PD_FP32)
    scale_c_kernel<float><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(batch, m, n, (float)beta,
                                                                    (float *)c, ldc, stride_c);
  else
    scale_c_kernel<double><<<nb, PD_KCU_THREADS, 0, pd_kcu_stream>>>(batch, m, n, beta,
                                                                     (double *)c, ldc, stride_c);
  PD_KCU_LAUNCHED("gemm scale kernel");
  return PD_OK;
}

pd_status pd_kcu_gemm_strided(pd_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                              int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                              int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                              double beta, void *c, int64_t ldc, int64_t stride_c) {
  if (batch == 0 || m == 0 || n == 0) return PD_OK;
  if (k == 0 || alpha == 0) return scale_c(dt, batch, m, n, beta, c, ldc, stride_c);
  cublasOperation_t opa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  size_t sz = pd_dtype_size(dt);
  for (int64_t i0 = 0; i0 < batch; i0 += INT_MAX) {  /* batchCount is an int */
    int cnt = (int)(batch - i0 < INT_MAX ? batch - i0 : INT_MAX);
    const char *ai = (const char *)a + i0 * stride_a * (int64_t)sz;
    const char *bi = (const char *)b + i0 * stride_b * (int64_t)sz;
    char *ci = (char *)c + i0 * stride_c * (int64_t)sz;
    if (dt == PD_FP32) {
      float al = (float)alpha, be = (float)beta;
      if (cnt == 1)
        PD_KCU_BLAS("cublasSgemm",
                    cublasSgemm(pd_kcu_blas, opb, opa, (int)n, (int)m, (int)k, &al,
                                (const float *)bi, (int)ldb, (const float *)ai, (int)lda, &be,
                                (float *)ci, (int)ldc));
      else
        PD_KCU_BLAS("cublasSgemmStridedBatched",
                    cublasSgemmStridedBatched(pd_kcu_blas, opb, opa, (int)n, (int)m, (int)k, &al,
                                              (const float *)bi, (int)ldb, stride_b,
                                              (const float *)ai, (int)lda, stride_a, &be,
                                              (float *)ci, (int)ldc, stride_c, cnt));
    } else {
      if (cnt == 1)
        PD_KCU_BLAS("cublasDgemm",
                    cublasDgemm(pd_kcu_blas, opb, opa, (int)n, (int)m, (int)k, &alpha,
                                (const double *)bi, (int)ldb, (const double *)ai, (int)lda,
                                &beta, (double *)ci, (int)ldc));
      else
        PD_KCU_BLAS("cublasDgemmStridedBatched",
                    cublasDgemmStridedBatched(pd_kcu_blas, opb, opa, (int)n, (int)m, (int)k,
                                              &alpha, (const double *)bi, (int)ldb, stride_b,
                                              (const double *)ai, (int)lda, stride_a, &beta,
                                              (double *)ci, (int)ldc, stride_c, cnt));
    }
  }
  return PD_OK;
}

pd_status pd_kcu_gemm(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                      double alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                      double beta, void *c, int64_t ldc) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc));
  return pd_kcu_gemm_strided(dt, trans_a, trans_b, 1, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta,
                             c, ldc, 0);
}

pd_status pd_kcu_gemm_batched(pd_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                              int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                              int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                              double beta, void *c, int64_t ldc, int64_t stride_c) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc));
  if (batch < 0 || stride_a < 0 || stride_b < 0 || stride_c < 0) return PD_EINVAL;
  if (batch == 0 || m == 0 || n == 0) return PD_OK;
  /* Overlapping outputs (stride_c 0 included): the CPU computes the products one after the
   * other, each seeing the C the previous one wrote; so do we (in stream order). */
  if (batch > 1 && stride_c < (m - 1) * ldc + n) {
    size_t sz = pd_dtype_size(dt);
    for (int64_t i = 0; i < batch; i++)
      PD_KCU_TRY(pd_kcu_gemm_strided(dt, trans_a, trans_b, 1, m, n, k, alpha,
                                     (const char *)a + i * stride_a * (int64_t)sz, lda, 0,
                                     (const char *)b + i * stride_b * (int64_t)sz, ldb, 0, beta,
                                     (char *)c + i * stride_c * (int64_t)sz, ldc, 0));
    return PD_OK;
  }
  return pd_kcu_gemm_strided(dt, trans_a, trans_b, batch, m, n, k, alpha, a, lda, stride_a, b,
                             ldb, stride_b, beta, c, ldc, stride_c);
}

/* cuBLAS's product, then the activation over C: one launch when C's (and H's) rows are
 * contiguous, else one a row (an RNN step's rows inside a sequence-major tensor). */
pd_status pd_kcu_gemm_act(pd_k_unop act, bool grad, pd_dtype dt, bool trans_a, bool trans_b,
                          int64_t m, int64_t n, int64_t k, const void *a, int64_t lda,
                          const void *b, int64_t ldb, double beta, void *c, int64_t ldc,
                          const void *h, int64_t ldh) {
  PD_KCU_TRY(pd_k_gemm_act_check(act, grad, dt, trans_a, trans_b, m, n, k, lda, ldb, ldc, h,
                                 ldh));
  PD_KCU_TRY(pd_kcu_gemm(dt, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc));
  int64_t sz = (int64_t)pd_dtype_size(dt);
  bool whole = ldc == n && (!grad || ldh == n);
  for (int64_t i = 0; i < m; i += whole ? m : 1) {
    int64_t cnt = whole ? m * n : n;
    char *ci = (char *)c + i * ldc * sz;
    if (grad)
      PD_KCU_TRY(pd_kcu_unary_grad(act, dt, cnt, NULL, (const char *)h + i * ldh * sz, ci, ci));
    else
      PD_KCU_TRY(pd_kcu_unary(act, dt, cnt, ci, ci));
  }
  return PD_OK;
}

/* cuBLAS's product, then the bias added over C in place: one broadcast launch when C's rows are
 * contiguous, else one a row. */
pd_status pd_kcu_gemm_bias(pd_dtype dt, bool trans_a, bool trans_b, int64_t m, int64_t n,
                           int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
                           const void *bias, void *c, int64_t ldc) {
  if (dt != PD_FP32 && dt != PD_FP64) return PD_EUNSUPPORTED;
  PD_KCU_TRY(pd_k_gemm_check(trans_a, trans_b, m, n, k, lda, ldb, ldc));
  if (!bias) return PD_EINVAL;
  PD_KCU_TRY(pd_kcu_gemm(dt, trans_a, trans_b, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc));
  if (m == 0 || n == 0) return PD_OK;
  int64_t sz = (int64_t)pd_dtype_size(dt);
  bool whole = ldc == n;
  for (int64_t i = 0; i < m; i += whole ? m : 1) {
    int64_t dims[2] = {whole ? m : 1, n};
    char *ci = (char *)c + i * ldc * sz;
    PD_KCU_TRY(pd_kcu_binary(PD_K_ADD, dt, 2, dims, ci, 1, &n, bias, -1, ci));
  }
  return PD_OK;
}

/* One gemm_act a step, in stream order (the GPU has the rows of one step to spread already). */
pd_status pd_kcu_gemm_act_chain(pd_k_unop act, bool grad, pd_dtype dt, bool trans_b, int64_t m,
                                int64_t n, int64_t steps, const void *first, int64_t ldfirst,
                                const void *b, void *c, int64_t ldc, int64_t step, const void *h,
                                int64_t ldh) {
  PD_KCU_TRY(pd_k_gemm_act_check(act, grad, dt, false, trans_b, m, n, n, ldfirst, n, ldc, h,
                                 ldh));
  if (steps < 0) return PD_EINVAL;
  int64_t sz = (int64_t)pd_dtype_size(dt);
  const char *a = (const char *)first;
  int64_t lda = ldfirst;
  for (int64_t s = 0; s < steps && m > 0 && n > 0; s++) {
    char *cs = (char *)c + s * step * sz;
    const char *hs = grad ? (const char *)h + s * step * sz : NULL;
    PD_KCU_TRY(pd_kcu_gemm_act(act, grad, dt, false, trans_b, m, n, n, a, lda, b, n, 1.0, cs,
                               ldc, hs, ldh));
    a = cs;
    lda = ldc;
  }
  return PD_OK;
}

/* ---- gemm_lp: the operands rounded to bf16 / fp16 by a kernel (__float2bfloat16_rn,
 * __float2half_rn: to nearest even, fp16 past its range to inf) into scratch buffers, then
 * cublasGemmStridedBatchedEx on them with fp32 sums (CUBLAS_COMPUTE_32F) and fp32 C: the
 * rounding the contract states, whatever cuBLAS's choice of algorithm; the bias added as
 * gemm_bias does. ---- */
template <typename H>
__global__ void round_span_kernel(int64_t n, const float *x, H *out);
template <>
__global__ void round_span_kernel<__nv_bfloat16>(int64_t n, const float *x, __nv_bfloat16 *out) {
  PD_KCU_LOOP(i, n) out[i] = __float2bfloat16_rn(x[i]);
}
template <>
__global__ void round_span_kernel<__half>(int64_t n, const float *x, __half *out) {
  PD_KCU_LOOP(i, n) out[i] = __float2half_rn(x[i]);
}

/* Elements from a matrix's start to its batch's last element: rows x cols, row stride ld. */
static int64_t span(int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

pd_status pd_kcu_gemm_lp(pd_dtype lp, bool trans_a, bool trans_b, int64_t batch, int64_t m,
                         int64_t n, int64_t k, double alpha, const void *a, int64_t lda,
                         int64_t stride_a, const void *b, int64_t ldb, int64_t stride_b,
                         double beta, void *c, int64_t ldc, int64_t stride_c,
                         const void *bias) {
  PD_KCU_TRY(pd_k_gemm_lp_check(lp, trans_a, trans_b, batch, m, n, k, lda, stride_a, ldb,
                                stride_b, ldc, stride_c));
  if (batch == 0 || m == 0 || n == 0) return PD_OK;
  /* Overlapping outputs: one product after the other, as the CPU. */
  if (batch > 1 && stride_c < (m - 1) * ldc + n) {
    for (int64_t i = 0; i < batch; i++)
      PD_KCU_TRY(pd_kcu_gemm_lp(lp, trans_a, trans_b, 1, m, n, k, alpha,
                                (const float *)a + i * stride_a, lda, 0,
                                (const float *)b + i * stride_b, ldb, 0, beta,
                                (float *)c + i * stride_c, ldc, 0, bias));
    return PD_OK;
  }
  if (k == 0 || alpha == 0) {
    PD_KCU_TRY(scale_c(PD_FP32, batch, m, n, beta, c, ldc, stride_c));
  } else {
    int64_t na = span(batch, stride_a, trans_a ? k : m, trans_a ? m : k, lda);
    int64_t nb = span(batch, stride_b, trans_b ? n : k, trans_b ? k : n, ldb);
    size_t off = pd_kcu_align((size_t)na * 2);
    char *buf = (char *)pd_kcu_scratch(off + (size_t)nb * 2);
    if (!buf) return PD_ENOMEM;
    cudaDataType_t ht = lp == PD_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    if (lp == PD_BF16) {
      round_span_kernel<__nv_bfloat16><<<pd_kcu_blocks(na), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          na, (const float *)a, (__nv_bfloat16 *)buf);
      round_span_kernel<__nv_bfloat16><<<pd_kcu_blocks(nb), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          nb, (const float *)b, (__nv_bfloat16 *)(buf + off));
    } else {
      round_span_kernel<__half><<<pd_kcu_blocks(na), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          na, (const float *)a, (__half *)buf);
      round_span_kernel<__half><<<pd_kcu_blocks(nb), PD_KCU_THREADS, 0, pd_kcu_stream>>>(
          nb, (const float *)b, (__half *)(buf + off));
    }
    cudaError_t le = cudaGetLastError();
    if (le != cudaSuccess) {
      pd_k_dev_free(buf);
      return pd_kcu_cuda_fail("gemm_lp rounding kernel", le);
    }
    cublasOperation_t opa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    float al = (float)alpha, be = (float)beta;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    for (int64_t i0 = 0; i0 < batch && s == CUBLAS_STATUS_SUCCESS; i0 += INT_MAX) {
      int cnt = (int)(batch - i0 < INT_MAX ? batch - i0 : INT_MAX);
      s = cublasGemmStridedBatchedEx(pd_kcu_blas, opb, opa, (int)n, (int)m, (int)k, &al,
                                     buf + off + (size_t)(i0 * stride_b) * 2, ht, (int)ldb,
                                     stride_b, buf + (size_t)(i0 * stride_a) * 2, ht, (int)lda,
                                     stride_a, &be, (float *)c + i0 * stride_c, CUDA_R_32F,
                                     (int)ldc, stride_c, cnt, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    }
    pd_k_dev_free(buf); /* stream-ordered reuse (the caching allocator) */
    if (s != CUBLAS_STATUS_SUCCESS) return pd_kcu_blas_fail("cublasGemmStridedBatchedEx", s);
  }
  if (!bias) return PD_OK;
  for (int64_t i = 0; i < batch; i++) {
    float *ci = (float *)c + i * stride_c;
    bool whole = ldc == n;
    for (int64_t r = 0; r < m; r += whole ? m : 1) {
      int64_t dims[2] = {whole ? m : 1, n};
      float *cr = ci + r * ldc;
      PD_KCU_TRY(pd_kcu_binary(PD_K_ADD, PD_FP32, 2, dims, cr, 1, &n, bias, -1, cr));
    }
  }
  return PD_OK;
}
