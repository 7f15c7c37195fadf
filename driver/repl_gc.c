/* repl_gc.c -- the REPL's orphan parameters (driver/repl_int.h): which statements of the session
 * only bind names that are bound again before anything reads them, the parameters they made
 * (:vars marks them), and :gc, which drops those statements (blank lines in their place, so that
 * line numbers stay) and the parameters' values, moving the values of the layers after them to
 * their new numbers (fc_1 becomes fc_0). */
#include "config.h"
#include "driver/repl_int.h"

#include <stdio.h>
#include <string.h>

#include "lang/parse.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"

/* How often identifier id occurs in s[from, to), strings and comments left out. */
static int count_ident(const char *s, size_t from, size_t to, const char *id) {
  size_t pos = from, start, idlen = strlen(id);
  int n = 0;
  for (int k; (k = pd_repl_scan(s, to, &pos, &start)) != T_END;)
    if (k == T_IDENT && pos - start == idlen && !memcmp(s + start, id, idlen)) n++;
  return n;
}

/* Where top-level statement k of prog begins and ends in src (its lines up to the next one). */
static void stmt_span(const pd_source *src, const pd_ast_node *prog, size_t k, size_t *from,
                      size_t *to) {
  const pd_ast_list *l = &prog->block.stmts;
  int line = l->items[k]->loc.line, next = k + 1 < l->len ? l->items[k + 1]->loc.line : 0;
  *from = line >= 1 && (size_t)line <= src->nlines ? src->lines[line - 1] : src->len;
  *to = next >= 1 && (size_t)next <= src->nlines ? src->lines[next - 1] : src->len;
  if (*to < *from) *to = *from;
}

/* Is statement k an assignment on lines of its own whose every name is bound again, by a
 * later top-level assignment, before any statement in between (or that one's value) reads it? */
static bool dead_stmt(const pd_source *src, const pd_ast_node *prog, size_t k) {
  const pd_ast_list *l = &prog->block.stmts;
  const pd_ast_node *s = l->items[k];
  if ((s->kind != PD_AST_ASSIGN && s->kind != PD_AST_LET) || !s->assign.targets.len ||
      (k > 0 && l->items[k - 1]->loc.line >= s->loc.line) ||
      (k + 1 < l->len && l->items[k + 1]->loc.line <= s->loc.line))
    return false;
  for (size_t t = 0; t < s->assign.targets.len; t++) {
    const pd_ast_node *target = s->assign.targets.items[t];
    if (target->kind != PD_AST_NAME) return false;
    const char *id = target->name.id;
    bool rebound = false;
    for (size_t j = k + 1; j < l->len && !rebound; j++) {
      const pd_ast_node *sj = l->items[j];
      size_t from, to;
      stmt_span(src, prog, j, &from, &to);
      int uses = count_ident(src->text, from, to, id), binds = 0;
      if (sj->kind == PD_AST_ASSIGN || sj->kind == PD_AST_LET)
        for (size_t u = 0; u < sj->assign.targets.len; u++)
          binds += sj->assign.targets.items[u]->kind == PD_AST_NAME &&
                   !strcmp(sj->assign.targets.items[u]->name.id, id);
      if (uses > binds) return false;  /* read (by its own value, if it binds it too) */
      rebound = binds > 0;
    }
    if (!rebound) return false;
  }
  return true;
}

void pd_repl_names_free(namelist *l) {
  for (size_t i = 0; i < l->n; i++) pd_free((char *)l->names[i]);
  pd_free(l->names);
  *l = (namelist){0};
}

bool pd_repl_names_has(const namelist *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->names[i], name)) return true;
  return false;
}

/* The parameters (names of block 0's persistable vars) that compiling src's text up to byte
 * `to` makes and up to `from` does not, added to *orphans. false on out of memory. */
static bool params_made(pd_repl *r, const pd_source *src, size_t from, size_t to,
                        namelist *orphans) {
  pd_source *s0 = NULL, *s1 = NULL;
  pd_unit *u0 = NULL, *u1 = NULL;
  bool okay = pd_repl_compile_text(r, src->text, from, true, &s0, &u0) == PD_OK &&
              pd_repl_compile_text(r, src->text, to, true, &s1, &u1) == PD_OK;
  const pd_block *b0 = okay ? u0->main->blocks[0] : NULL, *b1 = okay ? u1->main->blocks[0] : NULL;
  for (int i = 0; okay && i < b1->nvars; i++) {
    const pd_var_desc *v = b1->vars[i], *before = pd_block_find_var_local(b0, v->name);
    if (v->persistable && !(before && before->persistable) &&
        !pd_repl_names_has(orphans, v->name)) {
      char *name = pd_strdup(v->name);
      if (name) pd_repl_names_add(orphans, name);
      okay = name && !orphans->oom;
      if (name && !okay) pd_free(name);
    }
  }
  pd_unit_free(u0);
  pd_unit_free(u1);
  pd_source_free(s0);
  pd_source_free(s1);
  return okay;
}

/* The session's text without its dead statements (each dropped only if the text still
 * compiles without it): *src_out and *unit_out (NULL when none can go), and in *orphans (owned
 * copies: names_free) the parameters the dropped statements made; the number dropped, or -1 on
 * out of memory. */
int pd_repl_gc_plan(pd_repl *r, pd_source **src_out, pd_unit **unit_out, namelist *orphans) {
  *src_out = NULL;
  *unit_out = NULL;
  *orphans = (namelist){0};
  const pd_source *src = r->src;
  if (!src || !src->len) return 0;
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags d;
  pd_diags_init(&d, 1);
  pd_ast_node *prog = NULL;
  char *text = arena ? pd_malloc(src->len + 1) : NULL;
  int dropped = text ? 0 : -1;
  if (text && pd_parse(src, arena, &d, &prog) == PD_OK) {
    memcpy(text, src->text, src->len + 1);
    for (size_t k = 0; k < prog->block.stmts.len && dropped >= 0; k++) {
      if (!dead_stmt(src, prog, k)) continue;
      size_t from, to;
      stmt_span(src, prog, k, &from, &to);
      char *saved = pd_strndup(text + from, to - from);
      if (!saved) {
        dropped = -1;
        break;
      }
      for (size_t i = from; i < to; i++)
        if (text[i] != '\n') text[i] = ' ';
      pd_source *ns = NULL;
      pd_unit *nu = NULL;
      if (pd_repl_compile_text(r, text, src->len, true, &ns, &nu) == PD_OK) {
        pd_unit_free(*unit_out);
        pd_source_free(*src_out);
        *unit_out = nu;
        *src_out = ns;
        dropped++;
        /* Its parameters, by the names they have now (later layers are numbered after them). */
        if (!params_made(r, src, from, to, orphans)) dropped = -1;
      } else {
        memcpy(text + from, saved, to - from);  /* it is needed after all */
      }
      pd_free(saved);
    }
  }
  if (dropped <= 0) {
    pd_unit_free(*unit_out);
    pd_source_free(*src_out);
    *unit_out = NULL;
    *src_out = NULL;
    pd_repl_names_free(orphans);
  }
  pd_free(text);
  pd_diags_free(&d);
  pd_ast_arena_free(arena);
  return dropped;
}

/* The parameters of block 0 in order, but those in skip. */
static int params_of(const pd_unit *u, const namelist *skip, const pd_var_desc **out, int cap) {
  const pd_block *b0 = u->main->blocks[0];
  int n = 0;
  for (int i = 0; i < b0->nvars; i++)
    if (b0->vars[i]->persistable && !(skip && pd_repl_names_has(skip, b0->vars[i]->name))) {
      if (n < cap) out[n] = b0->vars[i];
      n++;
    }
  return n;
}

static bool same_param(const pd_var_desc *a, const pd_var_desc *b) {
  if (a->dtype != b->dtype || a->ndims != b->ndims) return false;
  for (int i = 0; i < a->ndims; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Rename the value of parameter `from` and those named after it (an optimizer's moments:
 * "fc_1.w_0_moment1_0") to `to` and the same suffixes; to NULL: drop them. */
static void rename_values(pd_scope *global, const char *from, const char *to) {
  const char **names = NULL;
  size_t n = 0, len = strlen(from);
  if (pd_scope_var_names(global, &names, &n)) return;
  for (size_t i = 0; i < n; i++) {
    const char *name = names[i];
    if (strncmp(name, from, len) != 0 || (name[len] && !strchr("_@.", name[len]))) continue;
    pd_buf nb;
    pd_buf_init(&nb);
    pd_buf_printf(&nb, "%s%s", to ? to : "", name + len);
    char *old = pd_strdup(name);
    if (old && !to) pd_scope_erase_var(global, old);
    else if (!nb.oom && old) pd_scope_rename_var(global, old, nb.data);
    pd_free(old);
    pd_buf_free(&nb);
  }
  pd_free(names);
}

/* :gc -- drop the dead statements and the values of the parameters only they made. The
 * parameters made after them are numbered anew (fc_1 becomes fc_0): their values follow. */
pd_repl_result pd_repl_gc(pd_repl *r) {
  pd_source *src;
  pd_unit *unit;
  namelist orphans;
  int n = pd_repl_gc_plan(r, &src, &unit, &orphans);
  if (n < 0) {
    pd_repl_say_error(r, "out of memory");
    return PD_REPL_ERROR;
  }
  if (n == 0) {
    fputs("no orphan parameters\n", r->o.out);
    fflush(r->o.out);
    return PD_REPL_OK;
  }
  /* The parameters that stay, before and after, pair up in order with the same shapes. */
  int nold = params_of(r->unit, &orphans, NULL, 0), nnew = params_of(unit, NULL, NULL, 0);
  const pd_var_desc **olds = pd_calloc((size_t)nold + 1, sizeof *olds);
  const pd_var_desc **news = pd_calloc((size_t)nnew + 1, sizeof *news);
  bool pairs = olds && news && nold == nnew && unit->nactions == r->unit->nactions;
  if (pairs) {
    params_of(r->unit, &orphans, olds, nold);
    params_of(unit, NULL, news, nnew);
    for (int i = 0; i < nold && pairs; i++) pairs = same_param(olds[i], news[i]);
  }
  pd_error err = {0};
  pd_repl_result res = PD_REPL_OK;
  if (!pairs) {
    pd_repl_say_error(r, "%s", olds && news
                                   ? "the parameters that stay do not pair up; nothing collected"
                                   : "out of memory");
    res = PD_REPL_ERROR;
  } else {
    pd_scope *global = pd_runner_scope(r->runner);
    pd_buf b;
    pd_buf_init(&b);
    for (size_t i = 0; i < orphans.n; i++) {
      pd_buf_printf(&b, "%s%s", i ? ", " : "", orphans.names[i]);
      rename_values(global, orphans.names[i], NULL);
    }
    /* Through temporary names, so that no rename meets a value not moved yet. */
    for (int i = 0; i < nold; i++) {
      char tmp[32];
      snprintf(tmp, sizeof tmp, "\x01gc.%d", i);
      if (strcmp(olds[i]->name, news[i]->name) != 0) rename_values(global, olds[i]->name, tmp);
    }
    for (int i = 0; i < nold; i++) {
      char tmp[32];
      snprintf(tmp, sizeof tmp, "\x01gc.%d", i);
      if (strcmp(olds[i]->name, news[i]->name) != 0) rename_values(global, tmp, news[i]->name);
    }
    if (pd_runner_adopt(r->runner, unit, &err)) {
      pd_repl_print_error(r, NULL, NULL, &err);
      pd_error_clear(&err);
      res = PD_REPL_ERROR;
    } else {
      pd_unit_free(r->unit);
      pd_source_free(r->src);
      r->unit = unit;
      r->src = src;
      unit = NULL;
      src = NULL;
      r->gen++;
      fprintf(r->o.out, "dropped %d statement%s; freed %zu parameter%s%s%s\n", n,
              n == 1 ? "" : "s", orphans.n, orphans.n == 1 ? "" : "s", orphans.n ? ": " : "",
              b.data && !b.oom ? b.data : "");
      fflush(r->o.out);
    }
    pd_buf_free(&b);
  }
  pd_free(olds);
  pd_free(news);
  pd_repl_names_free(&orphans);
  pd_unit_free(unit);
  pd_source_free(src);
  return res;
}

