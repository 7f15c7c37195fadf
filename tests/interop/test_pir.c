/* test_pir.c -- PaddlePaddle 3's PIR JSON programs (vm/ir/pir.c; test_interop runs the models
 * of tests/interop/pir/NAME/ against Paddle's outputs): damaged or foreign JSON refused with an
 * error naming the byte offset or the op: truncated at every length, wrong types, an unknown
 * dialect, an op or attribute pdlang lacks (all listed), a value used before any op defines it,
 * every allocation failing in turn (a plain model, regions, lists). */
#include "config.h"
#include "include/pdlang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ir/pir.h"
#include "vm/ops/compat.h"

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

static char *model_text(const char *name, size_t *len) {
  char path[1200], *text = NULL;
  pd_error err = {0};
  snprintf(path, sizeof path, "%s/tests/interop/pir/%s/model.json", srcdir(), name);
  if (pd_read_file(path, &text, len, &err)) printf("# %s\n", err.msg ? err.msg : "?");
  pd_error_clear(&err);
  return text;
}

/* text lowered and checked against the op defs (pd_compat_apply): the status, and whether
 * the message holds want (NULL: no check). */
static bool refused(const char *text, pd_status want_st, const char *want, const char *what) {
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status s = pd_pir_from_json(text, strlen(text), "m.json", &p, &err);
  if (!s && (s = pd_compat_apply(p, "m.json", &err))) { /* as pd_model_load does */
    pd_program_free(p);
    p = NULL;
  }
  bool good = s == want_st && !p && (!want || (err.msg && strstr(err.msg, want)));
  if (!good) printf("# %s: status %d, message: %s\n", what, (int)s, err.msg ? err.msg : "-");
  pd_error_clear(&err);
  pd_program_free(p);
  return ok(good, "%s", what);
}

/* text with the first from replaced by to (heap). */
static char *replace(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) return NULL;
  size_t n = strlen(text), a = strlen(from), b = strlen(to), pre = (size_t)(at - text);
  char *s = pd_malloc(n - a + b + 1);
  if (!s) return NULL;
  memcpy(s, text, pre);
  memcpy(s + pre, to, b);
  memcpy(s + pre + b, at + a, n - pre - a + 1);
  return s;
}

static void check_damaged(void) {
  size_t len;
  char *text = model_text("mlp", &len);
  if (!text) {
    ok(false, "the mlp model's JSON is readable");
    return;
  }
  /* truncated at every length: an error naming the offset, never a crash */
  bool all = true;
  for (size_t n = 0; n < len && all; n++) {
    pd_program *p = NULL;
    pd_error err = {0};
    pd_status s = pd_pir_from_json(text, n, "m.json", &p, &err);
    all = s == PD_EFORMAT && !p && err.msg && strstr(err.msg, "damaged JSON at byte");
    if (!all) printf("# truncated to %zu bytes: %d %s\n", n, (int)s, err.msg ? err.msg : "-");
    pd_error_clear(&err);
    pd_program_free(p);
  }
  ok(all, "the JSON truncated at each of its %zu lengths: the byte offset", len);
  static const struct { const char *from, *to; pd_status st; const char *want, *what; } cases[] = {
      {"\"magic\":\"pir\"", "\"magic\":\"pit\"", PD_EFORMAT, "not a PIR program",
       "another magic"},
      {"\"version\":4", "\"version\":9", PD_EFORMAT, "PIR format version 9", "a newer version"},
      {"\"ops\":[", "\"ops\":7,\"x\":[", PD_EFORMAT, "no program.regions[0].blocks[0].ops",
       "ops not a list"},
      {"\"1.relu\"", "\"7.relu\"", PD_EFORMAT, "op 7 (7.relu): not an op of a dialect",
       "an unknown dialect"},
      {"\"1.relu\"", "\"1.frobnicate\"", PD_EINVAL, "op 7 (pd_op.frobnicate): pdlang has no such",
       "an op pdlang lacks"},
      {"\"transpose_x\"", "\"transpose_q\"", PD_EINVAL, "unknown attribute transpose_q",
       "an attribute pdlang lacks"},
      {"{\"#\":\"0.t_f32\"},[4,8]", "{\"#\":\"0.t_c64\"},[4,8]", PD_EINVAL,
       "element type 0.t_c64", "an element type pdlang lacks"},
      {"\"I\":[{\"%\":7}]", "\"I\":[{\"%\":77}]", PD_EFORMAT,
       "op 7 (pd_op.relu) uses value %77, which no op before it defines",
       "a value used but never defined"},
      {"\"I\":[{\"%\":7}]", "\"I\":{\"%\":7}", PD_EFORMAT, "op 7 (pd_op.relu) is malformed",
       "inputs not a list"},
      {"\"%\":8,", "\"%\":\"8\",", PD_EFORMAT, "op 7 (pd_op.relu) is malformed",
       "an id of the wrong type"},
      {"\"%\":8,", "\"%\":7,", PD_EFORMAT, "defines value %7 again", "a value defined twice"},
      {"\"D\":-1}", "\"D\":\"-1\"}", PD_EINVAL, "attribute axis of kind 0.a_i32",
       "an attribute's data of the wrong type"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *t = replace(text, cases[i].from, cases[i].to);
    if (!t) {
      ok(false, "%s: the text to replace is in the model", cases[i].what);
      continue;
    }
    refused(t, cases[i].st, cases[i].want, cases[i].what);
    pd_free(t);
  }
  /* two ops pdlang lacks: both listed at once */
  char *t1 = replace(text, "\"1.relu\"", "\"1.frob\""), *t2 = t1 ? replace(t1, "\"1.softmax\"",
                                                                       "\"1.frob2\"") : NULL;
  if (t2) refused(t2, PD_EINVAL, "(2 problems):\n  op 7 (pd_op.frob): pdlang has no such op\n"
                  "  op 10 (pd_op.frob2)", "two problems listed at once");
  else ok(false, "two problems listed at once");
  pd_free(t1);
  pd_free(t2);
  refused("{\"a\":[1,2,,]}", PD_EFORMAT, "damaged JSON at byte 10", "a stray comma: its offset");
  char deep[2000];
  memset(deep, '[', sizeof deep - 1);
  deep[sizeof deep - 1] = 0;
  refused(deep, PD_EFORMAT, "nested too deep", "nesting deeper than the parser's limit");
  refused("[[[[[[[[", PD_EFORMAT, "unexpected end of the text", "unterminated nesting");
  refused("{\"s\":\"\\q\"}", PD_EFORMAT, "bad escape", "a bad escape");
  refused("{} x", PD_EFORMAT, "text after the JSON value", "text after the value");
  pd_free(text);
}

/* Every allocation of lowering model name failing in turn: PD_ENOMEM, then it loads. */
static void check_oom(const char *name) {
  size_t len;
  char *text = model_text(name, &len);
  bool clean = text != NULL;
  long k;
  for (k = 1; k < 1000000 && clean; k++) {
    pd_program *p = NULL;
    pd_error err = {0};
    pd_alloc_fail_after(k);
    pd_status s = pd_pir_from_json(text, len, "m.json", &p, &err);
    pd_alloc_fail_after(0);
    pd_error_clear(&err);
    pd_program_free(p);
    if (s == PD_OK) break;
    clean = s == PD_ENOMEM;
    if (!clean) printf("# allocation %ld failing: status %d\n", k, (int)s);
  }
  ok(clean, "%s: each of its %ld allocations failing: out of memory, then it loads", name, k);
  pd_free(text);
}

int main(void) {
  check_damaged();
  static const char *const oom_models[] = {"mlp", "cond", "while_loop", "lstm"};
  for (size_t i = 0; i < sizeof oom_models / sizeof *oom_models; i++) check_oom(oom_models[i]);
  return tap_done();
}
