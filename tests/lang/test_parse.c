/* test_parse.c -- unit tests of the parser and the syntax tree API (lang/parse.h, lang/ast.h):
 * tree shapes and precedence, the walking API, REPL input, recovery and the error limit, limits on
 * nesting, pathological sizes, deterministic random inputs, and allocation failure at every
 * allocation (run under the sanitizers, this also proves that every failure path frees all). */
#include "config.h"
#include "base/diag.h"
#include "lang/ast.h"
#include "lang/parse.h"
#include "tests/tap.h"

#include <stdint.h>
#include <stdlib.h>

/* The result of parsing one text. */
typedef struct parsed {
  pd_status status;
  char *dump;        /* pd_ast_dump of the tree (heap), or NULL */
  char *diags;       /* rendered diagnostics (heap) */
  int nerrors;
  int incomplete;    /* pd_parse_repl only */
  int height;        /* of the root */
} parsed;

static parsed parse_ex(const char *text, size_t len, int max_errors, int repl) {
  parsed r = {0};
  pd_source *src;
  if (pd_source_from_string("t.pd", text, len, &src)) {
    r.status = PD_ENOMEM;
    return r;
  }
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags diags;
  pd_diags_init(&diags, max_errors);
  pd_ast_node *root = NULL;
  if (!arena)
    r.status = PD_ENOMEM;
  else if (repl)
    r.status = pd_parse_repl(src, arena, &diags, &root, &r.incomplete);
  else
    r.status = pd_parse(src, arena, &diags, &root);
  if (root) {
    pd_buf out;
    pd_buf_init(&out);
    if (pd_ast_dump(root, &out) == PD_OK) r.dump = pd_buf_take(&out);
    pd_buf_free(&out);
    r.height = root->height;
  }
  r.nerrors = diags.nerrors;
  r.diags = pd_buf_take(&diags.text);
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);
  return r;
}

static parsed parse(const char *text) { return parse_ex(text, strlen(text), 0, 0); }

static void parsed_free(parsed *r) {
  pd_free(r->dump);
  pd_free(r->diags);
}

/* Parse `text` and compare the dump with `want`. */
static void check_tree(const char *text, const char *want, const char *what) {
  parsed r = parse(text);
  if (r.status != PD_OK) printf("# %s", r.diags);
  is_int(r.status, PD_OK, "%s: parses", what);
  is_str(r.dump, want, "%s: tree", what);
  parsed_free(&r);
}

/* Parse `text`, expect a syntax error, and compare the diagnostics with `want`. */
static void check_error(const char *text, const char *want, const char *what) {
  parsed r = parse(text);
  is_int(r.status, PD_ESYNTAX, "%s: fails", what);
  ok(r.dump == NULL, "%s: no tree", what);
  is_str(r.diags, want, "%s: diagnostics", what);
  parsed_free(&r);
}

static void test_precedence(void) {
  check_tree("a + b * c - d\n",
             "program @1:1\n"
             "  expr @1:1\n"
             "    binary - @1:11\n"
             "      binary + @1:3\n"
             "        name a @1:1\n"
             "        binary * @1:7\n"
             "          name b @1:5\n"
             "          name c @1:9\n"
             "      name d @1:13\n",
             "* binds tighter than +; both associate to the left");
  check_tree("x @ w % 2 / 4",
             "program @1:1\n"
             "  expr @1:1\n"
             "    binary / @1:11\n"
             "      binary % @1:7\n"
             "        binary @ @1:3\n"
             "          name x @1:1\n"
             "          name w @1:5\n"
             "        int 2 @1:9\n"
             "      int 4 @1:13\n",
             "@ % / share a level");
  check_tree("not a == b or c and not d",
             "program @1:1\n"
             "  expr @1:1\n"
             "    binary or @1:12\n"
             "      unary not @1:1\n"
             "        binary == @1:7\n"
             "          name a @1:5\n"
             "          name b @1:10\n"
             "      binary and @1:17\n"
             "        name c @1:15\n"
             "        unary not @1:21\n"
             "          name d @1:25\n",
             "or < and < not < comparison");
  check_tree("-a.b[1](2) * -x",
             "program @1:1\n"
             "  expr @1:1\n"
             "    binary * @1:12\n"
             "      unary - @1:1\n"
             "        call @1:8\n"
             "          callee: index @1:5\n"
             "            object: attr b @1:4\n"
             "              name a @1:2\n"
             "            int 1 @1:6\n"
             "          int 2 @1:9\n"
             "      unary - @1:14\n"
             "        name x @1:15\n",
             "unary minus applies to a whole postfix chain");
  check_tree("(a + b) * c <= d - -1",
             "program @1:1\n"
             "  expr @1:1\n"
             "    binary <= @1:13\n"
             "      binary * @1:9\n"
             "        binary + @1:4\n"
             "          name a @1:2\n"
             "          name b @1:6\n"
             "        name c @1:11\n"
             "      binary - @1:18\n"
             "        name d @1:16\n"
             "        unary - @1:20\n"
             "          int 1 @1:21\n",
             "parentheses group; comparison is below arithmetic");
  check_tree("x[:, 1:, :n, a:b]",
             "program @1:1\n"
             "  expr @1:1\n"
             "    index @1:2\n"
             "      object: name x @1:1\n"
             "      slice @1:3\n"
             "      slice @1:7\n"
             "        lo: int 1 @1:6\n"
             "      slice @1:10\n"
             "        hi: name n @1:11\n"
             "      slice @1:15\n"
             "        lo: name a @1:14\n"
             "        hi: name b @1:16\n",
             "subscripts and slices");
}

static void test_statements(void) {
  check_tree("a, b = f(x); let c = [] ; return a, b\nreturn\n",
             "program @1:1\n"
             "  assign @1:1\n"
             "    target: name a @1:1\n"
             "    target: name b @1:4\n"
             "    value: call @1:9\n"
             "      callee: name f @1:8\n"
             "      name x @1:10\n"
             "  let @1:14\n"
             "    target: name c @1:18\n"
             "    value: list @1:22\n"
             "  return @1:27\n"
             "    name a @1:34\n"
             "    name b @1:37\n"
             "  return @2:1\n",
             "multiple assignment, let, return with and without values");
  check_tree("if (a) { x } else if (b) { y } else if (c) { } else { z }",
             "program @1:1\n"
             "  if @1:1\n"
             "    branch @1:1\n"
             "      cond: name a @1:5\n"
             "      body: block @1:8\n"
             "        expr @1:10\n"
             "          name x @1:10\n"
             "    branch @1:19\n"
             "      cond: name b @1:23\n"
             "      body: block @1:26\n"
             "        expr @1:28\n"
             "          name y @1:28\n"
             "    branch @1:37\n"
             "      cond: name c @1:41\n"
             "      body: block @1:44\n"
             "    else: block @1:53\n"
             "      expr @1:55\n"
             "        name z @1:55\n",
             "an else-if chain is one IF with flat branches");
  check_tree("def f(x, n = 2,) {\n  emit o = x\n}\nwhile (true) { }\nfor (t in s) { ; ; }\n",
             "program @1:1\n"
             "  def @1:1\n"
             "    name: name f @1:5\n"
             "    param x @1:7\n"
             "    param n @1:10\n"
             "      default: int 2 @1:14\n"
             "    body: block @1:18\n"
             "      emit @2:3\n"
             "        output o @2:8\n"
             "          name x @2:12\n"
             "  while @4:1\n"
             "    cond: bool true @4:8\n"
             "    body: block @4:14\n"
             "  for @5:1\n"
             "    var: name t @5:6\n"
             "    in: name s @5:11\n"
             "    body: block @5:14\n",
             "def, emit, while, for; empty statements");
}

static void test_walk(void) {
  const char *text = "if (c) { x = 1 } else { y = f(2, k = 3) }\n";
  pd_source *src;
  pd_source_from_string("t.pd", text, strlen(text), &src);
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags diags;
  pd_diags_init(&diags, 0);
  pd_ast_node *root;
  is_int(pd_parse(src, arena, &diags, &root), PD_OK, "walk: parses");
  ok(root->kind == PD_AST_PROGRAM && root->block.stmts.len == 1, "one statement");
  pd_ast_node *ifs = root->block.stmts.items[0];
  ok(ifs->kind == PD_AST_IF && pd_ast_is_stmt(ifs->kind) && !pd_ast_is_expr(ifs->kind),
     "an IF is a statement");
  is_int(pd_ast_child_count(ifs), 2, "IF: one branch + else");
  pd_ast_child c0 = pd_ast_child_at(ifs, 0), c1 = pd_ast_child_at(ifs, 1);
  ok(c0.role == NULL && c0.node->kind == PD_AST_BRANCH, "child 0: a branch, no role");
  ok(c1.role && strcmp(c1.role, "else") == 0 && c1.node == ifs->if_.else_block, "child 1: else");
  pd_ast_node *assign = ifs->if_.else_block->block.stmts.items[0];
  pd_ast_node *call = assign->assign.value;
  ok(call->kind == PD_AST_CALL && call->call.args.len == 2, "call with two arguments");
  pd_ast_node *kw = call->call.args.items[1];
  ok(kw->kind == PD_AST_KWARG && strcmp(kw->binding.name, "k") == 0 &&
         kw->binding.value->int_value == 3,
     "keyword argument k = 3");
  is_int(pd_ast_child_count(call), 3, "CALL: callee + two arguments");
  ok(strcmp(pd_ast_child_at(call, 0).role, "callee") == 0, "first the callee");
  is_int(root->height, 7, "height: program if block assign call kwarg int");
  is_str(pd_ast_kind_name(PD_AST_CALL), "call", "kind names");
  is_str(pd_ast_kind_phrase(PD_AST_INDEX), "an index expression", "kind phrases");
  is_str(pd_ast_op_name(PD_AST_OP_MATMUL), "@", "operator names");
  is_str(pd_ast_kind_name((pd_ast_kind)999), "?", "out-of-range kinds are safe");
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);
}

static void test_arena(void) {
  pd_ast_arena *a = pd_ast_arena_new();
  char *s = pd_ast_strndup(a, "a\0b", 3);
  ok(s && memcmp(s, "a\0b", 4) == 0, "strndup keeps NUL bytes and terminates");
  void *big = pd_ast_alloc(a, 3 << 20);
  ok(big && ((unsigned char *)big)[(3 << 20) - 1] == 0, "a large allocation, zeroed");
  size_t used = pd_ast_arena_used(a);
  for (int i = 0; i < 100000; i++) {
    pd_ast_node *n = pd_ast_new(a, PD_AST_NONE, (pd_loc){"t", 1, 1});
    if (!n || (uintptr_t)n % _Alignof(double)) {
      ok(0, "node %d allocated and aligned", i);
      break;
    }
  }
  ok(pd_ast_arena_used(a) >= used + 100000 * sizeof(pd_ast_node), "usage is counted");
  ok(pd_ast_alloc(a, SIZE_MAX) == NULL, "an impossible size fails cleanly");
  pd_ast_arena_free(a);
  pd_ast_arena_free(NULL);

  /* The dump is iterative (no recursion), shown here on a chain deeper than the parser allows,
   * built by hand. (Its indentation makes the output quadratic in the depth: keep it modest.) */
  a = pd_ast_arena_new();
  pd_ast_node *n = pd_ast_new(a, PD_AST_NAME, (pd_loc){"t", 1, 1});
  n->name.id = "x";
  for (int i = 0; i < 3000; i++) {
    pd_ast_node *u = pd_ast_new(a, PD_AST_UNARY, (pd_loc){"t", 1, 1});
    u->unary.op = PD_AST_OP_NEG;
    u->unary.operand = n;
    pd_ast_update_height(u);
    n = u;
  }
  is_int(n->height, PD_AST_MAX_DEPTH + 1, "heights saturate just past the limit");
  pd_buf out;
  pd_buf_init(&out);
  is_int(pd_ast_dump(n, &out), PD_OK, "dump of a 3000-deep tree");
  ok(out.len > 3000 * 3000, "... prints every level, indented");
  pd_buf_free(&out);
  pd_ast_arena_free(a);
}

static void test_repl(void) {
  static const struct {
    const char *text;
    int incomplete;
    pd_status status;
  } cases[] = {
      {"x = 1\n", 0, PD_OK},
      {"if (x) {\n", 1, PD_ESYNTAX},
      {"if (x) {\n  y = 1\n", 1, PD_ESYNTAX},
      {"if (x) {\n  y = 1\n}\n", 0, PD_OK},
      {"x = (1 +\n", 1, PD_ESYNTAX},
      {"x = 1 +\n", 1, PD_ESYNTAX},
      {"f(1,\n", 1, PD_ESYNTAX},
      {"def f(x)\n", 1, PD_ESYNTAX},
      {"x = [\n[1, 2],\n", 1, PD_ESYNTAX},
      {"x = )\n", 0, PD_ESYNTAX},
      {"x = \"abc\n", 0, PD_ESYNTAX},
      {"$\nif (x) {\n", 0, PD_ESYNTAX},
      {"", 0, PD_OK},
  };
  for (size_t i = 0; i < PD_ARRAY_LEN(cases); i++) {
    parsed r = parse_ex(cases[i].text, strlen(cases[i].text), 0, 1);
    ok(r.status == cases[i].status && r.incomplete == cases[i].incomplete,
       "repl input %zu: %s", i, cases[i].incomplete ? "incomplete" : "complete");
    ok(cases[i].incomplete ? r.nerrors == 0 : (r.nerrors > 0) == (r.status != PD_OK),
       "repl input %zu: errors only when not incomplete", i);
    parsed_free(&r);
  }
}

static void test_errors(void) {
  check_error("x = 1 +\n",
              "t.pd:1:8: error: unexpected end of input, expecting an expression\n"
              "    1 | x = 1 +\n"
              "      |        ^\n",
              "end of input inside an expression");
  check_error("if (x > 1) {\n  y = 2\n",
              "t.pd:2:8: error: unexpected end of input: expected '}' to close the 'if' block "
              "opened at 1:12\n"
              "    2 |   y = 2\n"
              "      |        ^\n",
              "unclosed block");
  check_error("a = 1\nb = 2 c\nd = (3 +)\ne = 4\n",
              "t.pd:2:7: error: unexpected identifier 'c', expecting newline, ';' or end of input\n"
              "    2 | b = 2 c\n"
              "      |       ^\n"
              "t.pd:3:9: error: unexpected ')', expecting an expression\n"
              "    3 | d = (3 +)\n"
              "      |         ^\n",
              "recovery: one error per statement");
  check_error("f(x) = 1\nlet a.b = 2\ng(a = 1, 2)\nh(1 = 2)\ndef k(a = 1, b) { }\n",
              "t.pd:1:2: error: cannot assign to a function call; only a name can be\n"
              "    1 | f(x) = 1\n"
              "      |  ^\n"
              "t.pd:2:7: error: cannot declare an attribute; only a name can be\n"
              "    2 | let a.b = 2\n"
              "      |       ^\n"
              "t.pd:3:10: error: positional argument follows keyword argument 'a'\n"
              "    3 | g(a = 1, 2)\n"
              "      |          ^\n"
              "t.pd:4:3: error: a keyword argument needs a name before '=', not a number\n"
              "    4 | h(1 = 2)\n"
              "      |   ^\n"
              "t.pd:5:14: error: parameter 'b' without a default follows parameter 'a' with one\n"
              "    5 | def k(a = 1, b) { }\n"
              "      |              ^\n",
              "targets, keyword arguments and parameters");

  /* The error limit: with 2, the third error stops the parse with a note. */
  parsed r = parse_ex("a = )\nb = )\nc = )\nd = )\n", 24, 2, 0);
  is_int(r.status, PD_ESYNTAX, "error limit: fails");
  is_int(r.nerrors, 3, "error limit: stops at one past the limit");
  ok(strstr(r.diags, "t.pd:2:5: error") && !strstr(r.diags, "t.pd:3:5") &&
         strstr(r.diags, "t.pd: too many errors (2), stopping\n"),
     "error limit: two rendered, then the note");
  parsed_free(&r);
}

/* `n` copies of `unit`, then `tail` (heap). */
static char *repeat(const char *head, const char *unit, int n, const char *tail) {
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_puts(&b, head);
  for (int i = 0; i < n; i++) pd_buf_puts(&b, unit);
  pd_buf_puts(&b, tail);
  return pd_buf_take(&b);
}

/* Parse a generated text; check the status and, if given, that the diagnostics start with `diag`
 * and hold exactly one error. */
static void check_generated(char *text, pd_status want, const char *diag, const char *what) {
  parsed r = parse(text);
  is_int(r.status, want, "%s", what);
  if (diag) {
    ok(strncmp(r.diags, diag, strlen(diag)) == 0 && r.nerrors == 1, "%s: one clean error", what);
    if (strncmp(r.diags, diag, strlen(diag)) != 0) printf("# got: %.200s\n", r.diags);
  }
  parsed_free(&r);
  pd_free(text);
}

static void test_limits(void) {
  check_generated(repeat("", "if (x) {\n", 10000, ""), PD_ESYNTAX,
                  "t.pd:257:8: error: blocks nested too deeply (limit 256)\n",
                  "10000 nested blocks");
  check_generated(repeat("", "if (x) {\n", 200, "y = 1\n"), PD_ESYNTAX, NULL,
                  "200 nested blocks left open");
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; i < 200; i++) pd_buf_puts(&b, "while (x) {\n");
  for (int i = 0; i < 200; i++) pd_buf_puts(&b, "}\n");
  check_generated(pd_buf_take(&b), PD_OK, NULL, "200 nested blocks parse");
  check_generated(repeat("x = ", "(", 100000, "1"), PD_ESYNTAX,
                  "t.pd:1:261: error: parentheses nested too deeply (limit 256)\n",
                  "100000 '('");
  check_generated(repeat("x = ", "(", 250, "1"), PD_ESYNTAX,
                  "t.pd:1:256: error: unexpected end of input: expected ')' to close the '(' "
                  "opened at 1:254\n",
                  "250 unclosed '(': the innermost is named");
  char *text = repeat("x = 1", " + 1", 2000, "\n");
  parsed r = parse(text);
  ok(r.status == PD_ESYNTAX && r.nerrors == 1 &&
         strstr(r.diags, "error: expression nested too deeply (limit 1000 levels)") != NULL,
     "a 2000-term operator chain is too deep for the tree: one error");
  parsed_free(&r);
  pd_free(text);
  check_generated(repeat("x = 1", " + 1", 900, "\n"), PD_OK, NULL, "900 terms parse");
  check_generated(repeat("x = ", "- ", 200, "1"), PD_OK, NULL, "200 unary minus parse");
  check_generated(repeat("x = ", "[", 200, ""), PD_ESYNTAX, NULL, "200 unclosed '['");
  check_generated(repeat("if (a) { }", " else if (b) { }", 20000, " else { }\n"), PD_OK, NULL,
                  "a 20000-branch else-if chain is flat");
  check_generated(repeat("x = [", "1, ", 200000, "]\n"), PD_OK, NULL, "a 200000-element list");
  check_generated(repeat("", "f(x, y = 2)\n", 100000, ""), PD_OK, NULL, "100000 statements");
  check_generated(repeat("", "\n", 100000, ""), PD_OK, NULL, "100000 empty lines");
  check_generated(repeat("", ";", 100000, ""), PD_OK, NULL, "100000 empty statements");
}

/* A deterministic generator for the random inputs (xorshift64*). */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Du;
}

/* Random bytes, and random sequences of tokens and fragments that get deeper into the grammar.
 * Any outcome but a crash (or a sanitizer report) is fine; the statuses must be consistent. */
static void test_random(void) {
  static const char *const pieces[] = {
      "x", "f", "(", ")", "[", "]", "{", "}", ",", ".", ":", ";", "=", "==", "<", "+", "-",
      "*", "@", "not ", "and ", "or ", "if ", "else ", "for ", "in ", "while ", "def ",
      "return ", "emit ", "let ", "import ", "1", "2.5", "\"s\"", "'t", "\\q", "\n", " ",
      "#c\n", "\0", "\xff", "\xCF\x80", "$", "true", "none", "1e", "\"\\x4\"", "->"};
  int consistent = 1, parsed_ok = 0;
  for (int round = 0; round < 3000; round++) {
    pd_buf b;
    pd_buf_init(&b);
    int n = (int)(rng() % 60);
    for (int i = 0; i < n; i++) {
      if (round % 3 == 0) {
        unsigned char c = (unsigned char)rng();
        pd_buf_append(&b, &c, 1);
      } else {
        const char *p = pieces[rng() % PD_ARRAY_LEN(pieces)];
        pd_buf_append(&b, p, *p ? strlen(p) : 1);
      }
    }
    parsed r = parse_ex(b.data ? b.data : "", b.len, 0, round % 2);
    consistent &= (r.status == PD_OK) == (r.dump != NULL);
    consistent &= r.status == PD_OK || r.status == PD_ESYNTAX;
    consistent &= r.status == PD_OK || r.nerrors > 0 || r.incomplete;
    consistent &= r.height <= PD_AST_MAX_DEPTH;
    parsed_ok += r.status == PD_OK;
    parsed_free(&r);
    pd_buf_free(&b);
  }
  ok(consistent, "3000 random inputs: statuses, trees and diagnostics agree");
  ok(parsed_ok > 10, "... and some of them (%d) are programs", parsed_ok);
}

/* Make the k-th allocation fail, for every k: each parse must fail cleanly with PD_ENOMEM (or
 * succeed, once k is past the allocations made), and free everything. */
static void test_alloc_failure(void) {
  static const char *const programs[] = {
      "import \"layers\"\nx = data(\"images\", [-1, 784])\nh = fc(x, 256, act = relu)\n"
      "if (x > 15) {\n  let d = x + y\n} else if (z) { o = d[1:2, :] } else {\n  o = d.shape\n}\n"
      "for (t in x) { emit o1 = a, o2 = not b }\nwhile (c) { c = c - 1 }\n"
      "def f(x, size, act = none) {\n  return x @ w, size\n}\na, b = f(1.5, 'two')\n",
      "x = (1 + )\nif (x) {\n  y = \"bad \\q escape\"\n  $\n",
  };
  for (size_t p = 0; p < PD_ARRAY_LEN(programs); p++) {
    const char *text = programs[p];
    pd_alloc_fail_after(0);
    parsed ref = parse(text);
    long total = pd_alloc_fail_after(0);
    int clean = 1;
    for (long k = 1; k <= total; k++) {
      pd_alloc_fail_after(k);
      parsed r = parse(text);
      pd_alloc_fail_after(0);
      if (r.status == PD_ENOMEM)
        clean &= r.dump == NULL;
      else
        clean &= r.status == ref.status;
      parsed_free(&r);
    }
    ok(total > 10 && clean, "program %zu: each of its %ld allocations can fail cleanly", p, total);
    parsed_free(&ref);
  }
}

int main(void) {
  test_precedence();
  test_statements();
  test_walk();
  test_arena();
  test_repl();
  test_errors();
  test_limits();
  test_random();
  test_alloc_failure();
  return tap_done();
}
