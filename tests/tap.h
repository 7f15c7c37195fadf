/* tap.h -- a tiny TAP producer for pdlang's C unit tests (run by automake's TAP driver).
 * Usage: ok(cond, "what"), is_int(got, want, "what"), is_close(got, want, tol, "what"),
 * is_str(got, want, "what"), tap_skip("why") for a test that cannot run here; end main() with
 * `return tap_done();`. Header-only on purpose. */
#ifndef PD_TAP_H
#define PD_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count_, tap_failed_;

static int tap_ok_(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), unused));
static int tap_ok_(int pass, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  printf("%s %d - ", pass ? "ok" : "not ok", ++tap_count_);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  if (!pass) {
    tap_failed_++;
    printf("#   failed at %s:%d\n", file, line);
  }
  fflush(stdout);
  return pass;
}

#define ok(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                            \
  do {                                                                                    \
    long long g_ = (long long)(got), w_ = (long long)(want);                              \
    if (!tap_ok_(g_ == w_, __FILE__, __LINE__, __VA_ARGS__))                              \
      printf("#   got %lld, want %lld\n", g_, w_);                                       \
  } while (0)
/* |got - want| <= tol * max(1, |want|): relative for large values, absolute near zero. */
#define is_close(got, want, tol, ...)                                                     \
  do {                                                                                    \
    double g_ = (double)(got), w_ = (double)(want);                                       \
    double s_ = fabs(w_) > 1 ? fabs(w_) : 1;                                              \
    if (!tap_ok_(fabs(g_ - w_) <= (tol) * s_, __FILE__, __LINE__, __VA_ARGS__))           \
      printf("#   got %.17g, want %.17g\n", g_, w_);                                     \
  } while (0)
#define is_str(got, want, ...)                                                            \
  do {                                                                                    \
    const char *g_ = (got), *w_ = (want);                                                 \
    if (!tap_ok_(g_ && w_ && strcmp(g_, w_) == 0, __FILE__, __LINE__, __VA_ARGS__))       \
      printf("#   got  \"%s\"\n#   want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
  } while (0)

/* One test counted as passed, with TAP's SKIP directive and the reason. */
static void tap_skip(const char *why) __attribute__((unused));
static void tap_skip(const char *why) {
  printf("ok %d # SKIP %s\n", ++tap_count_, why);
  fflush(stdout);
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void) {
  printf("1..%d\n", tap_count_);
  fflush(stdout); /* before a leak checker's exit handler can cut the plan off */
  return tap_failed_ ? 1 : 0;
}

#endif /* PD_TAP_H */
