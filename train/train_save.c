/* train_save.c -- the actions that move a program's parameters to and from disk:
 *   save(path, target, ...) writes the inference program for the targets (feed and fetch ops
 *       as Fluid's save_inference_model adds them) and its parameters (path.pdiparams);
 *       save(path) alone writes every parameter;
 *   load(path) reads parameters back into the global scope.
 * A model's categories (a reader's class names) travel beside it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/run_int.h"
#include "train/train.h"
#include "train/train_int.h"
#include "vm/ir/params.h"
#include "vm/ir/pir.h"
#include "vm/ir/serialize.h"
#include "vm/passes/paddle_export.h"
#include "vm/passes/prune.h"
#include "vm/run/comm.h"
#include "vm/run/model.h"

/* ---------------------------------------------------------------- save / load */

/* Fluid's save_inference_model shape: a "feed" var (FEED_MINIBATCH) and a feed op per data var
 * at the start, a "fetch" var (FETCH_LIST) and a fetch op per target at the end. */
static pd_status add_feed_fetch(pd_program *p, int nfeed, const char *const *feeds, int nfetch,
                                const char *const *fetches, pd_loc loc, pd_error *err) {
  pd_block *b = p->blocks[0];
  pd_var_desc *fv = pd_block_var(b, "feed"), *tv = pd_block_var(b, "fetch");
  if (!fv || !tv) return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  fv->type = PD_VAR_FEED_MINIBATCH;
  fv->persistable = true;
  tv->type = PD_VAR_FETCH_LIST;
  tv->persistable = true;
  const char *feed = "feed", *fetch = "fetch";
  for (int i = 0; i < nfeed; i++) {
    pd_op_desc *op = pd_block_add_op(b, "feed", i);
    if (!op || pd_op_set_input(op, "X", 1, &feed) || pd_op_set_output(op, "Out", 1, &feeds[i]) ||
        pd_op_set_attr_int(op, "col", i) || pd_op_set_loc(op, loc))
      return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  }
  for (int i = 0; i < nfetch; i++) {
    pd_op_desc *op = pd_block_add_op(b, "fetch", -1);
    if (!op || pd_op_set_input(op, "X", 1, &fetches[i]) || pd_op_set_output(op, "Out", 1, &fetch) ||
        pd_op_set_attr_int(op, "col", i) || pd_op_set_loc(op, loc))
      return pd_error_set(err, PD_ENOMEM, loc, "out of memory");
  }
  return PD_OK;
}

/* A plain name as a script writes one: a letter or '_', then letters, digits, '_'. */
static bool is_name(const char *s) {
  if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

/* The fetch targets take the script's names: names = [...] when given (checked when compiling:
 * one var name a target), else each target argument written as a plain name (`logits`), else the
 * var's own name. The var is renamed in p unless it is an input, a parameter, a loop's output
 * or fetched twice: then an assign op copies it to the name. targets[i] becomes the name. A name
 * that a var of p already has is an error when given in names, and is left unused otherwise. */
static pd_status name_targets(pd_program *p, const pd_action *a, int nt, const char **targets,
                              pd_error *err) {
  const pd_cval *names = pd_action_opt(a, "names");
  pd_loc nloc = a->loc;
  for (int k = 0; k < a->nopts; k++)
    if (strcmp(a->opts[k].key, "names") == 0) nloc = a->opts[k].loc;
  pd_block *b0 = p->blocks[0];
  for (int i = 0; i < nt; i++) {
    const char *want = names ? names->items[i]->str : a->arg_text[i + 1];
    bool valid = want && (names ? pd_is_var_name(want) : is_name(want));
    if (!valid || strcmp(want, targets[i]) == 0) {
      if (names && strcmp(want, targets[i]) != 0)
        return pd_error_set(err, PD_EINVAL, nloc, "save: names[%d] '%s' is not a name (a "
                            "letter or '_', then letters, digits, '_', '.' and '/')", i, want);
      continue;
    }
    if (pd_program_has_var_name(p, want)) {
      if (!names) continue;
      return pd_error_set(err, PD_EINVAL, nloc, "save: names[%d] '%s' is already the name "
                          "of a var of the model; choose another", i, want);
    }
    pd_var_desc *v = pd_block_find_var_local(b0, targets[i]);
    if (!v) return pd_error_set(err, PD_ENOTFOUND, a->loc, "save: no var %s", targets[i]);
    bool shared = v->persistable;
    for (int j = 0; j < nt; j++) shared |= j != i && strcmp(targets[j], targets[i]) == 0;
    /* Written by an op of block 0 that owns no block (a loop's outputs are named after its
     * step block's vars, so they keep their names). */
    bool written = false;
    for (int k = 0; k < b0->nops; k++) {
      const pd_op_desc *op = b0->ops[k];
      bool w = false, owner = false;
      for (int s = 0; s < op->noutputs; s++)
        for (int q = 0; q < op->outputs[s].nargs; q++)
          w |= strcmp(op->outputs[s].args[q], targets[i]) == 0;
      for (int t = 0; t < op->nattrs; t++)
        owner |= op->attrs[t].type == PD_ATTR_BLOCK || op->attrs[t].type == PD_ATTR_BLOCKS;
      written |= w;
      shared |= w && owner;
    }
    if (!shared && written) {
      if (pd_program_rename_var(p, targets[i], want)) goto oom;
    } else {
      /* an input (never written), a parameter, or a var fetched under two names: a copy */
      pd_var_desc *nv = pd_block_var(b0, want);
      pd_op_desc *op = pd_block_add_op(b0, "assign", -1);
      if (!nv || !op || pd_var_set_shape(nv, v->ndims, v->dims) ||
          pd_op_set_input(op, "X", 1, &targets[i]) || pd_op_set_output(op, "Out", 1, &want) ||
          pd_op_set_loc(op, a->loc))
        goto oom;
      nv->dtype = v->dtype;
      nv->lod_level = v->lod_level;
    }
    targets[i] = want;
  }
  return PD_OK;
oom:
  return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
}

/* A save's side files beside path (their contents into b, or NULL: none, an older one beside
 * path is removed): the categories, when the run's CSV readers have categorical columns. */
static pd_file_out categories_out(const pd_runner *r, const char *cpath, pd_buf *b) {
  if (pd_categories_count(r->categories) == 0) return (pd_file_out){cpath, NULL, 0};
  pd_categories_format(r->categories, b);
  return (pd_file_out){cpath, b->data ? b->data : "", b->len};
}

/* After a load: the categories saved beside it (when there), so that this run's CSV readers
 * map text the same way. */
static pd_status load_categories(pd_runner *r, const char *path, pd_error *err) {
  char *cp = pd_model_side_path(path, ".categories");
  if (!cp) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  pd_status st = PD_OK;
  if (access(cp, F_OK) == 0) {
    if (!r->categories && !(r->categories = pd_categories_new()))
      st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
    else
      st = pd_categories_load(r->categories, cp, err);
  }
  pd_free(cp);
  return st;
}

pd_status pd_runner_side_files(pd_runner *r, const char *model_path, pd_error *err) {
  pd_status st = load_categories(r, model_path, err);
  char *pp = st ? NULL : pd_model_side_path(model_path, ".preprocess");
  if (st) return st;
  if (!pp) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  pd_image_prep ip;
  st = pd_image_prep_load(pp, &ip, err);
  pd_free(pp);
  if (st == PD_ENOTFOUND) {
    pd_error_clear(err);
    return PD_OK;
  }
  if (!st) {
    r->has_image_prep = true;
    r->image_prep = ip.o;
  }
  return st;
}

/* A model's side file: when an images(...) reader opened in this run, how its images become
 * the model's input (MODEL.preprocess, vm/reader/reader.h): for the input named "images" (the
 * reader's field), else for the one float32 input of as many values per sample. Its text into
 * b; NULL data: none (an older one beside the model is removed). */
static pd_file_out image_prep_out(const pd_runner *r, const pd_program *p, int nd,
                                  const char *const *feeds, const char *ppath, pd_buf *b) {
  pd_file_out none = {ppath, NULL, 0};
  if (!r->has_image_prep) return none;
  const pd_image_options *o = &r->image_prep;
  const char *input = NULL;
  int matches = 0;
  for (int i = 0; i < nd; i++) {
    const pd_var_desc *v = pd_block_find_var_local(p->blocks[0], feeds[i]);
    int64_t per = 1;
    for (int k = 1; v && k < v->ndims; k++) per *= v->dims[k];
    if (strcmp(feeds[i], "images") == 0) {
      input = feeds[i];
      matches = 1;
      break;
    }
    if (v && v->dtype == PD_FP32 && v->ndims >= 2 &&
        per == (int64_t)o->channels * o->height * o->width)
      input = feeds[i], matches++;
  }
  if (matches != 1 || strlen(input) >= sizeof ((pd_image_prep *)0)->input) return none;
  pd_image_prep ip = {.o = *o};
  snprintf(ip.input, sizeof ip.input, "%s", input);
  pd_image_prep_format(&ip, b);
  return (pd_file_out){ppath, b->data ? b->data : "", b->len};
}

/* The program save(path, targets...) writes (train/run.h). */
pd_status pd_run_save_program(const pd_runner *r, const pd_program *main, const pd_action *a,
                              int nt, const char **targets, pd_program **out,
                              const char ***feeds, int *nfeeds, pd_error *err) {
  *out = NULL;
  *feeds = NULL;
  *nfeeds = 0;
  pd_program *p = NULL;
  pd_status st = pd_program_prune(main, nt, targets, &p, err);
  if (st) return st;
  if ((st = pd_run_set_test_mode(p))) {
    st = pd_error_set(err, st, a->loc, "out of memory");
    goto fail;
  }
  if ((st = name_targets(p, a, nt, targets, err))) goto fail;
  const char *data[16];
  int nd = pd_run_data_vars(r, p, data, 16);
  if (nd > 16) nd = 16;
  if (pd_program_needs_paddle_export(p)) {
    /* Loops and sequences as ops PaddlePaddle runs (vm/passes/paddle_export.h). */
    pd_program *q = NULL;
    st = pd_program_for_paddle(p, nd, data, nt, targets, &q, feeds, nfeeds, err);
    if (!st) {
      pd_program_free(p);
      *out = q;
      return PD_OK;
    }
    if (st != PD_EUNSUPPORTED) goto fail;
  }
  if (!(*feeds = pd_malloc(sizeof **feeds * (size_t)(nd + 1)))) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto fail;
  }
  for (int i = 0; i < nd; i++) (*feeds)[i] = data[i];
  *nfeeds = nd;
  *out = p;
  return st;  /* PD_OK, or PD_EUNSUPPORTED: not exported (err says why) */
fail:
  pd_program_free(p);
  return st;
}

static pd_status save_model(pd_runner *r, const pd_action *a, pd_error *err) {
  char *path = pd_train_script_path(a, a->args[0]->str);
  char *ppath = NULL;
  const char **targets = pd_calloc((size_t)a->nargs + 1, sizeof *targets);
  const char **params = NULL, **exp_feeds = NULL;
  pd_program *p = NULL;
  pd_status st = PD_OK;
  size_t plen = path ? strlen(path) : 0;
  bool is_json = plen > 5 && strcmp(path + plen - 5, ".json") == 0; /* a PIR program */
  if (!path || !targets) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  int nt = 0;
  for (int i = 1; i < a->nargs; i++) targets[nt++] = a->args[i]->str;
  if (nt == 0) { /* every parameter, in one file */
    int np = pd_train_persistables(r, r->unit->main, &params);
    pd_buf pb, cb;
    pd_buf_init(&pb);
    pd_buf_init(&cb);
    char *cpath = pd_model_side_path(path, ".categories");
    if (np < 0 || !cpath) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    else st = pd_params_encode(path, r->global, np, params, &pb, err);
    if (!st) {
      /* The parameters and their categories as one (pd_write_files_atomic). */
      pd_file_out files[2] = {categories_out(r, cpath, &cb), {path, pb.data ? pb.data : "", pb.len}};
      st = pb.oom || cb.oom ? pd_error_set(err, PD_ENOMEM, a->loc, "out of memory")
                            : pd_write_files_atomic(2, files, err);
    }
    pd_free(cpath);
    pd_buf_free(&pb);
    pd_buf_free(&cb);
    goto out;
  }
  int nd = 0;
  st = pd_run_save_program(r, r->unit->main, a, nt, targets, &p, &exp_feeds, &nd, err);
  const char **feeds = exp_feeds;
  if (st == PD_EUNSUPPORTED && p && is_json) {
    /* a PIR program is for PaddlePaddle alone: what it cannot run is an error */
    pd_error_prefix(err, "%s: PaddlePaddle cannot run this model (save it as .pdmodel to run "
                    "it in pdlang)", a->args[0]->str);
    goto out;
  } else if (st == PD_EUNSUPPORTED && p) {
    /* Saved as pdlang runs it (batches of sequences with LoD), which PaddlePaddle cannot. */
    if (r->opts.progress && err && err->loc.file)
      fprintf(r->opts.progress, "note: %s is a model for pdlang only, not PaddlePaddle: "
              "%s:%d: %s\n", a->args[0]->str, err->loc.file, err->loc.line,
              err->msg ? err->msg : "?");
    else if (r->opts.progress)
      fprintf(r->opts.progress, "note: %s is a model for pdlang only, not PaddlePaddle: %s\n",
              a->args[0]->str, err && err->msg ? err->msg : "?");
    pd_error_clear(err);
    st = PD_OK;
  } else if (st) {
    goto out;
  }
  int np = pd_train_persistables(r, p, &params);
  if (np < 0) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  if ((st = add_feed_fetch(p, nd, feeds, nt, targets, a->loc, err))) goto out;
  if (!(ppath = pd_params_path_for(path))) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    goto out;
  }
  /* The pair is written to temporaries, then renamed parameters first, model last: a model
   * always records the identity of its parameter file (pd_params_set_identity), so that a
   * failure between the two renames leaves a pair that loading refuses, never runs. */
  pd_buf pb;
  pd_buf_init(&pb);
  if ((st = pd_params_encode(ppath, r->global, np, params, &pb, err))) goto out_buf;
  uint8_t *mb = NULL;
  size_t mlen = 0;
  if (is_json) {
    /* PaddlePaddle 3's PIR program (vm/ir/pir.h): its format has no place for the parameter
     * file's identity */
    pd_buf jb;
    pd_buf_init(&jb);
    st = pb.oom ? pd_error_set(err, PD_ENOMEM, a->loc, "out of memory")
                : pd_pir_to_json(p, np, params, a->args[0]->str, &jb, err);
    mb = (uint8_t *)pd_buf_take(&jb);
    mlen = mb ? strlen((char *)mb) : 0;
    pd_buf_free(&jb);
    if (!st && !mb) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    if (st) { /* a program the writer refuses: what it wrote before the problems goes too */
      pd_free(mb);
      goto out_buf;
    }
  } else {
    if (pb.oom || pd_params_set_identity(p, pb.data ? pb.data : "", pb.len)) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out_buf;
    }
    if ((st = pd_program_to_bytes(p, &mb, &mlen, err))) goto out_buf;
  }
  /* The side files, the parameters and the model as one (pd_write_files_atomic: every
   * temporary written before anything is renamed, so that a failure or a full disk leaves the
   * old files; the model renamed last). */
  pd_buf cb, ib;
  pd_buf_init(&cb);
  pd_buf_init(&ib);
  char *cpath = pd_model_side_path(path, ".categories");
  char *ipath = pd_model_side_path(path, ".preprocess");
  if (!cpath || !ipath) {
    st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  } else {
    pd_file_out files[4] = {categories_out(r, cpath, &cb),
                            image_prep_out(r, p, nd, feeds, ipath, &ib),
                            {ppath, pb.data ? pb.data : "", pb.len},
                            {path, mb, mlen}};
    st = cb.oom || ib.oom ? pd_error_set(err, PD_ENOMEM, a->loc, "out of memory")
                          : pd_write_files_atomic(4, files, err);
  }
  pd_free(cpath);
  pd_free(ipath);
  pd_buf_free(&cb);
  pd_buf_free(&ib);
  pd_free(mb);
out_buf:
  pd_buf_free(&pb);
out:
  pd_run_at_loc(err, st, pd_train_arg_loc(a, 0), "save");
  pd_program_free(p);
  pd_free(params);
  pd_free(exp_feeds);
  pd_free(targets);
  pd_free(ppath);
  pd_free(path);
  return st;
}

/* Rank 0 alone writes the files; the others wait for it (a `load` that follows reads them) and
 * fail with it. */
pd_status pd_run_save(pd_runner *r, const pd_action *a, pd_error *err) {
  if (pd_comm_size() == 1) return save_model(r, a, err);
  pd_status st = pd_comm_rank() == 0 ? save_model(r, a, err) : PD_OK;
  double failed = st != PD_OK;
  pd_error ce = {0};
  pd_status cst = pd_comm_allreduce_f64(&failed, 1, &ce);
  if (!st && cst) st = pd_error_set(err, cst, a->loc, "save: %s", ce.msg ? ce.msg : "?");
  pd_error_clear(&ce);
  if (!st && failed > 0)
    st = pd_error_set(err, PD_EIO, pd_train_arg_loc(a, 0), "save: rank 0 could not write the model");
  return st;
}

/* What load(FILE) reads, in name order: the parameters that have a value (as save writes
 * them), and those that nothing initialises, whose value only a file gives (state of a dtype
 * param() makes no initialiser for: a saved RNN's uint8 dropout state). -1: out of memory. */
static int load_names(pd_runner *r, const char ***out) {
  const pd_program *p = r->unit->main, *init = r->unit->startup;
  int n;
  if (pd_params_names(p, out, &n)) return -1;
  int k = 0;
  for (int i = 0; i < n; i++) {
    const char *name = (*out)[i];
    pd_variable *gv = pd_scope_find_local_var(r->global, name);
    bool keep = gv && gv->type == PD_VAR_LOD_TENSOR && pd_tensor_initialized(&gv->u.tensor);
    if (!keep) { /* no value: kept when no op of the startup program writes it */
      keep = true;
      const pd_block *b = init ? init->blocks[0] : NULL;
      for (int j = 0; b && keep && j < b->nops; j++)
        for (int s = 0; keep && s < b->ops[j]->noutputs; s++)
          for (int q = 0; keep && q < b->ops[j]->outputs[s].nargs; q++)
            keep = strcmp(b->ops[j]->outputs[s].args[q], name) != 0;
    }
    if (keep) (*out)[k++] = name;
  }
  return k;
}

pd_status pd_run_load(pd_runner *r, const pd_action *a, pd_error *err) {
  char *path = pd_train_script_path(a, a->args[0]->str);
  const char **params = NULL;
  pd_program *saved = NULL;
  char *ppath = NULL, *fluid = NULL;
  pd_status st = PD_OK;
  if (!path) return pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
  size_t len = strlen(path);
  if (len > 8 && strcmp(path + len - 8, ".pdmodel") == 0) {
    /* An inference model: its persistable vars, in the order save wrote them. */
    if ((st = pd_program_load(path, &saved, err))) goto out;
    int np;
    if (pd_params_names(saved, &params, &np)) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out;
    }
    if (!(ppath = pd_params_path_for(path))) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out;
    }
    if (!(st = pd_params_check_identity(saved, ppath, err)))
      st = pd_params_load(ppath, r->global, np, params, r->unit->main, err);
  } else if ((fluid = pd_model_folder_program(path))) {
    /* Fluid's folder: __model__ names the parameters, __params__ or a file each holds them */
    int np;
    if ((st = pd_program_load(fluid, &saved, err))) goto out;
    if (pd_params_names(saved, &params, &np)) {
      st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
      goto out;
    }
    st = pd_model_fluid_params_load(path, r->global, np, params, r->unit->main, err);
  } else {
    int np = load_names(r, &params);
    if (np < 0) st = pd_error_set(err, PD_ENOMEM, a->loc, "out of memory");
    else st = pd_params_load(path, r->global, np, params, r->unit->main, err);
  }
  if (!st) st = load_categories(r, path, err);
out:
  pd_run_at_loc(err, st, pd_train_arg_loc(a, 0), "load");
  pd_program_free(saved);
  pd_free(params);
  pd_free(ppath);
  pd_free(fluid);
  pd_free(path);
  return st;
}
