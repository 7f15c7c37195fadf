/* test_serialize.c -- unit tests of vm/ir/serialize.c: round trips of every test model, the bytes
 * read back with protobuf-c's generated API (field by field, as another tool would), a program
 * written the way PaddlePaddle writes one, source locations as op_callstack, every malformed
 * variant with its exact message, truncations, bit flips and random bytes, the file helpers,
 * and a failure of every allocation in turn. */
#include "config.h"
#include "vm/ir/serialize.h"

#include <stdlib.h>
#include <unistd.h>

#include "base/diag.h"
#include "vm/ir/framework.pb-c.h"
#include "tests/vm/ir/models.h"
#include "tests/tap.h"

typedef Paddle__Framework__Proto__ProgramDesc pb_program;
typedef Paddle__Framework__Proto__VarDesc pb_var;
typedef Paddle__Framework__Proto__OpDesc pb_op;
typedef Paddle__Framework__Proto__OpDesc__Attr pb_attr;

static char *listing(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump(p, &b);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

/* ---- Round trips ---- */

static void test_round_trip(void) {
  for (size_t m = 0; m < model_count; m++) {
    const char *name = model_names[m];
    pd_program *p = model_by_name(name), *q = NULL, *r = NULL;
    uint8_t *bytes = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    pd_error err = {0};
    ok(p && pd_program_to_bytes(p, &bytes, &len, &err) == PD_OK && len > 0, "%s: to bytes", name);
    ok(pd_program_from_bytes(bytes, len, &q, &err) == PD_OK && q, "%s: and back%s%s", name,
       err.msg ? ": " : "", err.msg ? err.msg : "");
    char *lp = p ? listing(p) : NULL, *lq = q ? listing(q) : NULL;
    ok(lp && lq && strcmp(lp, lq) == 0, "%s: the same listing after the round trip", name);
    if (lp && lq && strcmp(lp, lq) != 0) printf("# want:\n%s# got:\n%s", lp, lq);
    ok(q && pd_program_to_bytes(q, &again, &len2, &err) == PD_OK && len2 == len &&
           memcmp(again, bytes, len) == 0,
       "%s: the same bytes when written again", name);
    ok(q && pd_program_from_bytes(again, len2, &r, NULL) == PD_OK, "%s: a second load", name);
    pd_free(lp);
    pd_free(lq);
    pd_free(bytes);
    pd_free(again);
    pd_program_free(p);
    pd_program_free(q);
    pd_program_free(r);
    pd_error_clear(&err);
  }
}

/* ---- The bytes through protobuf-c's generated API ---- */

static pb_program *encode_and_unpack(pd_program *(*model)(void)) {
  pd_program *p = model();
  uint8_t *bytes = NULL;
  size_t len = 0;
  pb_program *pd = NULL;
  if (p && pd_program_to_bytes(p, &bytes, &len, NULL) == PD_OK)
    pd = pd_pb_program_desc__unpack(NULL, len, bytes);
  pd_free(bytes);
  pd_program_free(p);
  return pd;
}

static const pb_var *pb_find_var(const pb_program *pd, size_t b, const char *name) {
  for (size_t j = 0; j < pd->blocks[b]->n_vars; j++)
    if (strcmp(pd->blocks[b]->vars[j]->name, name) == 0) return pd->blocks[b]->vars[j];
  return NULL;
}

static const pb_attr *pb_find_attr(const pb_op *o, const char *name) {
  for (size_t k = 0; k < o->n_attrs; k++)
    if (strcmp(o->attrs[k]->name, name) == 0) return o->attrs[k];
  return NULL;
}

static void test_decode_nested(void) {
  pb_program *pd = encode_and_unpack(model_nested);
  ok(pd != NULL, "nested: protobuf-c decodes the bytes");
  if (!pd) return;
  int idx_ok = pd->n_blocks == 5;
  for (size_t i = 0; idx_ok && i < pd->n_blocks; i++) idx_ok = pd->blocks[i]->idx == (int)i;
  ok(idx_ok, "five blocks, blocks[i].idx == i");
  ok(pd->blocks[0]->parent_idx == -1 && pd->blocks[3]->parent_idx == 1 &&
         pd->blocks[4]->parent_idx == 0,
     "parent_idx");
  ok(pd->blocks[4]->has_forward_block_idx && pd->blocks[4]->forward_block_idx == 1 &&
         !pd->blocks[1]->has_forward_block_idx && pd->blocks[1]->forward_block_idx == -1,
     "forward_block_idx: set on the gradient block, Fluid's default -1 elsewhere");
  ok(pd->version && pd->version->has_version && pd->version->version == 0, "version");
  const pb_var *words = pb_find_var(pd, 0, "words"), *w = pb_find_var(pd, 0, "fc_0.w_0");
  const pb_var *x = pb_find_var(pd, 0, "x"), *scope = pb_find_var(pd, 0, "scope_if");
  ok(words && words->type->type == PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__LOD_TENSOR &&
         words->type->lod_tensor && words->type->lod_tensor->lod_level == 1 &&
         words->type->lod_tensor->tensor->data_type ==
             PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__INT64 &&
         words->type->lod_tensor->tensor->n_dims == 2 &&
         words->type->lod_tensor->tensor->dims[0] == -1,
     "a LoD var: LOD_TENSOR, lod_level 1, INT64, dims [-1, 1]");
  ok(w && w->has_persistable && w->persistable && !w->stop_gradient, "a parameter: persistable");
  ok(x && x->stop_gradient && !x->persistable && x->n_attrs == 0, "data: stop_gradient");
  ok(scope && scope->type->type == PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__STEP_SCOPES &&
         !scope->type->lod_tensor && !scope->type->selected_rows,
     "STEP_SCOPES has no tensor description");
  const pb_op *cb = pd->blocks[0]->ops[4], *feed = pd->blocks[0]->ops[0];
  const pb_attr *sub = pb_find_attr(cb, "sub_block"), *cs = pb_find_attr(feed, "op_callstack");
  ok(strcmp(cb->type, "conditional_block") == 0 && cb->n_inputs == 2 &&
         strcmp(cb->inputs[1]->parameter, "Input") == 0 && cb->inputs[1]->n_arguments == 2 &&
         strcmp(cb->inputs[1]->arguments[1], "y") == 0 && cb->n_outputs == 2,
     "conditional_block: type and slots");
  ok(sub && sub->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__BLOCK && sub->has_block_idx &&
         sub->block_idx == 1,
     "sub_block is a BLOCK attribute with block_idx 1");
  ok(cs && cs->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__STRINGS && cs->n_strings == 1 &&
         strcmp(cs->strings[0], "nested.pd:1:5") == 0,
     "the source location travels as op_callstack = [\"nested.pd:1:5\"]");
  ok(pb_find_attr(pd->blocks[1]->ops[3], "op_callstack") == NULL,
     "an op without a location has no op_callstack");
  pd_pb_program_desc__free_unpacked(pd, NULL);
}

static void test_decode_attrs_kinds(void) {
  pb_program *pd = encode_and_unpack(model_attrs);
  ok(pd != NULL, "attrs: protobuf-c decodes the bytes");
  if (pd) {
    const pb_op *o = pd->blocks[0]->ops[0];
    const pb_attr *a;
    ok(pd->version->version == 2004000, "version 2004000");
    ok((a = pb_find_attr(o, "i_min")) && a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__INT &&
           a->has_i && a->i == INT32_MIN,
       "INT in i");
    ok((a = pb_find_attr(o, "l_max")) && a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__LONG &&
           a->has_l && a->l == INT64_MAX,
       "LONG in l");
    ok((a = pb_find_attr(o, "f")) && a->has_f && a->f == 0.1f, "FLOAT in f");
    ok((a = pb_find_attr(o, "d")) && a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__FLOAT64 &&
           a->has_float64 && a->float64 == 0.1,
       "FLOAT64 in float64");
    ok((a = pb_find_attr(o, "b")) && a->has_b && a->b, "BOOLEAN in b");
    ok((a = pb_find_attr(o, "s_plain")) && strcmp(a->s, "hello") == 0, "STRING in s");
    ok((a = pb_find_attr(o, "ints")) && a->n_ints == 4 && a->ints[3] == INT32_MAX, "INTS");
    ok((a = pb_find_attr(o, "longs")) && a->n_longs == 4 && a->longs[0] == INT64_MIN, "LONGS");
    ok((a = pb_find_attr(o, "floats")) && a->n_floats == 5 && a->floats[2] == 1e-45f, "FLOATS");
    ok((a = pb_find_attr(o, "doubles")) &&
           a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__FLOAT64S && a->n_float64s == 3 &&
           a->float64s[1] == -2.5e-300,
       "FLOAT64S in float64s");
    ok((a = pb_find_attr(o, "bools")) && a->n_bools == 3 && a->bools[0] && !a->bools[1],
       "BOOLEANS");
    ok((a = pb_find_attr(o, "strings")) && a->n_strings == 5 &&
           strcmp(a->strings[4], "caf\xc3\xa9") == 0,
       "STRINGS");
    ok((a = pb_find_attr(o, "blocks")) && a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__BLOCKS &&
           a->n_blocks_idx == 2 && a->blocks_idx[1] == 2,
       "BLOCKS in blocks_idx");
    ok((a = pb_find_attr(o, "ints_empty")) &&
           a->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__INTS && a->n_ints == 0,
       "an empty list keeps its type");
    ok((a = pb_find_attr(o, "op_callstack")) && a->n_strings == 1 &&
           strcmp(a->strings[0], "dir:with:colons/attrs.pd:12:34") == 0,
       "a file name with colons");
    pd_pb_program_desc__free_unpacked(pd, NULL);
  }

  pd = encode_and_unpack(model_kinds);
  ok(pd != NULL, "kinds: protobuf-c decodes the bytes");
  if (pd) {
    const pb_var *v;
    ok((v = pb_find_var(pd, 0, "unknown_shape")) && v->type->lod_tensor->tensor->n_dims == 0 &&
           v->n_attrs == 1 && strcmp(v->attrs[0]->name, "pdlang.shape_unknown") == 0 &&
           v->attrs[0]->i == 1,
       "an unknown shape: no dims and the pdlang.shape_unknown var attribute");
    ok((v = pb_find_var(pd, 0, "scalar")) && v->type->lod_tensor->tensor->n_dims == 0 &&
           v->n_attrs == 0,
       "a 0-d tensor: no dims, no attribute");
    ok((v = pb_find_var(pd, 0, "rows")) &&
           v->type->type == PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__SELECTED_ROWS &&
           v->type->selected_rows && v->type->selected_rows->dims[1] == 8 && !v->type->lod_tensor,
       "SELECTED_ROWS in selected_rows");
    ok((v = pb_find_var(pd, 0, "array")) && v->type->tensor_array &&
           v->type->tensor_array->lod_level == 2 &&
           v->type->tensor_array->tensor->data_type ==
               PADDLE__FRAMEWORK__PROTO__VAR_TYPE__TYPE__FP64,
       "LOD_TENSOR_ARRAY in tensor_array");
    pd_pb_program_desc__free_unpacked(pd, NULL);
  }
}

/* ---- A program written by PaddlePaddle ---- */

static const char foreign_listing[] =
    "program: 1 block, version 2006000\n"
    "block tree:\n"
    "  block 0\n"
    "\n"
    "block 0 (global):\n"
    "  var feed: FEED_MINIBATCH persistable\n"
    "  var img: LOD_TENSOR float32 [-1, 784]\n"
    "  op 0: feed\n"
    "    in  X: [feed]\n"
    "    out Out: [img]\n"
    "    attr col: INT 0\n"
    "    attr op_callstack: STRINGS [\"  File \\\"train.py\\\", line 12, in <module>\\n    img = "
    "paddle.static.data(...)\", \"  File \\\"paddle/static/input.py\\\", line 40, in data\\n    "
    "helper.append_op(...)\"]\n"
    "    attr op_role: INT 0\n";

static void test_foreign(void) {
  uint8_t *bytes = NULL, *again = NULL;
  size_t len = 0, len2 = 0;
  pd_program *p = NULL;
  pd_error err = {0};
  ok(foreign_bytes(&bytes, &len) == 0, "a Paddle-style program encodes");
  ok(pd_program_from_bytes(bytes, len, &p, &err) == PD_OK, "and loads%s%s", err.msg ? ": " : "",
     err.msg ? err.msg : "");
  char *text = p ? listing(p) : NULL;
  is_str(text, foreign_listing,
         "Python call stacks stay attributes; need_check_feed, var attrs, op_version_map and "
         "is_target are left out");
  ok(p && p->blocks[0]->ops[0]->loc.line == 0, "a Python call stack is not a .pd location");
  ok(p && pd_program_to_bytes(p, &again, &len2, NULL) == PD_OK, "it can be written back");
  pb_program *pd = again ? pd_pb_program_desc__unpack(NULL, len2, again) : NULL;
  const pb_attr *cs = pd ? pb_find_attr(pd->blocks[0]->ops[0], "op_callstack") : NULL;
  ok(cs && cs->n_strings == 2, "with its call stack");
  if (pd) pd_pb_program_desc__free_unpacked(pd, NULL);
  pd_free(text);
  free(bytes);
  pd_free(again);
  pd_program_free(p);
  pd_error_clear(&err);
}

/* ---- Locations and op_callstack ---- */

static void test_callstack(void) {
  pd_program *p = pd_program_new(), *q = NULL;
  pd_op_desc *both = p ? pd_block_add_op(p->blocks[0], "both", -1) : NULL;
  pd_op_desc *attr_only = p ? pd_block_add_op(p->blocks[0], "attr_only", -1) : NULL;
  pd_op_desc *zero = p ? pd_block_add_op(p->blocks[0], "zero_line", -1) : NULL;
  pd_op_desc *nofile = p ? pd_block_add_op(p->blocks[0], "no_file", -1) : NULL;
  if (!zero || !nofile) return;
  pd_op_set_loc(both, (pd_loc){"f.pd", 1, 2});
  pd_op_set_attr_strings(both, "op_callstack", 1, (const char *const[]){"ignored"});
  pd_op_set_attr_strings(attr_only, "op_callstack", 1, (const char *const[]){"g.pd:30:4"});
  pd_op_set_attr_strings(zero, "op_callstack", 1, (const char *const[]){"h.pd:0:1"});
  pd_op_set_loc(nofile, (pd_loc){NULL, 9, 0});
  uint8_t *bytes = NULL;
  size_t len = 0;
  ok(pd_program_to_bytes(p, &bytes, &len, NULL) == PD_OK &&
         pd_program_from_bytes(bytes, len, &q, NULL) == PD_OK,
     "ops with locations and op_callstack attributes round-trip");
  if (q) {
    pd_op_desc *const *ops = q->blocks[0]->ops;
    ok(strcmp(ops[0]->loc.file, "f.pd") == 0 && ops[0]->loc.line == 1 && ops[0]->loc.col == 2 &&
           ops[0]->nattrs == 0,
       "a location replaces the op's own op_callstack attribute");
    ok(ops[1]->loc.file && strcmp(ops[1]->loc.file, "g.pd") == 0 && ops[1]->loc.line == 30 &&
           ops[1]->loc.col == 4 && ops[1]->nattrs == 0,
       "an op_callstack of the form FILE:LINE:COL becomes the location");
    ok(ops[2]->loc.line == 0 && pd_op_attr(ops[2], "op_callstack") != NULL,
       "line 0 is no location: the attribute stays");
    ok(ops[3]->loc.file == NULL && ops[3]->loc.line == 9 && ops[3]->loc.col == 0,
       "a location without a file");
  }
  pd_free(bytes);
  pd_program_free(p);
  pd_program_free(q);
}

/* ---- Malformed input ---- */

static void test_bad_cases(void) {
  for (size_t i = 0; i < bad_case_count; i++) {
    const bad_case *c = &bad_cases[i];
    uint8_t *bytes = NULL;
    size_t len = 0;
    pd_program *p = (pd_program *)&bytes; /* must be reset to NULL */
    pd_error err = {0};
    if (bad_case_bytes(i, &bytes, &len)) {
      ok(0, "%s: the bytes could not be made", c->name);
      continue;
    }
    pd_status st = pd_program_from_bytes(bytes, len, &p, &err);
    ok(st == c->status && p == NULL, "%s: %s", c->name, pd_status_str(st));
    is_str(err.msg, c->msg, "%s: message", c->name);
    pd_program_free(st == PD_OK ? p : NULL);
    pd_error_clear(&err);
    free(bytes);
  }
  pd_program *p = NULL;
  ok(pd_program_from_bytes(NULL, 3, &p, NULL) == PD_EINVAL && !p, "NULL bytes are refused");
}

/* A load that must not crash: returns its status; a program that loads must validate. */
static pd_status try_load(const uint8_t *bytes, size_t len, int *bad) {
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status st = pd_program_from_bytes(bytes, len, &p, &err);
  if (st == PD_OK && pd_program_validate(p, NULL) != PD_OK) ++*bad;
  if (st != PD_OK && (p || !err.msg)) ++*bad;
  pd_program_free(p);
  pd_error_clear(&err);
  return st;
}

static void test_truncated_and_flipped(void) {
  pd_program *p = model_nested();
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (!p || pd_program_to_bytes(p, &bytes, &len, NULL) != PD_OK) {
    ok(0, "nested model bytes");
    pd_program_free(p);
    return;
  }
  int bad = 0, other = 0, loaded = 0;
  for (size_t n = 0; n < len; n++) {
    pd_status st = try_load(bytes, n, &bad);
    loaded += st == PD_OK;
    other += st != PD_OK && st != PD_EFORMAT;
  }
  ok(bad == 0 && other == 0, "all %zu proper prefixes fail cleanly with PD_EFORMAT or load", len);
  ok(loaded < 10, "only a few prefixes (%d) happen to be whole programs", loaded);

  int statuses[PD_STATUS_COUNT_] = {0};
  uint8_t *copy = malloc(len);
  const uint8_t flips[] = {0x01, 0x80, 0xff};
  for (size_t i = 0; copy && i < len; i++) {
    for (size_t f = 0; f < sizeof flips; f++) {
      memcpy(copy, bytes, len);
      copy[i] ^= flips[f];
      statuses[try_load(copy, len, &bad)]++;
    }
  }
  ok(bad == 0 && statuses[PD_ENOMEM] == 0 && statuses[PD_EINVAL] == 0,
     "%zu bit flips: %d load, %d malformed, %d unsupported", 3 * len, statuses[PD_OK],
     statuses[PD_EFORMAT], statuses[PD_EUNSUPPORTED]);
  free(copy);
  pd_free(bytes);
  pd_program_free(p);
}

static void test_random_bytes(void) {
  uint64_t s = 0x9e3779b97f4a7c15u; /* a fixed seed: the test is reproducible */
  uint8_t buf[512];
  int bad = 0, refused = 0;
  for (int t = 0; t < 3000; t++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    size_t len = (size_t)(s >> 33) % sizeof buf;
    for (size_t i = 0; i < len; i++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      buf[i] = (uint8_t)(s >> 56);
    }
    /* Half of them start like a ProgramDesc: field 1 (blocks), length-delimited. */
    if (t % 2 && len > 2) buf[0] = 0x0a;
    pd_status st = try_load(buf, len, &bad);
    refused += st == PD_EFORMAT || st == PD_EUNSUPPORTED;
  }
  ok(bad == 0, "3000 random inputs: no crash, every failure has a message");
  ok(refused > 2900, "and nearly all (%d) are refused", refused);
}

/* ---- Files ---- */

static void test_files(void) {
  char dir[] = "/tmp/pdlang-test-serialize-XXXXXX";
  if (!mkdtemp(dir)) {
    ok(0, "a temporary directory");
    return;
  }
  char path[256], garbage[256], missing[256];
  snprintf(path, sizeof path, "%s/nested.pdmodel", dir);
  snprintf(garbage, sizeof garbage, "%s/garbage.pdmodel", dir);
  snprintf(missing, sizeof missing, "%s/missing.pdmodel", dir);
  pd_program *p = model_nested(), *q = NULL;
  pd_error err = {0};
  ok(p && pd_program_save(p, path, &err) == PD_OK, "save");
  ok(pd_program_load(path, &q, &err) == PD_OK, "load");
  char *lp = p ? listing(p) : NULL, *lq = q ? listing(q) : NULL;
  ok(lp && lq && strcmp(lp, lq) == 0, "the loaded program lists the same");
  pd_free(lp);
  pd_free(lq);
  pd_program_free(q);
  q = NULL;

  ok(pd_program_load(missing, &q, &err) == PD_EIO && !q, "a missing file is an I/O error");
  pd_write_file_atomic(garbage, "not a model", 11, NULL);
  ok(pd_program_load(garbage, &q, &err) == PD_EFORMAT && !q, "a garbage file is malformed");
  ok(err.loc.file && strcmp(err.loc.file, garbage) == 0 && err.loc.line == 0,
     "the error names the file in its location");
  pd_buf shown;
  pd_buf_init(&shown);
  pd_diag_render_error(&shown, NULL, &err);
  char want[512];
  snprintf(want, sizeof want,
           "%s: error: malformed ProgramDesc: the bytes do not decode as a protobuf ProgramDesc "
           "(11 bytes)\n",
           garbage);
  is_str(shown.data, want, "rendered as FILE: error: malformed ProgramDesc: ...");
  pd_buf_free(&shown);

  p->blocks[0]->parent_idx = 3;
  ok(pd_program_save(p, path, &err) == PD_EINVAL, "an invalid program is not saved");
  is_str(err.msg,
         "cannot serialize an invalid program: block 0 (the global block) has parent 3; it must "
         "have none (-1)",
         "and the message says why");
  ok(pd_program_load(path, &q, NULL) == PD_OK, "the file saved before is intact");
  pd_program_free(q);
  pd_program_free(p);
  pd_error_clear(&err);
  unlink(path);
  unlink(garbage);
  rmdir(dir);
}

/* ---- Allocation failures ---- */

static void test_alloc_failures(void) {
  pd_program *base = model_attrs();
  uint8_t *good = NULL;
  size_t good_len = 0;
  if (!base || pd_program_to_bytes(base, &good, &good_len, NULL) != PD_OK) {
    ok(0, "attrs model bytes");
    pd_program_free(base);
    return;
  }
  char *want = listing(base);
  int wrong = 0;
  long k;
  for (k = 1; k < 100000; k++) {
    pd_alloc_fail_after(k);
    uint8_t *bytes = NULL;
    size_t len = 0;
    pd_program *p = NULL;
    pd_status s1 = pd_program_to_bytes(base, &bytes, &len, NULL);
    pd_status s2 = pd_program_from_bytes(good, good_len, &p, NULL);
    long used = pd_alloc_fail_after(0);
    if ((s1 != PD_OK && s1 != PD_ENOMEM) || (s2 != PD_OK && s2 != PD_ENOMEM)) wrong++;
    if ((s1 == PD_OK) != (bytes != NULL) || (s2 == PD_OK) != (p != NULL)) wrong++;
    if (s1 == PD_OK && (len != good_len || memcmp(bytes, good, len) != 0)) wrong++;
    if (s2 == PD_OK) {
      char *got = listing(p);
      if (!got || strcmp(got, want) != 0) wrong++;
      pd_free(got);
    }
    pd_free(bytes);
    pd_program_free(p);
    if (used < k) break; /* nothing failed: every allocation has had its turn */
  }
  ok(k > 100, "%ld allocations, each failed once", k - 1);
  is_int(wrong, 0, "each failure gave PD_ENOMEM and nothing else; successes were exact");
  pd_free(want);
  pd_free(good);
  pd_program_free(base);
}

int main(void) {
  test_round_trip();
  test_decode_nested();
  test_decode_attrs_kinds();
  test_foreign();
  test_callstack();
  test_bad_cases();
  test_truncated_and_flipped();
  test_random_bytes();
  test_files();
  test_alloc_failures();
  return tap_done();
}
