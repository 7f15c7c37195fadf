/* copy_rows.c -- the CPU backend's copy_rows (kernels.h): rows moved through index lists with
 * memcpy, split across the pool's threads by rows. */
#include "config.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels_int.h"

#include <string.h>

typedef struct rows_job {
  const char *src;
  char *dst;
  const int64_t *sids, *dids;
  size_t rb;  /* bytes of a row */
} rows_job;

static void rows_range(void *ctx, int64_t b, int64_t e) {
  const rows_job *j = ctx;
  for (int64_t i = b; i < e; i++)
    memcpy(j->dst + (size_t)(j->dids ? j->dids[i] : i) * j->rb,
           j->src + (size_t)(j->sids ? j->sids[i] : i) * j->rb, j->rb);
}

pd_status pd_kcpu_copy_rows(pd_dtype dt, int64_t n, int64_t width, const void *src,
                            const int64_t *src_ids, void *dst, const int64_t *dst_ids) {
  pd_status st = pd_k_copy_rows_check(dt, n, width, src, dst);
  if (st || n == 0 || width == 0) return st;
  rows_job j = {src, dst, src_ids, dst_ids, (size_t)width * pd_dtype_size(dt)};
  /* About a grain of bytes a part: copies are memory-bound. */
  int64_t grain = (int64_t)(PD_KCPU_GRAIN * sizeof(float) / j.rb);
  pd_kcpu_parallel(n, grain > 0 ? grain : 1, rows_range, &j);
  return PD_OK;
}
