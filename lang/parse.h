/* parse.h -- the front end's entry points: .pd source text -> syntax tree (lang/ast.h), with
 * diagnostics. The grammar is lang/parser.y, the tokens lang/lexer.re; doc/language.md is the
 * reference for both.
 *
 * Ownership: the tree is allocated in the caller's arena (free it with pd_ast_arena_free, after
 * the last use of the tree); diagnostics are appended to the caller's pd_diags, rendered as
 *   file:line:col: error: message
 *       3 | x = (1 + )
 *         |          ^
 * The source must outlive the tree: node locations point at its name. Nothing is printed. */
#ifndef PD_PARSE_H
#define PD_PARSE_H

#include "base/diag.h"
#include "lang/ast.h"

/* Parse a whole script.
 *   PD_OK       *out is the PROGRAM node; no diagnostics were added.
 *   PD_ESYNTAX  lexical or syntax errors, each reported to `diags` (parsing goes on after an error
 *               to find more, until the diags' error limit); *out is NULL.
 *   PD_ENOMEM   out of memory; *out is NULL (diagnostics may be incomplete).
 * A tree returned is at most PD_AST_MAX_DEPTH levels deep. */
pd_status pd_parse(const pd_source *src, pd_ast_arena *arena, pd_diags *diags, pd_ast_node **out);

/* The same for an interactive prompt, which parses the text typed so far (one or more lines).
 * When the text ends in the middle of a statement -- a block, parenthesis or bracket still open,
 * or an operator or keyword waiting for more -- and has no other error, it returns PD_ESYNTAX
 * with *incomplete = 1 and reports nothing: the prompt should read another line, append it and
 * parse again. Otherwise it behaves as pd_parse and sets *incomplete = 0. Note that a statement
 * is complete at the end of its line, so in a REPL `else` goes on the line of the '}' before it. */
pd_status pd_parse_repl(const pd_source *src, pd_ast_arena *arena, pd_diags *diags,
                        pd_ast_node **out, int *incomplete);

#endif /* PD_PARSE_H */
