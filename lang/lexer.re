/* lexer.re -- the pdlang scanner: re2c turns this file into lang/lexer.c. It cuts a pd_source into
 * tokens (with locations and decoded values), reports every lexical error itself, and applies the
 * newline rules of lang/lexer.h. Every byte is matched by some rule: bad bytes, NULs and invalid
 * UTF-8 end in an error token, never in undefined behaviour. */
#include "config.h"
#include "lang/lexer.h"
#include "lang/parser.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/*!re2c
  re2c:define:YYCTYPE = "unsigned char";
  re2c:define:YYCURSOR = cur;
  re2c:define:YYMARKER = mar;
  re2c:define:YYLIMIT = lim;
  re2c:yyfill:enable = 0;
  re2c:eof = 0;

  u8tail   = [\x80-\xbf];
  u8multi  = [\xc2-\xdf] u8tail
           | "\xe0" [\xa0-\xbf] u8tail
           | [\xe1-\xec\xee\xef] u8tail u8tail
           | "\xed" [\x80-\x9f] u8tail
           | "\xf0" [\x90-\xbf] u8tail u8tail
           | [\xf1-\xf3] u8tail u8tail u8tail
           | "\xf4" [\x80-\x8f] u8tail u8tail;
  linechar = [\x01-\x09\x0b-\x7f] | u8multi;   // any valid character but newline and NUL

  dec      = [0-9]+;
  exp      = [eE] [+-]? dec;
  float    = dec "." dec? exp? | "." dec exp? | dec exp;
  ident    = [a-zA-Z_] [a-zA-Z_0-9]*;
  hex      = [0-9a-fA-F];
*/

/* Messages quote at most this many bytes of a token. */
enum { EXCERPT = 32 };
#define EXCERPT_FMT "%.*s%s"
#define EXCERPT_ARGS(p, n) \
  (int)((n) > EXCERPT ? EXCERPT : (n)), (const char *)(p), (n) > EXCERPT ? "..." : ""

/* ---- Errors ---- */

void pd_lex_error(pd_lexer *lx, pd_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pd_diag_reportv(lx->diags, lx->src, PD_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  /* Go on until one error past the limit, so that pd_diags prints its "too many errors" line
   * only when there really are more errors. */
  if (lx->diags->nerrors > lx->diags->max_errors) lx->stop = 1;
}

int pd_lex_error_count(const pd_lexer *lx) { return lx->diags->nerrors - lx->errors_before; }

static void out_of_memory(pd_lexer *lx) {
  lx->nomem = 1;
  lx->stop = 1;
}

/* ---- Positions ---- */

static int clamp_int(size_t v) { return v > INT_MAX ? INT_MAX : (int)v; }

static pd_loc loc_at(const pd_lexer *lx, const unsigned char *p) {
  return (pd_loc){lx->src->name, lx->line, clamp_int((size_t)(p - lx->line_start) + 1)};
}

/* `nl` is a newline byte: the next line starts after it. */
static void new_line(pd_lexer *lx, const unsigned char *nl) {
  if (lx->line < INT_MAX) lx->line++;
  lx->prev_line_start = lx->line_start;
  lx->line_start = nl + 1;
}

/* The location of the end of input at `p`. When the text ends with a newline, that is the end of
 * the last line (where a caret can point), not the start of a line that does not exist. */
static pd_loc end_loc(const pd_lexer *lx, const unsigned char *p) {
  if (p == lx->lim && p == lx->line_start && lx->line > 1)
    return (pd_loc){lx->src->name, lx->line - 1,
                    clamp_int((size_t)(p - 1 - lx->prev_line_start) + 1)};
  return loc_at(lx, p);
}

/* ---- Setup ---- */

void pd_lex_init(pd_lexer *lx, const pd_source *src, pd_ast_arena *arena, pd_diags *diags) {
  memset(lx, 0, sizeof *lx);
  lx->src = src;
  lx->cur = (const unsigned char *)src->text;
  lx->lim = lx->cur + src->len;
  lx->line_start = lx->cur;
  lx->line = 1;
  lx->arena = arena;
  lx->diags = diags;
  lx->errors_before = diags->nerrors;
  pd_buf_init(&lx->scratch);
  /* A UTF-8 byte order mark is allowed at the very start and skipped. */
  if (src->len >= 3 && memcmp(src->text, "\xEF\xBB\xBF", 3) == 0) lx->cur += 3;
}

void pd_lex_free(pd_lexer *lx) {
  pd_buf_free(&lx->scratch);
  pd_free(lx->brackets);
  lx->brackets = NULL;
  lx->depth = lx->cap = 0;
}

const pd_lex_bracket *pd_lex_innermost(const pd_lexer *lx) {
  return lx->depth ? &lx->brackets[lx->depth - 1] : NULL;
}

/* ---- Brackets ---- */

static int bracket_index(char open) { return open == '(' ? 0 : open == '[' ? 1 : 2; }

static char opener_of(int closer) { return closer == ')' ? '(' : closer == ']' ? '[' : '{'; }

static void open_bracket(pd_lexer *lx, char open, pd_loc loc) {
  /* Blocks are counted apart from parentheses and brackets, so the message names the culprit. */
  size_t same = open == '{' ? lx->open_count[2] : lx->open_count[0] + lx->open_count[1];
  if (same >= PD_LEX_MAX_NESTING) {
    pd_lex_error(lx, loc, "%s nested too deeply (limit %d)",
                 open == '{' ? "blocks" : open == '(' ? "parentheses" : "brackets",
                 PD_LEX_MAX_NESTING);
    lx->stop = 1;
    return;
  }
  if (PD_GROW(lx->brackets, lx->cap, lx->depth + 1)) {
    out_of_memory(lx);
    return;
  }
  lx->brackets[lx->depth++] = (pd_lex_bracket){open, loc, open == '{' ? lx->owner : NULL};
  lx->open_count[bracket_index(open)]++;
  if (open == '{') lx->owner = NULL;
}

static void pop_bracket(pd_lexer *lx) {
  lx->open_count[bracket_index(lx->brackets[--lx->depth].open)]--;
}

/* A closer pops up to the innermost bracket of its kind, if one is open (so a '}' also closes a
 * '(' left open inside its block). A ')' or ']' with none of its kind open still closes an
 * innermost '(' or '[' -- `f(1, 2]` is a typo for `f(1, 2)` -- so that newlines count again and
 * the parser can recover at the end of the line; it never closes a block. The parser reports
 * the mismatch. */
static void close_bracket(pd_lexer *lx, int closer) {
  char open = opener_of(closer);
  const pd_lex_bracket *top = pd_lex_innermost(lx);
  lx->mismatch = top && top->open != open;
  if (lx->mismatch) lx->mismatched = *top;
  if (lx->open_count[bracket_index(open)] > 0) {
    while (lx->brackets[lx->depth - 1].open != open) pop_bracket(lx);
    pop_bracket(lx);
  } else if (top && top->open != '{' && closer != '}') {
    pop_bracket(lx);
  }
}

/* ---- Literals ---- */

static int64_t int_value(pd_lexer *lx, const unsigned char *s, const unsigned char *e, pd_loc loc) {
  int64_t v = 0;
  for (const unsigned char *p = s; p < e; p++) {
    int d = *p - '0';
    if (v > (INT64_MAX - d) / 10) {
      pd_lex_error(lx, loc, "integer literal " EXCERPT_FMT " is too large (the maximum is %" PRId64
                   ")", EXCERPT_ARGS(s, (size_t)(e - s)), INT64_MAX);
      return 0;
    }
    v = v * 10 + d;
  }
  return v;
}

/* strtod follows LC_NUMERIC; if the locale's decimal point is not '.', retry with it (as Lua
 * does), so the result never depends on the caller's locale. */
static double float_value(pd_lexer *lx, const unsigned char *s, const unsigned char *e, pd_loc loc) {
  size_t n = (size_t)(e - s);
  char *end;
  errno = 0;
  double v = strtod((const char *)s, &end);
  if (end != (const char *)e) {
    const unsigned char *dot = memchr(s, '.', n);
    pd_buf *b = &lx->scratch;
    pd_buf_clear(b);
    if (dot) {
      pd_buf_append(b, s, (size_t)(dot - s));
      pd_buf_puts(b, localeconv()->decimal_point);
      pd_buf_append(b, dot + 1, (size_t)(e - dot - 1));
    } else {
      pd_buf_append(b, s, n);
    }
    if (b->oom) {
      out_of_memory(lx);
      return 0;
    }
    errno = 0;
    v = strtod(b->data, &end);
  }
  if (errno == ERANGE && isinf(v)) {
    pd_lex_error(lx, loc, "number " EXCERPT_FMT " is out of range", EXCERPT_ARGS(s, n));
    return 0;
  }
  return v;
}

/* Append the UTF-8 encoding of code point `cp` (already validated). */
static void put_utf8(pd_buf *b, uint32_t cp) {
  unsigned char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (unsigned char)(0xC0 | cp >> 6);
    u[1] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (unsigned char)(0xE0 | cp >> 12);
    u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  pd_buf_append(b, u, n);
}

static uint32_t hex_value(const unsigned char *p, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; i++) {
    int c = p[i];
    v = v << 4 | (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

/* A \u or \U escape at `p` with `digits` hex digits. */
static void code_point_escape(pd_lexer *lx, const unsigned char *p, int digits) {
  uint32_t cp = hex_value(p + 2, digits);
  if (cp > 0x10FFFF)
    pd_lex_error(lx, loc_at(lx, p), "invalid escape '%.*s': U+%X is beyond U+10FFFF",
                 digits + 2, (const char *)p, (unsigned)cp);
  else if (cp >= 0xD800 && cp <= 0xDFFF)
    pd_lex_error(lx, loc_at(lx, p), "invalid escape '%.*s': U+%04X is a surrogate",
                 digits + 2, (const char *)p, (unsigned)cp);
  else
    put_utf8(&lx->scratch, cp);
}

static void unterminated(pd_lexer *lx, const unsigned char *open) {
  pd_lex_error(lx, loc_at(lx, open), "unterminated string (no closing %c on this line)", *open);
}

/* Scan the rest of a string literal whose opening `quote` is at `open`; `cur` is just past it.
 * Decodes into lx->scratch. Strings end on their line: a newline or the end of input before the
 * closing quote is an error reported at the opening quote. Returns where scanning goes on. */
static const unsigned char *scan_string(pd_lexer *lx, const unsigned char *open,
                                        const unsigned char *cur) {
  const unsigned char *lim = lx->lim, *mar, *start;
  pd_buf *b = &lx->scratch;
  pd_buf_clear(b);
  for (;;) {
    start = cur;
    /*!re2c
      $    { unterminated(lx, open); return start; }
      "\n" { unterminated(lx, open); return start; }
      ["'] {
        if (*start == *open) return cur;
        pd_buf_append(b, start, 1);
        continue;
      }
      ([\x01-\x09\x0b-\x7f] \ [\\"'])+ | u8multi { pd_buf_append(b, start, (size_t)(cur - start)); continue; }
      "\\n"  { pd_buf_puts(b, "\n"); continue; }
      "\\t"  { pd_buf_puts(b, "\t"); continue; }
      "\\r"  { pd_buf_puts(b, "\r"); continue; }
      "\\\\" { pd_buf_puts(b, "\\"); continue; }
      "\\\"" { pd_buf_puts(b, "\""); continue; }
      "\\'"  { pd_buf_puts(b, "'"); continue; }
      "\\x" hex{2} {
        unsigned char byte = (unsigned char)hex_value(start + 2, 2);
        pd_buf_append(b, &byte, 1);
        continue;
      }
      "\\u" hex{4} { code_point_escape(lx, start, 4); continue; }
      "\\U" hex{8} { code_point_escape(lx, start, 8); continue; }
      "\\" [xuU] {
        pd_lex_error(lx, loc_at(lx, start), "invalid escape '\\%c': it takes %s hex digits",
                     start[1], start[1] == 'x' ? "two" : start[1] == 'u' ? "four" : "eight");
        continue;
      }
      "\\" linechar {
        pd_lex_error(lx, loc_at(lx, start), "invalid escape sequence '%.*s' (valid: \\n \\t \\r "
                     "\\\\ \\\" \\' \\xHH \\uHHHH \\UHHHHHHHH)", (int)(cur - start),
                     (const char *)start);
        continue;
      }
      "\\" { continue; /* before a newline, a NUL or a bad byte: the next round reports it */ }
      [\x00] {
        pd_lex_error(lx, loc_at(lx, start), "NUL byte in string (write \\x00)");
        continue;
      }
      * {
        pd_lex_error(lx, loc_at(lx, start), "invalid UTF-8 byte 0x%02X in string", *start);
        continue;
      }
    */
  }
}

/* ---- Bad characters ---- */

/* Report the unexpected character(s) [p, e): a run of NULs, one UTF-8 sequence or one byte.
 * Returns the error token. */
static int bad_character(pd_lexer *lx, const unsigned char *p, const unsigned char *e) {
  pd_loc loc = loc_at(lx, p);
  size_t n = (size_t)(e - p);
  unsigned c = *p;
  if (c == 0) {
    pd_lex_error(lx, loc, "unexpected NUL byte (is this a binary file?)");
  } else if (n > 1) {
    uint32_t cp = n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t i = 1; i < n; i++) cp = cp << 6 | (p[i] & 0x3F);
    pd_lex_error(lx, loc, "unexpected character '%.*s' (U+%04X)", (int)n, (const char *)p,
                 (unsigned)cp);
  } else if (c >= 0x80) {
    pd_lex_error(lx, loc, "invalid UTF-8 byte 0x%02X", c);
  } else if (c < 0x20 || c == 0x7F) {
    pd_lex_error(lx, loc, "unexpected control character U+%04X", c);
  } else {
    const char *hint = c == '!' ? " (use 'not' to negate, '!=' to compare)"
                     : c == '&' ? " (use 'and')"
                     : c == '|' ? " (use 'or')"
                     : c == '\\' ? " (to continue a line, break it inside ( ) or [ ])"
                     : "";
    pd_lex_error(lx, loc, "unexpected character '%c'%s", (int)c, hint);
  }
  return PD_TOK_PD_YYerror;
}

/* ---- The scanner ---- */

/* Scan one raw token (newlines included) at lx->cur. */
static void scan(pd_lexer *lx, pd_token *tok) {
  const unsigned char *cur = lx->cur, *lim = lx->lim, *mar, *start;
  int kind;
  for (;;) {
    start = cur;
    /*!re2c
      $ { kind = PD_TOK_END; goto done; }

      [ \t\r\f\v]+ { continue; }
      "#" linechar* {
        if (cur < lim && *cur != '\n') {
          pd_lex_error(lx, loc_at(lx, cur), *cur ? "invalid UTF-8 byte 0x%02X in comment"
                                                 : "NUL byte in comment", *cur);
          const unsigned char *nl = memchr(cur, '\n', (size_t)(lim - cur));
          cur = nl ? nl : lim;
        }
        continue;
      }
      "\n" { kind = PD_TOK_NEWLINE; goto done; }

      "and"    { kind = PD_TOK_AND; goto done; }
      "def"    { kind = PD_TOK_DEF; goto done; }
      "else"   { kind = PD_TOK_ELSE; goto done; }
      "emit"   { kind = PD_TOK_EMIT; goto done; }
      "false"  { kind = PD_TOK_FALSE; goto done; }
      "for"    { kind = PD_TOK_FOR; goto done; }
      "if"     { kind = PD_TOK_IF; goto done; }
      "import" { kind = PD_TOK_IMPORT; goto done; }
      "in"     { kind = PD_TOK_IN; goto done; }
      "let"    { kind = PD_TOK_LET; goto done; }
      "none"   { kind = PD_TOK_NONE; goto done; }
      "not"    { kind = PD_TOK_NOT; goto done; }
      "or"     { kind = PD_TOK_OR; goto done; }
      "return" { kind = PD_TOK_RETURN; goto done; }
      "true"   { kind = PD_TOK_TRUE; goto done; }
      "while"  { kind = PD_TOK_WHILE; goto done; }
      ident    { kind = PD_TOK_IDENT; goto done; }

      dec      { kind = PD_TOK_INT; goto done; }
      float    { kind = PD_TOK_FLOAT; goto done; }
      (dec | float) [a-zA-Z_] [a-zA-Z_0-9]* {
        pd_lex_error(lx, loc_at(lx, start), "invalid number '" EXCERPT_FMT "'",
                     EXCERPT_ARGS(start, (size_t)(cur - start)));
        kind = PD_TOK_PD_YYerror;
        goto done;
      }

      ["'] { kind = PD_TOK_STRING; goto done; }

      "==" { kind = PD_TOK_EQ; goto done; }
      "!=" { kind = PD_TOK_NE; goto done; }
      "<=" { kind = PD_TOK_LE; goto done; }
      ">=" { kind = PD_TOK_GE; goto done; }
      "->" { kind = PD_TOK_ARROW; goto done; }
      [-+*/@%=<>()[\]{},.:;] { kind = *start; goto done; }

      [\x00]+ | u8multi { kind = bad_character(lx, start, cur); goto done; }
      *                  { kind = bad_character(lx, start, cur); goto done; }
    */
  }
done:
  tok->kind = kind;
  tok->loc = kind == PD_TOK_END ? end_loc(lx, start) : loc_at(lx, start);
  tok->text = (const char *)start;
  tok->len = (size_t)(cur - start);
  switch (kind) {
  case PD_TOK_NEWLINE: new_line(lx, start); break;
  case PD_TOK_IDENT:
    tok->value.s.len = tok->len;
    tok->value.s.data = pd_ast_strndup(lx->arena, tok->text, tok->len);
    if (!tok->value.s.data) out_of_memory(lx);
    break;
  case PD_TOK_INT: tok->value.i = int_value(lx, start, cur, tok->loc); break;
  case PD_TOK_FLOAT: tok->value.f = float_value(lx, start, cur, tok->loc); break;
  case PD_TOK_STRING:
    cur = scan_string(lx, start, cur);
    tok->len = (size_t)(cur - start);
    if (lx->scratch.oom) {
      out_of_memory(lx);
      break;
    }
    tok->value.s.len = lx->scratch.len;
    tok->value.s.data = pd_ast_strndup(lx->arena, lx->scratch.data ? lx->scratch.data : "",
                                       lx->scratch.len);
    if (!tok->value.s.data) out_of_memory(lx);
    break;
  case '(':
  case '[':
  case '{': open_bracket(lx, (char)kind, tok->loc); break;
  case ')':
  case ']': close_bracket(lx, kind); break;
  case '}':
    close_bracket(lx, kind);
    lx->owner = NULL;
    break;
  case PD_TOK_IF: lx->owner = "if"; break;
  case PD_TOK_ELSE: lx->owner = "else"; break;
  case PD_TOK_FOR: lx->owner = "for"; break;
  case PD_TOK_WHILE: lx->owner = "while"; break;
  case PD_TOK_DEF: lx->owner = "def"; break;
  case ';': lx->owner = NULL; break;
  default: break;
  }
  lx->cur = cur;
  if (lx->stop) tok->kind = PD_TOK_END;
}

/* Tokens after which a newline ends the statement. An error token counts, so that the parser
 * can recover at the end of its line. */
static int ends_statement(int kind) {
  switch (kind) {
  case PD_TOK_IDENT: case PD_TOK_INT: case PD_TOK_FLOAT: case PD_TOK_STRING:
  case PD_TOK_TRUE: case PD_TOK_FALSE: case PD_TOK_NONE:
  case ')': case ']': case '}': case PD_TOK_RETURN: case PD_TOK_PD_YYerror:
    return 1;
  default:
    return 0;
  }
}

/* Keywords whose statement owns a block. */
static int is_block_keyword(int kind) {
  return kind == PD_TOK_IF || kind == PD_TOK_ELSE || kind == PD_TOK_FOR || kind == PD_TOK_WHILE ||
         kind == PD_TOK_DEF;
}

/* Tokens after which a '-' is binary (they end an operand). */
static int ends_operand(int kind) {
  return kind != '}' && kind != PD_TOK_RETURN && ends_statement(kind);
}

void pd_lex_next(pd_lexer *lx, pd_token *tok) {
  for (;;) {
    if (lx->has_lookahead) {
      *tok = lx->lookahead;
      lx->has_lookahead = 0;
      break;
    }
    if (lx->stop) {
      *tok = (pd_token){.kind = PD_TOK_END, .loc = end_loc(lx, lx->cur),
                        .text = (const char *)lx->cur};
      break;
    }
    scan(lx, tok);
    if (tok->kind == PD_TOK_NEWLINE) {
      const pd_lex_bracket *in = pd_lex_innermost(lx);
      if (!lx->newline_pending && ends_statement(lx->last_scanned) && !(in && in->open != '{')) {
        lx->newline_pending = 1;
        lx->newline_loc = lx->last_scanned_end;
      }
      continue;
    }
    lx->last_scanned = tok->kind;
    lx->last_scanned_end = tok->loc;
    lx->last_scanned_end.col = clamp_int((size_t)tok->loc.col + tok->len);
    if (lx->newline_pending) {
      lx->newline_pending = 0;
      if (tok->kind != PD_TOK_ELSE && tok->kind != '{' && tok->kind != PD_TOK_END) {
        lx->lookahead = *tok;
        lx->has_lookahead = 1;
        *tok = (pd_token){.kind = PD_TOK_NEWLINE, .loc = lx->newline_loc, .text = "\n", .len = 1};
        /* A new statement starts: forget the previous one's keyword, unless the new one has
         * just set its own. */
        if (!is_block_keyword(lx->lookahead.kind)) lx->owner = NULL;
      }
    }
    break;
  }
  /* Bound runs of prefix operators, which the parser can only reduce at their end. */
  int prefix = tok->kind == PD_TOK_NOT || (tok->kind == '-' && !ends_operand(lx->last.kind));
  lx->prefix_run = prefix ? lx->prefix_run + 1 : 0;
  if (lx->prefix_run > PD_LEX_MAX_NESTING) {
    pd_lex_error(lx, tok->loc, "too many unary operators in a row (limit %d)", PD_LEX_MAX_NESTING);
    lx->stop = 1;
    tok->kind = PD_TOK_END;
  }
  lx->last = *tok;
}
