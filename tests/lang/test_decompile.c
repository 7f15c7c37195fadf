/* test_decompile.c -- pd_decompile (lang/decompile.h) as a library call: PaddlePaddle's LeNet
 * (tests/interop/lenet) comes out as the stdlib's layers, each call kept only after the script
 * compiled to the model's ops, and PaddlePaddle's MLP keeps its plain product (matmul); then
 * with the k-th allocation failing, for every k of the whole call (its compiles included): each
 * call returns PD_OK or PD_ENOMEM (its message, when one could be made, "out of memory"), never
 * anything else, and leaves nothing behind (a sanitizer build checks the heap on every path). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "lang/decompile.h"
#include "tests/tap.h"
#include "vm/run/model.h"

enum { SAMPLES = 2000 };

static char *decompile(pd_model *m, const char *path, pd_status *st, pd_error *e) {
  pd_buf b;
  pd_buf_init(&b);
  *st = pd_decompile(m, path, "re.pdmodel", &b, e);
  char *s = !*st && !b.oom ? pd_buf_take(&b) : NULL;
  pd_buf_free(&b);
  return s;
}

int main(void) {
  const char *top = getenv("top_srcdir");
  char path[1024], mlp[1024];
  snprintf(path, sizeof path, "%s/tests/interop/lenet/model.pdmodel", top ? top : ".");
  snprintf(mlp, sizeof mlp, "%s/tests/interop/mlp/model.pdmodel", top ? top : ".");
  pd_model m = {0};
  pd_error e = {0};
  if (!ok(pd_model_load(&m, path, &e) == PD_OK, "LeNet loads (%s)", e.msg ? e.msg : "ok")) {
    pd_error_clear(&e);
    return tap_done();
  }
  pd_status st;
  pd_alloc_fail_after(0);
  char *clean = decompile(&m, path, &st, &e);
  long total = pd_alloc_fail_after(0);
  ok(st == PD_OK && clean, "decompiles (%ld allocations)", total);
  ok(clean && strstr(clean, "import \"layers\"\n") &&
         strstr(clean, "= conv(img, 6, 5, padding = 2, act = relu, name = \"conv2d_0.w_0\", "
                       "bias_name = \"conv2d_0.b_0\")  # ops 1-3\n") &&
         strstr(clean, "= max_pool(conv2d_0_tmp_2, 2)  # op 4\n") &&
         strstr(clean, "= avg_pool(conv2d_1_tmp_2, 2)  # op 8\n") &&
         strstr(clean, "= fc(fc_0_tmp_2, 10, act = softmax, name = \"fc_1.w_0\", "
                       "bias_name = \"fc_1.b_0\")  # ops 12-14\n") &&
         !strstr(clean, "op(\"") && !strstr(clean, "param("),
     "its ops are calls of conv, max_pool, avg_pool and fc, which make their parameters");

  pd_model mm = {0};
  if (pd_model_load(&mm, mlp, &e) == PD_OK) {
    char *s = decompile(&mm, mlp, &st, &e);
    ok(s && strstr(s, "= matmul(fc_0_tmp_2, w_proj)  # op 4\n") &&
           strstr(s, "w_proj = param(\"w_proj\", [16, 6])\n") && !strstr(s, "fc_0_w_0 = param"),
       "the MLP: matmul() of the parameter it declares, fc() between");
    pd_free(s);
    pd_model_free(&mm);
  } else {
    ok(0, "the MLP loads (%s)", e.msg ? e.msg : "?");
  }
  pd_error_clear(&e);

  long stride = total > SAMPLES ? total / SAMPLES : 1;
  int nomem = 0, passed = 0, other = 0, badmsg = 0;
  for (long k = 1; k <= total; k += stride) {
    pd_alloc_fail_after(k);
    char *s = decompile(&m, path, &st, &e);
    pd_alloc_fail_after(0);
    if (st == PD_ENOMEM) {
      nomem++;
      if (e.msg && strcmp(e.msg, "out of memory") != 0) {
        if (badmsg++ < 3) printf("# k = %ld: out of memory, said as '%s'\n", k, e.msg ? e.msg : "");
      }
    } else if (st == PD_OK) {
      passed++;  /* the failure hit what a fallback or a retry covers */
    } else {
      other++;
      printf("# k = %ld: %s: %s\n", k, pd_status_str(st), e.msg ? e.msg : "");
    }
    pd_free(s);
    pd_error_clear(&e);
  }
  ok(nomem > 0 && other == 0 && badmsg == 0,
     "allocation k failing (every %ld of %ld): %d out of memory, %d decompiled, %d other, %d "
     "with another message", stride, total, nomem, passed, other, badmsg);
  char *again = decompile(&m, path, &st, &e);
  ok(again && clean && strcmp(again, clean) == 0, "the same script afterwards");
  pd_free(again);
  pd_free(clean);
  pd_error_clear(&e);
  pd_model_free(&m);
  return tap_done();
}
