/* plane_data.h -- the data set two C-library tests train on (test_api_data, test_api_train):
 * n rows of d = 4 features in [-1, 1) from a seeded generator, and the class of each, 1 when
 * 0.8 x0 - 0.5 x1 + 0.3 x2 - 0.2 x3 > 0.1 (two classes split by a plane). */
#ifndef PD_TESTS_API_PLANE_DATA_H
#define PD_TESTS_API_PLANE_DATA_H

#include <stdint.h>

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

#endif
