/* cmd_exec.c -- `pdlang exec MODEL --feed NAME=FILE.npy ... [--out ...]`: run a saved inference
 * program (as `save` writes it, or a Fluid/PaddlePaddle inference model with feed and fetch ops,
 * in any of the layouts vm/run/model.h loads) on inputs read from NumPy files, print what its fetch
 * ops fetch and write it to .npy files with --out. Parameters come from MODEL.pdiparams (or
 * --params FILE, or the Fluid folder). The model is loaded and run by the library's own loader
 * (vm/run/model.h, as pd_state_load_model); finding it and making its inputs is
 * driver/model_inputs.c's, which bench shares. */
#include "config.h"
#include "driver/driver.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vm/run/model.h"
#include "vm/reader/reader.h"

static void print_notice(void *ud, const char *msg) {
  (void)ud;
  fprintf(stderr, "pdlang: note: %s\n", msg);
}

static void describe_outputs(const pd_model *m) {
  fprintf(stderr, "the model's outputs:");
  for (int i = 0; i < m->nfetches; i++) fprintf(stderr, " %s", m->fetches[i].var);
  fprintf(stderr, "\n");
}

/* The .npy files of --out: DIR/NAME.npy for every output when dir is set, and FILE for each
 * NAME=FILE. Names are the fetch targets' (the vars the fetch ops fetch). */
static bool write_outputs(const pd_model *m, pd_tensor_array *got, const char *dir, int nouts,
                          const char *const *names, const char *const *files) {
  for (int i = 0; i < m->nfetches; i++) {
    const pd_tensor *t = got ? pd_tensor_array_get(got, m->fetches[i].col) : NULL;
    const char *var = m->fetches[i].var;
    for (int j = -1; j < nouts; j++) {
      if (j >= 0 ? strcmp(names[j], var) != 0 : !dir) continue;
      pd_buf path;
      pd_buf_init(&path);
      if (j >= 0) pd_buf_puts(&path, files[j]);
      else {
        /* A file in dir whatever the name: '/' (PaddlePaddle 2.x's fetch targets are named
         * "save_infer_model/scale_0.tmp_0") and a leading '.' become '_'. */
        pd_buf_printf(&path, "%s/", dir);
        for (const char *c = var; *c; c++)
          pd_buf_append(&path, *c == '/' || (c == var && *c == '.') ? "_" : c, 1);
        pd_buf_puts(&path, ".npy");
      }
      if (path.oom) {
        pd_buf_free(&path);
        fprintf(stderr, "pdlang exec: out of memory\n");
        return false;
      }
      pd_error err = {0};
      pd_status st = !t ? pd_error_set(&err, PD_ENOTFOUND, (pd_loc){0},
                                       "%s: output %s was not fetched", path.data, var)
                        : pd_npy_save(path.data, t, &err);
      pd_buf_free(&path);
      if (st) {
        pd_driver_print_error(NULL, NULL, &err);
        pd_error_clear(&err);
        return false;
      }
    }
  }
  return true;
}

static int run_exec(int argc, char **argv) {
  const char *model = NULL, *params = NULL, *device = NULL, *out_dir = NULL;
  pd_dtype precision = PD_FP32;
  const char *out_names[PD_DRIVER_MAX_IO], *out_files[PD_DRIVER_MAX_IO];
  pd_driver_feeds feeds = {0};
  int nouts = 0;
  for (int i = 1; i < argc; i++) {
    int fa = pd_driver_feed_arg("exec", argc, argv, &i, &feeds);
    if (fa < 0) return 2;
    if (fa) continue;
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      char *eq = strchr(argv[++i], '=');
      if (!eq) {
        if (out_dir) {
          fprintf(stderr, "pdlang exec: --out DIR is given twice ('%s', '%s')\n", out_dir, argv[i]);
          return 2;
        }
        out_dir = argv[i];
        continue;
      }
      if (eq == argv[i] || !eq[1] || nouts == PD_DRIVER_MAX_IO) {
        fprintf(stderr, "pdlang exec: --out takes NAME=FILE.npy or a folder, got '%s'\n",
                argv[i]);
        return 2;
      }
      *eq = 0;
      out_names[nouts] = argv[i];
      out_files[nouts++] = eq + 1;
    } else if (strcmp(argv[i], "--params") == 0 && i + 1 < argc) {
      params = argv[++i];
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strncmp(argv[i], "--device=", 9) == 0) {
      device = argv[i] + 9;
    } else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
      if (pd_driver_precision("exec", argv[++i], &precision)) return 2;
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
  pd_tensor inputs[PD_DRIVER_MAX_IO];
  int ninputs = 0;
  int rc = 1;
  char *found = NULL;
  if (pd_driver_load_model("exec", model, params, &feeds, &m, inputs, &ninputs, &found)) goto out;
  if (found) model = found;
  m.precision = precision;
  pd_status st;
  for (int j = 0; j < nouts; j++) {
    int known = 0;
    for (int i = 0; i < m.nfetches; i++) known += strcmp(out_names[j], m.fetches[i].var) == 0;
    if (!known) {
      fprintf(stderr, "pdlang exec: --out %s: the model has no output of that name\n",
              out_names[j]);
      describe_outputs(&m);
      goto out;
    }
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
  if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "pdlang exec: --out %s: cannot make the folder: %s\n", out_dir,
            strerror(errno));
    goto out;
  }
  if (!write_outputs(&m, got, out_dir, nouts, out_names, out_files)) goto out;
  rc = 0;
  goto out;
fail:
  pd_driver_print_model_error(model, &err);
out:
  for (int i = 0; i < ninputs; i++) pd_tensor_release(&inputs[i]);
  pd_error_clear(&err);
  pd_model_free(&m);
  pd_free(found);
  return rc;
}

const pd_command pd_cmd_exec = {
    .name = "exec",
    .run = run_exec,
    .summary = "run a saved model (FILE.pdmodel, or a Fluid model folder) on .npy inputs",
    .usage = "pdlang exec MODEL [--params FILE] [--device cpu|gpu[:N]] [--precision fp32|bf16]\n"
             "            [--feed NAME=FILE.npy [--lengths NAME=LENGTHS.npy]]...\n"
             "            [--out DIR | --out NAME=FILE.npy]...\n"
             "\n"
             "Runs a saved inference program and prints what its fetch ops fetch, each under\n"
             "its fetch target's name. MODEL is NAME.pdmodel (save(path, target) in a script\n"
             "or PaddlePaddle's save_inference_model writes one; parameters from\n"
             "NAME.pdiparams unless --params names another file), or its path prefix NAME as\n"
             "PaddlePaddle takes it, or a folder holding one *.pdmodel (else one PIR\n"
             "NAME.json), or Fluid's layout: a folder holding __model__ (or that __model__)\n"
             "with __params__ or one file per parameter. Each input is given with --feed by\n"
             "its name (an unknown name is an error). A file of another dtype than a float32,\n"
             "float64, int32 or int64 input's is cast, with a note, when every value converts\n"
             "exactly (float64 rounds to float32), and refused otherwise.\n"
             "--out DIR writes every output as DIR/NAME.npy ('/' in NAME becomes '_'), --out\n"
             "NAME=FILE.npy one output. An input that is a batch of sequences (a for loop's,\n"
             "an lstm's) takes its rows with --feed and each sequence's length (a 1-D int32 or\n"
             "int64 .npy, adding up to the rows) with --lengths; a model that save wrote takes\n"
             "it so too, or padded [N, T, ...] with --feed NAME_lengths=LENGTHS.npy.\n"
             "--precision bf16 multiplies the model's matrix products (fc, mul, matmul) in\n"
             "bfloat16 with fp32 sums (on AMX tiles where the CPU has them), the rest in fp32.\n"
             "--feed NAME=A.png[,B.jpg...] gives image files (a batch, in order) to a model\n"
             "whose input NAME an images(...) reader fed: they are read as that reader read\n"
             "them, with the shape, mean and std that save wrote beside the model\n"
             "(NAME.preprocess).",
};
