/* test_api_data.c -- training from a host program (include/pdlang.h, pd_state_set_dataset): a
 * script's train(reader = host("d")) learns from arrays the program gives (the cost falls, and
 * the trained weights are the very ones that the same script reading the same values from .npy
 * files computes, as `pdlang run` does, with the same seed), eval and a validation split read
 * them too, the state keeps copies (the caller's buffers may change), a data set can be
 * replaced, sequences (pd_state_add_sequences) train as the lines(...) reader of the same
 * lines does, every bad argument is an error naming the field, an unknown name is an error at the
 * reader listing the names there are, and every allocation failing in turn is clean. */
#include "config.h"
#include "include/pdlang.h"
#include "tests/tap.h"
#include "tests/api/train_common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm/reader/reader.h"

enum { N = 96, D = 4 };
static float xs[N * D];
static int64_t labels[N];

static void make_data(void) { plane_data(12345, N, xs, labels); }

static const char *script(const char *reader) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "import \"layers\"\n"
           "x = data(\"x\", [-1, %d])\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "y = fc(x, 2, name = \"out\")\n"
           "cost = mean(softmax_with_cross_entropy(y, label))\n"
           "train(cost, reader = %s, batch = 8, epochs = 20, optimizer = sgd(0.5), seed = 3)\n",
           D, reader);
  return buf;
}

static int give(pd_state *st, const char *name) {
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N, 1}, .data = labels}};
  return pd_state_set_dataset(st, name, 2, names, f);
}

/* The cost of the script's current weights on all the data. */
static double cost_now(pd_state *st) {
  int64_t xd[2] = {N, D}, ld[2] = {N, 1};
  pd_tensor_info t;
  if (pd_state_feed(st, "x", PD_DTYPE_FLOAT32, 2, xd, xs) ||
      pd_state_feed(st, "label", PD_DTYPE_INT64, 2, ld, labels) ||
      pd_state_run_target(st, "cost") || pd_state_fetch(st, "cost", &t)) {
    printf("# cost: %s", pd_state_error(st)->text);
    return NAN;
  }
  return ((const float *)t.data)[0];
}

static void test_train(void) {
  pd_state *st = NULL, *ref = NULL;
  pd_state_new(&st);
  pd_state_set_output(st, NULL, NULL);
  ok(give(st, "d") == PD_RESULT_OK, "pd_state_set_dataset: x [96, 4] float32, label [96, 1] int64");
  int rc = pd_state_compile_string(st, "t.pd", script("host(\"d\")"));
  ok(rc == PD_RESULT_OK, "a script training on host(\"d\") compiles");
  if (rc) printf("# %s", pd_state_error(st)->text);
  double before = cost_now(st);
  /* The state copied the data: scribbling over the caller's buffers changes nothing. */
  float saved[N * D];
  memcpy(saved, xs, sizeof xs);
  memset(xs, 0, sizeof xs);
  rc = pd_state_run(st);
  memcpy(xs, saved, sizeof xs);
  ok(rc == PD_RESULT_OK, "pd_state_run trains on the host's data");
  if (rc) printf("# %s", pd_state_error(st)->text);
  double after = cost_now(st);
  ok(isfinite(before) && after < 0.5 * before,
     "the cost falls: %.4f before, %.4f after 20 epochs", before, after);

  /* The same script on the same values from .npy files (what `pdlang run` reads), same seed. */
  char dir[256], xp[300], lp[300], reader[700];
  snprintf(dir, sizeof dir, "%s/pd_api_data.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  snprintf(xp, sizeof xp, "%s.x.npy", dir);
  snprintf(lp, sizeof lp, "%s.label.npy", dir);
  pd_tensor tx, tl;
  pd_tensor_init(&tx);
  pd_tensor_init(&tl);
  int64_t xd[2] = {N, D}, ld[1] = {N};
  pd_tensor_resize(&tx, PD_FP32, 2, xd);
  pd_tensor_resize(&tl, PD_INT64, 1, ld);
  memcpy(pd_tensor_data(&tx), xs, sizeof xs);
  memcpy(pd_tensor_data(&tl), labels, sizeof labels);
  pd_error e = {0};
  bool wrote = !pd_npy_save(xp, &tx, &e) && !pd_npy_save(lp, &tl, &e);
  pd_error_clear(&e);
  pd_tensor_release(&tx);
  pd_tensor_release(&tl);
  snprintf(reader, sizeof reader, "npy(\"%s\", \"%s\")", xp, lp);
  pd_state_new(&ref);
  pd_state_set_output(ref, NULL, NULL);
  rc = wrote ? pd_state_compile_string(ref, "t.pd", script(reader)) : -1;
  if (!rc) rc = pd_state_run(ref);
  if (rc > 0) printf("# %s", pd_state_error(ref)->text);
  pd_tensor_info w1, w2, b1, b2;
  bool same = !rc && !pd_state_fetch(st, "out", &w1) && !pd_state_fetch(ref, "out", &w2) &&
              !pd_state_fetch(st, "fc_0.b_0", &b1) && !pd_state_fetch(ref, "fc_0.b_0", &b2) &&
              w1.nbytes == w2.nbytes && b1.nbytes == b2.nbytes && w1.nbytes == D * 2 * 4 &&
              memcmp(w1.data, w2.data, w1.nbytes) == 0 && memcmp(b1.data, b2.data, b1.nbytes) == 0;
  if (!same) {
    printf("# rc %d, fetch: %s", rc, pd_state_error(ref)->text);
    if (!pd_state_fetch(st, "out", &w1) && !pd_state_fetch(ref, "out", &w2))
      printf("# w[0] %.9g vs %.9g (%zu, %zu bytes)\n", ((const float *)w1.data)[0],
             ((const float *)w2.data)[0], w1.nbytes, w2.nbytes);
  }
  ok(same, "the trained weights equal those of the script reading the same values from .npy "
           "files (pdlang run's reader), bit for bit");
  unlink(xp);
  unlink(lp);
  pd_state_free(ref);

  /* eval and a validation split read host data too; replacing a data set is seen by the next
   * run. */
  const char *ev =
      "import \"layers\"\n"
      "x = data(\"x\", [-1, 4])\n"
      "print(1)\n"
      "eval(mean(x), reader = host(\"d\"), batch = 10)\n"
      "eval(mean(x), reader = host(\"d\", split = \"valid\", valid = 0.25))\n";
  char path[300];
  snprintf(path, sizeof path, "%s.out", dir);
  FILE *out = fopen(path, "w+");
  pd_state_set_output(st, out, NULL);
  rc = pd_state_compile_string(st, "e.pd", ev);
  if (!rc) rc = pd_state_run(st);
  float ones[N * D];
  for (int i = 0; i < N * D; i++) ones[i] = 1.5f;
  const char *one_name[1] = {"x"};
  pd_tensor_info f1 = {.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = ones};
  int rc2 = pd_state_set_dataset(st, "d", 1, one_name, &f1);
  if (!rc && !rc2) rc = pd_state_run(st);
  char text[1024] = "";
  if (out) {
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    text[n] = '\0';
    fclose(out);
  }
  unlink(path);
  double mean = 0;
  for (int i = 0; i < N * D; i++) mean += xs[i];
  mean /= N * D;
  char want[200];
  snprintf(want, sizeof want, "eval: mean(x) = %.4f (96 samples", mean);
  ok(!rc && strstr(text, want) && strstr(text, "(24 samples") &&
         strstr(text, "eval: mean(x) = 1.5000 (96 samples"),
     "eval reads host data (mean %.4f), a validation split holds out 24 of 96, a replaced data "
     "set is read by the next run", mean);
  if (rc) printf("# %s", pd_state_error(st)->text);
  if (!strstr(text, want)) printf("# output:\n# %s\n", text);
  pd_state_free(st);
}

static void test_errors(void) {
  pd_state *st = NULL;
  pd_state_new(&st);
  pd_state_set_output(st, NULL, NULL);
  const char *names[2] = {"x", "label"};
  pd_tensor_info f[2] = {{.dtype = PD_DTYPE_FLOAT32, .ndims = 2, .dims = {N, D}, .data = xs},
                         {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {N - 1, 1}, .data = labels}};
  expect(pd_state_set_dataset(st, "d", 2, names, f), PD_RESULT_ESHAPE, st,
         "field 'label' of 'd' has 95 samples (dims[0]) but 'x' has 96",
         "fields of different sample counts: ESHAPE naming both");
  f[1].dims[0] = N;
  f[1].dtype = PD_DTYPE_FLOAT16;
  expect(pd_state_set_dataset(st, "d", 2, names, f), PD_RESULT_EINVAL, st,
         "field 'label' of 'd': 4 is not a dtype", "float16 refused");
  f[1].dtype = PD_DTYPE_INT64;
  f[0].ndims = 0;
  expect(pd_state_set_dataset(st, "d", 2, names, f), PD_RESULT_EINVAL, st, "has rank 0",
         "a field of rank 0 refused (dims[0] counts the samples)");
  f[0].ndims = 2;
  f[0].nbytes = 7;
  expect(pd_state_set_dataset(st, "d", 2, names, f), PD_RESULT_ESHAPE, st,
         "has nbytes 7, but its dims and dtype make 1536", "nbytes that disagree with the dims");
  f[0].nbytes = 0;
  expect(pd_state_set_dataset(st, NULL, 2, names, f), PD_RESULT_EINVAL, st, "needs a name",
         "no name");
  expect(pd_state_set_dataset(st, "d", 0, names, f), PD_RESULT_EINVAL, st, "1 to 8 fields",
         "no fields");
  const char *dup[2] = {"x", "x"};
  expect(pd_state_set_dataset(st, "d", 2, dup, f), PD_RESULT_EINVAL, st,
         "already has a field 'x'", "a field name twice");
  ok(pd_state_set_dataset(NULL, "d", 2, names, f) == PD_RESULT_EINVAL, "a NULL state: EINVAL");
  ok(give(st, "train") == PD_RESULT_OK && give(st, "test") == PD_RESULT_OK, "two data sets");
  int rc = pd_state_compile_string(st, "t.pd", script("host(\"trian\")"));
  if (!rc) rc = pd_state_run(st);
  expect(rc, PD_RESULT_ENOTFOUND, st,
         "t.pd:6:27: error: host: no data set named 'trian' (the host program gives them with "
         "pd_state_set_dataset; this state has 'train', 'test')",
         "an unknown name: an error at the reader's argument listing the names");
  rc = pd_state_compile_string(st, "t.pd", script("host(3)"));
  ok(rc != PD_RESULT_OK && strstr(pd_state_error(st)->text, "t.pd:6:27: error: host: 'name' "
                                   "must be a string, not an integer"),
     "host(3): a compile error at the argument");
  pd_state_free(st);
}

/* Sequences (pd_state_add_sequences): lines of two made-up files given as byte sequences train
 * exactly as the lines(...) reader of the same files does. */
static const char *seq_script(const char *reader) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "import \"layers\"\n"
           "x = data(\"x\", [-1, 1], int64, lod_level = 1)\n"
           "label = data(\"label\", [-1, 1], int64)\n"
           "h = sequence_mean(embedding(x, 256, 4, name = \"emb\"))\n"
           "cost = mean(softmax_with_cross_entropy(fc(h, 2, name = \"w\"), label))\n"
           "train(cost, reader = %s, batch = 4, epochs = 3, optimizer = adam(0.05), seed = 2)\n",
           reader);
  return buf;
}

static void test_sequences(void) {
  static const char *const text[2][6] = {{"abcab", "ca", "bbbbbbb", "a", "cabbage", "acab"},
                                         {"xyz", "zzyx", "y", "xxyyzz", "zyx", "yzyzyzyzy"}};
  enum { NL = 12 };
  int64_t lengths[NL], label[NL], ids[128];
  int64_t total = 0;
  char dir[256], p0[300], p1[300];
  snprintf(dir, sizeof dir, "%s/pd_api_seq.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
           (int)getpid());
  snprintf(p0, sizeof p0, "%s.a.txt", dir);
  snprintf(p1, sizeof p1, "%s.b.txt", dir);
  for (int f = 0; f < 2; f++) {
    FILE *o = fopen(f ? p1 : p0, "w");
    for (int i = 0; i < 6; i++) {
      if (o) fprintf(o, "%s\n", text[f][i]);
      lengths[f * 6 + i] = (int64_t)strlen(text[f][i]);
      label[f * 6 + i] = f;
      for (const char *c = text[f][i]; *c; c++) ids[total++] = (unsigned char)*c;
    }
    if (o) fclose(o);
  }
  pd_state *st = NULL, *ref = NULL;
  pd_state_new(&st);
  pd_state_new(&ref);
  pd_state_set_output(st, NULL, NULL);
  pd_state_set_output(ref, NULL, NULL);
  const char *ln[1] = {"label"};
  pd_tensor_info lt = {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {NL, 1}, .data = label};
  pd_tensor_info xt = {.dtype = PD_DTYPE_INT64, .ndims = 2, .dims = {total, 1}, .data = ids};
  int rc = pd_state_add_sequences(st, "s", "x", NL, lengths, &xt);
  ok(rc == PD_RESULT_OK, "pd_state_add_sequences makes the data set 's' with 12 sequences");
  /* pd_state_set_dataset replaces a data set: give the fixed fields first, then add the
   * sequences to it. */
  rc = pd_state_set_dataset(st, "s", 1, ln, &lt) ||
       pd_state_add_sequences(st, "s", "x", NL, lengths, &xt);
  ok(rc == PD_RESULT_OK, "label, then the sequences added to it");
  int64_t bad_len[NL];
  memcpy(bad_len, lengths, sizeof bad_len);
  bad_len[3]++;
  expect(pd_state_add_sequences(st, "s", "y", NL, bad_len, &xt), PD_RESULT_ESHAPE, st,
         "the lengths add up to 53 rows but the values have 52",
         "lengths that do not add up to the rows: ESHAPE");
  expect(pd_state_add_sequences(st, "s", "y", NL - 1, lengths, &xt), PD_RESULT_ESHAPE, st,
         "'s' has 12 samples, so field 'y' needs as many sequences, not 11",
         "a sequence count that is not the data set's size: ESHAPE");
  rc = pd_state_compile_string(st, "s.pd", seq_script("host(\"s\")"));
  if (!rc) rc = pd_state_run(st);
  if (rc) printf("# %s", pd_state_error(st)->text);
  char reader[700];
  snprintf(reader, sizeof reader, "lines([\"%s\", \"%s\"])", p0, p1);
  int rc2 = pd_state_compile_string(ref, "s.pd", seq_script(reader));
  if (!rc2) rc2 = pd_state_run(ref);
  if (rc2) printf("# %s", pd_state_error(ref)->text);
  pd_tensor_info e1, e2, w1, w2;
  bool same = !rc && !rc2 && !pd_state_fetch(st, "emb", &e1) && !pd_state_fetch(ref, "emb", &e2) &&
              !pd_state_fetch(st, "w", &w1) && !pd_state_fetch(ref, "w", &w2) &&
              e1.nbytes == 256 * 4 * 4 && e1.nbytes == e2.nbytes && w1.nbytes == w2.nbytes &&
              memcmp(e1.data, e2.data, e1.nbytes) == 0 && memcmp(w1.data, w2.data, w1.nbytes) == 0;
  ok(same, "trained on host sequences: the weights of the lines(...) reader of the same lines, "
           "bit for bit");
  /* And they did train: the embedding of 'a' moved from where the seed put it. */
  pd_state *fresh = NULL;
  pd_state_new(&fresh);
  pd_state_set_output(fresh, NULL, NULL);
  pd_tensor_info e0;
  bool moved = !pd_state_compile_string(fresh, "s.pd", seq_script(reader)) &&
               !pd_state_fetch(fresh, "emb", &e0) && !rc &&
               !pd_state_fetch(st, "emb", &e1) && memcmp(e0.data, e1.data, e0.nbytes) != 0;
  ok(moved, "the embedding changed in training");
  unlink(p0);
  unlink(p1);
  pd_state_free(fresh);
  pd_state_free(st);
  pd_state_free(ref);
}

/* Every allocation of pd_state_set_dataset failing in turn: ENOMEM, the state unchanged. */
static void test_alloc(void) {
  bool all = true, finished = false;
  for (long k = 1; k < 200 && !finished; k++) {
    pd_state *st = NULL;
    if (pd_state_new(&st)) break;
    pd_alloc_fail_after(k);
    int rc = give(st, "d");
    pd_alloc_fail_after(0);
    if (rc == PD_RESULT_OK) finished = true;
    else if (rc != PD_RESULT_ENOMEM) all = false;
    pd_state_free(st);
  }
  ok(all && finished, "every allocation failing in turn: ENOMEM, then it succeeds");
}

int main(void) {
  make_data();
  test_train();
  test_errors();
  test_sequences();
  test_alloc();
  return tap_done();
}
