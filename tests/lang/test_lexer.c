/* test_lexer.c -- unit tests of the scanner (lang/lexer.re): tokens, locations, values, the
 * newline rules, brackets and limits, and every class of lexical error. Token streams are
 * compared as text, e.g. "IDENT(x)@1:1 '='@1:3 INT(1)@1:5 END@1:6". */
#include "config.h"
#include "base/diag.h"
#include "lang/ast.h"
#include "lang/lexer.h"
#include "lang/parser.h"
#include "tests/tap.h"

#include <inttypes.h>
#include <stdlib.h>

static const char *kind_name(int kind) {
  switch (kind) {
  case PD_TOK_END: return "END";
  case PD_TOK_PD_YYerror: return "ERROR";
  case PD_TOK_NEWLINE: return "NL";
  case PD_TOK_IDENT: return "IDENT";
  case PD_TOK_INT: return "INT";
  case PD_TOK_FLOAT: return "FLOAT";
  case PD_TOK_STRING: return "STRING";
  case PD_TOK_AND: return "and";
  case PD_TOK_DEF: return "def";
  case PD_TOK_ELSE: return "else";
  case PD_TOK_EMIT: return "emit";
  case PD_TOK_FALSE: return "false";
  case PD_TOK_FOR: return "for";
  case PD_TOK_IF: return "if";
  case PD_TOK_IMPORT: return "import";
  case PD_TOK_IN: return "in";
  case PD_TOK_LET: return "let";
  case PD_TOK_NONE: return "none";
  case PD_TOK_NOT: return "not";
  case PD_TOK_OR: return "or";
  case PD_TOK_RETURN: return "return";
  case PD_TOK_TRUE: return "true";
  case PD_TOK_WHILE: return "while";
  case PD_TOK_EQ: return "==";
  case PD_TOK_NE: return "!=";
  case PD_TOK_LE: return "<=";
  case PD_TOK_GE: return ">=";
  case PD_TOK_ARROW: return "->";
  default: return NULL;
  }
}

/* Everything one lexing run produced. */
typedef struct lexed {
  char *tokens;      /* the token stream as text (heap) */
  char *diags;       /* the rendered diagnostics (heap) */
  int nerrors;
  pd_token last;     /* the last token before END */
} lexed;

/* Lex `text` (len bytes) completely, with an error limit of `max_errors` (0: default). */
static lexed lex_n(const char *text, size_t len, int max_errors) {
  pd_source *src;
  pd_source_from_string("t.pd", text, len, &src);
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags diags;
  pd_diags_init(&diags, max_errors);
  pd_lexer lx;
  pd_lex_init(&lx, src, arena, &diags);
  pd_buf out;
  pd_buf_init(&out);
  lexed r = {0};
  for (int guard = 0; guard < 100000; guard++) {
    pd_token t;
    pd_lex_next(&lx, &t);
    if (out.len) pd_buf_puts(&out, " ");
    const char *name = kind_name(t.kind);
    if (name)
      pd_buf_puts(&out, name);
    else
      pd_buf_printf(&out, "'%c'", t.kind);
    switch (t.kind) {
    case PD_TOK_IDENT: pd_buf_printf(&out, "(%s)", t.value.s.data); break;
    case PD_TOK_INT: pd_buf_printf(&out, "(%" PRId64 ")", t.value.i); break;
    case PD_TOK_FLOAT: pd_buf_printf(&out, "(%g)", t.value.f); break;
    case PD_TOK_STRING: pd_buf_printf(&out, "(%zu)", t.value.s.len); break;
    default: break;
    }
    pd_buf_printf(&out, "@%d:%d", t.loc.line, t.loc.col);
    if (t.kind == PD_TOK_END) break;
    r.last = t;
  }
  r.tokens = pd_buf_take(&out);
  r.nerrors = pd_lex_error_count(&lx);
  r.diags = pd_buf_take(&diags.text);
  pd_lex_free(&lx);
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);
  /* String values live in the arena, which is gone: keep only what the tests compare. */
  if (r.last.kind == PD_TOK_IDENT || r.last.kind == PD_TOK_STRING) r.last.value.s.data = NULL;
  r.last.text = NULL;
  return r;
}

static lexed lex(const char *text) { return lex_n(text, strlen(text), 0); }

static void lexed_free(lexed *r) {
  pd_free(r->tokens);
  pd_free(r->diags);
}

/* Check the token stream of `text`, and that it lexes without errors. */
static void check_tokens(const char *text, const char *want, const char *what) {
  lexed r = lex(text);
  is_str(r.tokens, want, "%s", what);
  if (r.nerrors) printf("# unexpected diagnostics:\n%s", r.diags);
  ok(r.nerrors == 0, "%s: no errors", what);
  lexed_free(&r);
}

/* Check the token stream and the exact diagnostics of erroneous `text`. */
static void check_errors(const char *text, size_t len, const char *want_tokens,
                         const char *want_diags, const char *what) {
  lexed r = lex_n(text, len, 0);
  is_str(r.tokens, want_tokens, "%s: tokens", what);
  is_str(r.diags, want_diags, "%s: diagnostics", what);
  lexed_free(&r);
}
#define CHECK_ERRORS(lit, tokens, diags, what) check_errors(lit, sizeof lit - 1, tokens, diags, what)

static void test_basics(void) {
  check_tokens("x = 1\n", "IDENT(x)@1:1 '='@1:3 INT(1)@1:5 END@1:6", "assignment: a final newline is dropped");
  check_tokens("", "END@1:1", "empty input");
  check_tokens("x", "IDENT(x)@1:1 END@1:2", "no final newline");
  check_tokens("\n\n  \n", "END@3:3", "blank lines only: END at the end of the last line");
  check_tokens("if iffy in int_ none nonex not note _a1 A_9",
               "if@1:1 IDENT(iffy)@1:4 in@1:9 IDENT(int_)@1:12 none@1:17 IDENT(nonex)@1:22 "
               "not@1:28 IDENT(note)@1:32 IDENT(_a1)@1:37 IDENT(A_9)@1:41 END@1:44",
               "keywords and identifiers");
  check_tokens("and def else emit false for import let or return true while",
               "and@1:1 def@1:5 else@1:9 emit@1:14 false@1:19 for@1:25 import@1:29 let@1:36 "
               "or@1:40 return@1:43 true@1:50 while@1:55 END@1:60",
               "all other keywords");
  check_tokens("+-*/@%=<>()[]{},.:;",
               "'+'@1:1 '-'@1:2 '*'@1:3 '/'@1:4 '@'@1:5 '%'@1:6 '='@1:7 '<'@1:8 '>'@1:9 '('@1:10 "
               "')'@1:11 '['@1:12 ']'@1:13 '{'@1:14 '}'@1:15 ','@1:16 '.'@1:17 ':'@1:18 ';'@1:19 "
               "END@1:20",
               "one-character punctuation");
  check_tokens("== != <= >= -> <<= =>",
               "==@1:1 !=@1:4 <=@1:7 >=@1:10 ->@1:13 '<'@1:16 <=@1:17 '='@1:20 '>'@1:21 END@1:22",
               "two-character operators, longest match");
  check_tokens("a # comment = ( [\nb", "IDENT(a)@1:1 NL@1:2 IDENT(b)@2:1 END@2:2", "comments");
  check_tokens("a\r\nb\r\n", "IDENT(a)@1:1 NL@1:2 IDENT(b)@2:1 END@2:3", "CRLF line ends");
  check_tokens("\t\f\vx", "IDENT(x)@1:4 END@1:5", "tabs count one column each");
  check_tokens("\xEF\xBB\xBFx", "IDENT(x)@1:4 END@1:5", "a UTF-8 byte order mark is skipped");
  check_tokens("# \xCF\x80 \xE2\x82\xAC \xF0\x9F\x98\x80\nx", "IDENT(x)@2:1 END@2:2",
               "UTF-8 in comments");
}

static void test_numbers(void) {
  check_tokens("0 42 007 9223372036854775807",
               "INT(0)@1:1 INT(42)@1:3 INT(7)@1:6 INT(9223372036854775807)@1:10 END@1:29",
               "integers");
  check_tokens("1.5 1. .5 1e3 2.5E+4 1e-3 0.314 1.e2",
               "FLOAT(1.5)@1:1 FLOAT(1)@1:5 FLOAT(0.5)@1:8 FLOAT(1000)@1:11 FLOAT(25000)@1:15 "
               "FLOAT(0.001)@1:22 FLOAT(0.314)@1:27 FLOAT(100)@1:33 END@1:37",
               "floats");
  check_tokens("x.y 1.5.3 a[0].b", "IDENT(x)@1:1 '.'@1:2 IDENT(y)@1:3 FLOAT(1.5)@1:5 FLOAT(0.3)@1:8 "
               "IDENT(a)@1:11 '['@1:12 INT(0)@1:13 ']'@1:14 '.'@1:15 IDENT(b)@1:16 END@1:17",
               "dots: attributes and fractions");

  lexed r = lex("1e-3 2.5E+4 .5 0.1");
  is_str(r.tokens, "FLOAT(0.001)@1:1 FLOAT(25000)@1:6 FLOAT(0.5)@1:13 FLOAT(0.1)@1:16 END@1:19",
         "exponents");
  is_close(r.last.value.f, 0.1, 0, "0.1 reads as the nearest double");
  lexed_free(&r);

  CHECK_ERRORS("9223372036854775808", "INT(0)@1:1 END@1:20",
               "t.pd:1:1: error: integer literal 9223372036854775808 is too large (the maximum is "
               "9223372036854775807)\n"
               "    1 | 9223372036854775808\n"
               "      | ^\n",
               "integer overflow");
  CHECK_ERRORS("x = 1e999", "IDENT(x)@1:1 '='@1:3 FLOAT(0)@1:5 END@1:10",
               "t.pd:1:5: error: number 1e999 is out of range\n"
               "    1 | x = 1e999\n"
               "      |     ^\n",
               "float overflow");
  lexed u = lex("1e-400");
  ok(u.nerrors == 0 && strcmp(u.tokens, "FLOAT(0)@1:1 END@1:7") == 0, "underflow reads as 0");
  lexed_free(&u);
  CHECK_ERRORS("12abc 1e 0x1F 3.5f", "ERROR@1:1 ERROR@1:7 ERROR@1:10 ERROR@1:15 END@1:19",
               "t.pd:1:1: error: invalid number '12abc'\n"
               "    1 | 12abc 1e 0x1F 3.5f\n"
               "      | ^\n"
               "t.pd:1:7: error: invalid number '1e'\n"
               "    1 | 12abc 1e 0x1F 3.5f\n"
               "      |       ^\n"
               "t.pd:1:10: error: invalid number '0x1F'\n"
               "    1 | 12abc 1e 0x1F 3.5f\n"
               "      |          ^\n"
               "t.pd:1:15: error: invalid number '3.5f'\n"
               "    1 | 12abc 1e 0x1F 3.5f\n"
               "      |               ^\n",
               "numbers glued to letters");
}

/* Lex one string literal and return its decoded bytes (heap) and length. */
static char *string_value(const char *text, size_t *len, int *nerrors) {
  pd_source *src;
  pd_source_from_string("t.pd", text, strlen(text), &src);
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags diags;
  pd_diags_init(&diags, 0);
  pd_lexer lx;
  pd_lex_init(&lx, src, arena, &diags);
  pd_token t;
  pd_lex_next(&lx, &t);
  char *copy = NULL;
  *len = 0;
  if (t.kind == PD_TOK_STRING) {
    copy = pd_malloc(t.value.s.len + 1);
    memcpy(copy, t.value.s.data, t.value.s.len + 1);
    *len = t.value.s.len;
  }
  *nerrors = pd_lex_error_count(&lx);
  pd_lex_free(&lx);
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);
  return copy;
}

static void check_string(const char *text, const char *want, size_t want_len, const char *what) {
  size_t len;
  int nerrors;
  char *got = string_value(text, &len, &nerrors);
  ok(got && len == want_len && memcmp(got, want, want_len) == 0 && got[len] == '\0' &&
         nerrors == 0,
     "string %s", what);
  pd_free(got);
}
#define CHECK_STRING(text, lit, what) check_string(text, lit, sizeof lit - 1, what)

static void test_strings(void) {
  CHECK_STRING("\"images\"", "images", "plain");
  CHECK_STRING("'it''s'", "it", "single quotes (the second string is separate)");
  CHECK_STRING("\"\"", "", "empty");
  CHECK_STRING("'say \"hi\"'", "say \"hi\"", "double quotes inside single quotes");
  CHECK_STRING("\"it's\"", "it's", "single quote inside double quotes");
  CHECK_STRING("\"a\\nb\\tc\\rd\\\\e\\\"f\\'g\"", "a\nb\tc\rd\\e\"f'g", "simple escapes");
  CHECK_STRING("\"\\x41\\x00\\xff\"", "A\0\xff", "hex escapes, NUL included");
  CHECK_STRING("\"\\u00e9\\u20AC\\U0001F600\"", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
               "code point escapes in UTF-8");
  CHECK_STRING("\"caf\xC3\xA9 \xE2\x82\xAC\"", "caf\xC3\xA9 \xE2\x82\xAC", "raw UTF-8");
  CHECK_STRING("\"tab\there\"", "tab\there", "raw tab");

  CHECK_ERRORS("x = \"ab\\qc\\x4g\\u12\"\n",
               "IDENT(x)@1:1 '='@1:3 STRING(7)@1:5 END@1:20",
               "t.pd:1:8: error: invalid escape sequence '\\q' (valid: \\n \\t \\r \\\\ \\\" \\' "
               "\\xHH \\uHHHH \\UHHHHHHHH)\n"
               "    1 | x = \"ab\\qc\\x4g\\u12\"\n"
               "      |        ^\n"
               "t.pd:1:11: error: invalid escape '\\x': it takes two hex digits\n"
               "    1 | x = \"ab\\qc\\x4g\\u12\"\n"
               "      |           ^\n"
               "t.pd:1:15: error: invalid escape '\\u': it takes four hex digits\n"
               "    1 | x = \"ab\\qc\\x4g\\u12\"\n"
               "      |               ^\n",
               "bad escapes: located at the backslash, the string still a token");
  CHECK_ERRORS("\"\\uD800\\U00110000\"", "STRING(0)@1:1 END@1:19",
               "t.pd:1:2: error: invalid escape '\\uD800': U+D800 is a surrogate\n"
               "    1 | \"\\uD800\\U00110000\"\n"
               "      |  ^\n"
               "t.pd:1:8: error: invalid escape '\\U00110000': U+110000 is beyond U+10FFFF\n"
               "    1 | \"\\uD800\\U00110000\"\n"
               "      |        ^\n",
               "code points that are not characters");
  CHECK_ERRORS("s = \"abc\nt = 'x", "IDENT(s)@1:1 '='@1:3 STRING(3)@1:5 NL@1:9 IDENT(t)@2:1 "
               "'='@2:3 STRING(1)@2:5 END@2:7",
               "t.pd:1:5: error: unterminated string (no closing \" on this line)\n"
               "    1 | s = \"abc\n"
               "      |     ^\n"
               "t.pd:2:5: error: unterminated string (no closing ' on this line)\n"
               "    2 | t = 'x\n"
               "      |     ^\n",
               "unterminated strings: reported at the opening quote");
  CHECK_ERRORS("\"a\\\nb\"", "STRING(1)@1:1 NL@1:4 IDENT(b)@2:1 STRING(0)@2:2 END@2:3",
               "t.pd:1:1: error: unterminated string (no closing \" on this line)\n"
               "    1 | \"a\\\n"
               "      | ^\n"
               "t.pd:2:2: error: unterminated string (no closing \" on this line)\n"
               "    2 | b\"\n"
               "      |  ^\n",
               "a backslash does not continue a string on the next line");
  CHECK_ERRORS("\"a\0b\xff\"", "STRING(2)@1:1 END@1:7",
               "t.pd:1:3: error: NUL byte in string (write \\x00)\n"
               "    1 | \"a?b\xff\"\n"
               "      |   ^\n"
               "t.pd:1:5: error: invalid UTF-8 byte 0xFF in string\n"
               "    1 | \"a?b\xff\"\n"
               "      |     ^\n",
               "NUL and invalid UTF-8 inside a string");
}

static void test_newlines(void) {
  check_tokens("a\n\n\nb\n", "IDENT(a)@1:1 NL@1:2 IDENT(b)@4:1 END@4:2",
               "consecutive newlines make one token");
  check_tokens("\n\n# c\nx\n", "IDENT(x)@4:1 END@4:2", "no newline before the first token");
  check_tokens("f(a,\n  b\n)\n", "IDENT(f)@1:1 '('@1:2 IDENT(a)@1:3 ','@1:4 IDENT(b)@2:3 "
               "')'@3:1 END@3:2", "newlines inside parentheses are blanks");
  check_tokens("[1\n,2\n]", "'['@1:1 INT(1)@1:2 ','@2:1 INT(2)@2:2 ']'@3:1 END@3:2",
               "newlines inside brackets are blanks");
  check_tokens("x = a +\n  b\n", "IDENT(x)@1:1 '='@1:3 IDENT(a)@1:5 '+'@1:7 IDENT(b)@2:3 END@2:4", "a newline after an operator continues the statement");
  check_tokens("if (c) {\n  x\n}\nelse {\n}\n",
               "if@1:1 '('@1:4 IDENT(c)@1:5 ')'@1:6 '{'@1:8 IDENT(x)@2:3 NL@2:4 '}'@3:1 else@4:1 "
               "'{'@4:6 '}'@5:1 END@5:2",
               "'else' may start the line after '}'");
  check_tokens("def f(x)\n# body\n{\n}\n",
               "def@1:1 IDENT(f)@1:5 '('@1:6 IDENT(x)@1:7 ')'@1:8 '{'@3:1 '}'@4:1 END@4:2",
               "'{' may start the line after the header");
  check_tokens("x = f(\n  {\n a\n  }\n)",
               "IDENT(x)@1:1 '='@1:3 IDENT(f)@1:5 '('@1:6 '{'@2:3 IDENT(a)@3:2 NL@3:3 '}'@4:3 "
               "')'@5:1 END@5:2",
               "inside a '{' newlines count again, even within '('");
  check_tokens("return\nx;y\n", "return@1:1 NL@1:7 IDENT(x)@2:1 ';'@2:2 IDENT(y)@2:3 END@2:4", "'return' ends a statement; ';' separates");
  check_tokens("x\n", "IDENT(x)@1:1 END@1:2", "the end of input after a final newline");
  check_tokens("x\n\n", "IDENT(x)@1:1 END@2:1", "... and after a blank last line");
  check_tokens("x # note\ny", "IDENT(x)@1:1 NL@1:2 IDENT(y)@2:1 END@2:2",
               "a newline token sits just after the code, not after a comment");
}

static void test_brackets(void) {
  /* A '}' closes a '(' left open inside its block: newlines count again after it. */
  check_tokens("{ f( }\nx", "'{'@1:1 IDENT(f)@1:3 '('@1:4 '}'@1:6 NL@1:7 IDENT(x)@2:1 END@2:2",
               "a closer closes the brackets opened inside it");
  check_tokens(") ]\nx", "')'@1:1 ']'@1:3 NL@1:4 IDENT(x)@2:1 END@2:2",
               "unmatched closers are left to the parser");

  pd_source *src;
  const char *text = "if (x) {\n  y = [f(1,\n";
  pd_source_from_string("t.pd", text, strlen(text), &src);
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags diags;
  pd_diags_init(&diags, 0);
  pd_lexer lx;
  pd_lex_init(&lx, src, arena, &diags);
  pd_token t;
  do pd_lex_next(&lx, &t);
  while (t.kind != PD_TOK_END);
  is_int(lx.depth, 3, "three brackets are open at the end");
  const pd_lex_bracket *in = pd_lex_innermost(&lx);
  ok(in && in->open == '(' && in->loc.line == 2 && in->loc.col == 9, "innermost: the '(' at 2:9");
  ok(lx.brackets[0].open == '{' && lx.brackets[0].owner && strcmp(lx.brackets[0].owner, "if") == 0,
     "the outermost is the block of an 'if'");
  pd_lex_free(&lx);
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);

  /* Mismatched closers remember what they should have closed. */
  text = "(a]";
  pd_source_from_string("t.pd", text, strlen(text), &src);
  arena = pd_ast_arena_new();
  pd_diags_init(&diags, 0);
  pd_lex_init(&lx, src, arena, &diags);
  for (int i = 0; i < 3; i++) pd_lex_next(&lx, &t);
  ok(t.kind == ']' && lx.mismatch && lx.mismatched.open == '(' && lx.mismatched.loc.col == 1,
     "']' after '(' is a mismatch that points at the '('");
  pd_lex_free(&lx);
  pd_diags_free(&diags);
  pd_ast_arena_free(arena);
  pd_source_free(src);
}

/* `n` copies of `unit`, then `tail` (heap). */
static char *repeat(const char *unit, int n, const char *tail) {
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; i < n; i++) pd_buf_puts(&b, unit);
  pd_buf_puts(&b, tail);
  return pd_buf_take(&b);
}

static void test_limits(void) {
  char *text = repeat("(", PD_LEX_MAX_NESTING, "x");
  lexed r = lex(text);
  ok(r.nerrors == 0, "%d nested parentheses are fine", PD_LEX_MAX_NESTING);
  lexed_free(&r);
  pd_free(text);

  text = repeat("{", 100000, "");
  r = lex(text);
  is_int(r.nerrors, 1, "100000 '{': one error");
  ok(strstr(r.diags, "t.pd:1:257: error: blocks nested too deeply (limit 256)\n") == r.diags,
     "... at the first '{' past the limit");
  ok(strlen(r.tokens) < 300 * 12, "... and scanning stops there");
  lexed_free(&r);
  pd_free(text);

  text = repeat("[", 300, "");
  r = lex(text);
  ok(strstr(r.diags, "t.pd:1:257: error: brackets nested too deeply (limit 256)\n") == r.diags,
     "too many '['");
  lexed_free(&r);
  pd_free(text);

  text = repeat("- ", PD_LEX_MAX_NESTING, "x");
  r = lex(text);
  ok(r.nerrors == 0, "%d unary minus in a row are fine", PD_LEX_MAX_NESTING);
  lexed_free(&r);
  pd_free(text);

  text = repeat("not -", 200, "x");
  r = lex(text);
  ok(strstr(r.diags, "t.pd:1:641: error: too many unary operators in a row (limit 256)\n") ==
         r.diags,
     "too many prefix operators in a row");
  lexed_free(&r);
  pd_free(text);

  text = repeat("x - ", 1000, "x");
  r = lex(text);
  ok(r.nerrors == 0, "binary minus does not count");
  lexed_free(&r);
  pd_free(text);
}

static void test_bad_bytes(void) {
  CHECK_ERRORS("x\0\0\0y", "IDENT(x)@1:1 ERROR@1:2 IDENT(y)@1:5 END@1:6",
               "t.pd:1:2: error: unexpected NUL byte (is this a binary file?)\n"
               "    1 | x???y\n"
               "      |  ^\n",
               "a run of NUL bytes is one error");
  CHECK_ERRORS("a $ b", "IDENT(a)@1:1 ERROR@1:3 IDENT(b)@1:5 END@1:6",
               "t.pd:1:3: error: unexpected character '$'\n"
               "    1 | a $ b\n"
               "      |   ^\n",
               "a stray character");
  CHECK_ERRORS("!x", "ERROR@1:1 IDENT(x)@1:2 END@1:3",
               "t.pd:1:1: error: unexpected character '!' (use 'not' to negate, '!=' to compare)\n"
               "    1 | !x\n"
               "      | ^\n",
               "'!' with a hint");
  CHECK_ERRORS("\x07", "ERROR@1:1 END@1:2",
               "t.pd:1:1: error: unexpected control character U+0007\n"
               "    1 | ?\n"
               "      | ^\n",
               "a control character");
  CHECK_ERRORS("x = \xCF\x80", "IDENT(x)@1:1 '='@1:3 ERROR@1:5 END@1:7",
               "t.pd:1:5: error: unexpected character '\xCF\x80' (U+03C0)\n"
               "    1 | x = \xCF\x80\n"
               "      |     ^\n",
               "a non-ASCII character outside strings");
  CHECK_ERRORS("a\xff\xC0\xAF", "IDENT(a)@1:1 ERROR@1:2 ERROR@1:3 ERROR@1:4 END@1:5",
               "t.pd:1:2: error: invalid UTF-8 byte 0xFF\n"
               "    1 | a\xff\xC0\xAF\n"
               "      |  ^\n"
               "t.pd:1:3: error: invalid UTF-8 byte 0xC0\n"
               "    1 | a\xff\xC0\xAF\n"
               "      |   ^\n"
               "t.pd:1:4: error: invalid UTF-8 byte 0xAF\n"
               "    1 | a\xff\xC0\xAF\n"
               "      |    ^\n",
               "invalid UTF-8 (an overlong form too)");
  CHECK_ERRORS("# ok \xED\xA0\x80 rest\nx", "IDENT(x)@2:1 END@2:2",
               "t.pd:1:6: error: invalid UTF-8 byte 0xED in comment\n"
               "    1 | # ok \xED\xA0\x80 rest\n"
               "      |      ^\n",
               "invalid UTF-8 in a comment: one error, the line skipped");
  CHECK_ERRORS("# a\0b\nx", "IDENT(x)@2:1 END@2:2",
               "t.pd:1:4: error: NUL byte in comment\n"
               "    1 | # a?b\n"
               "      |    ^\n",
               "a NUL byte in a comment");

  /* The error limit stops the scan: 3 errors rendered, then the "too many" line. */
  lexed r = lex_n("$ $ $ $ $ $ $ $", 15, 3);
  is_str(r.tokens, "ERROR@1:1 ERROR@1:3 ERROR@1:5 END@1:7", "the scan stops after the limit");
  is_int(r.nerrors, 4, "the error past the limit is counted");
  ok(strstr(r.diags, "t.pd: too many errors (3), stopping\n") != NULL, "... and announced");
  lexed_free(&r);
}

int main(void) {
  test_basics();
  test_numbers();
  test_strings();
  test_newlines();
  test_brackets();
  test_limits();
  test_bad_bytes();
  return tap_done();
}
