/* api_finetune.c -- a loaded model's fine-tuning and saving (api_finetune.h): the script,
 * written line by line with each line's origin (the caller's option, or the model) kept beside
 * it, then compiled and run by the state's fine-tuning runner (pd_state_train and
 * pd_state_save_model of a loaded model). */
#include "config.h"
#include "api/api_finetune.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"
#include "base/dtype.h"
#include "vm/ir/params.h"

/* The losses of the option `loss`: the name, and the expression of the cost over the target T
 * and the label L (printf arguments: T, L, T, L). */
static const struct {
  const char *name, *cost;
} losses[] = {
    {"softmax_with_cross_entropy", "mean(softmax_with_cross_entropy(%s, %s))"},
    {"cross_entropy", "mean(cross_entropy(%s, %s))"},
    {"mse", "mean((%s - %s) * (%s - %s))"},
};

static const char *const own[] = {"loss", "target", "label", "freeze", NULL};

bool pd_api_ft_own_option(const char *name) {
  for (int i = 0; own[i]; i++)
    if (strcmp(own[i], name) == 0) return true;
  return false;
}

/* value without the quotes of a string literal ("mse" -> mse) into buf; a value that is no
 * plain string literal stays as it is. */
static const char *unquote(const char *value, char *buf, size_t size) {
  size_t n = value ? strlen(value) : 0;
  if (n < 2 || value[0] != '"' || value[n - 1] != '"' || n - 2 >= size ||
      strpbrk(value + 1, "\\") || memchr(value + 1, '"', n - 2))
    return value;
  memcpy(buf, value + 1, n - 2);
  buf[n - 2] = '\0';
  return buf;
}

static const char *opt(const char *const *options, const char *name) {
  for (int i = 0; options && options[i]; i += 2)
    if (strcmp(options[i], name) == 0) return options[i + 1];
  return NULL;
}

/* End the line being written: its origin is blame (printf). */
static pd_status end_line(pd_api_ft *ft, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static pd_status end_line(pd_api_ft *ft, const char *fmt, ...) {
  pd_buf_puts(&ft->text, "\n");
  if ((size_t)ft->nlines == ft->cap) {
    size_t cap = ft->cap ? ft->cap * 2 : 16;
    char **b = pd_realloc(ft->blame, cap * sizeof *b);
    if (!b) return PD_ENOMEM;
    ft->blame = b;
    ft->cap = cap;
  }
  pd_buf w;
  pd_buf_init(&w);
  va_list ap;
  va_start(ap, fmt);
  pd_buf_vprintf(&w, fmt, ap);
  va_end(ap);
  char *s = w.oom ? NULL : pd_buf_take(&w);
  pd_buf_free(&w);
  if (!s) return PD_ENOMEM;
  ft->blame[ft->nlines++] = s;
  return ft->text.oom ? PD_ENOMEM : PD_OK;
}

/* s as a string literal of the language. */
static void put_string(pd_buf *b, const char *s) {
  pd_buf_puts(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') pd_buf_puts(b, "\\");
    pd_buf_append(b, s, 1);
  }
  pd_buf_puts(b, "\"");
}

static pd_status oom(pd_error *err) {
  return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
}

pd_status pd_api_ft_script(pd_api_ft *ft, const pd_program *p, const char *path,
                           int nfeeds, const char *const *feeds, int nfetches,
                           const char *const *fetches, const char *const *options,
                           const char *save_path, pd_error *err) {
  const char *loss_opt = opt(options, "loss"), *target_opt = opt(options, "target");
  const char *label = opt(options, "label"), *freeze = opt(options, "freeze");
  char lbuf[64], tbuf[256];
  const char *loss = unquote(loss_opt, lbuf, sizeof lbuf);
  const char *target = unquote(target_opt, tbuf, sizeof tbuf);
  int li = -1, ti = -1;
  for (size_t i = 0; i < sizeof losses / sizeof *losses; i++)
    if (strcmp(losses[i].name, loss ? loss : losses[0].name) == 0) li = (int)i;
  if (li < 0)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "pd_state_train: option 'loss' is %s; "
                        "the losses are \"softmax_with_cross_entropy\" (the default), "
                        "\"cross_entropy\" and \"mse\"", loss_opt);
  for (int i = 0; i < nfetches; i++)
    if (!target || strcmp(target, fetches[i]) == 0) {
      ti = i;
      break;
    }
  if (ti < 0) {
    pd_buf b;
    pd_buf_init(&b);
    for (int i = 0; i < nfetches; i++) pd_buf_printf(&b, "%s\"%s\"", i ? ", " : "", fetches[i]);
    pd_status s = b.oom ? oom(err)
                        : pd_error_set(err, PD_EINVAL, (pd_loc){0}, "pd_state_train: option "
                                       "'target' is %s, which is no output of %s; its outputs "
                                       "are %s", target_opt, path, b.data);
    pd_buf_free(&b);
    return s;
  }
  const pd_var_desc *tv = pd_block_find_var_local(p->blocks[0], fetches[ti]);
  pd_buf *b = &ft->text;
  /* the model as a layer */
  pd_buf_puts(b, "__model = import_model(");
  put_string(b, path);
  if (freeze) pd_buf_printf(b, ", freeze = %s", freeze);
  pd_buf_puts(b, ")");
  if (freeze ? end_line(ft, "option 'freeze' (%s)", freeze) : end_line(ft, "the model %s", path))
    return oom(err);
  /* its inputs */
  for (int i = 0; i < nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], feeds[i]);
    if (!v) return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "%s: no var for input '%s'", path,
                                feeds[i]);
    pd_buf_printf(b, "__in%d = data(", i);
    put_string(b, feeds[i]);
    pd_buf_puts(b, ", ");
    pd_buf_put_dims(b, v->ndims, v->dims);
    pd_buf_printf(b, ", %s", pd_dtype_name(v->dtype));
    if (v->lod_level) pd_buf_printf(b, ", lod_level = %d", v->lod_level);
    pd_buf_puts(b, ")");
    if (end_line(ft, "input '%s' of %s", feeds[i], path)) return oom(err);
  }
  /* the call: a list of its outputs (a one-output model's in brackets) */
  pd_buf_printf(b, "__out = %s__model(", nfetches == 1 ? "[" : "");
  for (int i = 0; i < nfeeds; i++) pd_buf_printf(b, "%s__in%d", i ? ", " : "", i);
  pd_buf_printf(b, ")%s", nfetches == 1 ? "]" : "");
  if (end_line(ft, "the model %s", path)) return oom(err);
  /* the label and the cost */
  pd_buf_puts(b, "__label = data(");
  if (label) {
    pd_buf_puts(b, label);
  } else if (li == 2) {  /* mse: the target's shape */
    pd_buf_puts(b, "\"label\", ");
    if (tv) pd_buf_put_dims(b, tv->ndims, tv->dims);
    else pd_buf_puts(b, "[-1, 1]");
  } else {
    pd_buf_puts(b, "\"label\", [-1, 1], int64");
  }
  pd_buf_puts(b, ")");
  const char *ldef = li == 2 ? "\"label\", the target's shape" : "\"label\", [-1, 1], int64";
  if (end_line(ft, "option 'label' (%s)", label ? label : ldef)) return oom(err);
  char t[32];
  snprintf(t, sizeof t, "__out[%d]", ti);
  pd_buf_puts(b, "__cost = ");
  pd_buf_printf(b, losses[li].cost, t, "__label", t, "__label");
  if (end_line(ft, "options 'loss' (\"%s\"), 'target' (\"%s\") and 'label' (%s)",
               losses[li].name, fetches[ti], label ? label : ldef))
    return oom(err);
  if (save_path) {
    /* the outputs under their names (when they are var names, as save takes them) */
    bool plain = true;
    for (int i = 0; i < nfetches; i++) plain &= pd_is_var_name(fetches[i]);
    pd_buf_puts(b, "save(");
    put_string(b, save_path);
    for (int i = 0; i < nfetches; i++) pd_buf_printf(b, ", __out[%d]", i);
    for (int i = 0; plain && i < nfetches; i++) {
      pd_buf_puts(b, i ? ", " : ", names = [");
      put_string(b, fetches[i]);
    }
    pd_buf_puts(b, plain && nfetches ? "])" : ")");
    if (end_line(ft, "pd_state_save_model(\"%s\")", save_path)) return oom(err);
    return PD_OK;
  }
  /* train(...), an option a line */
  pd_buf_puts(b, "train(__cost");
  for (int i = 0; options && options[i]; i += 2) {
    if (pd_api_ft_own_option(options[i])) continue;
    pd_buf_puts(b, ",");
    if (end_line(ft, "pd_state_train")) return oom(err);
    pd_buf_printf(b, "  %s = %s", options[i], options[i + 1]);
    if (end_line(ft, "option '%s' (%s)", options[i], options[i + 1])) return oom(err);
  }
  pd_buf_puts(b, ")");
  if (end_line(ft, "pd_state_train")) return oom(err);
  return PD_OK;
}

const char *pd_api_ft_blame(const pd_api_ft *ft, int line) {
  return line >= 1 && line <= ft->nlines ? ft->blame[line - 1] : NULL;
}

void pd_api_ft_free(pd_api_ft *ft) {
  for (int i = 0; i < ft->nlines; i++) pd_free(ft->blame[i]);
  pd_free(ft->blame);
  pd_buf_free(&ft->text);
  *ft = (pd_api_ft){0};
}

/* ---------------------------------------------------------------- fine-tuning a loaded model
 * The script run: what pd_state_train and pd_state_save_model do with a loaded model. */

/* The name of the script that pd_api_finetune compiles, which its errors never show. */
static const char ft_name[] = "<fine-tuning>";

static const pd_loc nowhere = {0};

/* An error at line `line` of that script, told as an error of what the caller wrote that the
 * line comes from: "pd_state_train: option 'label' ([-1, 3]): message". */
static int ft_fail(pd_state *st, pd_status s, const pd_api_ft *ft, int line, const char *fn,
                   const char *msg) {
  char *m = pd_strdup(msg ? msg : pd_status_str(s));
  const char *what = pd_api_ft_blame(ft, line);
  pd_api_begin(st);
  if (!m) return pd_api_fail(st, PD_ENOMEM, "out of memory");
  char *nl = strchr(m, '\n');
  if (nl) *nl = '\0';
  pd_api_fail(st, s, "%s: %s: %s", fn, what ? what : "the model", m);
  pd_free(m);
  return (int)s;
}

/* A run-time error: the caller's option when it points into the script, else as it is. */
static int ft_fail_run(pd_state *st, const pd_api_ft *ft, const char *fn, const pd_error *err) {
  if (err->loc.file && strcmp(err->loc.file, ft_name) == 0)
    return ft_fail(st, err->status ? err->status : PD_ERUNTIME, ft, err->loc.line, fn, err->msg);
  return pd_api_fail_run(st, err);
}

/* The model again from its file, with the parameters of the fine-tuning runner's scope, made
 * ready to run in place of the state's (whose inputs and outputs then name its vars). */
static pd_status ft_refresh(pd_state *st, pd_error *err) {
  pd_model m = {0};
  const char **names = NULL, **in = NULL, **out = NULL;
  int n = 0;
  pd_status s = pd_model_load(&m, st->model_path, err);
  if (!s && pd_params_names(m.program, &names, &n))
    s = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  pd_scope *rs = pd_runner_scope(st->ft_runner);
  for (int i = 0; !s && i < n; i++) {
    pd_variable *v = pd_scope_find_local_var(rs, names[i]);
    if (!v || v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) {
      s = pd_error_set(err, PD_ERUNTIME, nowhere, "%s: parameter '%s' has no value after "
                       "fine-tuning", st->model_path, names[i]);
      break;
    }
    pd_variable *d = pd_scope_var(m.scope, names[i]);
    pd_tensor *t = d ? pd_var_tensor(d) : NULL;
    if (!t || pd_tensor_copy_to(t, &v->u.tensor, PD_K_HOST))  /* as a load puts them */
      s = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  }
  pd_free(names);
  pd_exec_options eo = pd_api_exec_options(st);
  if (!s) s = pd_model_prepare(&m, &eo, err);
  if (!s) {
    in = pd_calloc((size_t)m.nfeeds + 1, sizeof *in);
    out = pd_calloc((size_t)m.nfetches + 1, sizeof *out);
    if (!in || !out) s = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  }
  if (s) {
    pd_free(in);
    pd_free(out);
    pd_model_free(&m);
    return s;
  }
  for (int i = 0; i < m.nfeeds; i++) in[i] = m.feeds[i].var;
  for (int i = 0; i < m.nfetches; i++) out[i] = m.fetches[i].var;
  pd_api_named_clear(&st->results);
  pd_model_free(&st->model);
  st->model = m;
  pd_free(st->inputs);
  pd_free(st->outputs);
  st->inputs = in;
  st->outputs = out;
  st->ninputs = m.nfeeds;
  st->noutputs = m.nfetches;
  return PD_OK;
}

/* A training call failed: the fine-tuning runner as it was before it. The first call's runner
 * (fresh) goes, with its unit: the next call makes it again from the model's file; a later
 * call's runner gets back the state saved before it (NULL when the call failed before saving
 * it: nothing had changed). */
static void ft_undo(pd_state *st, bool fresh, pd_runner_saved *before) {
  if (fresh) {
    pd_api_drop_run(&st->ft_runner, &st->ft_unit, &st->ft_src);
    return;
  }
  if (before && pd_runner_restore(st->ft_runner, before)) {
    /* Only when a variable the call erased cannot be made again (no action erases one). */
    char *m = pd_strdup(st->info.message);
    pd_api_begin(st);
    pd_api_fail(st, PD_ENOMEM, "%s; and the fine-tuned parameters could not all be put back "
                "as they were before the call (out of memory)", m ? m : "out of memory");
    pd_free(m);
  }
}

/* pd_state_train and pd_state_save_model of a loaded model (api_finetune.h): the script above
 * compiled, adopted by the fine-tuning runner (made at the first call: its startup program
 * reads the model's parameters; the model's side files become its own, for save), and its last
 * action run; after training, the model is made again with the trained parameters. A training
 * call that fails changes nothing (ft_undo): before a later call's training the runner's state
 * is saved (pd_runner_save: a copy of its parameters and optimizer state). */
int pd_api_finetune(pd_state *st, const char *fn, const char *const *options,
                    const char *save_path) {
  pd_api_ft ft = {0};
  pd_buf_init(&ft.text);
  pd_error err = {0};
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  bool fresh = !st->ft_runner;       /* this call makes the runner */
  pd_runner_saved *before = NULL;    /* a later training call: the runner's state before it */
  pd_status s = pd_api_ft_script(&ft, st->model.program, st->model_path, st->ninputs,
                                 st->inputs, st->noutputs, st->outputs, options, save_path, &err);
  if (s) {
    pd_api_fail_err(st, &err, NULL, false);
    goto out;
  }
  if (pd_source_from_string(ft_name, ft.text.data, ft.text.len, &src)) {
    s = pd_api_fail(st, PD_ENOMEM, "out of memory");
    goto out;
  }
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_compile_options co = {.stdlib_dir = st->stdlib_dir};
  s = pd_compile(src, &co, &d, &unit);
  if (s) {
    pd_api_fail_diags(st, s, &d);
    if (st->file && strcmp(st->file, ft_name) == 0)
      ft_fail(st, s, &ft, st->info.line, fn, st->info.message);
  }
  pd_diags_free(&d);
  if (s) goto out;
  if (!st->ft_runner) {
    pd_run_options ro = pd_api_run_options(st);
    if ((s = pd_runner_new(unit, &ro, &st->ft_runner, &err)) ||
        (s = pd_runner_side_files(st->ft_runner, st->model_path, &err))) {
      pd_runner_free(st->ft_runner);
      st->ft_runner = NULL;
      ft_fail_run(st, &ft, fn, &err);
      goto out;
    }
  } else if (!save_path && (s = pd_runner_save(st->ft_runner, &before, &err))) {
    pd_api_fail_err(st, &err, NULL, false);
    goto out;
  } else if ((s = pd_runner_adopt(st->ft_runner, unit, &err))) {
    ft_fail_run(st, &ft, fn, &err);
    goto out;
  }
  /* the runner borrows the new unit now */
  pd_unit_free(st->ft_unit);
  pd_source_free(st->ft_src);
  st->ft_unit = unit;
  st->ft_src = src;
  unit = NULL;
  src = NULL;
  if ((s = pd_runner_action(st->ft_runner, &st->ft_unit->actions[st->ft_unit->nactions - 1],
                            &err))) {
    ft_fail_run(st, &ft, fn, &err);
    goto out;
  }
  if (!save_path && (s = ft_refresh(st, &err))) {
    pd_api_fail_err(st, &err, NULL, false);
    goto out;
  }
  pd_api_ok(st);
out:
  if (s && !save_path) ft_undo(st, fresh, before);
  else pd_runner_saved_free(before);
  pd_error_clear(&err);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_api_ft_free(&ft);
  return (int)s;
}

int pd_api_save_model(pd_state *st, const char *path) {
  if (!st) return PD_RESULT_EINVAL;
  pd_api_begin(st);
  if (!path || !*path)
    return pd_api_fail(st, PD_EINVAL, "pd_state_save_model: the path is NULL or empty");
  if (!st->model.program || st->unit)
    return pd_api_fail(st, PD_EINVAL, "pd_state_save_model needs a loaded model "
                "(pd_state_load_model); a script saves its models with save(...)");
  return pd_api_finetune(st, "pd_state_save_model", NULL, path);
}
