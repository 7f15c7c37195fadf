/* repl.c -- the REPL session (see driver/repl.h): the text of the statements that succeeded,
 * recompiled with each new statement and run on one runner; bare expressions; the `:` commands
 * (:gc and the orphan parameters :vars marks: repl_gc.c); the names offered by Tab completion. */
#include "config.h"
#include "driver/repl.h"
#include "driver/repl_int.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "lang/parse.h"
#include "train/run.h"
#include "lang/summary.h"
#include "vm/ir/params.h"
#include "vm/ir/serialize.h"
#include "vm/ir/program.h"
#include "vm/run/scope.h"
#include "vm/run/tensor.h"


static const char *const commands[] = {"batch", "dot", "gc", "help", "load", "program",
                                       "quit", "reset", "save", "summary", "vars"};

static const char *const keywords[] = {"and", "def", "else", "emit", "false", "for", "if",
                                       "import", "in", "let", "none", "not", "or", "return",
                                       "true", "while", "bool", "float32", "float64", "int32",
                                       "int64"};


/* ------------------------------------------------------------------------------------------ */
/* A rough scanner for text that already parsed: identifiers, and where the code ends. Strings   */
/* and comments are skipped.                                                                     */


static bool ident_start(int c) { return isalpha(c) || c == '_'; }
static bool ident_char(int c) { return isalnum(c) || c == '_'; }

int pd_repl_scan(const char *s, size_t len, size_t *pos, size_t *start) {
  size_t i = *pos;
  for (;;) {
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v'))
      i++;
    if (i < len && s[i] == '#') {
      while (i < len && s[i] != '\n') i++;
      continue;
    }
    break;
  }
  *start = i;
  if (i >= len) {
    *pos = i;
    return T_END;
  }
  unsigned char c = (unsigned char)s[i];
  int kind = T_OTHER;
  if (c == '\n') {
    i++;
    kind = T_NEWLINE;
  } else if (c == ';') {
    i++;
    kind = T_SEMI;
  } else if (c == '"' || c == '\'') {
    for (i++; i < len && (unsigned char)s[i] != c && s[i] != '\n'; i++)
      if (s[i] == '\\' && i + 1 < len && s[i + 1] != '\n') i++;
    if (i < len && (unsigned char)s[i] == c) i++;
  } else if (ident_start(c)) {
    while (i < len && ident_char((unsigned char)s[i])) i++;
    kind = T_IDENT;
  } else if (isdigit(c) || (c == '.' && i + 1 < len && isdigit((unsigned char)s[i + 1]))) {
    for (i++; i < len && (ident_char((unsigned char)s[i]) || s[i] == '.'); i++) {}
  } else {
    i++;
  }
  *pos = i;
  return kind;
}

static int count_lines(const char *s, size_t n) {
  int k = 0;
  for (size_t i = 0; i < n; i++) k += s[i] == '\n';
  return k;
}

/* ------------------------------------------------------------------------------------------ */
/* Output.                                                                                      */

static void put_buf(FILE *f, pd_buf *b) {
  if (b->oom) fputs("pdlang: out of memory\n", f);
  else if (b->len) fwrite(b->data, 1, b->len, f);
  fflush(f);
}

void pd_repl_print_error(pd_repl *r, const pd_unit *unit, const pd_source *src,
                        const pd_error *err) {
  fflush(r->o.out);
  pd_buf b;
  pd_buf_init(&b);
  pd_unit_render_error(&b, unit, src, err);
  if (b.data && !b.oom) fputs(b.data, r->o.err);
  else fprintf(r->o.err, "pdlang: %s\n", err->msg ? err->msg : pd_status_str(err->status));
  pd_buf_free(&b);
  fflush(r->o.err);
}

void pd_repl_say_error(pd_repl *r, const char *fmt, ...) {
  fflush(r->o.out);
  va_list ap;
  va_start(ap, fmt);
  fputs("pdlang: ", r->o.err);
  vfprintf(r->o.err, fmt, ap);
  fputc('\n', r->o.err);
  va_end(ap);
  fflush(r->o.err);
}

/* ------------------------------------------------------------------------------------------ */
/* Compiling and running.                                                                      */

/* Compile text as the session's source. Diagnostics are printed unless quiet. */
pd_status pd_repl_compile_text(pd_repl *r, const char *text, size_t len, bool quiet,
                              pd_source **src_out, pd_unit **unit_out) {
  *src_out = NULL;
  *unit_out = NULL;
  pd_source *src = NULL;
  pd_status st = pd_source_from_string(r->o.source_name, text, len, &src);
  if (st) {
    if (!quiet) pd_repl_say_error(r, "out of memory");
    return st;
  }
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_unit *unit = NULL;
  st = pd_compile(src, NULL, &d, &unit);
  if (st && !quiet) {
    fflush(r->o.out);
    if (d.text.len) fputs(d.text.data, r->o.err);
    else fprintf(r->o.err, "%s: error: %s\n", r->o.source_name, pd_status_str(st));
    fflush(r->o.err);
  }
  pd_diags_free(&d);
  if (st) {
    pd_source_free(src);
    return st;
  }
  *src_out = src;
  *unit_out = unit;
  return PD_OK;
}

/* Compile the session's text followed by chunk. Diagnostics are printed unless quiet. */
static pd_status compile_with(pd_repl *r, const char *chunk, size_t n, bool quiet,
                              pd_source **src_out, pd_unit **unit_out) {
  pd_buf b;
  pd_buf_init(&b);
  if (r->src && r->src->len) pd_buf_append(&b, r->src->text, r->src->len);
  for (int i = 0; i < r->gap; i++) pd_buf_puts(&b, "\n");
  if (n) pd_buf_append(&b, chunk, n);
  pd_status st = b.oom ? PD_ENOMEM
                       : pd_repl_compile_text(r, b.data ? b.data : "", b.len, quiet, src_out,
                                              unit_out);
  if (b.oom) {
    *src_out = NULL;
    *unit_out = NULL;
    if (!quiet) pd_repl_say_error(r, "out of memory");
  }
  pd_buf_free(&b);
  return st;
}

/* The names of the global scope's variables (copies, sorted), to drop what a statement that
 * failed created there. */
typedef struct snapshot {
  char **names;
  size_t n;
} snapshot;

static void snap_free(snapshot *s) {
  for (size_t i = 0; i < s->n; i++) pd_free(s->names[i]);
  pd_free(s->names);
  s->names = NULL;
  s->n = 0;
}

static pd_status snap_take(pd_scope *scope, snapshot *s) {
  s->names = NULL;
  s->n = 0;
  const char **names = NULL;
  size_t n = 0;
  pd_status st = pd_scope_var_names(scope, &names, &n);
  if (st) return st;
  if (n && !(s->names = pd_calloc(n, sizeof *s->names))) st = PD_ENOMEM;
  for (size_t i = 0; !st && i < n; i++) {
    if (!(s->names[i] = pd_strdup(names[i]))) st = PD_ENOMEM;
    else s->n++;
  }
  pd_free(names);
  if (st) snap_free(s);
  return st;
}

static bool snap_has(const snapshot *s, const char *name) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(name, s->names[mid]);
    if (c == 0) return true;
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return false;
}

/* Drop the variables of scope that are not in s. */
static void snap_restore(pd_scope *scope, const snapshot *s) {
  snapshot now;
  if (snap_take(scope, &now)) return;
  for (size_t i = 0; i < now.n; i++)
    if (!snap_has(s, now.names[i])) pd_scope_erase_var(scope, now.names[i]);
  snap_free(&now);
}

static pd_status session_open(pd_repl *r, pd_error *err) {
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *runner = NULL;
  pd_status st = pd_source_from_string(r->o.source_name, "", 0, &src);
  if (!st) {
    pd_diags d;
    pd_diags_init(&d, 20);
    st = pd_compile(src, NULL, &d, &unit);
    pd_diags_free(&d);
  }
  if (!st) {
    pd_run_options ro = {.out = r->o.out,
                         .progress = r->o.err,
                         .progress_mode = PD_PROGRESS_AUTO,
                         .seed = r->o.seed,
                         .interrupt = r->o.interrupt,
                         .place = (pd_k_place)r->o.place,
                         .gpu_index = r->o.gpu_index};
    st = pd_runner_new(unit, &ro, &runner, err);
  } else {
    pd_error_set(err, st, (pd_loc){0}, "cannot start the session: %s", pd_status_str(st));
  }
  if (st) {
    pd_unit_free(unit);
    pd_source_free(src);
    return st;
  }
  r->src = src;
  r->src_lines = 0;
  r->unit = unit;
  r->runner = runner;
  r->nrun = 0;
  return PD_OK;
}

/* After a failed restore left no session (out of memory), try to open one again. */
static bool ensure_session(pd_repl *r) {
  if (r->runner) return true;
  pd_error err = {0};
  if (session_open(r, &err) == PD_OK) return true;
  pd_repl_say_error(r, "%s", err.msg ? err.msg : pd_status_str(err.status));
  pd_error_clear(&err);
  return false;
}

static void session_close(pd_repl *r) {
  pd_runner_free(r->runner);
  pd_unit_free(r->unit);
  pd_source_free(r->src);
  r->runner = NULL;
  r->unit = NULL;
  r->src = NULL;
  r->gen++;
}

pd_status pd_repl_new(const pd_repl_options *opts, pd_repl **out, pd_error *err) {
  *out = NULL;
  pd_repl *r = pd_calloc(1, sizeof *r);
  if (!r) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  r->o = *opts;
  if (!r->o.source_name) r->o.source_name = "<repl>";
  if (!r->o.out) r->o.out = stdout;
  if (!r->o.err) r->o.err = stderr;
  pd_buf_init(&r->pending);
  pd_status st = session_open(r, err);
  if (st) {
    pd_free(r);
    return st;
  }
  *out = r;
  return PD_OK;
}

static void free_words(char **w, int n) {
  for (int i = 0; i < n; i++) pd_free(w[i]);
  pd_free(w);
}

void pd_repl_free(pd_repl *r) {
  if (!r) return;
  session_close(r);
  pd_buf_free(&r->pending);
  pd_buf_free(&r->made);
  free_words(r->words, r->nwords);
  free_words(r->lib, r->nlib);
  pd_free(r->cands);
  pd_free(r);
}

static bool written_by_op(const pd_program *p, const char *name) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int s = 0; s < op->noutputs; s++)
        for (int a = 0; a < op->outputs[s].nargs; a++)
          if (strcmp(op->outputs[s].args[a], name) == 0) return true;
    }
  return false;
}

static const pd_var_desc *find_var(const pd_program *p, const char *name, int *block) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nvars; i++)
      if (strcmp(p->blocks[b]->vars[i]->name, name) == 0) {
        if (block) *block = b;
        return p->blocks[b]->vars[i];
      }
  return NULL;
}

static void describe_var(const pd_var_desc *v, pd_buf *b) {
  if (v->type != PD_VAR_LOD_TENSOR) {
    pd_buf_puts(b, pd_var_type_name(v->type));
    return;
  }
  if (v->ndims < 0) pd_buf_puts(b, "[?]");
  else pd_buf_put_dims(b, v->ndims, v->dims);
  pd_buf_printf(b, " %s", pd_dtype_name(v->dtype));
  if (v->lod_level) pd_buf_printf(b, ", lod level %d", v->lod_level);
}

/* Print the value of a bare expression: the first argument of the print action the session
 * wrapped it in. A tensor is computed here (not by the action) so that an error points at the
 * expression typed, at loc. */
static pd_status show_value(pd_repl *r, const pd_unit *unit, const pd_action *a, pd_loc loc,
                            pd_error *err) {
  const pd_cval *v = a->args[0];
  pd_buf b;
  pd_buf_init(&b);
  pd_status st = PD_OK;
  const char *label = r->label ? r->label : v->str;
  if (v->kind == PD_CVAL_TENSOR) {
    const pd_var_desc *var = find_var(unit->main, v->str, NULL);
    pd_variable *gv = pd_scope_find_local_var(pd_runner_scope(r->runner), v->str);
    bool has_value = gv && gv->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&gv->u.tensor);
    if (var && !has_value && !written_by_op(unit->main, v->str)) {
      /* A data var: nothing to compute without a reader. */
      pd_buf_printf(&b, "%s: ", label);
      describe_var(var, &b);
      pd_buf_puts(&b, " (data: a reader feeds it)\n");
    } else {
      pd_tensor t;
      pd_tensor_init(&t);
      const char *name = v->str;
      st = pd_runner_compute(r->runner, 1, &name, &t, "an expression at the prompt", loc, err);
      if (!st) {
        pd_tensor_print(&t, &b);
      } else if (var) {
        pd_buf_printf(&b, "%s: ", label);
        describe_var(var, &b);
        pd_buf_puts(&b, "\n");
      }
      pd_tensor_release(&t);
    }
  } else if (v->kind == PD_CVAL_FUNC) {
    pd_buf_printf(&b, "function %s\n", v->str);
  } else if (v->kind != PD_CVAL_NONE) {
    pd_cval_format(v, &b);
    pd_buf_puts(&b, "\n");
  }
  put_buf(r->o.out, &b);
  pd_buf_free(&b);
  return st;
}

/* At a prompt, a statement's values are computed when it is typed (when they need no data), so
 * that one that fails at run time (a runaway while interrupted, a division by zero) is dropped
 * like one that fails to compile, rather than staying and failing in every later statement
 * that uses it: the vars of block 0 that the ops the statement added write. */
static pd_status compute_new(pd_repl *r, const pd_unit *unit, pd_error *err) {
  const pd_block *old = r->unit->main->blocks[0], *b0 = unit->main->blocks[0];
  namelist l = {0};
  for (int i = old->nops; i < b0->nops; i++) {
    const pd_op_desc *op = b0->ops[i];
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++) {
        const pd_var_desc *v = pd_block_find_var_local(b0, op->outputs[s].args[a]);
        if (v && !v->persistable && v->type == PD_VAR_LOD_TENSOR) pd_repl_names_add(&l, v->name);
      }
  }
  pd_status st = l.oom ? pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory") : PD_OK;
  pd_tensor *t = !st && l.n ? pd_calloc(l.n, sizeof *t) : NULL;
  if (!st && l.n && !t) st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  if (!st && l.n) {
    for (size_t i = 0; i < l.n; i++) pd_tensor_init(&t[i]);
    bool needs_data;
    st = pd_runner_try_compute(r->runner, (int)l.n, l.names, t, (pd_loc){0}, &needs_data, err);
    for (size_t i = 0; i < l.n; i++) pd_tensor_release(&t[i]);
  }
  pd_free(t);
  pd_free(l.names);
  return st;
}

/* Compile the session's text + chunk and run the actions chunk added. A statement (eval false)
 * is kept when all went well; a bare expression (eval true: chunk is `print(\nEXPR\n)`) has its
 * value shown and is never kept. Whatever fails is undone: the runner goes back to the session's
 * unit, and variables the chunk created in the global scope are dropped. */
static pd_repl_result run_chunk(pd_repl *r, const char *chunk, size_t n, bool eval, pd_loc loc) {
  pd_source *src;
  pd_unit *unit;
  pd_status st = compile_with(r, chunk, n, false, &src, &unit);
  if (st) return PD_REPL_ERROR;
  pd_scope *global = pd_runner_scope(r->runner);
  snapshot snap;
  if (snap_take(global, &snap)) {
    pd_repl_say_error(r, "out of memory");
    pd_unit_free(unit);
    pd_source_free(src);
    return PD_REPL_ERROR;
  }
  pd_error err = {0};
  st = pd_runner_adopt(r->runner, unit, &err);
  int end = eval ? unit->nactions - 1 : unit->nactions;
  for (int i = r->nrun; !st && i < end; i++)
    st = pd_runner_action(r->runner, &unit->actions[i], &err);
  if (!st && !eval && r->o.echo) st = compute_new(r, unit, &err);
  if (!st && eval && end >= 0) st = show_value(r, unit, &unit->actions[end], loc, &err);
  if (st && eval && r->shown) {
    /* Back to the expression's own lines: the wrapper's `print(` line came before them. */
    if (err.loc.file && strcmp(err.loc.file, r->o.source_name) == 0 &&
        err.loc.line > r->src_lines + r->gap + 1)
      err.loc.line--;
    pd_repl_print_error(r, unit, r->shown, &err);
    if (err.msg && strstr(err.msg, "which a reader feeds") && !pd_runner_nbound(r->runner)) {
      fputs("note: :batch READER binds the first samples of a reader to the data vars, so that "
            "expressions over them show values\n", r->o.err);
      fflush(r->o.err);
    }
  } else if (st) {
    pd_repl_print_error(r, unit, src, &err);
  }
  pd_error_clear(&err);
  if (st || eval) {
    snap_restore(global, &snap);
    if (pd_runner_adopt(r->runner, r->unit, &err)) {
      /* Only out of memory gets here; the runner may hold the new unit: start afresh. */
      pd_repl_print_error(r, r->unit, r->src, &err);
      pd_error_clear(&err);
      pd_repl_say_error(r, "the session could not be restored and starts afresh");
      session_close(r);
      if (session_open(r, &err)) {
        pd_repl_print_error(r, NULL, NULL, &err);
        pd_error_clear(&err);
      }
    }
    pd_unit_free(unit);
    pd_source_free(src);
  } else {
    pd_unit_free(r->unit);
    pd_source_free(r->src);
    r->unit = unit;
    r->src = src;
    r->gen++;
    r->src_lines = count_lines(src->text, src->len);
    r->gap = 0;  /* src holds them now */
    r->nrun = unit->nactions;
  }
  snap_free(&snap);
  fflush(r->o.out);
  return st == PD_EINTR ? PD_REPL_INTERRUPTED : st ? PD_REPL_ERROR : PD_REPL_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Statements.                                                                                  */

bool pd_repl_pending(const pd_repl *r) { return r->incomplete; }

/* Forget the pending lines; unless the session's text kept them, their numbers stay used. */
static void drop_pending(pd_repl *r, bool kept) {
  if (!kept) r->gap += count_lines(r->pending.data ? r->pending.data : "", r->pending.len);
  pd_buf_clear(&r->pending);
  r->incomplete = false;
}

void pd_repl_discard(pd_repl *r) { drop_pending(r, false); }

/* The pending text behind as many newlines as the session's text has, so that lines are
 * numbered as they will be when compiled. */
static pd_status pending_source(pd_repl *r, pd_source **out) {
  pd_buf b;
  pd_buf_init(&b);
  for (int i = 0; i < r->src_lines + r->gap; i++) pd_buf_puts(&b, "\n");
  pd_buf_append(&b, r->pending.data ? r->pending.data : "", r->pending.len);
  pd_status st = b.oom ? PD_ENOMEM
                       : pd_source_from_string(r->o.source_name, b.data ? b.data : "", b.len, out);
  pd_buf_free(&b);
  return st;
}

static bool is_action_call(const pd_ast_node *e) {
  if (e->kind != PD_AST_CALL || e->call.callee->kind != PD_AST_NAME) return false;
  for (int k = 0; k < PD_ACTION_NKINDS; k++)
    if (strcmp(e->call.callee->name.id, pd_action_name((pd_action_kind)k)) == 0) return true;
  return false;
}

/* Evaluate the bare expression in pending (which parsed as one expression statement located at
 * loc): it is compiled as `print(\nEXPR\n)`, the newline keeping its columns, and the print
 * action's argument is its value. So that diagnostics show the expression on the line where a
 * statement typed there would be, it is first compiled as it is (compile errors are reported
 * from that), and run-time errors are moved back one line and shown in that text. */
static pd_repl_result eval_pending(pd_repl *r, const pd_ast_node *expr, pd_loc loc) {
  pd_source *plain;
  pd_unit *punit;
  if (compile_with(r, r->pending.data, r->pending.len, false, &plain, &punit))
    return PD_REPL_ERROR;
  pd_unit_free(punit);
  const char *s = r->pending.data;
  size_t len = r->pending.len, pos = 0, start, end = 0;
  for (int k; (k = pd_repl_scan(s, len, &pos, &start)) != T_END;)
    if (k != T_NEWLINE && k != T_SEMI) end = pos;
  pd_buf chunk;
  pd_buf_init(&chunk);
  pd_buf_puts(&chunk, "print(\n");
  pd_buf_append(&chunk, s, end);
  pd_buf_puts(&chunk, "\n)\n");
  if (chunk.oom) {
    pd_buf_free(&chunk);
    pd_source_free(plain);
    pd_repl_say_error(r, "out of memory");
    return PD_REPL_ERROR;
  }
  loc.file = r->o.source_name;
  loc.line += 1;
  r->label = expr->kind == PD_AST_NAME ? expr->name.id : NULL;
  r->shown = plain;
  pd_repl_result res = run_chunk(r, chunk.data, chunk.len, true, loc);
  r->label = NULL;
  r->shown = NULL;
  pd_buf_free(&chunk);
  pd_source_free(plain);
  return res;
}

/* pending holds one or more lines: run them if they make complete statements. */
static pd_repl_result try_pending(pd_repl *r) {
  pd_source *src = NULL;
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_status st = arena ? pending_source(r, &src) : PD_ENOMEM;
  if (st) {
    pd_ast_arena_free(arena);
    pd_repl_discard(r);
    pd_repl_say_error(r, "out of memory");
    return PD_REPL_ERROR;
  }
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_ast_node *prog = NULL;
  int incomplete = 0;
  st = pd_parse_repl(src, arena, &d, &prog, &incomplete);
  pd_repl_result res = PD_REPL_OK;
  if (st == PD_ESYNTAX && incomplete) {
    r->incomplete = true;
    res = PD_REPL_MORE;
  } else if (st) {
    fflush(r->o.out);
    if (d.text.len) fputs(d.text.data, r->o.err);
    else fprintf(r->o.err, "%s: error: %s\n", r->o.source_name, pd_status_str(st));
    fflush(r->o.err);
    pd_repl_discard(r);
    res = PD_REPL_ERROR;
  } else if (prog->block.stmts.len == 0) {
    /* Blank lines and comments: a script keeps them (its line numbers stay those of the
     * input); at a prompt they are dropped. */
    r->incomplete = false;
    if (r->o.echo) pd_repl_discard(r);
  } else {
    r->incomplete = false;
    const pd_ast_node *s0 = prog->block.stmts.items[0];
    unsigned gen = r->gen;  /* changes when the session's text takes the statement */
    if (r->o.echo && prog->block.stmts.len == 1 && s0->kind == PD_AST_EXPR_STMT &&
        !is_action_call(s0->expr_stmt.expr))
      res = eval_pending(r, s0->expr_stmt.expr, s0->loc);
    else
      res = run_chunk(r, r->pending.data, r->pending.len, false, (pd_loc){0});
    drop_pending(r, r->gen != gen);
  }
  pd_diags_free(&d);
  pd_ast_arena_free(arena);
  pd_source_free(src);
  return res;
}

pd_repl_result pd_repl_end(pd_repl *r) {
  if (!r->incomplete) {
    pd_repl_discard(r);
    return PD_REPL_OK;
  }
  /* Parsed as a whole script, the text gives the error a prompt would wait past. */
  pd_source *src = NULL;
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_status st = arena ? pending_source(r, &src) : PD_ENOMEM;
  if (!st) {
    pd_diags d;
    pd_diags_init(&d, 20);
    pd_ast_node *prog;
    st = pd_parse(src, arena, &d, &prog);
    fflush(r->o.out);
    if (d.text.len) fputs(d.text.data, r->o.err);
    else if (st) fprintf(r->o.err, "%s: error: %s\n", r->o.source_name, pd_status_str(st));
    fflush(r->o.err);
    pd_diags_free(&d);
  }
  pd_source_free(src);
  pd_ast_arena_free(arena);
  pd_repl_discard(r);
  return PD_REPL_ERROR;
}

pd_repl_result pd_repl_load(pd_repl *r, const char *path) {
  if (!ensure_session(r)) return PD_REPL_ERROR;
  char *text = NULL;
  size_t len = 0;
  pd_error err = {0};
  if (pd_read_file(path, &text, &len, &err)) {
    pd_repl_say_error(r, "%s", err.msg ? err.msg : pd_status_str(err.status));
    pd_error_clear(&err);
    return PD_REPL_ERROR;
  }
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_append(&b, text, len);
  if (len && text[len - 1] != '\n') pd_buf_puts(&b, "\n");
  pd_free(text);
  pd_repl_result res;
  if (b.oom) {
    pd_repl_say_error(r, "out of memory");
    res = PD_REPL_ERROR;
  } else {
    res = run_chunk(r, b.data ? b.data : "", b.len, false, (pd_loc){0});
  }
  pd_buf_free(&b);
  return res;
}

/* ------------------------------------------------------------------------------------------ */
/* Commands.                                                                                    */

static void cmd_help(pd_repl *r) {
  fputs("Type pdlang statements; a block or bracket left open continues on the next line\n"
        "(prompt \"... \"). A bare expression prints its value. A statement that fails adds\n"
        "nothing to the session.\n"
        "\n"
        "  :help             this text\n"
        "  :help NAME        a function's or layer's signature and what it does; for a\n"
        "                    reader, optimizer, initializer or action its parameters, with\n"
        "                    their defaults and meanings; a schedule (cosine) what it does\n"
        "  :vars [all]       the session's names: shape, dtype and block of tensors, values of\n"
        "                    compile-time names, then the parameters (an orphan: made by a\n"
        "                    statement whose names were all bound again); `all` lists every\n"
        "                    var of every block of the program\n"
        "  :gc               drop the statements of orphan parameters, and their values\n"
        "  :batch READER [N] bind the first N samples (8) of a reader to the data vars, so\n"
        "                    that expressions over data() show values; :batch alone shows\n"
        "                    what is bound, :batch off forgets it\n"
        "  :program          the main program (ProgramDesc) so far\n"
        "  :summary          its layers, output shapes and parameter counts\n"
        "  :dot FILE         write the main program as a Graphviz graph to FILE\n"
        "  :load FILE.pd     run a file's statements as if typed (all or nothing)\n"
        "  :save FILE.pdmodel  write the main program (framework.proto) and, beside it,\n"
        "                    its parameters (FILE.pdiparams)\n"
        "  :device [DEV]     show or set where ops compute: cpu, gpu or gpu:N\n"
        "  :reset            forget every statement and parameter\n"
        "  :quit             leave (also Ctrl-D)\n"
        "\n"
        "Tab completes names, keyword arguments in a call, attributes after `x.` and file\n"
        "names in a string; Ctrl-C interrupts a running action or clears the line.\n",
        r->o.out);
  fflush(r->o.out);
}

/* fn(file name, text, length, ctx) for each .pd file of the standard library (the installed
 * one, else the source tree's), until fn returns true. */
typedef bool stdlib_file_fn(const char *file, const char *text, size_t len, void *ctx);
static void for_each_stdlib_file(stdlib_file_fn *fn, void *ctx) {
  const char *dirs[2] = {PD_STDLIB_DIR, NULL};
#ifdef PD_SRC_STDLIB_DIR
  dirs[1] = PD_SRC_STDLIB_DIR;
#endif
  for (int d = 0; d < 2 && dirs[d]; d++) {
    DIR *dir = opendir(dirs[d]);
    if (!dir) continue;
    bool any = false, stop = false;
    for (struct dirent *e; !stop && (e = readdir(dir));) {
      size_t len = strlen(e->d_name);
      if (len < 4 || strcmp(e->d_name + len - 3, ".pd") != 0) continue;
      pd_buf path;
      pd_buf_init(&path);
      pd_buf_printf(&path, "%s/%s", dirs[d], e->d_name);
      char *text = NULL;
      size_t tlen = 0;
      if (!path.oom && pd_read_file(path.data, &text, &tlen, NULL) == PD_OK) {
        any = true;
        stop = fn(e->d_name, text, tlen, ctx);
      }
      pd_free(text);
      pd_buf_free(&path);
    }
    closedir(dir);
    if (any) break;  /* the installed stdlib, else the source tree's */
  }
}

/* `def name(...)` in text, with the comment lines just above it: the signature (spaces
 * collapsed) and the comment appended to out. False when text has no such def. */
static bool def_help(const char *text, size_t len, const char *name, pd_buf *out) {
  size_t nl = strlen(name);
  for (size_t at = 0; at < len;) {
    const char *line = text + at, *eol = memchr(line, '\n', len - at);
    size_t ll = eol ? (size_t)(eol - line) : len - at;
    const char *p = line;
    while (p < line + ll && (*p == ' ' || *p == '\t')) p++;
    if ((size_t)(line + ll - p) > 4 + nl && !strncmp(p, "def ", 4) && !strncmp(p + 4, name, nl) &&
        (p[4 + nl] == '(' || p[4 + nl] == ' ')) {
      /* The signature, to its closing parenthesis (it may span lines). */
      int depth = 0;
      bool space = false;
      for (const char *q = p; q < text + len; q++) {
        char ch = *q == '\n' || *q == '\t' || *q == '\r' ? ' ' : *q;
        if (ch == ' ' && space) continue;
        space = ch == ' ';
        pd_buf_append(out, &ch, 1);
        if (ch == '(') depth++;
        if (ch == ')' && --depth == 0) break;
      }
      pd_buf_puts(out, "\n");
      /* The comment block above it, first line first. */
      const char *start = line;
      while (start > text) {
        const char *prev = start - 1;
        while (prev > text && prev[-1] != '\n') prev--;
        const char *c = prev;
        while (c < start && (*c == ' ' || *c == '\t')) c++;
        if (c >= start || *c != '#') break;
        start = prev;
      }
      for (const char *c = start; c < line;) {
        const char *e = memchr(c, '\n', (size_t)(line - c));
        const char *h = c;
        while (h < e && (*h == ' ' || *h == '\t')) h++;
        h++; /* the '#' */
        if (h < e && *h == ' ') h++;
        pd_buf_printf(out, "  %.*s\n", (int)(e - h), h);
        c = e + 1;
      }
      return true;
    }
    at += ll + 1;
  }
  return false;
}

typedef struct help_find {
  const char *name;
  pd_buf *out;
  bool found;
} help_find;

static bool help_in_file(const char *file, const char *text, size_t len, void *ctx) {
  help_find *h = ctx;
  if (!def_help(text, len, h->name, h->out)) return false;
  pd_buf_printf(h->out, "  (import \"%.*s\")\n", (int)(strlen(file) - 3), file);
  return h->found = true;
}

/* :help NAME -- a def of the session or of the standard library (its signature and comment),
 * else a builtin (as the compiler's tables describe it). */
bool pd_repl_help_text(pd_repl *r, const char *name, pd_buf *out) {
  bool found = r->src && def_help(r->src->text, r->src->len, name, out);
  help_find hf = {name, out, false};
  if (!found) {
    for_each_stdlib_file(help_in_file, &hf);
    found = hf.found;
  }
  return found || pd_builtin_describe(name, out);
}

static bool help_name(pd_repl *r, const char *name) {
  pd_buf b;
  pd_buf_init(&b);
  bool found = pd_repl_help_text(r, name, &b);
  if (found) put_buf(r->o.out, &b);
  else pd_repl_say_error(r, "no function or layer named '%s' (:help lists the commands)", name);
  pd_buf_free(&b);
  return found;
}

void pd_repl_names_add(namelist *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->names[i], name) == 0) return;
  if (PD_GROW(l->names, l->cap, l->n + 1)) {
    l->oom = true;
    return;
  }
  l->names[l->n++] = name;
}

/* The names a script binds at top level: assignment targets (also those inside if, for and
 * while bodies, which write the outer names or become the if's outputs), emitted sequences,
 * top-level `let` and `def`. In order of first appearance, without duplicates. */
static void collect_names(const pd_ast_node *block, bool top, namelist *l) {
  for (size_t i = 0; i < block->block.stmts.len; i++) {
    const pd_ast_node *s = block->block.stmts.items[i];
    switch (s->kind) {
    case PD_AST_LET:
      if (!top) break;
      /* fall through */
    case PD_AST_ASSIGN:
      for (size_t k = 0; k < s->assign.targets.len; k++)
        if (s->assign.targets.items[k]->kind == PD_AST_NAME)
          pd_repl_names_add(l, s->assign.targets.items[k]->name.id);
      break;
    case PD_AST_DEF:
      if (top) pd_repl_names_add(l, s->def.name->name.id);
      break;
    case PD_AST_IF:
      for (size_t k = 0; k < s->if_.branches.len; k++)
        collect_names(s->if_.branches.items[k]->branch.body, false, l);
      if (s->if_.else_block) collect_names(s->if_.else_block, false, l);
      break;
    case PD_AST_FOR: collect_names(s->for_.body, false, l); break;
    case PD_AST_WHILE: collect_names(s->while_.body, false, l); break;
    case PD_AST_EMIT:
      for (size_t k = 0; k < s->emit.outputs.len; k++)
        pd_repl_names_add(l, s->emit.outputs.items[k]->binding.name);
      break;
    default: break;
    }
  }
}

/* Compile the session's text + `print(\nNAMES\n)` without printing anything: the action's
 * arguments are the names' values. NULL if that does not compile (a name not visible at top
 * level). */
static pd_unit *probe(pd_repl *r, const char *const *names, size_t n, pd_source **src) {
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_puts(&b, "print(\n");
  for (size_t i = 0; i < n; i++) pd_buf_printf(&b, "%s%s\n", names[i], i + 1 < n ? "," : "");
  pd_buf_puts(&b, ")\n");
  pd_unit *unit = NULL;
  *src = NULL;
  if (!b.oom && compile_with(r, b.data, b.len, true, src, &unit) == PD_OK &&
      (unit->nactions == 0 || unit->actions[unit->nactions - 1].nargs != (int)n)) {
    pd_unit_free(unit);
    pd_source_free(*src);
    *src = NULL;
    unit = NULL;
  }
  pd_buf_free(&b);
  return unit;
}

static const char *cval_kind(const pd_cval *v) {
  switch (v->kind) {
  case PD_CVAL_NONE: return "none";
  case PD_CVAL_BOOL: return "bool";
  case PD_CVAL_INT: return "int";
  case PD_CVAL_FLOAT: return "float";
  case PD_CVAL_STRING: return "string";
  case PD_CVAL_LIST: return "list";
  case PD_CVAL_TENSOR: return "tensor";
  case PD_CVAL_RECORD: return "spec";
  case PD_CVAL_DTYPE: return "dtype";
  case PD_CVAL_FUNC: return "function";
  }
  return "?";
}

/* One line of :vars: NAME, what it is, where. */
static void vars_line(pd_buf *b, int width, const char *name, const pd_unit *unit,
                      const pd_cval *v) {
  pd_buf_printf(b, "  %-*s  ", width, name);
  if (v->kind == PD_CVAL_TENSOR) {
    int block = 0;
    const pd_var_desc *var = find_var(unit->main, v->str, &block);
    if (var) describe_var(var, b);
    else pd_buf_puts(b, "tensor");
    pd_buf_printf(b, "  block %d", block);
    if (var && var->persistable) pd_buf_puts(b, ", parameter");
    if (strcmp(v->str, name) != 0) pd_buf_printf(b, " (var %s)", v->str);
  } else if (v->kind == PD_CVAL_FUNC) {
    pd_buf_printf(b, "function %s", v->str);
  } else {
    pd_buf_printf(b, "%s = ", cval_kind(v));
    pd_cval_format(v, b);
  }
  pd_buf_puts(b, "\n");
}

static void cmd_vars_all(pd_repl *r, pd_buf *b) {
  const pd_program *p = r->unit->main;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *blk = p->blocks[bi];
    if (bi) pd_buf_printf(b, "block %d (parent %d):\n", bi, blk->parent_idx);
    else pd_buf_puts(b, "block 0 (global):\n");
    int width = 1;
    for (int i = 0; i < blk->nvars; i++)
      if ((int)strlen(blk->vars[i]->name) > width) width = (int)strlen(blk->vars[i]->name);
    for (int i = 0; i < blk->nvars; i++) {
      pd_buf_printf(b, "  %-*s  ", width, blk->vars[i]->name);
      describe_var(blk->vars[i], b);
      pd_buf_puts(b, blk->vars[i]->persistable ? "  parameter\n" : "\n");
    }
  }
}

static void cmd_vars(pd_repl *r, bool all) {
  pd_buf b;
  pd_buf_init(&b);
  if (all) {
    cmd_vars_all(r, &b);
    put_buf(r->o.out, &b);
    pd_buf_free(&b);
    return;
  }
  namelist l = {0};
  pd_ast_arena *arena = pd_ast_arena_new();
  pd_diags d;
  pd_diags_init(&d, 1);
  pd_ast_node *prog = NULL;
  if (arena && pd_parse(r->src, arena, &d, &prog) == PD_OK) collect_names(prog, true, &l);
  pd_diags_free(&d);
  int width = 1;
  for (size_t i = 0; i < l.n; i++)
    if ((int)strlen(l.names[i]) > width) width = (int)strlen(l.names[i]);
  const pd_program *main = r->unit->main;
  const pd_block *b0 = main->blocks[0];
  for (int i = 0; i < b0->nvars; i++)
    if (b0->vars[i]->persistable && (int)strlen(b0->vars[i]->name) > width)
      width = (int)strlen(b0->vars[i]->name);
  /* All names at once; if one of them is not visible at top level, one at a time. */
  pd_source *src = NULL;
  pd_unit *unit = l.n ? probe(r, l.names, l.n, &src) : NULL;
  for (size_t i = 0; i < l.n; i++) {
    if (unit) {
      vars_line(&b, width, l.names[i], unit, unit->actions[unit->nactions - 1].args[i]);
      continue;
    }
    pd_source *s1 = NULL;
    pd_unit *u1 = probe(r, &l.names[i], 1, &s1);
    if (u1) vars_line(&b, width, l.names[i], u1, u1->actions[u1->nactions - 1].args[0]);
    pd_unit_free(u1);
    pd_source_free(s1);
  }
  pd_unit_free(unit);
  pd_source_free(src);
  /* Then the parameters (and optimizer state), which are not names of the script; those of
   * statements whose names were all bound again are orphans, which :gc frees. */
  bool header = false;
  pd_source *gsrc;
  pd_unit *kept;
  namelist orphans;
  if (pd_repl_gc_plan(r, &gsrc, &kept, &orphans) < 0) b.oom = 1;
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (!v->persistable) continue;
    if (!header) pd_buf_puts(&b, "parameters:\n");
    header = true;
    pd_buf_printf(&b, "  %-*s  ", width, v->name);
    describe_var(v, &b);
    pd_buf_puts(&b, pd_repl_names_has(&orphans, v->name) ? "  block 0, orphan (:gc frees it)\n"
                                                 : "  block 0\n");
  }
  pd_repl_names_free(&orphans);
  pd_unit_free(kept);
  pd_source_free(gsrc);
  if (!l.n && !header) pd_buf_puts(&b, "(no names yet)\n");
  if (l.oom) b.oom = 1;
  put_buf(r->o.out, &b);
  pd_buf_free(&b);
  pd_free(l.names);
  pd_ast_arena_free(arena);
}

static pd_repl_result write_program(pd_repl *r, const char *path, bool dot) {
  pd_error err = {0};
  pd_status st;
  if (dot) {
    pd_buf b;
    pd_buf_init(&b);
    pd_program_dump_dot(r->unit->main, &b);
    st = b.oom ? pd_error_set(&err, PD_ENOMEM, (pd_loc){0}, "out of memory")
               : pd_write_file_atomic(path, b.data ? b.data : "", b.len, &err);
    pd_buf_free(&b);
  } else {
    st = pd_program_save(r->unit->main, path, &err);
  }
  /* :save writes the parameters too, beside the program (NAME.pdiparams for NAME.pdmodel): those
   * that hold a value (all of them once a statement has run), sorted by name as save() does. */
  pd_buf ppath;
  pd_buf_init(&ppath);
  int np = 0;
  if (!st && !dot) {
    const char **names = NULL, **have = NULL;
    int n = 0;
    size_t len = strlen(path);
    bool ext = len > 8 && !strcmp(path + len - 8, ".pdmodel");
    pd_buf_printf(&ppath, "%.*s.pdiparams", (int)(ext ? len - 8 : len), path);
    pd_scope *scope = r->runner ? pd_runner_scope(r->runner) : NULL;
    if (ppath.oom || pd_params_names(r->unit->main, &names, &n) ||
        !(have = pd_calloc((size_t)n + 1, sizeof *have))) {
      st = pd_error_set(&err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    } else {
      for (int i = 0; scope && i < n; i++) {
        pd_variable *v = pd_scope_find_local_var(scope, names[i]);
        if (v && v->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&v->u.tensor))
          have[np++] = names[i];
      }
      if (np) st = pd_params_save(ppath.data, scope, np, have, &err);
    }
    pd_free(names);
    pd_free(have);
  }
  if (st) {
    pd_repl_say_error(r, "%s", err.msg ? err.msg : pd_status_str(st));
    pd_error_clear(&err);
    pd_buf_free(&ppath);
    return PD_REPL_ERROR;
  }
  if (np) fprintf(r->o.out, "wrote %s and %s (%d parameters)\n", path, ppath.data, np);
  else fprintf(r->o.out, "wrote %s\n", path);
  fflush(r->o.out);
  pd_buf_free(&ppath);
  return PD_REPL_OK;
}

/* One line on what :batch bound: "x float32 [8, 1], label int64 [8, 1]". */
static void show_bound(pd_repl *r) {
  int n = pd_runner_nbound(r->runner);
  pd_buf b;
  pd_buf_init(&b);
  if (!n) pd_buf_puts(&b, "no batch is bound (:batch READER [N] binds one)");
  for (int i = 0; i < n; i++) {
    const char *name;
    const pd_tensor *t = pd_runner_bound(r->runner, i, &name);
    pd_buf_printf(&b, "%s%s %s ", i ? ", " : "", name, pd_dtype_name(t->dtype));
    pd_buf_put_dims(&b, t->ndims, t->dims);
    if (t->nlod) pd_buf_printf(&b, " (%lld sequences)", (long long)t->lod[0].n - 1);
  }
  pd_buf_puts(&b, "\n");
  put_buf(r->o.out, &b);
  pd_buf_free(&b);
}

/* :batch READER [N]: the first N samples (default 8) of the reader that the expression READER
 * makes feed the session's data vars at the prompt; :batch off forgets them; :batch alone
 * shows them. */
static pd_repl_result cmd_batch(pd_repl *r, char *arg, int col) {
  if (!*arg) {
    show_bound(r);
    return PD_REPL_OK;
  }
  if (!strcmp(arg, "off")) {
    pd_runner_unbind(r->runner);
    return PD_REPL_OK;
  }
  int64_t batch = 8;
  char *last = strrchr(arg, ' ');
  if (last && last[1] && strspn(last + 1, "0123456789") == strlen(last + 1)) {
    batch = strtoll(last + 1, NULL, 10);
    *last = 0;
    if (batch < 1 || batch > 1000000) {
      pd_repl_say_error(r, ":batch: the number of samples must be from 1 to 1000000, not %s",
                        last + 1);
      return PD_REPL_ERROR;
    }
  }
  /* The expression alone where it was typed (its diagnostics at its line and column), then
   * wrapped in print( ) on the line before, whose argument is the reader. */
  pd_buf plain_text, b;
  pd_buf_init(&plain_text);
  pd_buf_init(&b);
  pd_buf_printf(&plain_text, "%*s%s\n", col, "", arg);
  pd_buf_printf(&b, "print(\n%*s%s\n)\n", col, "", arg);
  pd_source *src = NULL, *plain = NULL;
  pd_unit *unit = NULL, *punit = NULL;
  pd_repl_result res = PD_REPL_ERROR;
  if (b.oom || plain_text.oom) {
    pd_repl_say_error(r, "out of memory");
  } else if (compile_with(r, plain_text.data, plain_text.len, false, &plain, &punit) == PD_OK &&
             compile_with(r, b.data, b.len, true, &src, &unit) == PD_OK) {
    const pd_action *a = &unit->actions[unit->nactions - 1];
    const pd_cval *spec = a->nargs == 1 ? a->args[0] : NULL;
    pd_error err = {0};
    int64_t samples;
    if (!spec || spec->kind != PD_CVAL_RECORD) {
      pd_repl_say_error(r, ":batch needs a reader, such as :batch csv(\"data.csv\") or :batch r "
                        "(a name bound to one), not '%s'", arg);
    } else if (pd_runner_bind_batch(r->runner, &(pd_action){.kind = a->kind,
                                    .loc = a->arg_loc ? a->arg_loc[0] : a->loc},
                                    spec, batch, &samples, &err)) {
      if (err.loc.file && strcmp(err.loc.file, r->o.source_name) == 0) err.loc.line--;
      pd_repl_print_error(r, unit, plain, &err);
    } else {
      fprintf(r->o.out, "%lld sample%s of %s: ", (long long)samples, samples == 1 ? "" : "s",
              arg);
      show_bound(r);
      res = PD_REPL_OK;
    }
    pd_error_clear(&err);
  }
  pd_unit_free(unit);
  pd_unit_free(punit);
  pd_source_free(src);
  pd_source_free(plain);
  pd_buf_free(&b);
  pd_buf_free(&plain_text);
  return res;
}

static pd_repl_result command(pd_repl *r, const char *line) {
  const char *p = line + 1;
  size_t nlen = 0;
  while (ident_char((unsigned char)p[nlen])) nlen++;
  char name[16] = "";
  if (nlen < sizeof name) {
    memcpy(name, p, nlen);
    name[nlen] = 0;
  }
  const char *arg = p + nlen;
  while (*arg == ' ' || *arg == '\t') arg++;
  size_t alen = strlen(arg);
  while (alen && isspace((unsigned char)arg[alen - 1])) alen--;
  char *a = pd_strndup(arg, alen);
  if (!a) {
    pd_repl_say_error(r, "out of memory");
    return PD_REPL_ERROR;
  }
  pd_repl_result res = PD_REPL_OK;
  bool takes_file = !strcmp(name, "dot") || !strcmp(name, "load") || !strcmp(name, "save");
  bool takes_none = !strcmp(name, "program") || !strcmp(name, "reset") || !strcmp(name, "gc") ||
                    !strcmp(name, "summary") ||
                    !strcmp(name, "quit") || !strcmp(name, "q") || !strcmp(name, "exit");
  if (takes_file && !*a) {
    pd_repl_say_error(r, ":%s needs a file name (:%s FILE)", name, name);
    res = PD_REPL_ERROR;
  } else if (takes_none && *a) {
    pd_repl_say_error(r, ":%s takes no argument", name);
    res = PD_REPL_ERROR;
  } else if (!strcmp(name, "help")) {
    if (!*a) cmd_help(r);
    else if (!help_name(r, a)) res = PD_REPL_ERROR;
  } else if (!strcmp(name, "vars")) {
    if (*a && strcmp(a, "all") != 0) {
      pd_repl_say_error(r, ":vars takes no argument or 'all', not '%s'", a);
      res = PD_REPL_ERROR;
    } else {
      cmd_vars(r, *a != 0);
    }
  } else if (!strcmp(name, "gc")) {
    res = pd_repl_gc(r);
  } else if (!strcmp(name, "batch")) {
    res = ensure_session(r) ? cmd_batch(r, a, (int)(arg - line)) : PD_REPL_ERROR;
  } else if (!strcmp(name, "program")) {
    pd_buf b;
    pd_buf_init(&b);
    pd_program_dump(r->unit->main, &b);
    put_buf(r->o.out, &b);
    pd_buf_free(&b);
  } else if (!strcmp(name, "summary")) {
    pd_buf b;
    pd_buf_init(&b);
    if (pd_unit_summary(r->unit, r->src, &b, NULL)) {
      pd_repl_say_error(r, "out of memory");
      res = PD_REPL_ERROR;
    } else {
      put_buf(r->o.out, &b);
    }
    pd_buf_free(&b);
  } else if (!strcmp(name, "dot")) {
    res = write_program(r, a, true);
  } else if (!strcmp(name, "save")) {
    res = write_program(r, a, false);
  } else if (!strcmp(name, "load")) {
    res = pd_repl_load(r, a);
  } else if (!strcmp(name, "device")) {
    pd_error err = {0};
    pd_k_place place;
    int index;
    if (!*a) {
      if (r->o.place == PD_K_CUDA)
        fprintf(r->o.out, "gpu:%d (%s)\n", r->o.gpu_index, pd_k_cuda_device_name());
      else
        fputs("cpu\n", r->o.out);
      fflush(r->o.out);
    } else if (pd_run_parse_device(a, &place, &index, &err) ||
               !ensure_session(r) || pd_runner_set_place(r->runner, place, index, &err)) {
      if (err.msg) pd_repl_say_error(r, "%s", err.msg);
      pd_error_clear(&err);
      res = PD_REPL_ERROR;
    } else {
      r->o.place = (int)place;
      r->o.gpu_index = index;
    }
  } else if (!strcmp(name, "reset")) {
    pd_error err = {0};
    r->gap += r->src_lines;  /* numbers stay used */
    session_close(r);
    if (session_open(r, &err)) {
      pd_repl_say_error(r, "%s", err.msg ? err.msg : pd_status_str(err.status));
      pd_error_clear(&err);
      res = PD_REPL_QUIT;
    }
  } else if (!strcmp(name, "quit") || !strcmp(name, "q") || !strcmp(name, "exit")) {
    res = PD_REPL_QUIT;
  } else {
    pd_repl_say_error(r, "unknown command '%.*s' (:help lists them)", (int)strcspn(line, "\r\n"),
                      line);
    res = PD_REPL_ERROR;
  }
  pd_free(a);
  return res;
}

pd_repl_result pd_repl_feed(pd_repl *r, const char *line) {
  if (!ensure_session(r)) return PD_REPL_ERROR;
  if (!r->incomplete) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == ':') {
      pd_repl_result res = command(r, p);
      /* A script keeps its line numbers: the command's line counts as a blank one (at a
       * prompt, as a line the session does not keep). */
      if (!r->o.echo && res != PD_REPL_QUIT) pd_buf_puts(&r->pending, "\n");
      else if (res != PD_REPL_QUIT) r->gap++;
      return res;
    }
    /* quit, exit, quit(), exit() as other prompts take them: say how to leave this one. */
    static const char *const leave[] = {"quit", "exit", "quit()", "exit()"};
    size_t len = strcspn(p, " \t\r\n");
    bool alone = p[len + strspn(p + len, " \t\r\n")] == '\0';
    for (size_t i = 0; alone && i < PD_ARRAY_LEN(leave); i++)
      if (len == strlen(leave[i]) && !strncmp(p, leave[i], len)) {
        pd_repl_say_error(r, "'%.*s' is not a command here: type :quit (or Ctrl-D) to leave",
                          (int)len, p);
        if (!r->o.echo) pd_buf_puts(&r->pending, "\n");
        else r->gap++;
        return PD_REPL_ERROR;
      }
  }
  size_t n = strlen(line);
  pd_buf_append(&r->pending, line, n);
  if (!n || line[n - 1] != '\n') pd_buf_puts(&r->pending, "\n");
  if (r->pending.oom) {
    pd_buf_free(&r->pending);
    pd_buf_init(&r->pending);
    r->incomplete = false;
    pd_repl_say_error(r, "out of memory");
    return PD_REPL_ERROR;
  }
  return try_pending(r);
}

/* ------------------------------------------------------------------------------------------ */
/* Completion.                                                                                  */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append the identifiers of s[0..len) (only those after `def` with defs_only) to *w. */
static void add_idents(const char *s, size_t len, bool defs_only, char ***w, int *n) {
  size_t pos = 0, start, cap = (size_t)*n;
  bool after_def = false;
  for (int k; (k = pd_repl_scan(s, len, &pos, &start)) != T_END;) {
    bool is_def = k == T_IDENT && pos - start == 3 && memcmp(s + start, "def", 3) == 0;
    if (k == T_IDENT && !is_def && (!defs_only || after_def)) {
      if (PD_GROW(*w, cap, (size_t)*n + 1)) return;
      char *copy = pd_strndup(s + start, pos - start);
      if (!copy) return;
      (*w)[(*n)++] = copy;
    }
    after_def = is_def;
  }
}

static bool lib_idents(const char *file, const char *text, size_t len, void *ctx) {
  (void)file;
  pd_repl *r = ctx;
  add_idents(text, len, true, &r->lib, &r->nlib);
  return false;
}

static void load_lib(pd_repl *r) {
  r->lib_loaded = true;
  for_each_stdlib_file(lib_idents, r);
}

int pd_repl_complete(pd_repl *r, const char *prefix, size_t plen, bool command,
                     const char *const **out) {
  size_t n = 0;
  *out = NULL;
#define ADD(s)                                                               \
  do {                                                                       \
    const char *s_ = (s);                                                    \
    if (strncmp(s_, prefix, plen) == 0) {                                    \
      if (PD_GROW(r->cands, r->capcands, n + 1)) return 0;                   \
      r->cands[n++] = s_;                                                    \
    }                                                                        \
  } while (0)
  if (command) {
    for (size_t i = 0; i < PD_ARRAY_LEN(commands); i++) ADD(commands[i]);
  } else {
    if (r->src && r->words_gen != r->gen) {
      free_words(r->words, r->nwords);
      r->words = NULL;
      r->nwords = 0;
      add_idents(r->src->text, r->src->len, false, &r->words, &r->nwords);
      r->words_gen = r->gen;
    }
    if (!r->lib_loaded) load_lib(r);
    for (int i = 0; i < r->nwords; i++) ADD(r->words[i]);
    for (int i = 0; i < r->nlib; i++) ADD(r->lib[i]);
    for (size_t i = 0; i < PD_ARRAY_LEN(keywords); i++) ADD(keywords[i]);
    const char *bi[256];
    char pre[64];
    if (plen < sizeof pre) {
      memcpy(pre, prefix, plen);
      pre[plen] = 0;
      int nb = pd_builtin_names(pre, bi, (int)PD_ARRAY_LEN(bi));
      for (int i = 0; i < nb && i < (int)PD_ARRAY_LEN(bi); i++) ADD(bi[i]);
    }
  }
#undef ADD
  if (!n) return 0;
  qsort(r->cands, n, sizeof *r->cands, cmp_str);
  size_t k = 1;
  for (size_t i = 1; i < n; i++)
    if (strcmp(r->cands[i], r->cands[k - 1]) != 0) r->cands[k++] = r->cands[i];
  *out = r->cands;
  return (int)k;
}
