/* api.c -- the embeddable library behind include/pdlang.h: a pd_state (api/api_int.h) wraps a
 * compiled script (lang/compile.h + the runner of train/run.h) or a loaded inference model
 * (vm/run/model.h; fine-tuned and saved by api/api_finetune.c), the host's feeds, data sets
 * (api/api_data.c) and the fetched results, and turns the internal pd_error records and
 * diagnostics into the public pd_error_info. Nothing here prints or exits; every allocation
 * goes through pd_malloc. */
#include "config.h"
#include "include/pdlang.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_data.h"
#include "api/api_finetune.h"
#include "api/api_int.h"
#include "vm/run/model.h"
#include "base/diag.h"
#include "base/dtype.h"
#include "lang/compile.h"
#include "train/options.h"
#include "train/run.h"
#include "vm/run/exec.h"
#include "vm/passes/paddle_export.h"
#include "vm/passes/prune.h"
#include "vm/reader/reader.h"

/* The public numbers are the internal ones (the library passes statuses through unchanged). */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(PD_RESULT_OK, PD_OK) && SAME(PD_RESULT_ENOMEM, PD_ENOMEM) &&
                   SAME(PD_RESULT_EIO, PD_EIO) && SAME(PD_RESULT_ESYNTAX, PD_ESYNTAX) &&
                   SAME(PD_RESULT_ECOMPILE, PD_ECOMPILE) && SAME(PD_RESULT_EFORMAT, PD_EFORMAT) &&
                   SAME(PD_RESULT_EINVAL, PD_EINVAL) && SAME(PD_RESULT_ESHAPE, PD_ESHAPE) &&
                   SAME(PD_RESULT_ETYPE, PD_ETYPE) && SAME(PD_RESULT_ENOTFOUND, PD_ENOTFOUND) &&
                   SAME(PD_RESULT_ERUNTIME, PD_ERUNTIME) && SAME(PD_RESULT_EINTR, PD_EINTR) &&
                   SAME(PD_RESULT_EUNSUPPORTED, PD_EUNSUPPORTED) &&
                   SAME(PD_STATUS_COUNT_, PD_EUNSUPPORTED + 1),
               "pdlang.h's result codes must match base/base.h's pd_status");
_Static_assert(SAME(PD_DTYPE_BOOL, PD_BOOL) && SAME(PD_DTYPE_INT16, PD_INT16) &&
                   SAME(PD_DTYPE_INT32, PD_INT32) && SAME(PD_DTYPE_INT64, PD_INT64) &&
                   SAME(PD_DTYPE_FLOAT16, PD_FP16) && SAME(PD_DTYPE_FLOAT32, PD_FP32) &&
                   SAME(PD_DTYPE_FLOAT64, PD_FP64) && SAME(PD_DTYPE_UINT8, PD_UINT8) &&
                   SAME(PD_DTYPE_INT8, PD_INT8) && SAME(PD_DTYPE_BFLOAT16, PD_BF16),
               "pdlang.h's dtypes must match base/dtype.h");
_Static_assert(PD_STATE_MAX_DIMS == PD_TENSOR_MAX_DIMS, "pdlang.h's PD_STATE_MAX_DIMS");

static const pd_loc nowhere = {0};

static bool is_input(const pd_state *st, const char *name);
static const char *script_var(pd_state *st, const char *name, pd_error *err);

static const pd_error_info null_state_info = {
    PD_RESULT_EINVAL, "no state (the pd_state argument is NULL)", NULL, 0, 0,
    "pdlang: error: no state (the pd_state argument is NULL)\n"};

/* ---------------------------------------------------------------- the error record */

/* Reset the record at the start of a call. */
void pd_api_begin(pd_state *st) {
  pd_buf_clear(&st->msg);
  pd_buf_clear(&st->text);
  st->msg.oom = st->text.oom = 0;
  pd_free(st->file);
  st->file = NULL;
  st->info = (pd_error_info){PD_RESULT_OK, "", NULL, 0, 0, ""};
}

/* Finish the record: point its strings at the buffers, with fallbacks when out of memory. */
static int finish(pd_state *st, pd_status s) {
  st->info.code = (int)s;
  st->info.message = st->msg.data && !st->msg.oom && st->msg.len ? st->msg.data
                     : s                                       ? pd_status_str(s)
                                                               : "";
  st->info.text = st->text.data && !st->text.oom ? st->text.data : "";
  st->info.file = st->file;
  return (int)s;
}

/* Record err (the location's file copied), rendering it against src when the location points
 * into a script, or (in_unit) against the unit's sources, its calls' lines too. */
int pd_api_fail_err(pd_state *st, const pd_error *err, const pd_source *src, bool in_unit) {
  pd_status s = err->status ? err->status : PD_ERUNTIME;
  /* The record's message is one line: the first of a list (a refused model's problems); the
   * text keeps them all. */
  const char *msg = err->msg ? err->msg : pd_status_str(s), *nl = strchr(msg, '\n');
  pd_buf_append(&st->msg, msg, nl ? (size_t)(nl - msg) : strlen(msg));
  if (err->loc.file) st->file = pd_strdup(err->loc.file);
  if (st->file) {
    st->info.line = err->loc.line;
    st->info.col = err->loc.col;
  }
  if (src && err->loc.file && strcmp(src->name, err->loc.file) != 0) src = NULL;
  if (in_unit && st->unit) pd_unit_render_error(&st->text, st->unit, st->src, err);
  else pd_diag_render_error(&st->text, src, err);
  return finish(st, s);
}

/* The same for an error the runner or executor reported: its location, and the calls it is
 * inside, may point into imported modules, whose sources the unit keeps. */
int pd_api_fail_run(pd_state *st, const pd_error *err) {
  return pd_api_fail_err(st, err, NULL, true);
}

int pd_api_fail(pd_state *st, pd_status s, const char *fmt, ...) {
  pd_error err = {0};
  va_list ap;
  va_start(ap, fmt);
  pd_error_setv(&err, s, nowhere, fmt, ap);
  va_end(ap);
  pd_api_fail_err(st, &err, NULL, false);
  pd_error_clear(&err);
  return (int)s;
}

/* A failed compile: the first error's message and location come from the rendered text
 * ("file:line:col: error: message"), which becomes the record's text whole. */
int pd_api_fail_diags(pd_state *st, pd_status s, const pd_diags *d) {
  const char *text = d->text.data && !d->text.oom ? d->text.data : "";
  pd_buf_puts(&st->text, text);
  const char *line = text;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *msg = NULL, *prefix_end = line;  /* the message; the end of "file:L:C" */
    if (strncmp(line, "error: ", 7) == 0) {
      msg = line + 7;  /* no location */
    } else {
      for (const char *p = line; p + 9 <= line + len; p++)
        if (memcmp(p, ": error: ", 9) == 0) {
          msg = p + 9;
          prefix_end = p;
          break;
        }
    }
    if (!msg) {
      if (!end) break;
      line = end + 1;
      continue;
    }
    pd_buf_append(&st->msg, msg, (size_t)(line + len - msg));
    if (prefix_end > line) {
      /* "file:L:C" or "file": digits, ':', digits, ':' from the right. */
      const char *p = prefix_end;
      int nums[2] = {0, 0}, k = 0;
      while (k < 2) {
        const char *q = p;
        while (q > line && q[-1] >= '0' && q[-1] <= '9') q--;
        if (q == p || q - line < 2 || q[-1] != ':' || p - q > 9) break;
        nums[k++] = atoi(q);
        p = q - 1;
      }
      if (k == 2) {
        st->info.line = nums[1];
        st->info.col = nums[0];
      } else {
        p = prefix_end;
      }
      st->file = pd_strndup(line, (size_t)(p - line));
    }
    break;
  }
  return finish(st, s);
}

int pd_api_ok(pd_state *st) { return finish(st, PD_OK); }

/* ---------------------------------------------------------------- named tensors */

static pd_api_named *named_find(const pd_api_named_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->items[i].name, name) == 0) return &l->items[i];
  return NULL;
}

/* A new empty entry (tensor initialised), or NULL on out of memory. */
static pd_api_named *named_add(pd_api_named_list *l, const char *name) {
  if (PD_GROW(l->items, l->cap, (size_t)l->n + 1)) return NULL;
  pd_api_named *e = &l->items[l->n];
  if (!(e->name = pd_strdup(name))) return NULL;
  pd_tensor_init(&e->t);
  l->n++;
  return e;
}

void pd_api_named_clear(pd_api_named_list *l) {
  for (int i = 0; i < l->n; i++) {
    pd_free(l->items[i].name);
    pd_tensor_release(&l->items[i].t);
  }
  l->n = 0;
}

static void named_free(pd_api_named_list *l) {
  pd_api_named_clear(l);
  pd_free(l->items);
  l->items = NULL;
  l->cap = 0;
}

/* ---------------------------------------------------------------- life cycle */

int pd_state_new(pd_state **out) {
  if (!out) return PD_RESULT_EINVAL;
  *out = NULL;
  pd_state *st = pd_calloc(1, sizeof *st);
  if (!st) return PD_RESULT_ENOMEM;
  pd_k_init_threads(); /* the kernels' thread pool, once per process */
  pd_buf_init(&st->msg);
  pd_buf_init(&st->text);
  pd_api_begin(st);
  *out = st;
  return PD_RESULT_OK;
}

static void clear_pruned(pd_state *st) {
  pd_exec_free(st->pruned_ex);
  pd_program_free(st->pruned);
  for (int i = 0; i < st->npruned; i++) pd_free(st->pruned_names[i]);
  pd_free(st->pruned_names);
  st->pruned_ex = NULL;
  st->pruned = NULL;
  st->pruned_names = NULL;
  st->npruned = 0;
}

static void clear_aliases(pd_state *st) {
  for (int i = 0; i < st->naliases; i++) {
    pd_free(st->aliases[i].name);
    pd_free(st->aliases[i].var);
  }
  pd_free(st->aliases);
  st->aliases = NULL;
  st->naliases = 0;
  st->alias_cap = 0;
}

void pd_api_drop_run(pd_runner **runner, pd_unit **unit, pd_source **src) {
  pd_runner_free(*runner);
  pd_unit_free(*unit);
  pd_source_free(*src);
  *runner = NULL;
  *unit = NULL;
  *src = NULL;
}

/* Drop the program and everything that goes with it (parameters, feeds, results). */
static void clear_program(pd_state *st) {
  clear_pruned(st);
  clear_aliases(st);
  pd_api_drop_run(&st->runner, &st->unit, &st->src);
  pd_api_drop_run(&st->ft_runner, &st->ft_unit, &st->ft_src);
  pd_free(st->model_path);
  st->model_path = NULL;
  pd_model_free(&st->model);
  st->has_prep = false;
  pd_free(st->inputs);
  pd_free(st->outputs);
  st->inputs = st->outputs = NULL;
  st->ninputs = st->noutputs = 0;
  pd_api_named_clear(&st->feeds);
  pd_api_named_clear(&st->results);
}

void pd_state_free(pd_state *st) {
  if (!st) return;
  clear_program(st);
  named_free(&st->feeds);
  named_free(&st->results);
  pd_api_datasets_free(&st->data);
  pd_free(st->stdlib_dir);
  pd_free(st->file);
  pd_buf_free(&st->msg);
  pd_buf_free(&st->text);
  pd_free(st);
}

const pd_error_info *pd_state_error(const pd_state *st) {
  return st ? &st->info : &null_state_info;
}

const char *pd_state_result_str(int code) {
  if (code < 0 || code >= PD_STATUS_COUNT_) return "unknown result code";
  return pd_status_str((pd_status)code);
}

const char *pd_state_version(void) { return PACKAGE_VERSION; }

/* ---------------------------------------------------------------- settings */

int pd_state_set_output(pd_state *st, FILE *out, FILE *progress) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  st->out = out;
  st->progress = progress;
  return pd_api_ok(st);
}

int pd_state_set_seed(pd_state *st, uint64_t seed) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  st->seed = seed;
  return pd_api_ok(st);
}

int pd_state_set_check_nan_inf(pd_state *st, int on) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  st->check_nan_inf = on != 0;
  return pd_api_ok(st);
}

int pd_state_set_interrupt(pd_state *st, volatile sig_atomic_t *flag) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  st->interrupt = flag;
  return pd_api_ok(st);
}

int pd_state_set_stdlib_dir(pd_state *st, const char *dir) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  char *copy = NULL;
  if (dir && !(copy = pd_strdup(dir))) return pd_api_fail(st, PD_ENOMEM, "out of memory");
  pd_free(st->stdlib_dir);
  st->stdlib_dir = copy;
  return pd_api_ok(st);
}

pd_exec_options pd_api_exec_options(const pd_state *st) {
  return (pd_exec_options){.check_nan_inf = st->check_nan_inf,
                           .seed = st->seed,
                           .interrupt = st->interrupt,
                           .place = st->place};
}

int pd_state_set_device(pd_state *st, const char *device) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!device) return pd_api_fail(st, PD_EINVAL, "pd_state_set_device: no device given");
  pd_error err = {0};
  pd_k_place place;
  int index;
  pd_status s = pd_run_parse_device(device, &place, &index, &err);
  if (!s && place == PD_K_CUDA) s = pd_k_cuda_open(index, &err);
  if (s) {
    int r = pd_api_fail(st, s, "%s", err.msg ? err.msg : pd_status_str(s));
    pd_error_clear(&err);
    return r;
  }
  st->place = place;
  st->gpu_index = index;
  return pd_api_ok(st);
}

/* ---------------------------------------------------------------- scripts */

static bool in_slots(const pd_slot *slots, int n, const char *name) {
  for (int s = 0; s < n; s++)
    for (int a = 0; a < slots[s].nargs; a++)
      if (strcmp(slots[s].args[a], name) == 0) return true;
  return false;
}

/* Does an op of any block of p read (outputs = false) or write (true) var `name`? */
static bool used(const pd_program *p, const char *name, bool outputs) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++) {
      const pd_op_desc *op = p->blocks[b]->ops[i];
      if (outputs ? in_slots(op->outputs, op->noutputs, name)
                  : in_slots(op->inputs, op->ninputs, name))
        return true;
    }
  return false;
}

/* Does the global scope hold a value for `name` (a parameter, or something a load put there)? */
static const pd_tensor *global_tensor(const pd_state *st, const char *name) {
  pd_scope *scope = st->runner ? pd_runner_scope(st->runner) : st->model.scope;
  pd_variable *v = scope ? pd_scope_find_local_var(scope, name) : NULL;
  if (!v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) return NULL;
  return &v->u.tensor;
}

/* A data var of p: a plain tensor var of block 0, not persistable, that an op reads and no op
 * writes, and that holds no value in the global scope. */
static bool is_data_var(const pd_state *st, const pd_program *p, const pd_var_desc *v) {
  return !v->persistable && v->type == PD_VAR_LOD_TENSOR && used(p, v->name, false) &&
         !used(p, v->name, true) && !global_tensor(st, v->name);
}

/* The script's inputs and outputs (see pdlang.h). */
static pd_status list_script_io(pd_state *st) {
  const pd_program *p = st->unit->main;
  const pd_block *b = p->blocks[0];
  st->inputs = pd_calloc((size_t)b->nvars + 1, sizeof *st->inputs);
  st->outputs = pd_calloc((size_t)b->nvars + 1, sizeof *st->outputs);
  if (!st->inputs || !st->outputs) return PD_ENOMEM;
  for (int i = 0; i < b->nvars; i++) {
    const pd_var_desc *v = b->vars[i];
    if (is_data_var(st, p, v)) st->inputs[st->ninputs++] = v->name;
    else if (!v->persistable && v->type == PD_VAR_LOD_TENSOR && used(p, v->name, true))
      st->outputs[st->noutputs++] = v->name;
  }
  return PD_OK;
}

/* What the runner of a script, or of a model's fine-tuning, runs with. */
pd_run_options pd_api_run_options(pd_state *st) {
  return (pd_run_options){
      .out = st->out,
      .progress = st->progress,
      .progress_mode = st->progress ? PD_PROGRESS_AUTO : PD_PROGRESS_NONE,
      .seed = st->seed,
      .check_nan_inf = st->check_nan_inf,
      .interrupt = st->interrupt,
      .place = st->place,
      .gpu_index = st->gpu_index,
      .host_dataset = pd_api_datasets_copy,
      .host_ctx = &st->data,
  };
}

/* Compile src (taken over: freed on failure, kept by the state on success). */
static int compile(pd_state *st, pd_source *src) {
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_compile_options co = {.stdlib_dir = st->stdlib_dir};
  pd_unit *unit = NULL;
  pd_status s = pd_compile(src, &co, &d, &unit);
  if (s) {
    pd_api_fail_diags(st, s, &d);
    pd_diags_free(&d);
    pd_source_free(src);
    return (int)s;
  }
  pd_diags_free(&d);
  st->src = src;
  st->unit = unit;
  pd_run_options ro = pd_api_run_options(st);
  pd_error err = {0};
  if ((s = pd_runner_new(unit, &ro, &st->runner, &err))) {
    pd_api_fail_run(st, &err);
    pd_error_clear(&err);
    clear_program(st);
    return (int)s;
  }
  if ((s = list_script_io(st))) {
    clear_program(st);
    return pd_api_fail(st, s, "out of memory");
  }
  return pd_api_ok(st);
}

static int state_compile_string(pd_state *st, const char *name, const char *text) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  clear_program(st);
  if (!text) return pd_api_fail(st, PD_EINVAL, "pd_state_compile_string: the text is NULL");
  pd_source *src = NULL;
  if (pd_source_from_string(name ? name : "<string>", text, strlen(text), &src))
    return pd_api_fail(st, PD_ENOMEM, "out of memory");
  return compile(st, src);
}

static int state_compile_file(pd_state *st, const char *path) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  clear_program(st);
  if (!path) return pd_api_fail(st, PD_EINVAL, "pd_state_compile_file: the path is NULL");
  pd_source *src = NULL;
  pd_error err = {0};
  pd_status s = pd_source_open(path, &src, &err);
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    pd_error_clear(&err);
    return (int)s;
  }
  return compile(st, src);
}

/* ---------------------------------------------------------------- training */

/* The options of pd_state_train: each a name of train's (or, for a loaded model, of
 * fine-tuning's: loss, target, label, freeze) with a value of one line. */
static int check_options(pd_state *st, const char *const *options, bool model) {
  for (int i = 0; options && options[i]; i += 2) {
    const char *key = options[i], *value = options[i + 1];
    if (!pd_topt_find(key) && !(model && pd_api_ft_own_option(key))) {
      pd_buf b;
      pd_buf_init(&b);
      if (model) pd_buf_puts(&b, "loss, target, label, freeze, ");
      for (const char *const *n = pd_topt_names(); *n; n++)
        pd_buf_printf(&b, "%s%s", n == pd_topt_names() ? "" : ", ", *n);
      pd_api_fail(st, PD_EINVAL, "pd_state_train: train has no option '%s'; its options are %s",
                  key, b.oom ? "train's" : b.data);
      pd_buf_free(&b);
      return PD_RESULT_EINVAL;
    }
    if (!value || !*value || strpbrk(value, "\n\r#"))
      return pd_api_fail(st, PD_EINVAL, "pd_state_train: option '%s' needs a value, one line of "
                  "the language (such as 64, true, \"run.csv\" or adam(0.001))%s", key,
                  value && *value ? ", without a line break or a comment" : "");
  }
  return PD_RESULT_OK;
}

/* pd_state_train: the script's text and a train call of cost with the options, compiled as one
 * unit (so the options meet the same checks as a script's, from train/options.h); the runner
 * adopts that unit, runs its last action, and adopts the script's unit back (the parameters and
 * the optimizer's state stay in its scope). A loaded model: pd_api_finetune (api/api_finetune.c). */
static int state_train(pd_state *st, const char *cost, const char *const *options) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!st->unit && !st->model.program)
    return pd_api_fail(st, PD_EINVAL, "pd_state_train needs a compiled script "
                "(pd_state_compile_*), whose cost it trains, or a loaded model "
                "(pd_state_load_model), which it fine-tunes");
  if (!st->unit) {
    if (cost)
      return pd_api_fail(st, PD_EINVAL, "pd_state_train: a loaded model is fine-tuned with the "
                  "cost NULL; the options 'loss', 'target' and 'label' say what it is, not \"%s\"",
                  cost);
    if (check_options(st, options, true)) return PD_RESULT_EINVAL;
    return pd_api_finetune(st, "pd_state_train", options, NULL);
  }
  if (!cost || !pd_is_plain_name(cost))
    return pd_api_fail(st, PD_EINVAL, "pd_state_train: the cost must be the name of a value the "
                "script defines (such as \"cost\"), not %s%s%s", cost ? "\"" : "NULL",
                cost ? cost : "", cost ? "\"" : "");
  if (check_options(st, options, false)) return PD_RESULT_EINVAL;
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_append(&b, st->src->text, st->src->len);
  pd_buf_printf(&b, "\ntrain(%s", cost);
  for (int i = 0; options && options[i]; i += 2)
    pd_buf_printf(&b, ", %s = %s", options[i], options[i + 1]);
  pd_buf_puts(&b, ")\n");
  if (b.oom) {
    pd_buf_free(&b);
    return pd_api_fail(st, PD_ENOMEM, "out of memory");
  }
  pd_source *src = NULL;
  pd_status s = pd_source_from_string(st->src->name, b.data, b.len, &src);
  pd_buf_free(&b);
  if (s) return pd_api_fail(st, PD_ENOMEM, "out of memory");
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_compile_options co = {.stdlib_dir = st->stdlib_dir};
  pd_unit *unit = NULL;
  if ((s = pd_compile(src, &co, &d, &unit))) {
    pd_api_fail_diags(st, s, &d);
    pd_diags_free(&d);
    pd_source_free(src);
    return (int)s;
  }
  pd_diags_free(&d);
  pd_error err = {0};
  const pd_action *a = unit->nactions == st->unit->nactions + 1
                           ? &unit->actions[unit->nactions - 1] : NULL;
  if (!a || a->kind != PD_ACTION_TRAIN) {
    s = pd_api_fail(st, PD_EINVAL, "pd_state_train: an option's value is more than one value");
  } else if ((s = pd_runner_adopt(st->runner, unit, &err)) ||
             (s = pd_runner_action(st->runner, a, &err))) {
    pd_buf_clear(&st->msg);
    pd_buf_clear(&st->text);
    pd_api_fail_err(st, &err, src, false);
    pd_error_clear(&err);
  }
  /* Back to the script's unit (its vars hold their values: nothing runs). */
  pd_status back = pd_runner_adopt(st->runner, st->unit, &err);
  if (back && !s) {
    s = back;
    pd_api_fail_run(st, &err);
  }
  pd_error_clear(&err);
  pd_unit_free(unit);
  pd_source_free(src);
  return s ? (int)s : pd_api_ok(st);
}

/* ---------------------------------------------------------------- models */

static int state_load_model(pd_state *st, const char *path) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  clear_program(st);
  if (!path) return pd_api_fail(st, PD_EINVAL, "pd_state_load_model: the path is NULL");
  pd_error err = {0};
  pd_model *m = &st->model;
  pd_status s = pd_model_load(m, path, &err);
  if (s) goto err;
  if (m->nfetches == 0) {
    s = pd_api_fail(st, PD_EINVAL, "%s has no fetch ops, so it has no outputs (save a model with "
                            "save(path, target) in a script)", path);
    goto out;
  }
  pd_exec_options eo = pd_api_exec_options(st);
  if ((s = pd_model_load_params(m, path, NULL, &err)) || (s = pd_model_prepare(m, &eo, &err)))
    goto err;
  st->inputs = pd_calloc((size_t)m->nfeeds + 1, sizeof *st->inputs);
  st->outputs = pd_calloc((size_t)m->nfetches + 1, sizeof *st->outputs);
  if (!st->inputs || !st->outputs) {
    s = pd_api_fail(st, PD_ENOMEM, "out of memory");
    goto out;
  }
  for (int i = 0; i < m->nfeeds; i++) st->inputs[i] = m->feeds[i].var;
  for (int i = 0; i < m->nfetches; i++) st->outputs[i] = m->fetches[i].var;
  char *pp = pd_model_side_path(path, ".preprocess");
  if (!pp) {
    s = pd_api_fail(st, PD_ENOMEM, "out of memory");
    goto out;
  }
  s = pd_image_prep_load(pp, &st->prep, &err);
  pd_free(pp);
  st->has_prep = !s;
  if (s == PD_ENOTFOUND) {
    pd_error_clear(&err);
    s = PD_OK;
  }
  if (s) goto err;
  st->ninputs = m->nfeeds;
  st->noutputs = m->nfetches;
  if (!(st->model_path = pd_strdup(path))) {
    s = pd_api_fail(st, PD_ENOMEM, "out of memory");
    goto out;
  }
  s = PD_OK;
  pd_api_ok(st);
  goto out;
err:
  pd_api_fail_err(st, &err, NULL, false);
out:
  pd_error_clear(&err);
  if (s) clear_program(st);
  return (int)s;
}

/* ---------------------------------------------------------------- inputs and outputs */

static const pd_program *program(const pd_state *st) {
  return st->unit ? st->unit->main : st->model.program;
}

static int no_program(pd_state *st, const char *fn) {
  return pd_api_fail(st, PD_EINVAL, "%s: nothing compiled or loaded yet (pd_state_compile_string, "
                             "pd_state_compile_file or pd_state_load_model first)", fn);
}

int pd_state_inputs(pd_state *st, int *n, const char *const **names) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!n || !names) return pd_api_fail(st, PD_EINVAL, "pd_state_inputs: NULL argument");
  *n = 0;
  *names = NULL;
  if (!program(st)) return no_program(st, "pd_state_inputs");
  *n = st->ninputs;
  *names = st->inputs;
  return pd_api_ok(st);
}

int pd_state_outputs(pd_state *st, int *n, const char *const **names) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!n || !names) return pd_api_fail(st, PD_EINVAL, "pd_state_outputs: NULL argument");
  *n = 0;
  *names = NULL;
  if (!program(st)) return no_program(st, "pd_state_outputs");
  *n = st->noutputs;
  *names = st->outputs;
  return pd_api_ok(st);
}

int pd_state_describe(pd_state *st, const char *name, pd_tensor_info *info) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!name || !info) return pd_api_fail(st, PD_EINVAL, "pd_state_describe: NULL argument");
  memset(info, 0, sizeof *info);
  if (!program(st)) return no_program(st, "pd_state_describe");
  const pd_var_desc *v = pd_block_find_var_local(program(st)->blocks[0], name);
  if (st->unit && !is_input(st, name)) {  /* a script: its own names first */
    pd_error err = {0};
    const char *var = script_var(st, name, &err);
    if (!var && err.status == PD_ENOMEM) {
      pd_error_clear(&err);
      return pd_api_fail(st, PD_ENOMEM, "out of memory");
    }
    pd_error_clear(&err);
    if (var) v = pd_block_find_var_local(program(st)->blocks[0], var);
  }
  if (!v || !pd_var_type_has_tensor(v->type))
    return pd_api_fail(st, PD_ENOTFOUND, "no tensor var '%s' in the program's global block", name);
  info->dtype = (int)v->dtype;
  info->ndims = v->ndims;
  for (int k = 0; k < v->ndims && k < PD_STATE_MAX_DIMS; k++) info->dims[k] = v->dims[k];
  return pd_api_ok(st);
}

/* "float32 [-1, 784]" */
static void shape_text(pd_buf *b, int dtype, int ndims, const int64_t *dims) {
  pd_buf_printf(b, "%s ", pd_dtype_name((pd_dtype)dtype));
  pd_buf_put_dims(b, ndims, dims);
}

static bool is_input(const pd_state *st, const char *name) {
  for (int i = 0; i < st->ninputs; i++)
    if (strcmp(st->inputs[i], name) == 0) return true;
  return false;
}

static int feed(pd_state *st, const char *fn, const char *name, int dtype, int ndims,
                const int64_t *dims, const void *data, int64_t nseq, const int64_t *lengths);

/* Sequences fed as rows and lengths to a padded input of a saved model (save writes batches of
 * sequences so, vm/passes/paddle_export.h): the rows padded into `name`, the lengths into
 * name_lengths. */
static int feed_padded(pd_state *st, const char *fn, const char *name, int dtype, int ndims,
                       const int64_t *dims, const void *data, int64_t nseq,
                       const int64_t *lengths) {
  if (nseq < 1 || ndims < 1)
    return pd_api_fail(st, PD_EINVAL, "feed '%s': a batch of sequences needs at least one sequence "
                               "and a first dimension (the rows)", name);
  int64_t total = 0;
  for (int64_t i = 0; i < nseq; i++) {
    if (lengths[i] < 0 || lengths[i] > dims[0] - total)
      return pd_api_fail(st, PD_ESHAPE, "feed '%s': sequence %lld has length %lld, but the %lld "
                                 "rows hold only %lld more", name, (long long)i,
                  (long long)lengths[i], (long long)dims[0], (long long)(dims[0] - total));
    total += lengths[i];
  }
  if (total != dims[0])
    return pd_api_fail(st, PD_ESHAPE, "feed '%s': the %lld sequence lengths add up to %lld rows, "
                               "but the value has %lld", name, (long long)nseq, (long long)total,
                (long long)dims[0]);
  pd_tensor p;
  pd_tensor_init(&p);
  pd_status s = pd_export_pad_rows((pd_dtype)dtype, ndims, dims, data, nseq, lengths, &p);
  if (s)
    return pd_api_fail(st, s, "feed '%s': %s", name,
                       s == PD_ENOMEM ? "out of memory" : "bad shape");
  char ln[256];
  snprintf(ln, sizeof ln, "%s%s", name, PD_EXPORT_LENGTHS_SUFFIX);
  int64_t nd[1] = {nseq};
  int rc = feed(st, fn, name, dtype, p.ndims, p.dims, pd_tensor_data(&p), 0, NULL);
  if (rc == PD_RESULT_OK) rc = feed(st, fn, ln, PD_INT64, 1, nd, lengths, 0, NULL);
  pd_tensor_release(&p);
  return rc;
}

/* pd_state_feed and pd_state_feed_sequences: lengths NULL for a plain tensor. */
static int feed(pd_state *st, const char *fn, const char *name, int dtype, int ndims,
                const int64_t *dims, const void *data, int64_t nseq, const int64_t *lengths) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!name) return pd_api_fail(st, PD_EINVAL, "%s: the name is NULL", fn);
  if (!program(st)) return no_program(st, fn);
  if (!pd_dtype_valid(dtype))
    return pd_api_fail(st, PD_EINVAL, "feed '%s': %d is not a dtype (PD_DTYPE_*)", name, dtype);
  if (ndims < 0 || ndims > PD_STATE_MAX_DIMS || (ndims > 0 && !dims))
    return pd_api_fail(st, PD_EINVAL, "feed '%s': rank %d%s (0 to %d dims)", name, ndims,
                ndims > 0 && !dims ? " with NULL dims" : " is out of range",
                PD_STATE_MAX_DIMS);
  uint64_t numel = 1;
  for (int k = 0; k < ndims; k++) {
    if (dims[k] < 0)
      return pd_api_fail(st, PD_EINVAL, "feed '%s': dimension %d is %lld (a value has no unknown "
                                 "dimensions)", name, k, (long long)dims[k]);
    if (dims[k] && numel > (UINT64_MAX >> 2) / (uint64_t)dims[k])
      return pd_api_fail(st, PD_EINVAL, "feed '%s': the shape is too large", name);
    numel *= (uint64_t)dims[k];
  }
  if (numel && !data) return pd_api_fail(st, PD_EINVAL, "feed '%s': the data is NULL", name);
  if (!is_input(st, name)) {
    pd_buf b;
    pd_buf_init(&b);
    for (int i = 0; i < st->ninputs; i++) pd_buf_printf(&b, "%s'%s'", i ? ", " : "", st->inputs[i]);
    int rc = pd_api_fail(st, PD_ENOTFOUND, "'%s' is not an input of the program; %s%s", name,
                  st->ninputs ? "its inputs are " : "it has no inputs",
                  st->ninputs && b.data ? b.data : "");
    pd_buf_free(&b);
    return rc;
  }
  const pd_var_desc *v = pd_block_find_var_local(program(st)->blocks[0], name);
  if (v && lengths && pd_export_padded_input(program(st), name))
    return feed_padded(st, fn, name, dtype, ndims, dims, data, nseq, lengths);
  if (v && v->lod_level > 1)
    return pd_api_fail(st, PD_EUNSUPPORTED, "input '%s' has lod_level %d: the C API feeds one "
                                     "level of sequences at most", name, v->lod_level);
  if (v && v->lod_level == 1 && !lengths)
    return pd_api_fail(st, PD_EINVAL, "input '%s' is a batch of sequences: feed it with "
                               "pd_state_feed_sequences (the rows and each sequence's length)",
                name);
  if (v && v->lod_level == 0 && lengths)
    return pd_api_fail(st, PD_EINVAL, "input '%s' is not a batch of sequences (lod_level 0): "
                               "feed it with pd_state_feed", name);
  int64_t *off = NULL;
  if (lengths) {
    if (nseq < 1 || ndims < 1)
      return pd_api_fail(st, PD_EINVAL, "feed '%s': a batch of sequences needs at least one "
                                 "sequence and a first dimension (the rows)", name);
    if (!(off = pd_malloc(sizeof *off * (size_t)(nseq + 1))))
      return pd_api_fail(st, PD_ENOMEM, "out of memory");
    off[0] = 0;
    for (int64_t i = 0; i < nseq; i++) {
      int64_t left = dims[0] - off[i];
      if (lengths[i] < 0 || lengths[i] > left) {
        pd_free(off);
        return pd_api_fail(st, PD_ESHAPE, "feed '%s': sequence %lld has length %lld, but the "
                                   "%lld rows hold only %lld more", name, (long long)i,
                    (long long)lengths[i], (long long)dims[0], (long long)left);
      }
      off[i + 1] = off[i] + lengths[i];
    }
    if (off[nseq] != dims[0]) {
      int rc = pd_api_fail(st, PD_ESHAPE, "feed '%s': the %lld sequence lengths add up to %lld "
                                   "rows, but the value has %lld", name, (long long)nseq,
                    (long long)off[nseq], (long long)dims[0]);
      pd_free(off);
      return rc;
    }
  }
  bool dtype_ok = !v || v->ndims < 0 || (int)v->dtype == dtype;
  bool shape_ok = !v || v->ndims < 0 || v->ndims == ndims;
  for (int k = 0; shape_ok && v && k < ndims; k++)
    shape_ok = v->dims[k] < 0 || v->dims[k] == dims[k];
  if (!dtype_ok || !shape_ok) {
    pd_free(off);
    pd_buf want, got;
    pd_buf_init(&want);
    pd_buf_init(&got);
    shape_text(&want, (int)v->dtype, v->ndims, v->dims);
    shape_text(&got, dtype, ndims, dims);
    int rc = pd_api_fail(st, dtype_ok ? PD_ESHAPE : PD_ETYPE,
                  "input '%s' is %s but the value fed is %s", name,
                  want.data && !want.oom ? want.data : "?", got.data && !got.oom ? got.data : "?");
    pd_buf_free(&want);
    pd_buf_free(&got);
    return rc;
  }
  pd_tensor t;
  pd_tensor_init(&t);
  int64_t d[PD_STATE_MAX_DIMS] = {0};
  for (int k = 0; k < ndims; k++) d[k] = dims[k];
  pd_status s = pd_tensor_set_data(&t, (pd_dtype)dtype, ndims, d, data);
  if (!s && off) {
    const int64_t *lv = off;
    int64_t len = nseq + 1;
    s = pd_tensor_set_lod(&t, 1, &lv, &len);
  }
  pd_free(off);
  if (s) {
    pd_tensor_release(&t);
    return pd_api_fail(st, s, "feed '%s': %s", name,
                       s == PD_ENOMEM ? "out of memory" : "bad shape");
  }
  pd_api_named *e = named_find(&st->feeds, name);
  if (!e && !(e = named_add(&st->feeds, name))) {
    pd_tensor_release(&t);
    return pd_api_fail(st, PD_ENOMEM, "out of memory");
  }
  pd_tensor_release(&e->t);
  e->t = t;  /* the storage moves over */
  return pd_api_ok(st);
}

int pd_state_feed(pd_state *st, const char *name, int dtype, int ndims, const int64_t *dims,
                  const void *data) {
  return feed(st, "pd_state_feed", name, dtype, ndims, dims, data, 0, NULL);
}

int pd_state_feed_images(pd_state *st, const char *name, int n, const char *const *paths) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!name || !paths || n < 1)
    return pd_api_fail(st, PD_EINVAL, "pd_state_feed_images: %s", !name ? "the name is NULL"
                                                             : "no image files");
  for (int i = 0; i < n; i++)
    if (!paths[i]) return pd_api_fail(st, PD_EINVAL, "pd_state_feed_images: paths[%d] is NULL", i);
  if (!st->model.program)
    return pd_api_fail(st, PD_EINVAL, "pd_state_feed_images: needs a model (pd_state_load_model)");
  if (!st->has_prep || strcmp(st->prep.input, name) != 0)
    return pd_api_fail(st, PD_EINVAL, "feed '%s': the model has no image preprocessing for this "
                "input (save writes NAME.preprocess beside a model whose input an images(...) "
                "reader fed%s%s)", name, st->has_prep ? "; it is for input " : "",
                st->has_prep ? st->prep.input : "");
  const pd_var_desc *v = pd_block_find_var_local(st->model.program->blocks[0], name);
  pd_tensor t;
  pd_tensor_init(&t);
  pd_error err = {0};
  pd_status s = pd_image_files(&st->prep.o, n, paths, v ? v->ndims : 0, v ? v->dims : NULL, &t,
                               &err);
  int rc;
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    rc = (int)s;
  } else {
    rc = feed(st, "pd_state_feed_images", name, PD_DTYPE_FLOAT32, t.ndims, t.dims,
              pd_tensor_data(&t), 0, NULL);
  }
  pd_error_clear(&err);
  pd_tensor_release(&t);
  return rc;
}

int pd_state_feed_sequences(pd_state *st, const char *name, int dtype, int ndims,
                            const int64_t *dims, const void *data, int64_t nseq,
                            const int64_t *lengths) {
  if (st && !lengths) {
    pd_api_begin(st);
    return pd_api_fail(st, PD_EINVAL, "pd_state_feed_sequences: the lengths are NULL");
  }
  return feed(st, "pd_state_feed_sequences", name, dtype, ndims, dims, data, nseq, lengths);
}

/* ---------------------------------------------------------------- running */

/* Run a loaded model on the feeds; its outputs become the results. */
static int run_model(pd_state *st) {
  pd_model *m = &st->model;
  for (int i = 0; i < m->nfeeds; i++)
    if (!named_find(&st->feeds, m->feeds[i].var)) {
      const pd_var_desc *v = pd_block_find_var_local(m->program->blocks[0], m->feeds[i].var);
      pd_buf b;
      pd_buf_init(&b);
      if (v && v->ndims >= 0) shape_text(&b, (int)v->dtype, v->ndims, v->dims);
      int rc = pd_api_fail(st, PD_EINVAL, "the model's input '%s'%s%s was not fed (pd_state_feed)",
                    m->feeds[i].var, b.data ? " " : "", b.data ? b.data : "");
      pd_buf_free(&b);
      return rc;
    }
  pd_error err = {0};
  pd_status s = PD_OK;
  for (int i = 0; !s && i < m->nfeeds; i++)
    s = pd_model_feed(m, i, &named_find(&st->feeds, m->feeds[i].var)->t, &err);
  pd_tensor_array *got = NULL;
  if (!s) s = pd_model_run(m, &got, &err);
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    pd_error_clear(&err);
    return (int)s;
  }
  for (int i = 0; i < m->nfetches; i++) {
    const pd_tensor *t = got ? pd_tensor_array_get(got, m->fetches[i].col) : NULL;
    if (!t || !pd_tensor_initialized(t)) {
      pd_api_named_clear(&st->results);
      return pd_api_fail(st, PD_ERUNTIME, "the model fetched nothing for its output '%s'",
                  m->fetches[i].var);
    }
    pd_api_named *e = named_add(&st->results, m->fetches[i].var);
    if (!e || pd_tensor_copy(&e->t, t)) {
      pd_api_named_clear(&st->results);
      return pd_api_fail(st, PD_ENOMEM, "out of memory");
    }
  }
  return pd_api_ok(st);
}

static int state_run(pd_state *st) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  pd_api_named_clear(&st->results);
  if (st->model.program) return run_model(st);
  if (!st->runner) return no_program(st, "pd_state_run");
  pd_error err = {0};
  pd_status s = pd_runner_run_all(st->runner, &err);
  if (s) {
    pd_api_fail_run(st, &err);
    pd_error_clear(&err);
    return (int)s;
  }
  return pd_api_ok(st);
}

static bool is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return false;
  return true;
}

/* The var of the script's global block that `name` means: what the script binds to that name
 * at top level, else a var of that name. A binding is found as the REPL finds it: the script
 * compiled again with `print(name)` appended, whose argument is the value (compiling is
 * deterministic, so the var names are the same). Remembered until the next compile. Returns
 * NULL with an error in err when the name means no tensor. */
static const char *script_var(pd_state *st, const char *name, pd_error *err) {
  for (int i = 0; i < st->naliases; i++)
    if (strcmp(st->aliases[i].name, name) == 0) {
      if (st->aliases[i].var) return st->aliases[i].var;
      goto not_tensor;
    }
  const pd_block *b0 = st->unit->main->blocks[0];
  char *var = NULL;
  if (is_identifier(name)) {
    pd_buf b;
    pd_buf_init(&b);
    pd_buf_append(&b, st->src->text, st->src->len);
    pd_buf_printf(&b, "\nprint(\n%s\n)\n", name);
    pd_source *probe_src = NULL;
    pd_unit *probe = NULL;
    pd_diags d;
    pd_diags_init(&d, 1);
    pd_compile_options co = {.stdlib_dir = st->stdlib_dir};
    pd_status s = b.oom ? PD_ENOMEM : pd_source_from_string(st->src->name, b.data, b.len, &probe_src);
    if (!s) s = pd_compile(probe_src, &co, &d, &probe);
    if (s == PD_ENOMEM) {
      pd_buf_free(&b);
      pd_diags_free(&d);
      pd_unit_free(probe);
      pd_source_free(probe_src);
      pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
      return NULL;
    }
    const pd_action *a = !s && probe->nactions ? &probe->actions[probe->nactions - 1] : NULL;
    if (a && a->kind == PD_ACTION_PRINT && a->nargs == 1 && a->args[0]->kind == PD_CVAL_TENSOR &&
        pd_block_find_var_local(b0, a->args[0]->str))
      var = pd_strdup(a->args[0]->str);
    bool bound = a && a->kind == PD_ACTION_PRINT && a->nargs == 1;
    pd_buf_free(&b);
    pd_diags_free(&d);
    pd_unit_free(probe);
    pd_source_free(probe_src);
    if (!var && bound) goto remember;  /* a compile-time value: 3, "text", relu, ... */
    if (var) goto remember;
  }
  const pd_var_desc *v = pd_block_find_var_local(b0, name);
  if (v && v->type == PD_VAR_LOD_TENSOR && !(var = pd_strdup(name))) {
    pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    return NULL;
  }
  if (!var) {
    pd_error_set(err, PD_ENOTFOUND, nowhere, "'%s' is neither a name the script defines nor a "
                 "tensor var of its global block (pd_state_outputs lists those)", name);
    return NULL;
  }
remember:
  if (PD_GROW(st->aliases, st->alias_cap, (size_t)st->naliases + 1)) {
    pd_free(var);
    pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    return NULL;
  }
  char *copy = pd_strdup(name);
  if (!copy) {
    pd_free(var);
    pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    return NULL;
  }
  st->aliases[st->naliases++] = (pd_api_alias){copy, var};
  if (var) return var;
not_tensor:
  pd_error_set(err, PD_EINVAL, nowhere, "'%s' is a compile-time value in the script, not a "
               "tensor, so there is nothing to compute", name);
  return NULL;
}

/* Prune the script's main program to names (or reuse the last pruned program for the same
 * names). */
static pd_status prepare_targets(pd_state *st, int n, const char *const *names, pd_error *err) {
  bool same = st->pruned && st->npruned == n;
  for (int i = 0; same && i < n; i++) same = strcmp(st->pruned_names[i], names[i]) == 0;
  if (same) return PD_OK;
  clear_pruned(st);
  pd_status s = pd_program_prune(st->unit->main, n, names, &st->pruned, err);
  if (s) return s;
  pd_exec_options eo = pd_api_exec_options(st);
  if ((s = pd_exec_new(st->pruned, &eo, &st->pruned_ex, err))) {
    clear_pruned(st);
    return s;
  }
  if (!(st->pruned_names = pd_calloc((size_t)n, sizeof *st->pruned_names))) {
    clear_pruned(st);
    return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  }
  st->npruned = n;
  for (int i = 0; i < n; i++)
    if (!(st->pruned_names[i] = pd_strdup(names[i]))) {
      clear_pruned(st);
      return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
    }
  return PD_OK;
}

static int run_script_targets(pd_state *st, int n, const char *const *names) {
  pd_error err = {0};
  pd_status s = PD_OK;
  pd_exec_feed *feeds = NULL;
  pd_exec_fetch *fetches = NULL;
  const char **vars = pd_calloc((size_t)n, sizeof *vars);
  if (!vars) return pd_api_fail(st, PD_ENOMEM, "out of memory");
  for (int i = 0; i < n && !s; i++)
    if (!(vars[i] = script_var(st, names[i], &err))) s = err.status;
  if (!s) s = prepare_targets(st, n, vars, &err);
  if (s) {
    pd_api_fail_run(st, &err);
    pd_error_clear(&err);
    goto out;
  }
  /* Every input the pruned program needs must have been fed. */
  const pd_block *pb = st->pruned->blocks[0];
  int nfeeds = 0;
  for (int i = 0; i < pb->nvars; i++) {
    const pd_var_desc *v = pb->vars[i];
    bool fed = named_find(&st->feeds, v->name) != NULL;
    nfeeds += fed;
    if (!fed && is_data_var(st, st->pruned, v)) {
      pd_buf b;
      pd_buf_init(&b);
      shape_text(&b, (int)v->dtype, v->ndims, v->dims);
      s = pd_api_fail(st, PD_EINVAL, "computing '%s' needs the input '%s' (%s), which was not fed "
                              "(pd_state_feed)", names[0], v->name,
               b.data && !b.oom ? b.data : "?");
      pd_buf_free(&b);
      goto out;
    }
  }
  feeds = pd_calloc((size_t)nfeeds + 1, sizeof *feeds);
  fetches = pd_calloc((size_t)n, sizeof *fetches);
  if (!feeds || !fetches) {
    s = pd_api_fail(st, PD_ENOMEM, "out of memory");
    goto out;
  }
  int k = 0;
  for (int i = 0; i < pb->nvars; i++) {
    const pd_api_named *e = named_find(&st->feeds, pb->vars[i]->name);
    if (e) feeds[k++] = (pd_exec_feed){e->name, &e->t};
  }
  for (int i = 0; i < n; i++) {
    pd_api_named *e = named_find(&st->results, names[i]);  /* a name given twice: fetched twice */
    if (!e && !(e = named_add(&st->results, names[i]))) {
      s = pd_api_fail(st, PD_ENOMEM, "out of memory");
      goto out;
    }
    fetches[i] = (pd_exec_fetch){vars[i], &e->t};
  }
  pd_exec_io io = {.nfeeds = k, .feeds = feeds, .nfetches = n, .fetches = fetches};
  if ((s = pd_exec_run(st->pruned_ex, pd_runner_scope(st->runner), &io, NULL, &err))) {
    pd_api_fail_run(st, &err);
    pd_error_clear(&err);
    goto out;
  }
  pd_api_ok(st);
out:
  if (s) pd_api_named_clear(&st->results);
  pd_free(vars);
  pd_free(feeds);
  pd_free(fetches);
  return (int)s;
}

static int state_run_targets(pd_state *st, int n, const char *const *names) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  pd_api_named_clear(&st->results);
  if (n <= 0 || !names) return pd_api_fail(st, PD_EINVAL, "pd_state_run_targets: no targets");
  for (int i = 0; i < n; i++)
    if (!names[i]) return pd_api_fail(st, PD_EINVAL, "pd_state_run_targets: target %d is NULL", i);
  if (st->model.program) {
    for (int i = 0; i < n; i++) {
      bool found = false;
      for (int j = 0; j < st->noutputs && !found; j++) found = !strcmp(st->outputs[j], names[i]);
      if (!found)
        return pd_api_fail(st, PD_ENOTFOUND, "'%s' is not an output of the model "
                                      "(pd_state_outputs lists them)", names[i]);
    }
    return run_model(st);
  }
  if (!st->runner) return no_program(st, "pd_state_run_targets");
  return run_script_targets(st, n, names);
}

int pd_state_train(pd_state *st, const char *cost, const char *const *options) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_train(st, cost, options);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_save_model(pd_state *st, const char *path) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = pd_api_save_model(st, path);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_run_target(pd_state *st, const char *name) {
  return pd_state_run_targets(st, 1, &name);
}

int pd_state_fetch(pd_state *st, const char *name, pd_tensor_info *out) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!name || !out) return pd_api_fail(st, PD_EINVAL, "pd_state_fetch: NULL argument");
  memset(out, 0, sizeof *out);
  if (!program(st)) return no_program(st, "pd_state_fetch");
  const pd_api_named *e = named_find(&st->results, name);
  const pd_tensor *t = e ? &e->t : global_tensor(st, name);
  if (!t)
    return pd_api_fail(st, PD_ENOTFOUND, "no value for '%s': it is neither a result of the last "
                                  "run (pd_state_run_target) nor a parameter", name);
  if (pd_tensor_on_gpu(t)) {  /* a parameter on the GPU comes back to be read (and moves to
                                the GPU again when an op reads it) */
    pd_status s = pd_tensor_to_place((pd_tensor *)t, PD_K_HOST);
    if (s)
      return pd_api_fail(st, s, "cannot read '%s' back from the GPU: %s", name,
                  s == PD_ENOMEM ? "out of memory" : pd_k_cuda_error());
  }
  out->dtype = (int)t->dtype;
  out->ndims = t->ndims;
  for (int k = 0; k < t->ndims; k++) out->dims[k] = t->dims[k];
  out->data = pd_tensor_data(t);
  out->nbytes = out->data ? pd_tensor_nbytes(t) : 0;
  return pd_api_ok(st);
}

/* ---------------------------------------------------------------- entry points that compute
 * Compiling runs the startup program (the parameter initialisers), loading a model may move its
 * parameters to the GPU, and the run calls run the program: during each of these calls the
 * kernels compute with flush-to-zero and denormals-are-zero on the calling thread (as `pdlang`
 * does: denormals make an RNN's backward pass ~15x slower), and the caller's mode is put back
 * on return. */
int pd_state_compile_string(pd_state *st, const char *name, const char *text) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_compile_string(st, name, text);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_compile_file(pd_state *st, const char *path) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_compile_file(st, path);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_load_model(pd_state *st, const char *path) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_load_model(st, path);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_set_dataset(pd_state *st, const char *name, int nfields, const char *const *names,
                         const pd_tensor_info *fields) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  pd_error err = {0};
  pd_status s = pd_api_datasets_set(&st->data, name, nfields, names, fields, &err);
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    pd_error_clear(&err);
    return (int)s;
  }
  return pd_api_ok(st);
}

int pd_state_add_sequences(pd_state *st, const char *name, const char *field, int64_t nseq,
                           const int64_t *lengths, const pd_tensor_info *values) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  pd_error err = {0};
  pd_status s = pd_api_datasets_add_seq(&st->data, name, field, nseq, lengths, values, &err);
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    pd_error_clear(&err);
    return (int)s;
  }
  return pd_api_ok(st);
}

int pd_state_run(pd_state *st) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_run(st);
  pd_k_fp_leave(fm);
  return r;
}

int pd_state_run_targets(pd_state *st, int n, const char *const *names) {
  pd_k_fpmode fm = pd_k_fp_enter();
  int r = state_run_targets(st, n, names);
  pd_k_fp_leave(fm);
  return r;
}
