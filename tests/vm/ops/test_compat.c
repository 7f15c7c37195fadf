/* test_compat.c -- the facts of vm/ops/compat.c (what other PaddlePaddle versions write that
 * loading drops) against what PaddlePaddle's own definitions say its ops carry
 * (vm/ops/compat_paddle.txt, from tools/paddle_compat.py); pd_compat_apply on programs built
 * here, one kind of thing each (a hint, a fusion flag off and on, an empty slot and a bound one,
 * attributes an older version typed otherwise, losslessly or not); and doc/language.md's table
 * of the facts. `test_compat --doc` prints that table (to paste into the doc after a change). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "vm/ops/compat.h"
#include "vm/ops/ops.h"

static const char *srcdir(void) {
  const char *s = getenv("top_srcdir");
  return s && *s ? s : ".";
}

/* ---- The facts against the derived list ---- */

/* What a fact's op column says in the docs: "every op" or "`a`, `b`". */
static void ops_text(const pd_compat_fact *f, char *buf, size_t cap) {
  if (!f->ops) {
    snprintf(buf, cap, "every op");
    return;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (const char *p = f->ops; *p && len < cap;) {
    size_t w = strcspn(p, " ");
    len += (size_t)snprintf(buf + len, cap - len, "%s`%.*s`", len ? ", " : "", (int)w, p);
    p += w;
    p += strspn(p, " ");
  }
}

/* The doc row of fact f ("| OPS | `NAME` | DROPPED WHEN | WHY |"). */
static void doc_row(const pd_compat_fact *f, char *buf, size_t cap) {
  char ops[256], when[160] = "";
  ops_text(f, ops, sizeof ops);
  if (f->rule == PD_COMPAT_ANY) snprintf(when, sizeof when, "any value");
  else if (f->rule == PD_COMPAT_EMPTY_SLOT) snprintf(when, sizeof when, "bound to no var");
  else
    for (const char *p = f->keeps; *p;) {
      size_t w = strcspn(p, "|"), len = strlen(when);
      const char *sep = len ? " or " : "";
      if (*p == '"')
        snprintf(when + len, sizeof when - len, "%s`'%.*s'`", sep, (int)w - 2, p + 1);
      else if (w == 5 && !strncmp(p, "false", 5))
        snprintf(when + len, sizeof when - len, "%s`false` (0)", sep);
      else
        snprintf(when + len, sizeof when - len, "%s`%.*s`", sep, (int)w, p);
      p += w + (p[w] == '|');
    }
  snprintf(buf, cap, "| %s | `%s`%s | %s | %s |", ops, f->name,
           f->rule == PD_COMPAT_EMPTY_SLOT ? " (input)" : "", when, f->why);
}

/* Every fact names ops pdlang has. */
static void check_fact_ops(void) {
  int bad = 0;
  for (int i = 0; i < pd_compat_nfacts; i++) {
    const char *p = pd_compat_facts[i].ops;
    while (p && *p) {
      size_t w = strcspn(p, " ");
      char op[64];
      snprintf(op, sizeof op, "%.*s", (int)w, p);
      if (!pd_opdef_lookup(op)) printf("# fact %s names op '%s', which pdlang lacks\n",
                                       pd_compat_facts[i].name, op), bad++;
      p += w;
      p += strspn(p, " ");
    }
  }
  ok(bad == 0, "every fact names ops pdlang has");
}

/* Each `attr`, `input` and `output` line of compat_paddle.txt for an op pdlang has: the op's
 * own attribute (or one every op carries) or slot, or a fact of vm/ops/compat.c. One result
 * per op; every gap is named. */
static void check_derived(void) {
  char path[1024], *text = NULL;
  size_t len;
  snprintf(path, sizeof path, "%s/vm/ops/compat_paddle.txt", srcdir());
  if (pd_read_file(path, &text, &len, NULL)) {
    ok(0, "vm/ops/compat_paddle.txt is readable");
    return;
  }
  char cur[64] = "";
  int gaps = 0, lines = 0, ops = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char kind[16], op[64], name[64], type[16] = "", def[128] = "", src[32] = "";
    int n = sscanf(line, "%15s %63s %63s %15s %127s %31s", kind, op, name, type, def, src);
    bool attr = n == 6 && !strcmp(kind, "attr");
    bool in = n == 4 && !strcmp(kind, "input"), out = n == 4 && !strcmp(kind, "output");
    if (!attr && !in && !out) continue;
    const pd_opdef *d = pd_opdef_lookup(op);
    if (!d || d->forward) continue;
    if (strcmp(cur, op) != 0) {
      if (*cur) ok(gaps == 0, "%s: every attribute and slot Paddle writes is covered", cur);
      snprintf(cur, sizeof cur, "%s", op);
      gaps = 0, ops++;
    }
    lines++;
    if (attr && !pd_opdef_attr_any(d, name) && !pd_compat_find(op, name, false))
      printf("# %s: attribute %s (%s, default %s; from %s in compat_paddle.txt) has no fact in "
             "vm/ops/compat.c\n", op, name, type, def, src), gaps++;
    if (in && !pd_opdef_input(d, name) && !pd_compat_find(op, name, true))
      printf("# %s: input slot %s (from %s in compat_paddle.txt) is not in vm/oplist.h and has "
             "no fact in vm/ops/compat.c\n", op, name, type), gaps++;
    if (out && !pd_opdef_output(d, name))
      printf("# %s: output slot %s (from %s in compat_paddle.txt) is not in vm/oplist.h\n", op,
             name, type), gaps++;
  }
  if (*cur) ok(gaps == 0, "%s: every attribute and slot Paddle writes is covered", cur);
  ok(ops > 40 && lines > 100, "compat_paddle.txt names %d of pdlang's ops (%d lines)", ops, lines);
  pd_free(text);
}

/* doc/language.md lists every fact, as doc_row writes it. */
static void check_doc(void) {
  char path[1024], *doc = NULL, row[600];
  size_t len;
  snprintf(path, sizeof path, "%s/doc/language.md", srcdir());
  if (pd_read_file(path, &doc, &len, NULL)) {
    ok(0, "doc/language.md is readable");
    return;
  }
  int missing = 0;
  for (int i = 0; i < pd_compat_nfacts; i++) {
    doc_row(&pd_compat_facts[i], row, sizeof row);
    if (!strstr(doc, row)) printf("# missing from doc/language.md: %s\n", row), missing++;
  }
  ok(missing == 0, "doc/language.md lists the %d facts (test_compat --doc prints them)",
     pd_compat_nfacts);
  pd_free(doc);
}

/* ---- pd_compat_apply on programs ---- */

/* A program of one `type` op: x into its first input slot, w into its second (if any), y out
 * of its first output slot; vars x, w and y. */
static pd_program *one_op(const char *type, pd_op_desc **op) {
  pd_program *p = pd_program_new();
  pd_block *b = pd_program_block(p, 0);
  const pd_opdef *d = pd_opdef_lookup(type);
  const char *x[] = {"x"}, *w[] = {"w"}, *y[] = {"y"};
  pd_block_var(b, "x"), pd_block_var(b, "w"), pd_block_var(b, "y");
  *op = pd_block_add_op(b, type, -1);
  pd_op_set_input(*op, d->inputs[0].name, 1, x);
  if (d->ninputs > 1 && !(d->inputs[1].flags & PD_SLOT_DISPENSABLE))
    pd_op_set_input(*op, d->inputs[1].name, 1, w);
  pd_op_set_output(*op, d->outputs[0].name, 1, y);
  return p;
}

/* pd_compat_apply on p: accepted (want NULL), or refused with a message holding want. */
static void expect(pd_program *p, const char *want, const char *what) {
  pd_error e = {0};
  pd_status st = pd_compat_apply(p, "m.pdmodel", &e);
  if (!want) {
    ok(st == PD_OK, "%s: accepted", what);
    if (st) printf("# %s\n", e.msg);
  } else {
    ok(st == PD_EINVAL && e.msg && strstr(e.msg, want), "%s: refused", what);
    if (!(e.msg && strstr(e.msg, want))) printf("# got: %s\n# want: %s\n", e.msg, want);
  }
  pd_error_clear(&e);
}

static void check_apply(void) {
  pd_op_desc *op;
  pd_program *p = one_op("conv2d", &op);
  pd_op_set_attr_int(op, "workspace_size_MB", 4096);
  pd_op_set_attr_bool(op, "exhaustive_search", true);
  pd_op_set_attr_bool(op, "fuse_brelu", false);
  pd_op_set_attr_float(op, "fuse_brelu_threshold", 6.0f);
  pd_op_set_input(op, "Bias", 0, NULL);
  pd_op_set_input(op, "ResidualData", 0, NULL);
  expect(p, NULL, "conv2d: hints, fuse_brelu false, empty Bias and ResidualData");
  ok(!pd_op_attr(op, "workspace_size_MB") && !pd_op_attr(op, "fuse_brelu") &&
         !pd_op_input(op, "Bias"),
     "conv2d: the hints, the flag and the empty slot are dropped");
  pd_program_free(p);

  p = one_op("conv2d", &op);
  pd_op_set_attr_bool(op, "fuse_brelu", true);
  expect(p, "block 0 op 0 (conv2d): attribute fuse_brelu is true, which pdlang cannot honour "
         "(a step fused into the op by Paddle's inference passes; only false (0) keeps the "
         "math)", "conv2d: fuse_brelu true");
  pd_program_free(p);

  p = one_op("depthwise_conv2d", &op);
  const char *bias[] = {"w"};
  pd_op_set_input(op, "Bias", 1, bias);
  expect(p, "input Bias is bound to 'w', which pdlang cannot honour (a bias the oneDNN kernel "
         "adds", "depthwise_conv2d: a bound Bias");
  pd_program_free(p);

  p = one_op("unsqueeze2", &op);
  int32_t axes[] = {0};
  pd_op_set_attr_ints(op, "axes", 1, axes);
  pd_op_set_input(op, "AxesTensor", 0, NULL);
  pd_op_set_input(op, "AxesTensorList", 0, NULL);
  expect(p, NULL, "unsqueeze2: empty AxesTensor and AxesTensorList");
  pd_program_free(p);

  p = one_op("slice", &op);
  pd_op_set_attr_ints(op, "axes", 1, axes);
  pd_op_set_attr_ints(op, "starts", 1, axes);
  pd_op_set_attr_ints(op, "ends", 1, axes);
  const char *t[] = {"w"};
  pd_op_set_input(op, "StartsTensor", 1, t);
  expect(p, "input StartsTensor is bound to 'w', which pdlang cannot honour (an attribute given "
         "as a tensor at run time)", "slice: a bound StartsTensor");
  pd_program_free(p);

  p = one_op("softmax", &op);
  pd_op_set_attr_string(op, "data_format", "AnyLayout");
  pd_op_set_attr_int(op, "is_test", 1);  /* Fluid 1.6 wrote it as INT */
  pd_op_set_attr_long(op, "axis", -1);
  expect(p, NULL, "softmax: data_format AnyLayout, is_test INT 1, axis LONG -1");
  ok(!pd_op_attr(op, "data_format") && pd_op_attr(op, "is_test")->type == PD_ATTR_BOOLEAN &&
         pd_op_attr(op, "is_test")->v.b && pd_op_attr(op, "axis")->type == PD_ATTR_INT &&
         pd_op_attr(op, "axis")->v.i == -1,
     "softmax: is_test became BOOLEAN true, axis INT -1");
  pd_program_free(p);

  p = one_op("softmax", &op);
  pd_op_set_attr_string(op, "data_format", "NHWC");
  expect(p, "attribute data_format is 'NHWC', which pdlang cannot honour (the layout Paddle "
         "picks its kernel for; pdlang's tensors are NCHW; only 'AnyLayout' or 'NCHW' keeps the "
         "math)",
         "softmax: data_format NHWC");
  pd_program_free(p);

  p = one_op("softmax", &op);
  pd_op_set_attr_int(op, "is_test", 2);
  expect(p, "attribute is_test is INT 2, which does not convert to BOOLEAN (only 0 and 1 stand "
         "for a BOOLEAN)", "softmax: is_test INT 2");
  pd_program_free(p);

  p = one_op("softmax", &op);
  pd_op_set_attr_long(op, "axis", 1ll << 40);
  expect(p, "attribute axis is LONG 1099511627776, which does not convert to INT (out of INT's "
         "range)", "softmax: axis LONG 2^40");
  pd_program_free(p);

  p = one_op("leaky_relu", &op);
  pd_op_set_attr_double(op, "alpha", 0.25);
  expect(p, NULL, "leaky_relu: alpha FLOAT64 0.25");
  ok(pd_op_attr(op, "alpha")->type == PD_ATTR_FLOAT && pd_op_attr(op, "alpha")->v.f == 0.25f,
     "leaky_relu: alpha became FLOAT 0.25");
  pd_program_free(p);

  p = one_op("leaky_relu", &op);
  pd_op_set_attr_double(op, "alpha", 0.1);
  expect(p, "attribute alpha is FLOAT64 0.10000000000000001, which does not convert to FLOAT (a "
         "FLOAT cannot hold it exactly)", "leaky_relu: alpha FLOAT64 0.1");
  pd_program_free(p);

  p = one_op("lookup_table", &op);
  const char *none[] = {""};
  int64_t sections[] = {10, 20};
  pd_op_set_attr_longs(op, "height_sections", 2, sections);
  pd_op_set_attr_strings(op, "epmap", 0, none);
  pd_op_set_attr_string(op, "entry", "none");
  pd_op_set_attr_int(op, "trainer_id", 3);
  pd_op_set_attr_bool(op, "grad_inplace", false);
  pd_op_set_attr_ints(op, "padding_idx_list_of_nothing", 0, axes);
  expect(p, "unknown attribute padding_idx_list_of_nothing", "lookup_table: an unknown attribute "
         "beside the parameter-server ones");
  ok(!pd_op_attr(op, "height_sections") && !pd_op_attr(op, "trainer_id"),
     "lookup_table: the parameter-server attributes are dropped");
  pd_program_free(p);
}

/* pd_compat_keeps on the forms a fact's values take. */
static void check_keeps(void) {
  const pd_compat_fact *f = pd_compat_find("conv2d", "fuse_relu", false);
  pd_attr a = {.type = PD_ATTR_INT, .v.i = 0};
  ok(f && pd_compat_keeps(f, &a), "fuse_relu: INT 0 keeps the math");
  a.v.i = 1;
  ok(f && !pd_compat_keeps(f, &a), "fuse_relu: INT 1 does not");
  f = pd_compat_find("softmax", "data_format", false);
  a = (pd_attr){.type = PD_ATTR_STRING, .v.s = "NCHW"};
  ok(f && pd_compat_keeps(f, &a), "softmax data_format 'NCHW' keeps the math");
  ok(!pd_compat_find("conv2d", "data_format", false), "no fact for an op's own attribute name "
     "on an op it does not name");
  ok(pd_compat_find("reshape2", "ShapeTensor", true) && !pd_compat_find("reshape2", "Tensor",
                                                                        true),
     "*Tensor matches names ending in Tensor, not Tensor itself");
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--doc")) {
    char row[600];
    printf("| op | attribute | dropped when | what it is |\n");
    printf("|----|-----------|--------------|------------|\n");
    for (int i = 0; i < pd_compat_nfacts; i++)
      doc_row(&pd_compat_facts[i], row, sizeof row), printf("%s\n", row);
    return 0;
  }
  check_fact_ops();
  check_derived();
  check_doc();
  check_apply();
  check_keeps();
  return tap_done();
}
