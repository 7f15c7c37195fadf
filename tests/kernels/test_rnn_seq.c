/* test_rnn_seq.c -- the whole-sequence LSTM and GRU (lstm_seq, gru_seq and their gradients) of
 * the CPU backend (kernels/cpu/rnn_seq.c) and of kernels/rnn_steps.c's composition of a
 * backend's GEMM and cell entries (what the CUDA backend runs; here over the CPU's entries,
 * tests/kernels/steps_backend.h) against a reference written here from the equations,
 * one sequence at a time in double (forward, and backpropagation through time by hand): batches
 * of sequences of unequal lengths (one empty) whose rows are interleaved in the batch-major
 * tensors, forward and reversed, at hidden sizes that split into uneven parts across three
 * threads (and one that stays in one part), fp64 and fp32; mixed precision (lp: the products
 * with the weights in bf16 and fp16) against the reference that rounds those operands, and
 * apart from fp32's within the low precision's bound; and the argument checks. */
#include "config.h"
#include "tests/kernels/kt.h"
#include "tests/kernels/steps_backend.h"

enum { MAXH = 64, MAXN = 24, MAXLEN = 9 };

typedef struct batch {
  int64_t H, nseq, steps, total;
  int64_t len[MAXN];               /* by sorted position (longest first) */
  int64_t koff[MAXLEN + 1];
  int64_t row[MAXN * MAXLEN];
  int64_t at[MAXN][MAXLEN];        /* the batch-major row of sequence r's step k */
} batch;

static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

/* nseq sequences of lengths from `lens` (already longest first), their rows interleaved in
 * the batch-major tensors by a fixed shuffle; reversed: step k is the sequence's row len-1-k. */
static void make_batch(batch *b, int64_t H, int64_t nseq, const int64_t *lens, bool rev) {
  memset(b, 0, sizeof *b);
  b->H = H;
  b->nseq = nseq;
  int64_t slot = 0;
  for (int64_t r = 0; r < nseq; r++) {
    b->len[r] = lens[r];
    if (lens[r] > b->steps) b->steps = lens[r];
    b->total += lens[r];
  }
  /* a permutation of the batch-major rows: i -> (i * mult + 3) mod total, mult coprime to
   * total */
  int64_t mult = 7;
  while (b->total > 1 && gcd(mult, b->total) != 1) mult += 2;
  for (int64_t r = 0; r < nseq; r++)
    for (int64_t k = 0; k < lens[r]; k++, slot++) b->at[r][k] = (slot * mult + 3) % b->total;
  int64_t i = 0;
  for (int64_t k = 0; k < b->steps; k++) {
    b->koff[k] = i;
    for (int64_t r = 0; r < nseq && b->len[r] > k; r++)
      b->row[i++] = b->at[r][rev ? b->len[r] - 1 - k : k];
  }
  b->koff[b->steps] = i;
}

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Arrays of doubles, and their copies in dt. */
static double *dalloc(int64_t n) { return kt_alloc((size_t)(n > 0 ? n : 1) * sizeof(double)); }
static void *as_dt(pd_dtype dt, const double *v, int64_t n) {
  void *p = kt_alloc((size_t)(n > 0 ? n : 1) * pd_dtype_size(dt));
  for (int64_t i = 0; i < n; i++) kt_set(dt, p, i, v[i]);
  return p;
}
static void fill(double *v, int64_t n, double a) {
  for (int64_t i = 0; i < n; i++) v[i] = kt_uniform(-a, a);
}

/* The largest |got - want| relative to max(1, |want|). */
static double err_of(pd_dtype dt, const void *got, const double *want, int64_t n) {
  double e = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs(kt_get(dt, got, i) - want[i]) / fmax(1.0, fabs(want[i]));
    if (!(d <= e)) e = d; /* NaN too */
  }
  return e;
}

/* Mixed precision (pd_k_rnn_seq.lp): when set, the references round both operands of every
 * product with the weights to it, as the kernels must; 0: exact. */
static pd_dtype ref_lp;
static double RD(double v) {
  if (!ref_lp) return v;
  return ref_lp == PD_BF16 ? pd_bf16_round((float)v) : pd_fp16_round((float)v);
}

/* Step k of sequence r in time order: the batch-major row. */
static int64_t tm_row(const batch *b, int64_t r, int64_t k, bool rev) {
  return b->at[r][rev ? b->len[r] - 1 - k : k];
}

/* ---- LSTM: gates i f g o; c = f c' + i g; h = o tanh(c) */
static void lstm_ref(const batch *b, bool rev, const double *x, const double *w,
                     const double *h0, const double *c0, const double *dhid, const double *dcel,
                     double *hid, double *cel, double *gate, double *dx, double *dw,
                     double *dh0, double *dc0) {
  int64_t H = b->H, G = 4 * H;
  memset(dw, 0, sizeof(double) * (size_t)(H * G));
  for (int64_t r = 0; r < b->nseq; r++) {
    double h[MAXH], c[MAXH];
    memcpy(h, h0 + r * H, sizeof(double) * (size_t)H);
    memcpy(c, c0 + r * H, sizeof(double) * (size_t)H);
    for (int64_t k = 0; k < b->len[r]; k++) {
      int64_t i = tm_row(b, r, k, rev);
      double *g = gate + i * G;
      for (int64_t q = 0; q < G; q++) {
        double a = x[i * G + q];
        for (int64_t p = 0; p < H; p++) a += RD(h[p]) * RD(w[p * G + q]);
        g[q] = q >= 2 * H && q < 3 * H ? tanh(a) : sigm(a);
      }
      for (int64_t j = 0; j < H; j++) {
        c[j] = g[H + j] * c[j] + g[j] * g[2 * H + j];
        h[j] = g[3 * H + j] * tanh(c[j]);
        cel[i * H + j] = c[j];
        hid[i * H + j] = h[j];
      }
    }
    double dhn[MAXH] = {0}, dcn[MAXH] = {0};
    for (int64_t k = b->len[r] - 1; k >= 0; k--) {
      int64_t i = tm_row(b, r, k, rev);
      const double *g = gate + i * G;
      const double *pc = k ? cel + tm_row(b, r, k - 1, rev) * H : c0 + r * H;
      const double *ph = k ? hid + tm_row(b, r, k - 1, rev) * H : h0 + r * H;
      double *d = dx + i * G;
      for (int64_t j = 0; j < H; j++) {
        double dh = dhid[i * H + j] + dhn[j], th = tanh(cel[i * H + j]);
        double dc = dcel[i * H + j] + dcn[j] + dh * g[3 * H + j] * (1 - th * th);
        d[j] = dc * g[2 * H + j] * g[j] * (1 - g[j]);
        d[H + j] = dc * pc[j] * g[H + j] * (1 - g[H + j]);
        d[2 * H + j] = dc * g[j] * (1 - g[2 * H + j] * g[2 * H + j]);
        d[3 * H + j] = dh * th * g[3 * H + j] * (1 - g[3 * H + j]);
        dcn[j] = dc * g[H + j];
      }
      for (int64_t p = 0; p < H; p++) {
        double s = 0;
        for (int64_t q = 0; q < G; q++) {
          s += RD(d[q]) * RD(w[p * G + q]);
          dw[p * G + q] += RD(ph[p]) * RD(d[q]);
        }
        dhn[p] = s;
      }
    }
    memcpy(dh0 + r * H, dhn, sizeof(double) * (size_t)H);
    memcpy(dc0 + r * H, dcn, sizeof(double) * (size_t)H);
  }
}

/* ---- GRU: r, z = sigmoid(x + h W + b); hn = h W_n + b_n; n = tanh(x_n + r hn);
 * h = (1 - z) n + z h' */
static void gru_ref(const batch *b, bool rev, const double *x, const double *w, const double *bb,
                    const double *h0, const double *dhid, double *hid, double *gate, double *dx,
                    double *dw, double *db, double *dh0) {
  int64_t H = b->H, G = 3 * H;
  memset(dw, 0, sizeof(double) * (size_t)(H * G));
  memset(db, 0, sizeof(double) * (size_t)G);
  for (int64_t r = 0; r < b->nseq; r++) {
    double h[MAXH];
    memcpy(h, h0 + r * H, sizeof(double) * (size_t)H);
    for (int64_t k = 0; k < b->len[r]; k++) {
      int64_t i = tm_row(b, r, k, rev);
      double p[3 * MAXH], *s = gate + i * 4 * H;
      for (int64_t q = 0; q < G; q++) {
        p[q] = bb[q];
        for (int64_t e = 0; e < H; e++) p[q] += RD(h[e]) * RD(w[e * G + q]);
      }
      for (int64_t j = 0; j < H; j++) {
        s[j] = sigm(x[i * G + j] + p[j]);
        s[H + j] = sigm(x[i * G + H + j] + p[H + j]);
        s[3 * H + j] = p[2 * H + j];
        s[2 * H + j] = tanh(x[i * G + 2 * H + j] + s[j] * s[3 * H + j]);
        h[j] = (1 - s[H + j]) * s[2 * H + j] + s[H + j] * h[j];
        hid[i * H + j] = h[j];
      }
    }
    double dhn[MAXH] = {0};
    for (int64_t k = b->len[r] - 1; k >= 0; k--) {
      int64_t i = tm_row(b, r, k, rev);
      const double *s = gate + i * 4 * H;
      const double *ph = k ? hid + tm_row(b, r, k - 1, rev) * H : h0 + r * H;
      double dp[3 * MAXH], direct[MAXH];
      for (int64_t j = 0; j < H; j++) {
        double d = dhid[i * H + j] + dhn[j], rg = s[j], z = s[H + j], n = s[2 * H + j];
        double dn = d * (1 - z) * (1 - n * n);
        double dr = dn * s[3 * H + j] * rg * (1 - rg), dz = d * (ph[j] - n) * z * (1 - z);
        dx[i * G + j] = dp[j] = dr;
        dx[i * G + H + j] = dp[H + j] = dz;
        dx[i * G + 2 * H + j] = dn;
        dp[2 * H + j] = dn * rg;
        direct[j] = d * z;
      }
      for (int64_t e = 0; e < H; e++) {
        double sum = direct[e];
        for (int64_t q = 0; q < G; q++) {
          sum += RD(dp[q]) * RD(w[e * G + q]);
          dw[e * G + q] += RD(ph[e]) * RD(dp[q]);
        }
        dhn[e] = sum;
      }
      for (int64_t q = 0; q < G; q++) db[q] += dp[q];
    }
    memcpy(dh0 + r * H, dhn, sizeof(double) * (size_t)H);
  }
}

static pd_k_rnn_seq seq_of(const batch *b, pd_dtype dt) {
  pd_k_rnn_seq s = {dt, b->H, b->nseq, b->steps, b->koff, b->row, 0, ref_lp};
  return s;
}

static void check(pd_dtype dt, const char *what, const char *name, const void *got,
                  const double *want, int64_t n) {
  /* lp: an operand the kernel rounds from its fp32 value may round the other way than the
   * reference's double one, a half unit of the low precision on one term */
  double tol = dt == PD_FP64 ? 1e-11 : ref_lp == PD_BF16 ? 1e-3 : 2e-4;
  double e = err_of(dt, got, want, n);
  ok(e <= tol, "%s %s: %s within %g (%.3g)", what, pd_dtype_name(dt), name, tol, e);
}

/* Under lp: the kernel's hidden state within the low precision's bound of the exact (fp32)
 * reference's, and at least 4 times closer to the reference that rounds the operands (so the
 * products did round, as they should). */
static void check_apart(const char *what, const void *got, const double *rounded,
                        const double *exact, int64_t n) {
  double er = err_of(PD_FP32, got, rounded, n), ex = err_of(PD_FP32, got, exact, n),
         hi = ref_lp == PD_BF16 ? 0.01 : 0.002;
  ok(ex <= hi && ex > 4 * er, "%s: hidden %.3g from fp32's (bound %g), %.3g from the rounded "
     "operands' (4 times closer at least)", what, ex, hi, er);
}

static void test_lstm(pd_dtype dt, int64_t H, int64_t nseq, const int64_t *lens, bool rev,
                      const char *what) {
  batch b;
  make_batch(&b, H, nseq, lens, rev);
  int64_t T = b.total, G = 4 * H, N = nseq;
  double *x = dalloc(T * G), *w = dalloc(H * G), *h0 = dalloc(N * H), *c0 = dalloc(N * H);
  double *dh = dalloc(T * H), *dc = dalloc(T * H);
  fill(x, T * G, 1.0), fill(w, H * G, 0.5 / sqrt((double)H)), fill(h0, N * H, 0.5);
  fill(c0, N * H, 0.5), fill(dh, T * H, 1.0), fill(dc, T * H, 1.0);
  double *hid = dalloc(T * H), *cel = dalloc(T * H), *gate = dalloc(T * G), *dx = dalloc(T * G);
  double *dw = dalloc(H * G), *dh0 = dalloc(N * H), *dc0 = dalloc(N * H);
  lstm_ref(&b, rev, x, w, h0, c0, dh, dc, hid, cel, gate, dx, dw, dh0, dc0);
  void *X = as_dt(dt, x, T * G), *W = as_dt(dt, w, H * G), *H0 = as_dt(dt, h0, N * H);
  void *C0 = as_dt(dt, c0, N * H), *DH = as_dt(dt, dh, T * H), *DC = as_dt(dt, dc, T * H);
  void *oh, *oc, *og, *odx, *odw, *odh0, *odc0;
  size_t es = pd_dtype_size(dt);
  oh = kt_alloc((size_t)(T * H) * es + 1), oc = kt_alloc((size_t)(T * H) * es + 1);
  og = kt_alloc((size_t)(T * G) * es + 1), odx = kt_alloc((size_t)(T * G) * es + 1);
  odw = kt_alloc((size_t)(H * G) * es), odh0 = kt_alloc((size_t)(N * H) * es + 1);
  odc0 = kt_alloc((size_t)(N * H) * es + 1);
  pd_k_rnn_seq s = seq_of(&b, dt);
  ok(K->lstm_seq(&s, X, W, H0, C0, oh, oc, og) == PD_OK, "%s %s: lstm_seq runs", what,
     pd_dtype_name(dt));
  check(dt, what, "hidden", oh, hid, T * H);
  if (ref_lp) {
    pd_dtype lp = ref_lp;
    double *e1 = dalloc(T * H), *e2 = dalloc(T * H), *e3 = dalloc(T * G), *e4 = dalloc(T * G);
    double *e5 = dalloc(H * G), *e6 = dalloc(N * H), *e7 = dalloc(N * H);
    ref_lp = 0;
    lstm_ref(&b, rev, x, w, h0, c0, dh, dc, e1, e2, e3, e4, e5, e6, e7);
    ref_lp = lp;
    check_apart(what, oh, hid, e1, T * H);
    void *ebufs[] = {e1, e2, e3, e4, e5, e6, e7};
    for (size_t i = 0; i < sizeof ebufs / sizeof ebufs[0]; i++) free(ebufs[i]);
  }
  check(dt, what, "cell", oc, cel, T * H);
  check(dt, what, "gates", og, gate, T * G);
  ok(K->lstm_seq_grad(&s, W, H0, C0, oh, oc, og, DH, DC, odx, odw, odh0, odc0) == PD_OK,
     "%s %s: lstm_seq_grad runs", what, pd_dtype_name(dt));
  check(dt, what, "dInput", odx, dx, T * G);
  check(dt, what, "dWeight", odw, dw, H * G);
  check(dt, what, "dH0", odh0, dh0, N * H);
  check(dt, what, "dC0", odc0, dc0, N * H);
  void *bufs[] = {x, w, h0, c0, dh, dc, hid, cel, gate, dx, dw, dh0, dc0, X, W, H0, C0, DH, DC,
                  oh, oc, og, odx, odw, odh0, odc0};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void test_gru(pd_dtype dt, int64_t H, int64_t nseq, const int64_t *lens, bool rev,
                     const char *what) {
  batch b;
  make_batch(&b, H, nseq, lens, rev);
  int64_t T = b.total, G = 3 * H, N = nseq;
  double *x = dalloc(T * G), *w = dalloc(H * G), *bb = dalloc(G), *h0 = dalloc(N * H);
  double *dh = dalloc(T * H);
  fill(x, T * G, 1.0), fill(w, H * G, 0.5 / sqrt((double)H)), fill(bb, G, 0.5);
  fill(h0, N * H, 0.5), fill(dh, T * H, 1.0);
  double *hid = dalloc(T * H), *gate = dalloc(T * 4 * H), *dx = dalloc(T * G);
  double *dw = dalloc(H * G), *db = dalloc(G), *dh0 = dalloc(N * H);
  gru_ref(&b, rev, x, w, bb, h0, dh, hid, gate, dx, dw, db, dh0);
  size_t es = pd_dtype_size(dt);
  void *X = as_dt(dt, x, T * G), *W = as_dt(dt, w, H * G), *B = as_dt(dt, bb, G);
  void *H0 = as_dt(dt, h0, N * H), *DH = as_dt(dt, dh, T * H);
  void *oh = kt_alloc((size_t)(T * H) * es + 1), *og = kt_alloc((size_t)(T * 4 * H) * es + 1);
  void *odx = kt_alloc((size_t)(T * G) * es + 1), *odw = kt_alloc((size_t)(H * G) * es);
  void *odb = kt_alloc((size_t)G * es), *odh0 = kt_alloc((size_t)(N * H) * es + 1);
  pd_k_rnn_seq s = seq_of(&b, dt);
  ok(K->gru_seq(&s, X, W, B, H0, oh, og) == PD_OK, "%s %s: gru_seq runs", what,
     pd_dtype_name(dt));
  check(dt, what, "hidden", oh, hid, T * H);
  if (ref_lp) {
    pd_dtype lp = ref_lp;
    double *e1 = dalloc(T * H), *e2 = dalloc(T * 4 * H), *e3 = dalloc(T * G), *e4 = dalloc(H * G);
    double *e5 = dalloc(G), *e6 = dalloc(N * H);
    ref_lp = 0;
    gru_ref(&b, rev, x, w, bb, h0, dh, e1, e2, e3, e4, e5, e6);
    ref_lp = lp;
    check_apart(what, oh, hid, e1, T * H);
    void *ebufs[] = {e1, e2, e3, e4, e5, e6};
    for (size_t i = 0; i < sizeof ebufs / sizeof ebufs[0]; i++) free(ebufs[i]);
  }
  check(dt, what, "gates", og, gate, T * 4 * H);
  ok(K->gru_seq_grad(&s, W, H0, oh, og, DH, odx, odw, odb, odh0) == PD_OK,
     "%s %s: gru_seq_grad runs", what, pd_dtype_name(dt));
  check(dt, what, "dInput", odx, dx, T * G);
  check(dt, what, "dWeight", odw, dw, H * G);
  check(dt, what, "dBias", odb, db, G);
  check(dt, what, "dH0", odh0, dh0, N * H);
  void *bufs[] = {x, w, bb, h0, dh, hid, gate, dx, dw, db, dh0, X, W, B, H0, DH,
                  oh, og, odx, odw, odb, odh0};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
}

static void test_args(void) {
  int64_t koff[3] = {0, 2, 4}, row[4] = {0, 1, 2, 3};
  float buf[256] = {0}, *out = buf + 128; /* inputs in the first half */
  pd_k_rnn_seq s = {PD_FP32, 2, 2, 2, koff, row, 0, PD_FP32};
  ok(K->lstm_seq(&s, buf, buf, buf, buf, out, out + 16, out + 32) == PD_OK,
     "args: a valid batch runs");
  pd_k_rnn_seq bad = s;
  bad.dt = PD_INT32;
  ok(K->lstm_seq(&bad, buf, buf, buf, buf, out, out + 16, out + 32) == PD_EUNSUPPORTED,
     "args: int32 is refused");
  int64_t grow[3] = {0, 1, 3};
  bad = s;
  bad.koff = grow;
  ok(K->gru_seq(&bad, buf, buf, buf, buf, out, out + 32) == PD_EINVAL,
     "args: a step with more rows than the one before is refused");
  int64_t far[4] = {0, 1, 2, 4};
  bad = s;
  bad.row = far;
  ok(K->lstm_seq_grad(&bad, buf, buf, buf, buf, buf, buf, NULL, NULL, out, out + 32,
                      out + 48, out + 56) == PD_EINVAL,
     "args: a row past the batch is refused");
  bad.rows = 5; /* a padded batch of 5 rows: row 4 is in it */
  ok(K->lstm_seq(&bad, buf, buf, buf, buf, out, out + 16, out + 32) == PD_OK,
     "args: a row past koff[steps] but inside `rows` runs");
  bad.rows = 3;
  ok(K->lstm_seq(&bad, buf, buf, buf, buf, out, out + 16, out + 32) == PD_EINVAL,
     "args: rows fewer than koff[steps] are refused");
  bad = s;
  bad.nseq = 1;
  ok(K->gru_seq_grad(&bad, buf, buf, buf, buf, NULL, out, out + 32, out + 48, out + 56) ==
         PD_EINVAL,
     "args: a step with more rows than sequences is refused");
  ok(K->lstm_seq(&s, NULL, buf, buf, buf, out, out + 16, out + 32) == PD_EINVAL,
     "args: a missing input is refused");
  double dbuf[128] = {0};
  bad = s;
  bad.dt = PD_FP64;
  bad.lp = PD_BF16;
  ok(K->lstm_seq(&bad, dbuf, dbuf, dbuf, dbuf, dbuf + 64, dbuf + 80, dbuf + 96) == PD_EUNSUPPORTED,
     "args: low-precision products of fp64 tensors are refused");
}

int main(int argc, char **argv) {
  kt_begin(argv);
  (void)argc;
  /* longest first; one empty sequence */
  static const int64_t lens16[16] = {9, 9, 8, 8, 7, 7, 7, 6, 5, 5, 4, 3, 3, 2, 1, 0};
  static const int64_t lens3[3] = {4, 2, 0};
  static const int64_t none[2] = {0, 0};
  const pd_k_backend *backends[2] = {pd_k_cpu(), steps_backend()};
  for (int b = 0; b < 2; b++) {
    K = backends[b];
    printf("# %s\n", b ? "kernels/rnn_steps.c over the CPU's entries" : "the CPU backend's");
    for (int d = 0; d < 2; d++) {
      pd_dtype dt = kt_float_types[d];
      test_lstm(dt, 40, 16, lens16, false, "lstm H 40 (uneven parts)");
      test_lstm(dt, 64, 16, lens16, true, "lstm H 64 reversed");
      test_lstm(dt, 5, 3, lens3, false, "lstm H 5 (one part)");
      test_lstm(dt, 8, 2, none, false, "lstm, empty sequences only");
      test_gru(dt, 40, 16, lens16, true, "gru H 40 reversed (uneven parts)");
      test_gru(dt, 64, 16, lens16, false, "gru H 64");
      test_gru(dt, 5, 3, lens3, true, "gru H 5 (one part)");
      test_gru(dt, 8, 2, none, false, "gru, empty sequences only");
    }
    /* mixed precision: the products in bf16 and in fp16 (fp32 tensors) */
    for (int l = 0; l < 2; l++) {
      ref_lp = l ? PD_FP16 : PD_BF16;
      test_lstm(PD_FP32, 40, 16, lens16, false, l ? "lstm H 40 fp16 products" : "lstm H 40 bf16 products");
      test_gru(PD_FP32, 64, 16, lens16, true, l ? "gru H 64 reversed, fp16 products" : "gru H 64 reversed, bf16 products");
      ref_lp = 0;
    }
    test_args();
  }
  return tap_done();
}
