/* test_callchain.c -- the `def` calls an op was written inside (pd_op_desc.calls): shared by
 * the ops of a call and by copies, written as op_callstack = ["FILE:L:C", "FILE:L:C: NAME()",
 * ...] (read back with protobuf-c's API, as another tool would), read back into one chain per
 * run of equal ops, other forms left as attributes, refused when malformed, attached to an
 * error at the op's line (pd_op_error_calls) and rendered innermost first; every allocation of
 * a round trip failed in turn. */
#include "config.h"
#include "vm/ir/serialize.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "vm/ir/framework.pb-c.h"
#include "tests/tap.h"

typedef Paddle__Framework__Proto__ProgramDesc pb_program;
typedef Paddle__Framework__Proto__OpDesc pb_op;
typedef Paddle__Framework__Proto__OpDesc__Attr pb_attr;

static const pd_call_site two_deep[] = {{{"lib.pd", 7, 12}, "inner"}, {{"main.pd", 5, 5}, "outer"}};
static const pd_call_site one_deep[] = {{{"main.pd", 9, 1}, "solo"}};

/* An op "relu" X -> Out in b at loc inside ch (may be NULL). */
static pd_op_desc *add(pd_block *b, const char *x, const char *out, pd_loc loc, pd_callchain *ch) {
  pd_block_var(b, x);
  pd_block_var(b, out);
  pd_op_desc *op = pd_block_add_op(b, "relu", -1);
  if (!op || pd_op_set_input(op, "X", 1, &x) || pd_op_set_output(op, "Out", 1, &out) ||
      pd_op_set_loc(op, loc))
    return NULL;
  pd_op_set_calls(op, ch);
  return op;
}

/* Three ops: two inside inner (called from outer), one inside solo; one outside any call. */
static pd_program *sample(void) {
  pd_program *p = pd_program_new();
  pd_callchain *a = pd_callchain_new(two_deep, 2), *s = pd_callchain_new(one_deep, 1);
  pd_block *b = p ? p->blocks[0] : NULL;
  bool made = b && a && s && add(b, "x", "y", (pd_loc){"lib.pd", 3, 9}, a) &&
              add(b, "y", "z", (pd_loc){"lib.pd", 4, 9}, a) &&
              add(b, "z", "w", (pd_loc){"solo.pd", 2, 5}, s) &&
              add(b, "w", "v", (pd_loc){"main.pd", 10, 1}, NULL);
  pd_callchain_unref(a);
  pd_callchain_unref(s);
  if (!made) {
    pd_program_free(p);
    return NULL;
  }
  return p;
}

static const pb_attr *find_attr(const pb_op *o, const char *name) {
  for (size_t k = 0; k < o->n_attrs; k++)
    if (strcmp(o->attrs[k]->name, name) == 0) return o->attrs[k];
  return NULL;
}

static bool strings_are(const pb_attr *a, int n, const char *const *want) {
  if (!a || a->type != PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__STRINGS || a->n_strings != (size_t)n)
    return false;
  for (int i = 0; i < n; i++)
    if (strcmp(a->strings[i], want[i]) != 0) return false;
  return true;
}

static void test_written(void) {
  pd_program *p = sample();
  uint8_t *bytes = NULL;
  size_t len = 0;
  ok(p && pd_program_to_bytes(p, &bytes, &len, NULL) == PD_OK, "a program with calls encodes");
  pb_program *pd = bytes ? pd_pb_program_desc__unpack(NULL, len, bytes) : NULL;
  if (!pd) {
    ok(0, "protobuf-c decodes it");
  } else {
    pb_op *const *ops = pd->blocks[0]->ops;
    ok(strings_are(find_attr(ops[0], "op_callstack"), 3,
                   (const char *const[]){"lib.pd:3:9", "lib.pd:7:12: inner()",
                                         "main.pd:5:5: outer()"}),
       "op_callstack: the op's location, then each call innermost first");
    ok(strings_are(find_attr(ops[2], "op_callstack"), 2,
                   (const char *const[]){"solo.pd:2:5", "main.pd:9:1: solo()"}),
       "one call deep");
    ok(strings_are(find_attr(ops[3], "op_callstack"), 1, (const char *const[]){"main.pd:10:1"}),
       "outside any call: the location alone, as before");
    pd_pb_program_desc__free_unpacked(pd, NULL);
  }
  pd_program *q = NULL;
  ok(bytes && pd_program_from_bytes(bytes, len, &q, NULL) == PD_OK, "and reads back");
  if (q) {
    pd_op_desc *const *ops = q->blocks[0]->ops;
    const pd_callchain *c0 = ops[0]->calls, *c2 = ops[2]->calls;
    ok(c0 && c0->n == 2 && strcmp(c0->sites[0].loc.file, "lib.pd") == 0 &&
           c0->sites[0].loc.line == 7 && c0->sites[0].loc.col == 12 &&
           strcmp(c0->sites[0].fn, "inner") == 0 && strcmp(c0->sites[1].loc.file, "main.pd") == 0 &&
           c0->sites[1].loc.line == 5 && strcmp(c0->sites[1].fn, "outer") == 0 &&
           ops[0]->loc.line == 3 && ops[0]->nattrs == 0,
       "the location and the calls come back, no attribute left");
    ok(ops[1]->calls == c0, "the ops of one call share one chain when read");
    ok(c2 && c2 != c0 && c2->n == 1 && c2->sites[0].loc.line == 9, "another call, another chain");
    ok(ops[3]->calls == NULL && ops[3]->loc.line == 10, "an op outside calls has none");
    pd_loc user = pd_op_user_loc(ops[0]);
    ok(strcmp(user.file, "main.pd") == 0 && user.line == 5 && user.col == 5 &&
           pd_op_user_loc(ops[3]).line == 10,
       "pd_op_user_loc: the outermost call, or the op's own line");
    pd_program *r = pd_program_clone(q);
    ok(r && r->blocks[0]->ops[0]->calls == c0 && r->blocks[0]->ops[1]->calls == c0,
       "a clone shares the chains");
    pd_program_free(r);
    pd_buf b1, b2;
    pd_buf_init(&b1);
    pd_buf_init(&b2);
    pd_program_dump(p, &b1);
    pd_program_dump(q, &b2);
    ok(!b1.oom && !b2.oom && strcmp(b1.data, b2.data) == 0 &&
           strstr(b1.data,
                  "op 0: relu @ lib.pd:3:9 in inner @ lib.pd:7:12 in outer @ main.pd:5:5\n"),
       "the listing shows the calls, the same after the round trip");
    pd_buf_free(&b1);
    pd_buf_free(&b2);
  }
  pd_program_free(q);
  pd_free(bytes);
  pd_program_free(p);
}

/* op_callstack forms that are not pdlang's chain stay attributes (Paddle writes Python stacks). */
static void test_other_forms(void) {
  static const struct {
    int n;
    const char *s[3];
    bool taken;
    const char *why;
  } cases[] = {
      {2, {"a.pd:1:2", "b.pd:3:4: f()"}, true, "a chain of one call"},
      {2, {"a.pd:1:2", "b.pd:3:4: f"}, false, "a call without ()"},
      {2, {"a.pd:1:2", "b.pd:3:4: 9f()"}, false, "a name that is not an identifier"},
      {2, {"a.pd:1:2", "b.pd:3:4:f()"}, false, "no space before the name"},
      {2, {"a.pd:1:2", "b.pd:0:4: f()"}, false, "a call at line 0"},
      {2, {"a.pd:1:2", ": f()"}, false, "a call without a position"},
      {3, {"a.pd:1:2", "b.pd:3:4: f()", "  File \"x.py\", line 2, in <module>"}, false,
       "a Python frame after a call"},
      {2, {"  File \"x.py\", line 2, in <module>", "    y = f(x)"}, false, "Paddle's stack"},
      {2, {"c:\\dir:x.pd:1:2", "c:\\dir:x.pd:3:4: g_2()"}, true, "files holding colons"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pd_program *p = pd_program_new(), *q = NULL;
    pd_op_desc *op = p ? add(p->blocks[0], "x", "y", (pd_loc){0}, NULL) : NULL;
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (!op || pd_op_set_attr_strings(op, "op_callstack", cases[i].n, cases[i].s) ||
        pd_program_to_bytes(p, &bytes, &len, NULL) ||
        pd_program_from_bytes(bytes, len, &q, NULL)) {
      ok(0, "%s: round trip", cases[i].why);
    } else {
      const pd_op_desc *o = q->blocks[0]->ops[0];
      if (cases[i].taken)
        ok(o->calls && o->calls->n == cases[i].n - 1 && o->loc.line == 1 &&
               pd_op_attr(o, "op_callstack") == NULL,
           "%s: taken as the location and its calls", cases[i].why);
      else
        ok(!o->calls && o->loc.line == 0 && pd_op_attr(o, "op_callstack") != NULL,
           "%s: stays an attribute", cases[i].why);
    }
    pd_free(bytes);
    pd_program_free(p);
    pd_program_free(q);
  }
}

static void test_errors(void) {
  pd_program *p = sample();
  if (!p) {
    ok(0, "sample program");
    return;
  }
  const pd_op_desc *op = p->blocks[0]->ops[0];
  pd_error err = {0};
  pd_error_set(&err, PD_ERUNTIME, (pd_loc){"lib.pd", 3, 9}, "boom");
  pd_op_error_calls(&err, op, PD_ERUNTIME);
  ok(err.ncalls == 2 && strcmp(err.calls[0].fn, "inner") == 0 &&
         strcmp(err.calls[1].loc.file, "main.pd") == 0 && err.calls[1].loc.line == 5,
     "an error at the op's line gets its calls");
  pd_error_set(&err, PD_ERUNTIME, (pd_loc){"lib.pd", 4, 9}, "elsewhere");
  ok(err.ncalls == 0 && err.calls == NULL, "a new error drops the calls of the old one");
  pd_op_error_calls(&err, op, PD_ERUNTIME);
  ok(err.ncalls == 0, "an error at another line does not get the op's calls");
  pd_error_set(&err, PD_ERUNTIME, (pd_loc){"other.pd", 3, 9}, "boom");
  pd_op_error_calls(&err, op, PD_ERUNTIME);
  ok(err.ncalls == 0, "nor one at the same line of another file");

  /* Rendered innermost first, each line from the source of its file. */
  pd_source *lib = NULL;
  const char *text = "# lib\n\ndef f(x) {\n    y = g(x)\n}\ndef h(x) {\n    return inner(x)\n}\n";
  pd_source_from_string("lib.pd", text, strlen(text), &lib);
  pd_error_set(&err, PD_ERUNTIME, (pd_loc){"lib.pd", 4, 9}, "relu: bad");
  pd_error_set_calls(&err, two_deep, 2);
  pd_buf b;
  pd_buf_init(&b);
  pd_diag_render_error(&b, lib, &err);
  is_str(b.data,
         "lib.pd:4:9: error: relu: bad\n"
         "    4 |     y = g(x)\n"
         "      |         ^\n"
         "lib.pd:7:12: note: 'inner' called from here\n"
         "    7 |     return inner(x)\n"
         "      |            ^\n"
         "main.pd:5:5: note: 'outer' called from here\n",
         "the error, then each call; a call in another file without its line");
  pd_buf_free(&b);
  pd_source_free(lib);
  pd_error_clear(&err);
  ok(err.calls == NULL && err.ncalls == 0, "pd_error_clear frees the calls");
  pd_program_free(p);
}

static void test_validate(void) {
  pd_program *p = sample();
  pd_callchain *bad = pd_callchain_new((const pd_call_site[]){{{"m.pd", 0, 1}, "f"}}, 1);
  if (!p || !bad) {
    ok(0, "sample program");
  } else {
    pd_op_set_calls(p->blocks[0]->ops[3], bad);
    pd_error err = {0};
    ok(pd_program_validate(p, &err) == PD_EFORMAT && err.msg &&
           strstr(err.msg, "bad call site 0:1"),
       "a call site at line 0 fails validation: %s", err.msg ? err.msg : "");
    pd_error_clear(&err);
  }
  pd_callchain_unref(bad);
  pd_program_free(p);
}

/* Every allocation of encoding and decoding fails in turn: no leak, no crash. */
static void test_alloc_failures(void) {
  pd_program *p = sample();
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (!p || pd_program_to_bytes(p, &bytes, &len, NULL)) {
    ok(0, "sample bytes");
    pd_program_free(p);
    return;
  }
  int fails = 0, passes = 0;
  for (long k = 1; k <= 400; k++) {
    pd_program *q = NULL;
    uint8_t *again = NULL;
    size_t n = 0;
    pd_alloc_fail_after(k);
    pd_status a = pd_program_from_bytes(bytes, len, &q, NULL);
    pd_status c = q ? pd_program_to_bytes(q, &again, &n, NULL) : PD_ENOMEM;
    pd_alloc_fail_after(0);
    if (a == PD_OK && c == PD_OK) passes++;
    else if ((a != PD_OK && a != PD_ENOMEM) || (a == PD_OK && c != PD_ENOMEM)) fails++;
    pd_program_free(q);
    pd_free(again);
  }
  ok(fails == 0 && passes > 0, "allocation failures give PD_ENOMEM and nothing else (%d passes)",
     passes);
  pd_free(bytes);
  pd_program_free(p);
}

int main(void) {
  test_written();
  test_other_forms();
  test_errors();
  test_validate();
  test_alloc_failures();
  return tap_done();
}
