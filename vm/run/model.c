/* model.c -- loading and running a saved inference model (vm/run/model.h): the program and its
 * feed and fetch ops, the parameters, the executor, the feed and fetch lists. */
#include "config.h"
#include "vm/run/model.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vm/ir/params.h"
#include "vm/ir/pir.h"
#include "vm/ir/serialize.h"
#include "vm/ops/compat.h"
#include "vm/passes/amp.h"

static const pd_loc nowhere = {0};

static pd_status oom(pd_error *err) {
  return pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
}

/* The feed ("Out" of each feed op) or fetch ("X" of each fetch op) ops of block 0, ordered by
 * their "col" attribute, which must number them 0..n-1. *list is the feed/fetch list var. */
static pd_status find_io(const pd_program *p, const char *path, bool feed, pd_model_io **out,
                         int *n, const char **list, pd_error *err) {
  const pd_block *b = p->blocks[0];
  const char *type = feed ? "feed" : "fetch";
  *out = NULL;
  *n = 0;
  int count = 0;
  for (int i = 0; i < b->nops; i++) count += strcmp(b->ops[i]->type, type) == 0;
  pd_model_io *ops = pd_calloc((size_t)count + 1, sizeof *ops);
  if (!ops) return oom(err);
  for (int i = 0; i < count; i++) ops[i].col = -1;
  for (int i = 0, k = 0; i < b->nops; i++) {
    const pd_op_desc *op = b->ops[i];
    if (strcmp(op->type, type) != 0) continue;
    const char *var = feed ? pd_op_output1(op, "Out") : pd_op_input1(op, "X");
    const char *lst = feed ? pd_op_input1(op, "X") : pd_op_output1(op, "Out");
    const pd_attr *a = pd_op_attr(op, "col");
    int64_t c = !a ? k : a->type == PD_ATTR_INT ? a->v.i : a->type == PD_ATTR_LONG ? a->v.l : -1;
    int col = c >= 0 && c < count ? (int)c : -1;
    if (!var || !lst || col < 0 || col >= count || ops[col].var || (*list && strcmp(*list, lst))) {
      pd_free(ops);
      return pd_error_set(err, PD_EFORMAT, nowhere,
                          "%s: %s op %d is malformed (its variables or its column %d of %d)",
                          path, type, k, col, count);
    }
    *list = lst;
    ops[col] = (pd_model_io){var, col};
    k++;
  }
  *out = ops;
  *n = count;
  return PD_OK;
}

static bool is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* dir + "/" + name, or NULL on out of memory. */
static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir), k = strlen(name);
  while (n > 1 && dir[n - 1] == '/') n--;
  char *s = pd_malloc(n + k + 2);
  if (!s) return NULL;
  memcpy(s, dir, n);
  s[n] = '/';
  memcpy(s + n + 1, name, k + 1);
  return s;
}

char *pd_model_folder_program(const char *path) {
  if (!path || !is_dir(path)) return NULL;
  char *model = join(path, PD_MODEL_FLUID_PROGRAM);
  if (model && !is_file(model)) {
    pd_free(model);
    return NULL;
  }
  return model;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the file at path starts as a PIR program does (pd_pir_is_json). */
static bool pir_file(const char *path) {
  char head[256];
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  return pd_pir_is_json(head, n);
}

/* The models a folder without __model__ holds: its NAME.pdmodel files and its NAME.json files
 * that are PIR programs, in name order, into *names ("a.json, b.pdmodel"; empty when none).
 * Non-zero on out of memory. */
static int models_in_folder(const char *dir, pd_buf *names) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  char **found = NULL;
  size_t n = 0, cap = 0;
  int r = 0;
  struct dirent *e;
  while (!r && (e = readdir(d)) != NULL) {
    size_t k = strlen(e->d_name);
    bool pdm = k > 8 && strcmp(e->d_name + k - 8, ".pdmodel") == 0;
    bool js = k > 5 && strcmp(e->d_name + k - 5, ".json") == 0;
    if (!pdm && !js) continue;
    char *full = join(dir, e->d_name), *name = NULL;
    if (!full) r = -1;
    else if (is_file(full) && (pdm || pir_file(full)) &&
             (PD_GROW(found, cap, n + 1) || !(name = pd_strdup(e->d_name))))
      r = -1;
    if (name) found[n++] = name;
    pd_free(full);
  }
  closedir(d);
  if (n) qsort(found, n, sizeof *found, by_name);
  for (size_t i = 0; i < n; i++) {
    if (pd_buf_printf(names, "%s%s", i ? ", " : "", found[i])) r = -1;
    pd_free(found[i]);
  }
  pd_free(found);
  return r;
}

pd_status pd_model_find(const char *model, char **found, pd_error *err) {
  *found = NULL;
  bool file = is_file(model), dir = is_dir(model);
  if (!file && !dir) {  /* a path prefix NAME: NAME.pdmodel, else NAME.json */
    static const char *const exts[] = {".pdmodel", ".json"};
    size_t n = strlen(model);
    for (size_t i = 0; i < PD_ARRAY_LEN(exts); i++) {
      char *s = pd_malloc(n + strlen(exts[i]) + 1);
      if (!s) return oom(err);
      memcpy(s, model, n);
      strcpy(s + n, exts[i]);
      if (is_file(s)) {
        *found = s;
        return PD_OK;
      }
      pd_free(s);
    }
    return PD_OK;
  }
  char *fluid = pd_model_folder_program(model);
  if (fluid || !dir) {
    pd_free(fluid);
    return PD_OK;
  }
  DIR *d = opendir(model);
  if (!d) return PD_OK;
  int npdmodel = 0, njson = 0;
  char *pdmodel = NULL, *json = NULL;
  pd_buf names;
  pd_buf_init(&names);
  pd_status s = PD_OK;
  for (struct dirent *e; !s && (e = readdir(d));) {
    size_t k = strlen(e->d_name);
    bool pdm = k > 8 && strcmp(e->d_name + k - 8, ".pdmodel") == 0;
    bool js = k > 5 && strcmp(e->d_name + k - 5, ".json") == 0;
    if (!pdm && !js) continue;
    char *full = join(model, e->d_name);
    if (!full) {
      s = oom(err);
      break;
    }
    if (!is_file(full) || (js && !pir_file(full))) {
      pd_free(full);
      continue;
    }
    if (pdm && pd_buf_printf(&names, "%s%s", npdmodel ? ", " : "", e->d_name)) s = oom(err);
    char **slot = pdm ? &pdmodel : &json;
    if ((pdm ? npdmodel++ : njson++) == 0) *slot = full;
    else pd_free(full);
  }
  closedir(d);
  if (!s && npdmodel > 1)
    s = pd_error_set(err, PD_EINVAL, nowhere, "%s holds %d models (%s); give the one to run",
                     model, npdmodel, names.data ? names.data : "");
  if (!s && npdmodel == 1) *found = pdmodel, pdmodel = NULL;
  else if (!s && njson == 1) *found = json, json = NULL;
  pd_free(pdmodel);
  pd_free(json);
  pd_buf_free(&names);
  return s;
}

/* Fluid's layouts: a folder DIR holding __model__ (given as DIR or as DIR/__model__) sets
 * m->fluid_dir and *model to DIR/__model__; any other path is the model file itself. */
static pd_status find_layout(pd_model *m, const char *path, char **model, pd_error *err) {
  *model = NULL;
  size_t n = strlen(path), k = sizeof PD_MODEL_FLUID_PROGRAM - 1;
  bool named = n >= k && strcmp(path + n - k, PD_MODEL_FLUID_PROGRAM) == 0 &&
               (n == k || path[n - k - 1] == '/');
  if (!named && !is_dir(path)) return PD_OK;
  if (named) {
    m->fluid_dir = pd_malloc(n - k + 2);
    if (!m->fluid_dir) return oom(err);
    if (n == k) strcpy(m->fluid_dir, ".");
    else memcpy(m->fluid_dir, path, n - k - 1), m->fluid_dir[n - k - 1] = 0;
    if (!m->fluid_dir[0]) strcpy(m->fluid_dir, "/");
  } else if (!(m->fluid_dir = pd_strdup(path))) {
    return oom(err);
  }
  if (!(*model = join(m->fluid_dir, PD_MODEL_FLUID_PROGRAM))) return oom(err);
  if (!named && !is_file(*model)) {
    pd_buf names;
    pd_buf_init(&names);
    if (models_in_folder(path, &names)) {
      pd_buf_free(&names);
      return oom(err);
    }
    pd_status s;
    if (names.len)
      s = pd_error_set(err, PD_EIO, nowhere,
                       "%s: a folder, but it holds no %s (a Fluid model folder holds %s and its "
                       "parameters); it holds %s: give the model file's path", path,
                       PD_MODEL_FLUID_PROGRAM, PD_MODEL_FLUID_PROGRAM, names.data);
    else
      s = pd_error_set(err, PD_EIO, nowhere,
                       "%s: a folder, but it holds no %s (a Fluid model folder holds %s and its "
                       "parameters; else give the NAME.pdmodel or NAME.json file)",
                       path, PD_MODEL_FLUID_PROGRAM, PD_MODEL_FLUID_PROGRAM);
    pd_buf_free(&names);
    return s;
  }
  return PD_OK;
}

pd_status pd_model_load(pd_model *m, const char *path, pd_error *err) {
  *m = (pd_model){0};
  char *model = NULL;
  pd_status s = find_layout(m, path, &model, err);
  if (!s && !model && !is_file(path)) {
    /* NAME.pdmodel missing beside a NAME.json (PIR) that PaddlePaddle 3.x wrote instead */
    size_t n = strlen(path), k = sizeof ".pdmodel" - 1;
    if (n > k && strcmp(path + n - k, ".pdmodel") == 0) {
      if (!(model = pd_malloc(n + 8))) s = oom(err);
      else memcpy(model, path, n - k), strcpy(model + n - k, ".json");
      if (model && !is_file(model)) pd_free(model), model = NULL;
    }
  }
  if (!s) s = pd_program_load(model ? model : path, &m->program, err);
  if (!s) s = pd_compat_apply(m->program, model ? model : path, err);
  pd_free(model);
  if (!s) s = find_io(m->program, path, true, &m->feeds, &m->nfeeds, &m->feed_list, err);
  if (!s) s = find_io(m->program, path, false, &m->fetches, &m->nfetches, &m->fetch_list, err);
  if (!s && !(m->scope = pd_scope_new(NULL))) s = oom(err);
  if (s) pd_model_free(m);
  return s;
}

pd_status pd_model_fluid_params_load(const char *dir, pd_scope *scope, int n,
                                     const char *const *names, const pd_program *expect,
                                     pd_error *err) {
  char *combined = join(dir, PD_MODEL_FLUID_PARAMS);
  if (!combined) return oom(err);
  pd_status s = PD_OK;
  if (is_file(combined)) {
    s = pd_params_load(combined, scope, n, names, expect, err);
    pd_free(combined);
    return s;
  }
  pd_free(combined);
  for (int i = 0; i < n && !s; i++) {
    char *file = join(dir, names[i]);
    if (!file) return oom(err);
    if (!is_file(file))
      s = pd_error_set(err, PD_EIO, nowhere,
                       "%s: no file for parameter '%s' (%s is missing; a Fluid model folder "
                       "holds one file per parameter, named after it, or all of them in %s)",
                       dir, names[i], file, PD_MODEL_FLUID_PARAMS);
    else
      s = pd_params_load(file, scope, 1, &names[i], expect, err);
    pd_free(file);
  }
  return s;
}

pd_status pd_model_load_params(pd_model *m, const char *path, const char *params_path,
                               pd_error *err) {
  const char **names = NULL;
  int n;
  if (pd_params_names(m->program, &names, &n)) return oom(err);
  pd_status s = PD_OK;
  if (n && m->fluid_dir && !params_path) {
    s = pd_model_fluid_params_load(m->fluid_dir, m->scope, n, names, m->program, err);
  } else if (n) {
    char *ppath = params_path ? pd_strdup(params_path) : pd_params_path_for(path);
    s = !ppath ? oom(err) : pd_params_check_identity(m->program, ppath, err);
    if (!s) s = pd_params_load(ppath, m->scope, n, names, m->program, err);
    pd_free(ppath);
  }
  pd_free(names);
  return s;
}

pd_status pd_model_prepare(pd_model *m, const pd_exec_options *eo, pd_error *err) {
  /* the load-time passes (vm/passes/infer_opt.h), on the parameters just loaded */
  pd_status s = m->no_optimize ? PD_OK
                               : pd_program_infer_opt(m->program, m->scope,
                                                      eo ? eo->place : PD_K_HOST, &m->opt, err);
  if (!s && m->precision == PD_BF16) s = pd_program_amp(m->program, PD_BF16, &m->amp_ops, err);
  return s ? s : pd_exec_new(m->program, eo, &m->ex, err);
}

/* The feed list, made a FEED_MINIBATCH of nfeeds entries; NULL on out of memory. */
static pd_tensor_array *feed_list(pd_model *m) {
  pd_variable *v = pd_scope_var(m->scope, m->feed_list ? m->feed_list : "feed");
  pd_tensor_array *list = NULL;
  if (!v || pd_var_set_type(v, PD_VAR_FEED_MINIBATCH) || !(list = pd_var_tensor_array(v)) ||
      pd_tensor_array_reserve(list, m->nfeeds))
    return NULL;
  return list;
}

pd_status pd_model_feed(pd_model *m, int i, const pd_tensor *t, pd_error *err) {
  pd_tensor_array *list = feed_list(m);
  if (!list) return oom(err);
  pd_tensor *slot = pd_tensor_array_get(list, m->feeds[i].col);
  if (!slot || pd_tensor_share(slot, t)) {
    pd_tensor_array_truncate(list, 0);
    return oom(err);
  }
  return PD_OK;
}

pd_status pd_model_run(pd_model *m, pd_tensor_array **fetched, pd_error *err) {
  *fetched = NULL;
  pd_tensor_array *list = feed_list(m);
  if (!list) return oom(err);
  pd_status s = pd_exec_run(m->ex, m->scope, NULL, NULL, err);
  pd_tensor_array_truncate(list, 0);  /* the feeds stay the caller's */
  if (s) return s;
  pd_variable *v = pd_scope_find_var(m->scope, m->fetch_list ? m->fetch_list : "fetch");
  if (v && v->type == PD_VAR_FETCH_LIST) *fetched = pd_var_tensor_array(v);
  return PD_OK;
}

void pd_model_free(pd_model *m) {
  pd_exec_free(m->ex);
  pd_scope_free(m->scope);
  pd_program_free(m->program);
  pd_free(m->feeds);
  pd_free(m->fetches);
  pd_free(m->fluid_dir);
  *m = (pd_model){0};
}
