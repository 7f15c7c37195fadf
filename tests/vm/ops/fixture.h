/* fixture.h -- helpers for the op registry tests: a program to build ops in, vars declared from
 * shape strings ("[-1, 784]", "?" for an unknown rank), ops whose slots are given as strings
 * ("X=a Y=b", "Out=o1,o2"), and checks that run pd_opdef_prepare and compare the resulting
 * shape or the exact error message. Header-only, like tests/tap.h. */
#ifndef PD_TESTS_OPS_FIXTURE_H
#define PD_TESTS_OPS_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tests/tap.h"
#include "vm/ops/ops.h"
#include "vm/ir/program.h"

typedef struct fx {
  pd_program *p;
  pd_block *b;   /* where add_op puts ops: block 0 unless a test moves it */
  pd_error err;
} fx;

static inline void bail(const char *what) {
  printf("Bail out! %s\n", what);
  exit(1);
}

static inline void fx_init(fx *f) {
  memset(f, 0, sizeof *f);
  if (!(f->p = pd_program_new())) bail("out of memory");
  f->b = pd_program_block(f->p, 0);
}

static inline void fx_free(fx *f) {
  pd_program_free(f->p);
  pd_error_clear(&f->err);
  f->p = NULL;
}

/* "[-1, 784]" -> 2 dims; "[]" -> 0; "?" -> -1 (unknown rank). */
static inline int parse_shape(const char *s, int64_t *d) {
  if (strcmp(s, "?") == 0) return -1;
  const char *p = strchr(s, '[');
  if (!p) bail("bad shape string");
  p++;
  int n = 0;
  while (*p && *p != ']') {
    char *end;
    d[n++] = strtoll(p, &end, 10);
    if (end == p) bail("bad shape string");
    p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  return n;
}

/* Declare (or redeclare) var `name` in b with a dtype, a shape string and a LoD level. */
static inline pd_var_desc *decl_lod(pd_block *b, const char *name, pd_dtype dt, const char *shape,
                             int lod) {
  int64_t d[16];
  pd_var_desc *v = pd_block_var(b, name);
  if (!v) bail("out of memory");
  int n = parse_shape(shape, d);
  if (pd_var_set_shape(v, n, d)) bail("out of memory");
  v->dtype = dt;
  v->lod_level = lod;
  return v;
}

static inline pd_var_desc *decl(pd_block *b, const char *name, pd_dtype dt, const char *shape) {
  return decl_lod(b, name, dt, shape, 0);
}

/* Bind "P=a,b Q=c" to op's inputs (or outputs); with declare, missing vars are declared in b
 * (float32, unknown shape), as the compiler declares an op's outputs before preparing it. */
static inline void bind(pd_block *b, pd_op_desc *op, const char *spec, bool inputs, bool declare) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec ? spec : "");
  for (char *save1 = NULL, *tok = strtok_r(buf, " ", &save1); tok; tok = strtok_r(NULL, " ", &save1)) {
    char *eq = strchr(tok, '=');
    if (!eq) bail("bad slot spec");
    *eq = '\0';
    const char *args[16];
    int n = 0;
    for (char *save2 = NULL, *a = strtok_r(eq + 1, ",", &save2); a; a = strtok_r(NULL, ",", &save2)) {
      args[n++] = a;
      if (declare && !pd_block_find_var(b, a) && !pd_block_var(b, a)) bail("out of memory");
    }
    int r = inputs ? pd_op_set_input(op, tok, n, args) : pd_op_set_output(op, tok, n, args);
    if (r) bail("out of memory");
  }
}

/* Append an op of `type` to f->b; output vars that do not exist yet are declared. */
static inline pd_op_desc *add_op(fx *f, const char *type, const char *ins, const char *outs) {
  pd_op_desc *op = pd_block_add_op(f->b, type, -1);
  if (!op) bail("out of memory");
  bind(f->b, op, ins, true, false);
  bind(f->b, op, outs, false, true);
  if (pd_op_set_loc(op, (pd_loc){"t.pd", 3, 7})) bail("out of memory");
  return op;
}

/* Run check + defaults + shape inference on op (in f->b); the message lands in f->err. */
static inline pd_status prep(fx *f, pd_op_desc *op) {
  pd_error_clear(&f->err);
  return pd_opdef_prepare(op, f->b, &f->err);
}

/* A var's shape as a string ("[-1, 256]", "?"), from one of a few rotating buffers. */
static inline const char *shape_of(fx *f, const char *name) {
  static char bufs[4][256];
  static int next;
  char *buf = bufs[next++ % 4];
  const pd_var_desc *v = pd_block_find_var(f->b, name);
  if (!v) return "(undeclared)";
  if (v->ndims < 0) return "?";
  return pd_dims_str(v->ndims, v->dims, buf, sizeof bufs[0]);
}

static inline pd_dtype dtype_of(fx *f, const char *name) {
  const pd_var_desc *v = pd_block_find_var(f->b, name);
  return v ? v->dtype : (pd_dtype)-1;
}

static inline int lod_of(fx *f, const char *name) {
  const pd_var_desc *v = pd_block_find_var(f->b, name);
  return v ? v->lod_level : -1;
}

/* One TAP line: op prepares cleanly and var `var` ends up with shape `want`. */
#define expect_shape(f, op, var, want, what) expect_shape_((f), (op), (var), (want), (what), __LINE__)
static inline void expect_shape_(fx *f, pd_op_desc *op, const char *var, const char *want,
                          const char *what, int line) {
  pd_status st = prep(f, op);
  const char *got = st ? f->err.msg : shape_of(f, var);
  if (!tap_ok_(st == PD_OK && strcmp(got, want) == 0, __FILE__, line, "%s", what))
    printf("#   status %s\n#   got  %s\n#   want %s\n", pd_status_str(st), got ? got : "(null)",
           want);
}

/* One TAP line: op fails with status `want_st` and exactly the message `want`, at the op's loc. */
#define expect_error(f, op, want_st, want, what) \
  expect_error_((f), (op), (want_st), (want), (what), __LINE__)
static inline void expect_error_(fx *f, pd_op_desc *op, pd_status want_st, const char *want,
                          const char *what, int line) {
  pd_status st = prep(f, op);
  const char *got = f->err.msg ? f->err.msg : "(no message)";
  bool pass = st == want_st && strcmp(got, want) == 0 && f->err.loc.line == 3 &&
              f->err.loc.col == 7 && f->err.loc.file && strcmp(f->err.loc.file, "t.pd") == 0;
  if (!tap_ok_(pass, __FILE__, line, "%s", what))
    printf("#   status %s (want %s), loc line %d\n#   got  %s\n#   want %s\n", pd_status_str(st),
           pd_status_str(want_st), f->err.loc.line, got, want);
}

#endif /* PD_TESTS_OPS_FIXTURE_H */
