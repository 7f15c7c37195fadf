/* cmd_exec.c -- `pdlang exec MODEL.pdmodel --feed NAME=FILE.npy ...`: run a saved inference
 * program (as `save` writes it, or a Fluid inference model with feed and fetch ops) on inputs
 * read from NumPy files, and print what its fetch ops fetch. Parameters come from
 * MODEL.pdiparams (or --params FILE). The model is loaded and run by the library's own loader
 * (api/model.h, as pd_state_load_model). */
#include "config.h"
#include "driver/driver.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/model.h"
#include "vm/reader/reader.h"

#define MAX_IO 32

/* A whole .npy file as one tensor [N, per-sample dims...] (a 1-D file gives [N, 1]). */
static pd_status load_npy(const char *path, pd_tensor *t, pd_error *err) {
  pd_dataset *ds;
  pd_status st = pd_dataset_npy(path, NULL, &ds, err);
  if (st) return st;
  int64_t dims[PD_TENSOR_MAX_DIMS];
  int nd = pd_dataset_field_shape(ds, 0, dims + 1);
  dims[0] = pd_dataset_size(ds);
  st = pd_tensor_set_data(t, pd_dataset_field_dtype(ds, 0), nd + 1, dims,
                          pd_dataset_field_data(ds, 0));
  pd_dataset_free(ds);
  if (st) return pd_error_set(err, st, (pd_loc){0}, "%s: out of memory", path);
  return PD_OK;
}

/* Does the file's tensor fit the model's input var (dtype, rank, known dims)? Says why not. */
static bool input_fits(const pd_program *p, const char *name, const pd_tensor *t,
                       const char *file) {
  const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], name);
  if (!v || v->ndims < 0) return true;
  bool ok = v->dtype == t->dtype && v->ndims == t->ndims;
  for (int k = 0; ok && k < v->ndims; k++) ok = v->dims[k] < 0 || v->dims[k] == t->dims[k];
  if (ok) return true;
  pd_buf b;
  pd_buf_init(&b);
  pd_buf_printf(&b, "pdlang exec: input %s is %s ", name, pd_dtype_name(v->dtype));
  pd_buf_put_dims(&b, v->ndims, v->dims);
  pd_buf_printf(&b, " but %s holds %s ", file, pd_dtype_name(t->dtype));
  pd_buf_put_dims(&b, t->ndims, t->dims);
  if (!b.oom) fprintf(stderr, "%s\n", b.data);
  pd_buf_free(&b);
  return false;
}

static void describe_inputs(const pd_model *m) {
  fprintf(stderr, "the model's inputs:\n");
  for (int i = 0; i < m->nfeeds; i++) {
    const pd_var_desc *v = pd_block_find_var_local(m->program->blocks[0], m->feeds[i].var);
    fprintf(stderr, "  %s", m->feeds[i].var);
    if (v && v->ndims >= 0) {
      pd_buf b;
      pd_buf_init(&b);
      pd_buf_put_dims(&b, v->ndims, v->dims);
      if (!b.oom) fprintf(stderr, " %s %s", pd_dtype_name(v->dtype), b.data);
      pd_buf_free(&b);
    }
    fprintf(stderr, "\n");
  }
}

static void print_notice(void *ud, const char *msg) {
  (void)ud;
  fprintf(stderr, "pdlang: note: %s\n", msg);
}

static int run_exec(int argc, char **argv) {
  const char *model = NULL, *params = NULL, *device = NULL;
  const char *feed_names[MAX_IO], *feed_files[MAX_IO];
  int nfeed_args = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--feed") == 0 && i + 1 < argc) {
      char *eq = strchr(argv[++i], '=');
      if (!eq || eq == argv[i] || nfeed_args == MAX_IO) {
        fprintf(stderr, "pdlang exec: --feed takes NAME=FILE.npy, got '%s'\n", argv[i]);
        return 2;
      }
      *eq = 0;
      feed_names[nfeed_args] = argv[i];
      feed_files[nfeed_args++] = eq + 1;
    } else if (strcmp(argv[i], "--params") == 0 && i + 1 < argc) {
      params = argv[++i];
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strncmp(argv[i], "--device=", 9) == 0) {
      device = argv[i] + 9;
    } else if (argv[i][0] == '-' || model) {
      pd_driver_usage(stderr, &pd_cmd_exec);
      return 2;
    } else {
      model = argv[i];
    }
  }
  if (!model) {
    pd_driver_usage(stderr, &pd_cmd_exec);
    return 2;
  }
  int place, gpu_index;
  if (pd_driver_device("exec", device, &place, &gpu_index)) return 2;
  pd_error err = {0};
  pd_model m = {0};
  pd_tensor inputs[MAX_IO];
  int ninputs = 0;
  int rc = 1;
  pd_status st = pd_model_load(&m, model, &err);
  if (st) goto fail;
  if (m.nfetches == 0) {
    fprintf(stderr, "pdlang exec: %s has no fetch ops, so nothing to show (save it with "
                    "save(path, target) in a script)\n", model);
    goto out;
  }
  if ((st = pd_model_load_params(&m, model, params, &err))) goto fail;
  /* Inputs: by name, or in order when the names are not the model's. */
  if (nfeed_args != m.nfeeds) {
    fprintf(stderr, "pdlang exec: the model takes %d input%s, %d given with --feed\n", m.nfeeds,
            m.nfeeds == 1 ? "" : "s", nfeed_args);
    describe_inputs(&m);
    goto out;
  }
  for (int i = 0; i < m.nfeeds; i++) {
    int k = i;
    for (int j = 0; j < nfeed_args; j++)
      if (strcmp(feed_names[j], m.feeds[i].var) == 0) k = j;
    pd_tensor_init(&inputs[ninputs++]);
    if ((st = load_npy(feed_files[k], &inputs[ninputs - 1], &err))) goto fail;
    if (!input_fits(m.program, m.feeds[i].var, &inputs[ninputs - 1], feed_files[k])) goto out;
  }
  pd_exec_options eo = {.place = (pd_k_place)place, .notice = print_notice};
  if (place == PD_K_CUDA && (st = pd_k_cuda_open(gpu_index, &err))) goto fail;
  if ((st = pd_model_prepare(&m, &eo, &err))) goto fail;
  for (int i = 0; i < m.nfeeds; i++)
    if ((st = pd_model_feed(&m, i, &inputs[i], &err))) goto fail;
  pd_tensor_array *got;
  if ((st = pd_model_run(&m, &got, &err))) goto fail;
  pd_buf out;
  pd_buf_init(&out);
  for (int i = 0; i < m.nfetches; i++) {
    const pd_tensor *t = got ? pd_tensor_array_get(got, m.fetches[i].col) : NULL;
    pd_buf_printf(&out, "%s: ", m.fetches[i].var);
    if (t) pd_tensor_print(t, &out);
    else pd_buf_puts(&out, "(not fetched)\n");
  }
  if (out.data) fputs(out.data, stdout);
  pd_buf_free(&out);
  rc = 0;
  goto out;
fail:
  pd_driver_print_error(NULL, NULL, &err);
out:
  for (int i = 0; i < ninputs; i++) pd_tensor_release(&inputs[i]);
  pd_error_clear(&err);
  pd_model_free(&m);
  return rc;
}

const pd_command pd_cmd_exec = {
    .name = "exec",
    .run = run_exec,
    .summary = "run a saved model (FILE.pdmodel) on inputs from .npy files",
    .usage = "pdlang exec MODEL.pdmodel [--params FILE] [--device cpu|gpu[:N]]\n"
             "            [--feed NAME=FILE.npy]...\n"
             "\n"
             "Runs a saved inference program (save(path, target) in a script writes one) and\n"
             "prints what its fetch ops fetch. Parameters are read from MODEL.pdiparams unless\n"
             "--params names another file. Each input of the model is given with --feed, by\n"
             "name (or in order); the file's first dimension is the batch.",
};
