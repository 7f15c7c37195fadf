/* train_common.h -- what the C-library tests of training on a host's data (test_api_data,
 * test_api_train, test_api_finetune) share: plane_data, their data set (n rows of 4 features
 * in [-1, 1) from a seeded generator, and the class of each, 1 when 0.8 x0 - 0.5 x1 + 0.3 x2 -
 * 0.2 x3 > 0.1: two classes split by a plane), expect, the check of a call's result and error
 * text, and weights, a copy of a parameter. Include after include/pdlang.h and tests/tap.h. */
#ifndef PD_TESTS_API_TRAIN_COMMON_H
#define PD_TESTS_API_TRAIN_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void plane_data(uint64_t seed, int n, float *xs, int64_t *labels) {
  uint64_t s = seed;
  for (int i = 0; i < n * 4; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    xs[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  for (int i = 0; i < n; i++) {
    const float *x = xs + i * 4;
    labels[i] = 0.8 * x[0] - 0.5 * x[1] + 0.3 * x[2] - 0.2 * x[3] > 0.1;
  }
}

/* rc is want and the state's error text holds needle; else the text, as a TAP comment. */
static inline void expect(int rc, int want, pd_state *st, const char *needle, const char *what) {
  const char *msg = pd_state_error(st)->text;
  bool pass = rc == want && strstr(msg, needle);
  ok(pass, "%s", what);
  if (!pass) printf("#   rc %d (want %d): %s", rc, want, msg);
}

/* A copy (malloc) of the state's parameter name (NULL: none); *n its bytes. */
static inline void *weights(pd_state *st, const char *name, size_t *n) {
  pd_tensor_info t;
  if (pd_state_fetch(st, name, &t)) return NULL;
  void *p = malloc(t.nbytes);
  if (p) memcpy(p, t.data, t.nbytes);
  *n = t.nbytes;
  return p;
}

#endif
