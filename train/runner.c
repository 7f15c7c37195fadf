/* runner.c -- the runner: its global scope, initialised by the startup program (and by each
 * unit it adopts), the place it computes on, and what every action builds on: the executor
 * options, the pruned and prepared program of a set of targets, the data vars a reader must
 * feed, errors placed at the action. The bottom of the runner (see run_int.h): train/train.c and
 * train/run.c call it; it calls neither. */
#include "config.h"
#include "train/run.h"

#include <stdlib.h>
#include <string.h>

#include "train/run_int.h"
#include "vm/ir/serialize.h"
#include "vm/passes/data_parallel.h"
#include "vm/passes/prune.h"
#include "vm/run/comm.h"

static void exec_notice(void *ud, const char *msg) {
  pd_runner *r = ud;
  /* Once per op type for the runner's life: the notice names the op between quotes. */
  const char *q = strchr(msg, '\'');
  const char *e = q ? strchr(q + 1, '\'') : NULL;
  if (q && e) {
    char key[80];
    snprintf(key, sizeof key, "|%.*s|", (int)(e - q - 1), q + 1);
    if (r->noticed.data && strstr(r->noticed.data, key)) return;
    pd_buf_puts(&r->noticed, key);
  }
  if (r->opts.progress) fprintf(r->opts.progress, "pdlang: note: %s\n", msg);
}

pd_exec_options pd_run_exec_options(pd_runner *r, uint64_t seed, bool with_interrupt) {
  return (pd_exec_options){.seed = seed,
                           .check_nan_inf = r->opts.check_nan_inf,
                           .interrupt = with_interrupt ? r->opts.interrupt : NULL,
                           .place = r->opts.place,
                           .notice = exec_notice,
                           .notice_ud = r};
}

pd_status pd_run_parse_device(const char *spec, pd_k_place *place, int *gpu_index,
                              pd_error *err) {
  *place = PD_K_HOST;
  *gpu_index = 0;
  if (strcmp(spec, "cpu") == 0) return PD_OK;
  const char *rest = NULL;
  if (strncmp(spec, "gpu", 3) == 0) rest = spec + 3;
  else if (strncmp(spec, "cuda", 4) == 0) rest = spec + 4;
  if (rest && *rest == '\0') {
    *place = PD_K_CUDA;
    return PD_OK;
  }
  if (rest && *rest == ':' && rest[1] >= '0' && rest[1] <= '9') {
    char *end;
    long i = strtol(rest + 1, &end, 10);
    if (*end == '\0' && i < 1024) {
      *place = PD_K_CUDA;
      *gpu_index = (int)i;
      return PD_OK;
    }
  }
  return pd_error_set(err, PD_EINVAL, (pd_loc){0},
                      "unknown device '%s' (expected cpu, gpu or gpu:N)", spec);
}

pd_status pd_runner_set_place(pd_runner *r, pd_k_place place, int gpu_index, pd_error *err) {
  if (place == PD_K_CUDA) {
    pd_error e = {0};
    pd_status st = pd_k_cuda_open(gpu_index, &e);
    if (st) {
      pd_error_set(err, st, (pd_loc){0}, "cannot compute on GPU %d: %s", gpu_index,
                   e.msg ? e.msg : pd_status_str(st));
      pd_error_clear(&e);
      return st;
    }
  }
  r->opts.place = place;
  r->opts.gpu_index = gpu_index;
  return PD_OK;
}

pd_k_place pd_runner_place(const pd_runner *r) { return r->opts.place; }

pd_status pd_run_at_loc(pd_error *err, pd_status st, pd_loc loc, const char *what) {
  if (st && err && err->loc.line == 0 && loc.line > 0) {
    char *msg = err->msg;
    const char *m = msg ? msg : pd_status_str(st);
    /* An error placed in a file (a parameter file's, a checkpoint's) names it unless its
     * message does already. */
    const char *file = err->loc.file && !strstr(m, err->loc.file) ? err->loc.file : NULL;
    err->msg = NULL;
    pd_error_set(err, st, loc, "%s%s%s%s%s", what ? what : "", what ? ": " : "", file ? file : "",
                 file ? ": " : "", m);
    pd_free(msg);
  }
  return st;
}

/* Run the ops of block 0 of init whose outputs hold no value in the global scope yet (the ops
 * are copied; init is not changed). Initialisers continue the runner's random stream, so that
 * a later unit's new parameters do not repeat an earlier one's numbers. */
pd_status pd_run_init_missing(pd_runner *r, const pd_program *init, pd_error *err) {
  pd_program *p = pd_program_clone(init);
  if (!p) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  pd_block *b = p->blocks[0];
  for (int i = b->nops - 1; i >= 0; i--) {
    const pd_op_desc *op = b->ops[i];
    bool fresh = false;
    for (int s = 0; s < op->noutputs; s++)
      for (int a = 0; a < op->outputs[s].nargs; a++) {
        pd_variable *v = pd_scope_find_local_var(r->global, op->outputs[s].args[a]);
        fresh = fresh || !v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor);
      }
    if (!fresh) pd_block_remove_op(b, i);
  }
  pd_exec_options eo = pd_run_exec_options(r, r->opts.seed, true);
  pd_exec *ex = NULL;
  pd_status st = pd_exec_new(p, &eo, &ex, err);
  if (!st) {
    pd_exec_set_rng_offset(ex, r->startup_rng);
    st = pd_exec_run_block(ex, 0, r->global, err);
    r->startup_rng = pd_exec_rng_offset(ex);
  }
  pd_exec_free(ex);
  pd_program_free(p);
  return st;
}

pd_status pd_run_program_hash(const pd_program *p, uint64_t *hash) {
  pd_program *q = pd_program_clone(p);
  if (!q) return PD_ENOMEM;
  for (int bi = 0; bi < q->nblocks; bi++)
    for (int i = 0; i < q->blocks[bi]->nops; i++) {
      pd_op_set_loc(q->blocks[bi]->ops[i], (pd_loc){0});
      pd_op_set_calls(q->blocks[bi]->ops[i], NULL);
    }
  uint8_t *bytes = NULL;
  size_t len = 0;
  pd_status st = pd_program_to_bytes(q, &bytes, &len, NULL);
  pd_program_free(q);
  if (st) return PD_ENOMEM;
  *hash = pd_hash_bytes(bytes, len);
  pd_free(bytes);
  return PD_OK;
}

pd_status pd_run_same_program(const pd_program *p, const char *what, pd_loc loc, pd_error *err) {
  if (pd_comm_size() == 1) return PD_OK;
  uint64_t h;
  if (pd_run_program_hash(p, &h)) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  pd_error e = {0};
  pd_status st = pd_comm_same(h, what, &e);
  if (st) {
    pd_error_set(err, st, loc, "%s", e.msg ? e.msg : pd_status_str(st));
    pd_error_clear(&e);
  }
  return st;
}

/* The startup program of a data-parallel job: the same initialisers (every rank checks that it
 * runs the same ones), then rank 0's values broadcast (vm/passes/data_parallel.h). */
static pd_status run_startup(pd_runner *r, const pd_program *startup, pd_error *err) {
  if (pd_comm_size() == 1) return pd_run_init_missing(r, startup, err);
  pd_program *p = pd_program_clone(startup);
  pd_status st = p ? PD_OK : pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  if (!st) st = pd_run_same_program(r->unit->main, "main program", (pd_loc){0}, err);
  if (!st) st = pd_program_broadcast_params(p, (pd_loc){0}, err);
  if (!st) st = pd_run_same_program(p, "startup program", (pd_loc){0}, err);
  if (!st) st = pd_run_init_missing(r, p, err);
  pd_program_free(p);
  return st;
}

pd_status pd_runner_new(const pd_unit *unit, const pd_run_options *opts, pd_runner **out,
                        pd_error *err) {
  *out = NULL;
  pd_runner *r = pd_calloc(1, sizeof *r);
  if (!r || !(r->global = pd_scope_new(NULL))) {
    pd_free(r);
    return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  }
  r->unit = unit;
  pd_buf_init(&r->noticed);
  if (opts) {
    r->opts = *opts;
  } else {
    r->opts.out = stdout;
    r->opts.progress = stderr;
  }
  pd_status st = PD_OK;
  if (r->opts.place == PD_K_CUDA) st = pd_runner_set_place(r, PD_K_CUDA, r->opts.gpu_index, err);
  if (!st) st = run_startup(r, unit->startup, err);
  if (st) {
    pd_runner_free(r);
    return st;
  }
  *out = r;
  return PD_OK;
}

pd_status pd_runner_adopt(pd_runner *r, const pd_unit *unit, pd_error *err) {
  pd_status st = pd_run_init_missing(r, unit->startup, err);
  if (!st) r->unit = unit;
  return st;
}

void pd_runner_unbind(pd_runner *r) {
  for (int i = 0; i < r->nbound; i++) {
    pd_free(r->bound_names[i]);
    pd_tensor_release(&r->bound[i]);
  }
  pd_free(r->bound_names);
  pd_free(r->bound);
  r->bound_names = NULL;
  r->bound = NULL;
  r->nbound = 0;
}

pd_status pd_runner_bind(pd_runner *r, int n, const pd_exec_feed *feeds, pd_error *err) {
  pd_runner_unbind(r);
  r->bound_names = pd_calloc((size_t)n + 1, sizeof *r->bound_names);
  r->bound = pd_calloc((size_t)n + 1, sizeof *r->bound);
  pd_status st = r->bound_names && r->bound ? PD_OK : PD_ENOMEM;
  for (int i = 0; !st && i < n; i++) {
    pd_tensor_init(&r->bound[i]);
    r->nbound = i + 1;
    if (!(r->bound_names[i] = pd_strdup(feeds[i].name))) st = PD_ENOMEM;
    else st = pd_tensor_copy_to(&r->bound[i], feeds[i].value, PD_K_HOST);
  }
  if (st) {
    pd_runner_unbind(r);
    return pd_error_set(err, st, (pd_loc){0}, ":batch: out of memory");
  }
  return PD_OK;
}

int pd_runner_nbound(const pd_runner *r) { return r->nbound; }

const pd_tensor *pd_runner_bound(const pd_runner *r, int i, const char **name) {
  if (i < 0 || i >= r->nbound) return NULL;
  if (name) *name = r->bound_names[i];
  return &r->bound[i];
}

void pd_runner_free(pd_runner *r) {
  if (!r) return;
  pd_runner_unbind(r);
  pd_scope_free(r->global);
  pd_buf_free(&r->noticed);
  pd_categories_free(r->categories);
  pd_free(r);
}

pd_scope *pd_runner_scope(pd_runner *r) { return r->global; }
const pd_unit *pd_runner_unit(const pd_runner *r) { return r->unit; }

/* ---- Saving and restoring the state an action changes ---- */

/* A variable of the global scope as it was: its name, its type, and for a tensor its value
 * (a copy; without storage when it had none). */
typedef struct saved_var {
  char *name;
  pd_var_type type;
  pd_tensor value;
} saved_var;

struct pd_runner_saved {
  saved_var *vars;   /* sorted by name */
  size_t n;
  uint64_t startup_rng;
};

void pd_runner_saved_free(pd_runner_saved *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n; i++) {
    pd_free(s->vars[i].name);
    pd_tensor_release(&s->vars[i].value);
  }
  pd_free(s->vars);
  pd_free(s);
}

pd_status pd_runner_save(pd_runner *r, pd_runner_saved **out, pd_error *err) {
  *out = NULL;
  const char **names = NULL;
  size_t n = 0;
  pd_runner_saved *s = pd_calloc(1, sizeof *s);
  pd_status st = s ? pd_scope_var_names(r->global, &names, &n) : PD_ENOMEM;
  if (!st && n && !(s->vars = pd_calloc(n, sizeof *s->vars))) st = PD_ENOMEM;
  for (size_t i = 0; !st && i < n; i++) {
    const pd_variable *v = pd_scope_find_local_var(r->global, names[i]);
    saved_var *e = &s->vars[s->n++];
    pd_tensor_init(&e->value);
    e->type = v->type;
    if (!(e->name = pd_strdup(names[i]))) st = PD_ENOMEM;
    else if (v->type != PD_VAR_LOD_TENSOR) continue;
    else if (pd_tensor_initialized(&v->u.tensor)) st = pd_tensor_copy(&e->value, &v->u.tensor);
    else {  /* declared, no value: its dtype, shape and place */
      e->value.dtype = v->u.tensor.dtype;
      e->value.ndims = v->u.tensor.ndims;
      memcpy(e->value.dims, v->u.tensor.dims, sizeof e->value.dims);
      e->value.place = v->u.tensor.place;
    }
  }
  pd_free(names);
  if (st) {
    pd_runner_saved_free(s);
    return pd_error_set(err, st, (pd_loc){0}, "%s",
                        st == PD_ENOMEM ? "out of memory (copying the parameters before training)"
                                        : "cannot copy a parameter on the GPU");
  }
  s->startup_rng = r->startup_rng;
  *out = s;
  return PD_OK;
}

static bool saved_has(const pd_runner_saved *s, const char *name) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(name, s->vars[mid].name);
    if (c == 0) return true;
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return false;
}

pd_status pd_runner_restore(pd_runner *r, pd_runner_saved *s) {
  pd_status st = PD_OK;
  /* The variables made since: erased one at a time (the scope's table must not change under
   * its iteration), nothing allocated. */
  for (;;) {
    pd_variable *v, *extra = NULL;
    for (size_t i = 0; !extra && (v = pd_scope_next_var(r->global, &i));)
      if (!saved_has(s, v->name)) extra = v;
    if (!extra) break;
    pd_scope_erase_var(r->global, extra->name);
  }
  for (size_t i = 0; i < s->n; i++) {
    saved_var *e = &s->vars[i];
    if (e->type != PD_VAR_UNSET && e->type != PD_VAR_LOD_TENSOR) continue;  /* not kept */
    pd_variable *v = pd_scope_find_local_var(r->global, e->name);
    if (!v && !(v = pd_scope_var(r->global, e->name))) {
      st = PD_ENOMEM;
      continue;
    }
    if (v->type != e->type) pd_var_reset(v);
    if (e->type == PD_VAR_UNSET) continue;
    pd_var_set_type(v, PD_VAR_LOD_TENSOR);  /* never allocates */
    pd_tensor_release(&v->u.tensor);
    v->u.tensor = e->value;  /* moved: the storage's reference and the LoD go with it */
    pd_tensor_init(&e->value);
  }
  r->startup_rng = s->startup_rng;
  pd_runner_saved_free(s);
  return st;
}

/* ---- Pruning, data vars ---- */

static bool in_list(const char *name, const char *const *list, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(list[i], name) == 0) return true;
  return false;
}

/* Does any op of p (any block) write var `name`? */
static bool written(const pd_program *p, const char *name) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int s = 0; s < op->noutputs; s++)
        if (in_list(name, (const char *const *)op->outputs[s].args, op->outputs[s].nargs))
          return true;
    }
  return false;
}

static bool read_anywhere(const pd_program *p, const char *name) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      for (int s = 0; s < op->ninputs; s++)
        if (in_list(name, (const char *const *)op->inputs[s].args, op->inputs[s].nargs))
          return true;
    }
  return false;
}

/* How the ops of block b first touch var `name` as they run (a block op: its inputs, then its
 * block's ops, unless the block declares a var of that name itself, then its outputs): 1 a read,
 * 2 a write, 0 not at all. A var that an op reads before any writes it is fed, even when a later
 * op writes it in place (a while loop that updates its input). */
static int first_touch(const pd_program *p, const pd_block *b, const char *name, int depth) {
  for (int i = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    for (int s = 0; s < op->ninputs; s++)
      if (in_list(name, (const char *const *)op->inputs[s].args, op->inputs[s].nargs)) return 1;
    for (int a = 0; a < op->nattrs && depth < PD_MAX_BLOCK_DEPTH; a++) {
      if (op->attrs[a].type != PD_ATTR_BLOCK) continue;
      const pd_block *sub = pd_program_block(p, op->attrs[a].v.i);
      if (!sub || sub->parent_idx != b->idx || sub == b || pd_block_find_var_local(sub, name))
        continue;
      int t = first_touch(p, sub, name, depth + 1);
      if (t) return t;
    }
    for (int s = 0; s < op->noutputs; s++)
      if (in_list(name, (const char *const *)op->outputs[s].args, op->outputs[s].nargs)) return 2;
  }
  return 0;
}

static int data_vars(const pd_runner *r, const pd_program *p, bool unread, const char **names,
                     int cap) {
  const pd_block *b0 = p->blocks[0];
  int n = 0;
  for (int i = 0; i < b0->nvars; i++) {
    const pd_var_desc *v = b0->vars[i];
    if (v->persistable || v->type != PD_VAR_LOD_TENSOR) continue;
    if (!unread && !read_anywhere(p, v->name)) continue;
    int t = first_touch(p, b0, v->name, 0);
    if (t == 2 || (t == 0 && written(p, v->name))) continue;
    pd_variable *gv = r ? pd_scope_find_local_var(r->global, v->name) : NULL;
    if (gv && gv->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&gv->u.tensor)) continue;
    if (n < cap) names[n] = v->name;
    n++;
  }
  return n;
}

int pd_run_data_vars(const pd_runner *r, const pd_program *p, const char **names, int cap) {
  return data_vars(r, p, false, names, cap);
}

int pd_run_declared_data_vars(const pd_runner *r, const pd_program *p, const char **names,
                              int cap) {
  return data_vars(r, p, true, names, cap);
}

pd_status pd_run_set_test_mode(pd_program *p) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      pd_op_desc *op = p->blocks[b]->ops[i];
      const pd_opdef *d = pd_opdef_lookup(op->type);
      if (d && pd_opdef_attr(d, "is_test") && pd_op_set_attr_bool(op, "is_test", true))
        return PD_ENOMEM;
    }
  return PD_OK;
}

pd_status pd_run_prepare(pd_runner *r, int n, const char *const *targets, pd_loc loc,
                         pd_program **out_prog, pd_exec **out_ex, pd_error *err) {
  *out_prog = NULL;
  *out_ex = NULL;
  pd_program *p = NULL;
  pd_status st = pd_program_prune(r->unit->main, n, targets, &p, err);
  if (st) return pd_run_at_loc(err, st, loc, NULL);
  if ((st = pd_run_set_test_mode(p))) {
    pd_program_free(p);
    return pd_error_set(err, st, loc, "out of memory");
  }
  pd_exec_options eo = pd_run_exec_options(r, r->opts.seed, true);
  pd_exec *ex = NULL;
  if ((st = pd_exec_new(p, &eo, &ex, err))) {
    pd_program_free(p);
    return pd_run_at_loc(err, st, loc, NULL);
  }
  *out_prog = p;
  *out_ex = ex;
  return PD_OK;
}

/* pd_runner_compute, or with needs_data, pd_runner_try_compute. */
static pd_status compute(pd_runner *r, int n, const char *const *names, pd_tensor *values,
                         const char *why, pd_loc loc, bool *needs_data, pd_error *err) {
  pd_program *p;
  pd_exec *ex;
  pd_status st = pd_run_prepare(r, n, names, loc, &p, &ex, err);
  if (st) return st;
  /* The data vars, fed from what :batch bound; one that is not bound needs a reader. */
  const char *data[16];
  int nd = pd_run_data_vars(r, p, data, 16);
  pd_exec_feed feeds[16];
  const char *unbound = nd > 16 ? data[0] : NULL;
  for (int i = 0; !unbound && i < nd; i++) {
    int k = 0;
    while (k < r->nbound && strcmp(r->bound_names[k], data[i]) != 0) k++;
    if (k == r->nbound) unbound = data[i];
    else feeds[i] = (pd_exec_feed){r->bound_names[k], &r->bound[k]};
  }
  if (unbound && needs_data) {
    *needs_data = true;
    goto out;
  }
  if (unbound) {
    st = pd_error_set(err, PD_EINVAL, loc,
                      "%s computes without data, but this needs '%s', which a reader feeds; "
                      "use eval(..., reader = ...) to compute over a data set",
                      why, unbound);
    goto out;
  }
  pd_exec_fetch *fetches = pd_calloc((size_t)n + 1, sizeof *fetches);
  if (!fetches) {
    st = pd_error_set(err, PD_ENOMEM, loc, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; i++) fetches[i] = (pd_exec_fetch){names[i], &values[i]};
  pd_exec_io io = {.nfeeds = nd, .feeds = feeds, .nfetches = n, .fetches = fetches};
  st = pd_run_at_loc(err, pd_exec_run(ex, r->global, &io, NULL, err), loc, NULL);
  pd_free(fetches);
out:
  pd_exec_free(ex);
  pd_program_free(p);
  return st;
}

pd_status pd_runner_compute(pd_runner *r, int n, const char *const *names, pd_tensor *values,
                            const char *why, pd_loc loc, pd_error *err) {
  return compute(r, n, names, values, why, loc, NULL, err);
}

pd_status pd_runner_try_compute(pd_runner *r, int n, const char *const *names, pd_tensor *values,
                                pd_loc loc, bool *needs_data, pd_error *err) {
  *needs_data = false;
  return compute(r, n, names, values, "a statement", loc, needs_data, err);
}
