/* amp.h -- automatic mixed precision of a training program (train(..., amp = "bf16" | "fp16")),
 * after PaddlePaddle's AMP O1: the matrix products (the ops flagged AMP in vm/oplist.h: mul, fc,
 * matmul_v2, conv2d, Paddle's white list) multiply in bf16 or fp16; everything else (softmax, norms,
 * losses, reductions, the optimizer's updates and their fp32 master weights) stays fp32. The
 * pass marks each such op, in every block, with mkldnn_data_type = "bfloat16" or "float16" (the
 * attribute Paddle's oneDNN bf16 passes set), which its kernels read (vm/ops/matmul.c: the
 * backend's gemm_lp rounds the fp32 operands as it multiplies; vm/ops/nn.c: the convolution's
 * pd_k_conv2d.lp; tensors stay fp32, so no cast ops are needed) and which `pdlang dump --train` shows.
 *
 * When: before pd_append_backward, so that each gradient op copies the attribute (its products
 * then run in low precision too, as under Paddle's AMP), and after the fusions (fuse_fc's fc
 * is marked).
 *
 * Ownership: p is changed in place. */
#ifndef PD_AMP_H
#define PD_AMP_H

#include "base/base.h"
#include "vm/ir/program.h"

/* lp PD_BF16 or PD_FP16 (else PD_EINVAL). Returns how many ops were marked in *count (may be
 * NULL). PD_ENOMEM. */
pd_status pd_program_amp(pd_program *p, pd_dtype lp, int *count, pd_error *err);

#endif /* PD_AMP_H */
