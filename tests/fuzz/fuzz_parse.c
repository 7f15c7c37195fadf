/* fuzz_parse.c -- libFuzzer target for the front end: any bytes go through the lexer and the
 * parser, as a script and as REPL input; a tree that comes back is checked and dumped. Built with
 * clang by `make fuzz-parse`; tests/fuzz/replay.c replays the seed corpus through the same
 * function in `make check` (with gcc, no libFuzzer needed). */
#include "config.h"
#include "base/diag.h"
#include "lang/ast.h"
#include "lang/parse.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Something the parser promised does not hold: crash loudly, so the fuzzer keeps the input. */
#define EXPECT(cond) do { if (!(cond)) __builtin_trap(); } while (0)

/* Every node of the tree: locations inside the source, heights consistent, children present. */
static void check_tree(const pd_ast_node *root, const pd_source *src) {
  const pd_ast_node **stack = NULL;
  size_t cap = 0, depth = 0;
  if (PD_GROW(stack, cap, 1)) return;
  stack[depth++] = root;
  while (depth > 0) {
    const pd_ast_node *n = stack[--depth];
    EXPECT(n->loc.file == src->name);
    EXPECT(n->loc.line >= 1 && (size_t)n->loc.line <= src->nlines);
    EXPECT(n->loc.col >= 1);
    EXPECT(n->height >= 1 && n->height <= PD_AST_MAX_DEPTH);
    size_t count = pd_ast_child_count(n);
    for (size_t i = 0; i < count; i++) {
      pd_ast_child c = pd_ast_child_at(n, i);
      EXPECT(c.node != NULL && c.node->height < n->height);
      if (PD_GROW(stack, cap, depth + 1)) {
        pd_free(stack);
        return;
      }
      stack[depth++] = c.node;
    }
  }
  pd_free(stack);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pd_source *src;
  if (pd_source_from_string("fuzz.pd", (const char *)data, size, &src) != PD_OK) return 0;
  for (int repl = 0; repl <= 1; repl++) {
    pd_ast_arena *arena = pd_ast_arena_new();
    pd_diags diags;
    pd_diags_init(&diags, 0);
    pd_ast_node *root = NULL;
    int incomplete = 0;
    pd_status st = arena == NULL ? PD_ENOMEM
                   : repl        ? pd_parse_repl(src, arena, &diags, &root, &incomplete)
                                 : pd_parse(src, arena, &diags, &root);
    EXPECT(st == PD_OK || st == PD_ESYNTAX || st == PD_ENOMEM);
    EXPECT((st == PD_OK) == (root != NULL));
    EXPECT(st != PD_ESYNTAX || diags.nerrors > 0 || incomplete);
    EXPECT(!incomplete || diags.nerrors == 0);
    if (root) {
      EXPECT(root->kind == PD_AST_PROGRAM && diags.nerrors == 0);
      check_tree(root, src);
      pd_buf out;
      pd_buf_init(&out);
      pd_ast_dump(root, &out);
      pd_buf_free(&out);
    }
    pd_diags_free(&diags);
    pd_ast_arena_free(arena);
  }
  pd_source_free(src);
  return 0;
}
