/* exec.c -- the executor: prepares a program's blocks once (op defs, kernels, var tables) and runs
 * them over scopes; also the accessors op kernels use (vm/run/exec.h). */
#include "vm/run/exec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"
#include "vm/run/comm.h"
#include "vm/run/exec_place.h"
#include "vm/ops/opkernels.h"

/* Where a name of a block's table lives when the block runs. */
enum { NAME_LOCAL, NAME_GLOBAL, NAME_OUTER };

struct pd_exec_op {
  const pd_op_desc *op;
  const pd_opdef *def;
  pd_kernel_fn kernel;
  int *in_start, *in_count;    /* per input slot of def: a range of args */
  int *out_start, *out_count;  /* per output slot of def */
  int *args;                   /* var table indices; -1 for PD_EMPTY_VAR_NAME */
  const pd_attr *attr_of;      /* per attribute of def: a copy of the op's value (name NULL:
                                  the op has none, the default applies) */
  pd_exec_block *sub;          /* the prepared "sub_block", or NULL */
  pd_k_place place;            /* where the kernel computes */
  const unsigned char *in_where, *out_where;  /* per slot of def: PD_WHERE_*; NULL on the
                                                 host (nothing moves) */
  const unsigned char *constant;  /* its block's, per table index (pd_ctx_in_const) */
};

struct pd_exec_block {
  const pd_block *block;
  int nnames;
  const char **names;          /* borrowed from the program */
  const pd_var_desc **descs;   /* the block's own desc of each name, NULL for outer names */
  unsigned char *where;        /* NAME_* */
  int nops;
  pd_exec_op *ops;
  int *ints;                   /* every op's slot ranges and args, in op order */
  pd_attr *attrs;              /* every op's attribute values, in op order (shallow copies:
                                  lists still point into the program) */
  int *release, *rel_start;    /* block 0: the table indices of the run's temporaries that op i
                                  is the last to use, release[rel_start[i] .. rel_start[i+1]) */
  unsigned char *wheres;       /* every op's in_where and out_where (GPU place only) */
  unsigned char *constant;     /* per table index: 1 for a persistable var of block 0 that no
                                  op of the program writes (plan_constants) */
};

struct pd_exec {
  const pd_program *p;
  int nblocks;
  pd_exec_block *blocks;
  pd_exec_options opts;
  pd_k_rng rng;
  uint64_t ops_run;
  pd_scope *global;            /* during pd_exec_run: the caller's global scope */
  const pd_exec_io *release_io; /* during pd_exec_run without keep: its fetches (kept), and
                                   block 0's temporaries are released after their last use */
  const pd_k_backend *gpu;     /* the GPU backend when opts.place is PD_K_CUDA */
  const pd_k_backend *host;    /* opts.host, or the CPU's */
};

/* ---------------------------------------------------------------- preparing */

/* While a block is prepared, its table's names map to their indices (base/strmap.h; the keys
 * are the program's strings, which outlive the preparation). */

/* Index of name in b->names, adding it (as an outer name) when absent; -1 on out of memory. */
static int table_add(pd_exec_block *b, pd_strmap *m, size_t *cap, const char *name,
                     const pd_var_desc *desc, int where) {
  const pd_strmap_entry *e = pd_strmap_find(m, name);
  if (e) return (int)e->val.i;
  if ((size_t)b->nnames == *cap) {
    size_t ncap = *cap ? *cap * 2 : 16;
    const char **nn = pd_realloc(b->names, ncap * sizeof *nn);
    if (!nn) return -1;
    b->names = nn;
    const pd_var_desc **nd = pd_realloc(b->descs, ncap * sizeof *nd);
    if (!nd) return -1;
    b->descs = nd;
    unsigned char *nw = pd_realloc(b->where, ncap);
    if (!nw) return -1;
    b->where = nw;
    *cap = ncap;
  }
  int i = b->nnames;
  if (pd_strmap_set_int(m, name, i)) return -1;
  b->nnames++;
  b->names[i] = name;
  b->descs[i] = desc;
  b->where[i] = (unsigned char)where;
  return i;
}

static void free_block(pd_exec_block *b) {
  pd_free(b->ops);
  pd_free(b->ints);
  pd_free(b->attrs);
  pd_free(b->wheres);
  pd_free(b->names);
  pd_free(b->descs);
  pd_free(b->where);
  pd_free(b->release);
  pd_free(b->rel_start);
  pd_free(b->constant);
}

#define prep_fail(err, op, st, ...) pd_error_set((err), (st), (op)->loc, __VA_ARGS__)

/* Bind the slots of op (inputs or outputs) to table indices, per slot of the def. */
static pd_status bind_slots(pd_exec_block *b, pd_strmap *m, size_t *cap, const pd_op_desc *op,
                            int nslots, const pd_slot *slots, int ndef, const pd_slotdef *defs,
                            int *start, int *count, int *args, int *nargs, pd_error *err,
                            const char *what) {
  for (int d = 0; d < ndef; d++) start[d] = count[d] = 0;
  for (int s = 0; s < nslots; s++) {
    int d = 0;
    while (d < ndef && strcmp(defs[d].name, slots[s].param) != 0) d++;
    if (d == ndef)
      return prep_fail(err, op, PD_EFORMAT, "%s: unknown %s slot '%s'", op->type, what,
                       slots[s].param);
    start[d] = *nargs;
    count[d] = slots[s].nargs;
    for (int a = 0; a < slots[s].nargs; a++) {
      const char *name = slots[s].args[a];
      int idx = -1;
      if (strcmp(name, PD_EMPTY_VAR_NAME) != 0) {
        idx = table_add(b, m, cap, name, NULL, NAME_OUTER);
        if (idx < 0) return PD_ENOMEM;
      }
      args[(*nargs)++] = idx;
    }
  }
  return PD_OK;
}

/* ---- Releasing block 0's temporaries after their last use. A training step's gradients and the
 * forward values only the backward pass reads would otherwise all live until the run scope
 * goes, at the end of the step. The last user of a var is the last op of block 0 that names it,
 * directly or in a block it owns (at any depth: a loop's body, its gradient block). Only vars
 * declared in block 0 and not persistable are released (NAME_LOCAL: they live in the run
 * scope); names that resolve to outer scopes never are. ---- */

static int table_find(const pd_strmap *m, const char *name) {
  const pd_strmap_entry *e = pd_strmap_find(m, name);
  return e ? (int)e->val.i : -1;
}

/* last[idx] = user for every name of block 0's table that the ops of block bidx name, and those
 * of the blocks they own. */
static void mark_nested(const pd_program *p, int bidx, const pd_strmap *m, int user, int *last,
                        int depth) {
  const pd_block *blk = pd_program_block(p, bidx);
  if (!blk || depth > PD_MAX_BLOCK_DEPTH) return;  /* validated programs nest no deeper */
  for (int i = 0; i < blk->nops; i++) {
    const pd_op_desc *op = blk->ops[i];
    for (int io = 0; io < 2; io++) {
      int ns = io ? op->noutputs : op->ninputs;
      const pd_slot *sl = io ? op->outputs : op->inputs;
      for (int s = 0; s < ns; s++)
        for (int a = 0; a < sl[s].nargs; a++) {
          int idx = table_find(m, sl[s].args[a]);
          if (idx >= 0) last[idx] = user;
        }
    }
    for (int a = 0; a < op->nattrs; a++) {
      const pd_attr *at = &op->attrs[a];
      if (at->type == PD_ATTR_BLOCK) mark_nested(p, at->v.i, m, user, last, depth + 1);
      for (int k = 0; at->type == PD_ATTR_BLOCKS && k < at->n; k++)
        mark_nested(p, at->ints[k], m, user, last, depth + 1);
    }
  }
}

static pd_status plan_release(pd_exec *ex, pd_exec_block *b, const pd_strmap *m) {
  int *last = pd_malloc(sizeof *last * (size_t)(b->nnames + 1));
  b->rel_start = pd_calloc((size_t)b->nops + 2, sizeof *b->rel_start);
  b->release = pd_malloc(sizeof *b->release * (size_t)(b->nnames + 1));
  if (!last || !b->rel_start || !b->release) {
    pd_free(last);
    return PD_ENOMEM;
  }
  for (int i = 0; i < b->nnames; i++) last[i] = -1;
  for (int i = 0; i < b->nops; i++) {
    const pd_exec_op *x = &b->ops[i];
    for (int d = 0; d < x->def->ninputs; d++)
      for (int k = 0; k < x->in_count[d]; k++)
        if (x->args[x->in_start[d] + k] >= 0) last[x->args[x->in_start[d] + k]] = i;
    for (int d = 0; d < x->def->noutputs; d++)
      for (int k = 0; k < x->out_count[d]; k++)
        if (x->args[x->out_start[d] + k] >= 0) last[x->args[x->out_start[d] + k]] = i;
    for (int a = 0; a < x->op->nattrs; a++) {
      const pd_attr *at = &x->op->attrs[a];
      if (at->type == PD_ATTR_BLOCK) mark_nested(ex->p, at->v.i, m, i, last, 1);
      for (int k = 0; at->type == PD_ATTR_BLOCKS && k < at->n; k++)
        mark_nested(ex->p, at->ints[k], m, i, last, 1);
    }
  }
  /* Counting sort by last user. */
  for (int i = 0; i < b->nnames; i++)
    if (b->where[i] == NAME_LOCAL && last[i] >= 0) b->rel_start[last[i] + 1]++;
  for (int i = 0; i < b->nops; i++) b->rel_start[i + 1] += b->rel_start[i];
  for (int i = 0; i < b->nnames; i++)
    if (b->where[i] == NAME_LOCAL && last[i] >= 0) b->release[b->rel_start[last[i]]++] = i;
  for (int i = b->nops; i > 0; i--) b->rel_start[i] = b->rel_start[i - 1];
  b->rel_start[0] = 0;
  pd_free(last);
  return PD_OK;
}

/* Whether a run that releases its temporaries fetches `name` (and so keeps it). */
static bool run_fetches(const pd_exec *ex, const char *name) {
  for (int f = 0; f < ex->release_io->nfetches; f++)
    if (strcmp(ex->release_io->fetches[f].name, name) == 0) return true;
  return false;
}

/* After op i of block 0 in a run that keeps nothing: release the temporaries it used last. */
static void release_after(const pd_exec *ex, const pd_exec_block *b, pd_variable **vars, int i) {
  for (int k = b->rel_start[i]; k < b->rel_start[i + 1]; k++)
    if (!run_fetches(ex, b->names[b->release[k]])) pd_var_reset(vars[b->release[k]]);
}

static pd_status prepare_block(pd_exec *ex, int bi, pd_error *err) {
  const pd_block *blk = ex->p->blocks[bi];
  pd_exec_block *b = &ex->blocks[bi];
  b->block = blk;
  pd_strmap m = {0};
  size_t cap = 0;
  pd_status st = pd_strmap_reserve(&m, (size_t)blk->nvars);
  if (st) return st;
  /* The block's own vars first: a run creates all of them, so that sub-blocks find the ones
   * only they use. */
  for (int i = 0; i < blk->nvars; i++) {
    const pd_var_desc *v = blk->vars[i];
    int where = (bi == 0 && v->persistable) ? NAME_GLOBAL : NAME_LOCAL;
    if (table_add(b, &m, &cap, v->name, v, where) < 0) {
      st = PD_ENOMEM;
      goto out;
    }
  }
  b->ops = pd_calloc(blk->nops ? (size_t)blk->nops : 1, sizeof *b->ops);
  if (!b->ops) {
    st = PD_ENOMEM;
    goto out;
  }
  b->nops = blk->nops;
  /* Resolve the ops, then lay out their slot tables and attribute values in two arrays, in op
   * order: running a block then walks memory sequentially instead of chasing each op's
   * allocations (a chain of 100,000 small ops ran 3x slower the other way). */
  size_t nints = 0, nattrs = 0;
  for (int i = 0; i < blk->nops; i++) {
    const pd_op_desc *op = blk->ops[i];
    pd_exec_op *x = &b->ops[i];
    x->op = op;
    x->def = pd_opdef_lookup(op->type);
    if (!x->def) {
      const char *near = pd_opdef_suggest(op->type);
      st = near ? prep_fail(err, op, PD_EUNSUPPORTED, "unknown op type '%s' (did you mean %s?)",
                            op->type, near)
                : prep_fail(err, op, PD_EUNSUPPORTED, "unknown op type '%s'", op->type);
      goto out;
    }
    /* Slots and attributes as the registry says (a program loaded from a file may not have
     * been made by the compiler): kernels may then rely on required inputs being bound. */
    if ((st = pd_opdef_check(op, blk, err))) goto out;
    x->kernel = x->def->kernel;
    if (!x->kernel) {
      st = prep_fail(err, op, PD_EUNSUPPORTED, "%s: no kernel for this op on the CPU", op->type);
      goto out;
    }
    nints += 2 * (size_t)(x->def->ninputs + x->def->noutputs);
    for (int s = 0; s < op->ninputs; s++) nints += (size_t)op->inputs[s].nargs;
    for (int s = 0; s < op->noutputs; s++) nints += (size_t)op->outputs[s].nargs;
    nattrs += (size_t)x->def->nattrs;
  }
  b->ints = pd_calloc(nints + 1, sizeof *b->ints);
  b->attrs = pd_calloc(nattrs + 1, sizeof *b->attrs);
  if (!b->ints || !b->attrs) {
    st = PD_ENOMEM;
    goto out;
  }
  int *ip = b->ints;
  pd_attr *ap = b->attrs;
  for (int i = 0; i < blk->nops; i++) {
    const pd_op_desc *op = blk->ops[i];
    pd_exec_op *x = &b->ops[i];
    size_t nslots = (size_t)(x->def->ninputs + x->def->noutputs);
    x->in_start = ip;
    x->args = ip + 2 * nslots;
    for (int s = 0; s < op->ninputs; s++) ip += op->inputs[s].nargs;
    for (int s = 0; s < op->noutputs; s++) ip += op->outputs[s].nargs;
    ip += 2 * nslots;
    x->attr_of = ap;
    for (int a = 0; a < x->def->nattrs; a++, ap++) {
      const pd_attr *v = pd_op_attr(op, x->def->attrs[a].name);
      if (v) *ap = *v;
    }
    x->in_count = x->in_start + x->def->ninputs;
    x->out_start = x->in_count + x->def->ninputs;
    x->out_count = x->out_start + x->def->noutputs;
    int n = 0;
    st = bind_slots(b, &m, &cap, op, op->ninputs, op->inputs, x->def->ninputs, x->def->inputs,
                    x->in_start, x->in_count, x->args, &n, err, "input");
    if (!st)
      st = bind_slots(b, &m, &cap, op, op->noutputs, op->outputs, x->def->noutputs,
                      x->def->outputs, x->out_start, x->out_count, x->args, &n, err, "output");
    if (st) goto out;
    const pd_attr *sub = pd_op_attr(op, "sub_block");
    if (sub) {
      if (sub->type != PD_ATTR_BLOCK || sub->v.i <= 0 || sub->v.i >= ex->nblocks) {
        st = prep_fail(err, op, PD_EFORMAT, "%s: attribute sub_block does not name a block",
                       op->type);
        goto out;
      }
      x->sub = &ex->blocks[sub->v.i];
    }
  }
  if (bi == 0) st = plan_release(ex, b, &m);
out:
  pd_strmap_free(&m);
  return st;
}

/* ---- The program's constants: the persistable vars of block 0 that no op of any block
 * writes (an inference model's weights). A kernel may keep a prepared copy of such an input
 * (pd_ctx_in_const); a var written from outside the program drops its copy (vm/run/tensor.h,
 * pd_tensor_prepared). ---- */
static pd_status plan_constants(pd_exec *ex) {
  pd_strmap written = {0}, globals = {0};
  pd_status st = PD_OK;
  for (int bi = 0; bi < ex->nblocks && !st; bi++) {
    const pd_block *blk = ex->p->blocks[bi];
    for (int i = 0; i < blk->nops && !st; i++)
      for (int s = 0; s < blk->ops[i]->noutputs && !st; s++)
        for (int a = 0; a < blk->ops[i]->outputs[s].nargs && !st; a++)
          st = pd_strmap_set_int(&written, blk->ops[i]->outputs[s].args[a], 1);
  }
  const pd_exec_block *b0 = &ex->blocks[0];
  for (int i = 0; i < b0->nnames && !st; i++)
    if (b0->where[i] == NAME_GLOBAL) st = pd_strmap_set_int(&globals, b0->names[i], 1);
  for (int bi = 0; bi < ex->nblocks && !st; bi++) {
    pd_exec_block *b = &ex->blocks[bi];
    b->constant = pd_calloc((size_t)b->nnames + 1, 1);
    if (!b->constant) {
      st = PD_ENOMEM;
      break;
    }
    for (int i = 0; i < b->nnames; i++)
      b->constant[i] = (bi == 0 ? b->where[i] == NAME_GLOBAL
                                : b->where[i] == NAME_OUTER &&
                                      pd_strmap_find(&globals, b->names[i])) &&
                       !pd_strmap_find(&written, b->names[i]);
    for (int i = 0; i < b->nops; i++) b->ops[i].constant = b->constant;
  }
  pd_strmap_free(&written);
  pd_strmap_free(&globals);
  return st;
}

/* Mark every op of block b (and of the blocks inside it) as running on the host. */
static void force_host(pd_exec_block *b) {
  for (int i = 0; i < b->nops; i++) {
    b->ops[i].place = PD_K_HOST;
    if (b->ops[i].sub) force_host(b->ops[i].sub);
  }
}

/* On the GPU: each op's place and the rule for each of its slots; a notice for each op type
 * that stays on the host. */
static pd_status place_ops(pd_exec *ex) {
  for (int bi = 0; bi < ex->nblocks; bi++) {
    pd_exec_block *b = &ex->blocks[bi];
    size_t n = 0;
    for (int i = 0; i < b->nops; i++)
      n += (size_t)(b->ops[i].def->ninputs + b->ops[i].def->noutputs);
    if (!(b->wheres = pd_malloc(n + 1))) return PD_ENOMEM;
    unsigned char *w = b->wheres;
    for (int i = 0; i < b->nops; i++) {
      pd_exec_op *x = &b->ops[i];
      const pd_opdef *def = x->def;
      x->place = pd_exec_gpu_op(def) ? PD_K_CUDA : PD_K_HOST;
      x->in_where = w;
      for (int d = 0; d < def->ninputs; d++)
        *w++ = (unsigned char)pd_exec_slot_where(&def->inputs[d]);
      x->out_where = w;
      for (int d = 0; d < def->noutputs; d++)
        *w++ = (unsigned char)pd_exec_slot_where(&def->outputs[d]);
    }
  }
  /* Loops read their steps' values on the host (vm/ops/control.c, vm/ops/recurrent.c): their blocks stay there. */
  for (int bi = 0; bi < ex->nblocks; bi++)
    for (int i = 0; i < ex->blocks[bi].nops; i++) {
      pd_exec_op *x = &ex->blocks[bi].ops[i];
      if (x->sub && pd_exec_host_sub_block(x->def)) force_host(x->sub);
    }
  if (!ex->opts.notice) return PD_OK;
  /* One notice per op type: the first op of the type that stays on the host says it. */
  for (int bi = 0; bi < ex->nblocks; bi++)
    for (int i = 0; i < ex->blocks[bi].nops; i++) {
      const pd_exec_op *x = &ex->blocks[bi].ops[i];
      if (x->place == PD_K_CUDA || (x->sub && pd_exec_host_sub_block(x->def))) continue;
      bool seen = false;
      for (int bj = 0; bj <= bi && !seen; bj++)
        for (int j = 0; j < (bj == bi ? i : ex->blocks[bj].nops) && !seen; j++) {
          const pd_exec_op *y = &ex->blocks[bj].ops[j];
          seen = y->def == x->def && y->place == PD_K_HOST;
        }
      if (seen) continue;
      /* An op whose every slot has a place (HOST or ANY in vm/oplist.h: feed, fetch, shape,
       * conditional_block) runs on the host by design and moves only what its slots say. */
      bool ruled = true;
      for (int d = 0; d < x->def->ninputs && ruled; d++) ruled = x->in_where[d] != PD_WHERE_OP;
      for (int d = 0; d < x->def->noutputs && ruled; d++) ruled = x->out_where[d] != PD_WHERE_OP;
      if (ruled) continue;
      char msg[200];
      if (pd_exec_gpu_op(x->def))
        snprintf(msg, sizeof msg, "op '%s' runs on the CPU inside a loop (its block is run step "
                 "by step on the host)", x->def->type);
      else
        snprintf(msg, sizeof msg, "op '%s' has no GPU kernel: it runs on the CPU, with its data "
                 "copied there and back", x->def->type);
      ex->opts.notice(ex->opts.notice_ud, msg);
    }
  return PD_OK;
}

pd_status pd_exec_new(const pd_program *p, const pd_exec_options *opts, pd_exec **out,
                      pd_error *err) {
  *out = NULL;
  pd_exec *ex = pd_calloc(1, sizeof *ex);
  if (!ex) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory preparing a program");
  ex->p = p;
  if (opts) ex->opts = *opts;
  ex->host = ex->opts.host ? ex->opts.host : pd_k_cpu();
  const char *env = getenv("PDLANG_CHECK_NAN_INF");
  if (env && *env && strcmp(env, "0") != 0) ex->opts.check_nan_inf = true;
  pd_k_rng_init(&ex->rng, ex->opts.seed);
  ex->blocks = pd_calloc((size_t)p->nblocks + 1, sizeof *ex->blocks);
  if (!ex->blocks) {
    pd_free(ex);
    return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory preparing a program");
  }
  ex->nblocks = p->nblocks;
  for (int i = 0; i <= p->nblocks; i++) { /* the blocks, then (i == nblocks) their constants */
    pd_status st = i < p->nblocks ? prepare_block(ex, i, err) : plan_constants(ex);
    if (st) {
      if (st == PD_ENOMEM)
        pd_error_set(err, st, (pd_loc){0}, "out of memory preparing a program");
      pd_exec_free(ex);
      return st;
    }
  }
  if (ex->opts.place == PD_K_CUDA) {
    ex->gpu = pd_k_cuda();
    pd_status st = ex->gpu ? place_ops(ex) : PD_EUNSUPPORTED;
    if (st) {
      if (st == PD_ENOMEM) pd_error_set(err, st, (pd_loc){0}, "out of memory preparing a program");
      else pd_error_set(err, st, (pd_loc){0}, "cannot run on the GPU: it is not open");
      pd_exec_free(ex);
      return st;
    }
  }
  *out = ex;
  return PD_OK;
}

void pd_exec_free(pd_exec *ex) {
  if (!ex) return;
  for (int i = 0; i < ex->nblocks; i++) free_block(&ex->blocks[i]);
  pd_free(ex->blocks);
  pd_free(ex);
}

const pd_program *pd_exec_program(const pd_exec *ex) { return ex->p; }
void pd_exec_seed(pd_exec *ex, uint64_t seed) {
  ex->opts.seed = seed;
  pd_k_rng_init(&ex->rng, seed);
}
uint64_t pd_exec_ops_run(const pd_exec *ex) { return ex->ops_run; }
uint64_t pd_exec_rng_offset(const pd_exec *ex) { return ex->rng.offset; }
void pd_exec_set_rng_offset(pd_exec *ex, uint64_t offset) { ex->rng.offset = offset; }

/* ---------------------------------------------------------------- running */

static pd_scope *scope_root(pd_scope *s) {
  while (pd_scope_parent(s)) s = pd_scope_parent(s);
  return s;
}

/* Give a var made for a desc the desc's kind (tensor vars take their type on first use). */
static pd_status type_var(pd_variable *v, const pd_var_desc *d) {
  if (!d || v->type != PD_VAR_UNSET || d->type == PD_VAR_LOD_TENSOR) return PD_OK;
  pd_status st = pd_var_set_type(v, d->type);
  return st == PD_EUNSUPPORTED ? PD_OK : st;
}

/* Is the value of an input var usable: tensors must have been computed. */
static bool var_has_value(const pd_variable *v) {
  if (v->type == PD_VAR_UNSET) return false;
  return v->type != PD_VAR_LOD_TENSOR || pd_tensor_initialized(&v->u.tensor);
}

static pd_status check_inputs(const pd_exec_ctx *ctx) {
  const pd_exec_op *x = ctx->xop;
  for (int d = 0; d < x->def->ninputs; d++) {
    for (int k = 0; k < x->in_count[d]; k++) {
      int idx = x->args[x->in_start[d] + k];
      if (idx < 0) continue;
      const pd_variable *v = ctx->vars[idx];
      if (!var_has_value(v))
        return pd_ctx_fail(ctx, PD_ERUNTIME,
                           "input %s (var '%s') has no value: nothing computed it before this op",
                           x->def->inputs[d].name, pd_var_name(v));
    }
  }
  return PD_OK;
}

static bool tensor_finite(const pd_tensor *t, int64_t *bad) {
  int64_t n = pd_tensor_numel(t);
  if (t->dtype == PD_FP32) {
    const float *p = PD_TENSOR_F32(t);
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(p[i])) {
        *bad = i;
        return false;
      }
  } else if (t->dtype == PD_FP64) {
    const double *p = PD_TENSOR_F64(t);
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(p[i])) {
        *bad = i;
        return false;
      }
  }
  return true;
}

static pd_status check_outputs_finite(const pd_exec_ctx *ctx) {
  const pd_exec_op *x = ctx->xop;
  for (int d = 0; d < x->def->noutputs; d++) {
    for (int k = 0; k < x->out_count[d]; k++) {
      int idx = x->args[x->out_start[d] + k];
      if (idx < 0) continue;
      const pd_variable *v = ctx->vars[idx];
      if (v->type != PD_VAR_LOD_TENSOR || !pd_tensor_initialized(&v->u.tensor)) continue;
      int64_t bad;
      const pd_tensor *t = &v->u.tensor;
      pd_tensor host;
      pd_tensor_init(&host);
      if (pd_tensor_on_gpu(t) && pd_dtype_is_kernel_float(t->dtype)) {
        if (pd_tensor_copy_to(&host, t, PD_K_HOST))
          return pd_ctx_fail(ctx, PD_ERUNTIME, "cannot read output %s (var '%s') to check it: %s",
                             x->def->outputs[d].name, pd_var_name(v), pd_k_cuda_error());
        t = &host;
      }
      bool finite = tensor_finite(t, &bad);
      double val = finite ? 0 : t->dtype == PD_FP32 ? PD_TENSOR_F32(t)[bad] : PD_TENSOR_F64(t)[bad];
      pd_tensor_release(&host);
      if (!finite) {
        t = &v->u.tensor;
        char shape[96];
        return pd_ctx_fail(ctx, PD_ERUNTIME,
                           "output %s (var '%s', shape %s) has %s at element %lld "
                           "(PDLANG_CHECK_NAN_INF)",
                           x->def->outputs[d].name, pd_var_name(v),
                           pd_ctx_shape_str(t, shape, sizeof shape), isnan(val) ? "NaN" : "Inf",
                           (long long)bad);
      }
    }
  }
  return PD_OK;
}

/* Move a var's value(s) to `place`: a tensor, or each tensor of an array. An output on the GPU
 * that nothing has written yet (declared tensors stay PD_VAR_UNSET until their first writer)
 * becomes a tensor placed there now: its kernel's pd_var_tensor would make it on the host. */
static pd_status move_var(pd_variable *v, pd_k_place place, bool output) {
  pd_status st = PD_OK;
  if (v->type == PD_VAR_UNSET && output && place == PD_K_CUDA) pd_var_tensor(v);
  if (v->type == PD_VAR_LOD_TENSOR) {
    st = pd_tensor_to_place(&v->u.tensor, place);
  } else if (v->type == PD_VAR_LOD_TENSOR_ARRAY) {
    for (size_t i = 0; i < v->u.array.n && !st; i++)
      st = pd_tensor_to_place(v->u.array.items[i], place);
  }
  return st;
}

/* On the GPU, before an op runs: its inputs moved to where its kernel reads them, and its
 * output tensors set to be made there. */
static pd_status place_args(const pd_exec_ctx *ctx) {
  const pd_exec_op *x = ctx->xop;
  for (int io = 0; io < 2; io++) {
    int nslots = io ? x->def->noutputs : x->def->ninputs;
    for (int d = 0; d < nslots; d++) {
      int where = io ? x->out_where[d] : x->in_where[d];
      if (where == PD_WHERE_ANY) continue;
      pd_k_place place = where == PD_WHERE_HOST ? PD_K_HOST : x->place;
      int start = io ? x->out_start[d] : x->in_start[d];
      int count = io ? x->out_count[d] : x->in_count[d];
      for (int k = 0; k < count; k++) {
        int idx = x->args[start + k];
        if (idx < 0) continue;
        pd_variable *v = ctx->vars[idx];
        pd_status st = move_var(v, place, io == 1);
        if (st == PD_ENOMEM && place == PD_K_CUDA)
          return pd_ctx_fail(ctx, st, "out of GPU memory moving '%s' there: %s", pd_var_name(v),
                             pd_k_cuda_error());
        if (st)
          return pd_ctx_fail(ctx, st, "cannot move '%s' to the %s: %s", pd_var_name(v),
                             place == PD_K_CUDA ? "GPU" : "host",
                             st == PD_ENOMEM ? "out of memory" : pd_k_cuda_error());
      }
    }
  }
  return PD_OK;
}

static pd_status run_prepared(pd_exec *ex, pd_exec_block *b, pd_scope *scope, pd_error *err) {
  pd_variable **vars = pd_malloc((size_t)(b->nnames ? b->nnames : 1) * sizeof *vars);
  if (!vars) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory running a block");
  pd_scope *global = NULL;
  pd_status st = PD_OK;
  const pd_op_desc *at = NULL;  /* the op running: an error at its line gets its calls */
  for (int i = 0; i < b->nnames; i++) {
    pd_variable *v = NULL;
    switch (b->where[i]) {
      case NAME_GLOBAL:
        if (!global) global = ex->global ? ex->global : scope_root(scope);
        v = pd_scope_var(global, b->names[i]);
        break;
      case NAME_LOCAL: v = pd_scope_var(scope, b->names[i]); break;
      default:
        v = pd_scope_find_var(scope, b->names[i]);
        if (!v) v = pd_scope_var(scope, b->names[i]);
        break;
    }
    if (!v) {
      st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory creating variables");
      goto out;
    }
    if ((st = type_var(v, b->descs[i]))) {
      st = pd_error_set(err, st, (pd_loc){0},
                        "variable '%s' already holds a value of another kind than its "
                        "declaration (%s)",
                        b->names[i], pd_var_type_name(b->descs[i]->type));
      goto out;
    }
    vars[i] = v;
  }
  bool profile = pd_exec_profile_enabled();  /* read once per block run, not per op */
  pd_exec_ctx ctx = {.ex = ex, .scope = scope, .vars = vars, .k = ex->host,
                     .rng = &ex->rng, .err = err};
  for (int i = 0; i < b->nops; i++) {
    const pd_exec_op *x = &b->ops[i];
    at = x->op;
    ctx.xop = x;
    ctx.op = x->op;
    ctx.def = x->def;
    if (ex->opts.interrupt && *ex->opts.interrupt) {
      st = pd_error_set(err, PD_EINTR, x->op->loc, "interrupted");
      goto out;
    }
    if ((st = check_inputs(&ctx))) goto out;
    if (ex->gpu) {
      ctx.k = x->place == PD_K_CUDA ? ex->gpu : ex->host;
      if ((st = place_args(&ctx))) goto out;
    }
    if (profile) {
      uint64_t saved, t0 = pd_exec_profile_begin(&saved);
      st = x->kernel(&ctx);
      if (!st && ex->gpu && x->place == PD_K_CUDA && (st = pd_k_dev_sync()))
        pd_ctx_check(&ctx, st, "waiting for its GPU work");
      pd_loc at_user = pd_op_user_loc(x->op);  /* a layer's ops count at the user's call */
      const pd_op_desc *o = x->op;
      const char *name = o->noutputs && o->outputs[0].nargs ? o->outputs[0].args[0] : NULL;
      pd_exec_profile_end(x->def, &at_user, name, t0, saved);
    } else {
      st = x->kernel(&ctx);
    }
    ex->ops_run++;
    pd_comm_progress();   /* the gradient sums in flight, where no thread moves them */
    if (st) {
      if (!err || !err->msg || err->status != st)
        pd_ctx_fail(&ctx, st, "%s", pd_status_str(st));
      goto out;
    }
    if (ex->opts.check_nan_inf && (st = check_outputs_finite(&ctx))) goto out;
    if (ex->release_io && b == ex->blocks) release_after(ex, b, vars, i);
  }
  at = NULL;
out:
  if (st && at) pd_op_error_calls(err, at, st);
  pd_free(vars);
  return st;
}

pd_status pd_exec_run_block(pd_exec *ex, int block_idx, pd_scope *scope, pd_error *err) {
  if (block_idx < 0 || block_idx >= ex->nblocks)
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "no block %d in the program", block_idx);
  return run_prepared(ex, &ex->blocks[block_idx], scope, err);
}

pd_status pd_exec_feed_var(pd_exec *ex, pd_scope *scope, const char *name,
                           const pd_tensor *value, pd_error *err) {
  const pd_var_desc *d = pd_block_find_var_local(ex->p->blocks[0], name);
  if (!d)
    return pd_error_set(err, PD_ENOTFOUND, (pd_loc){0},
                        "cannot feed '%s': the program has no such variable", name);
  if (!pd_tensor_initialized(value))
    return pd_error_set(err, PD_EINVAL, (pd_loc){0}, "cannot feed '%s': the value is empty",
                        name);
  bool ok = value->dtype == d->dtype;
  if (ok && d->ndims >= 0) {
    ok = d->ndims == value->ndims;
    for (int i = 0; ok && i < d->ndims; i++) ok = d->dims[i] < 0 || d->dims[i] == value->dims[i];
  }
  if (!ok) {
    char want[160], got[160];
    if (d->ndims >= 0) pd_dims_str(d->ndims, d->dims, want, sizeof want);
    else snprintf(want, sizeof want, "any shape");
    pd_dims_str(value->ndims, value->dims, got, sizeof got);
    return pd_error_set(err, PD_ESHAPE, (pd_loc){0},
                        "cannot feed '%s': it is declared %s %s, the value is %s %s", name,
                        pd_dtype_name(d->dtype), want, pd_dtype_name(value->dtype), got);
  }
  pd_scope *where = scope;
  if (d->persistable) where = ex->global ? ex->global : scope_root(scope);
  pd_variable *v = pd_scope_var(where, name);
  pd_tensor *t = v ? pd_var_tensor(v) : NULL;
  if (!v) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory feeding '%s'", name);
  if (!t)
    return pd_error_set(err, PD_ETYPE, (pd_loc){0}, "cannot feed '%s': it is not a tensor",
                        name);
  pd_status st = pd_tensor_share(t, value);
  if (st) return pd_error_set(err, st, (pd_loc){0}, "out of memory feeding '%s'", name);
  return PD_OK;
}

pd_status pd_exec_run(pd_exec *ex, pd_scope *global, const pd_exec_io *io, pd_scope **keep,
                      pd_error *err) {
  if (keep) *keep = NULL;
  pd_scope *run = pd_scope_new(global);
  if (!run) return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory creating a scope");
  pd_scope *saved = ex->global;
  ex->global = global;
  pd_status st = PD_OK;
  for (int i = 0; io && i < io->nfeeds && !st; i++)
    st = pd_exec_feed_var(ex, run, io->feeds[i].name, io->feeds[i].value, err);
  static const pd_exec_io none = {0, NULL, 0, NULL};
  ex->release_io = keep ? NULL : io ? io : &none;
  if (!st) st = run_prepared(ex, &ex->blocks[0], run, err);
  ex->release_io = NULL;
  for (int i = 0; io && i < io->nfetches && !st; i++) {
    const char *name = io->fetches[i].name;
    pd_variable *v = pd_scope_find_var(run, name);
    const pd_tensor *t = v && v->type == PD_VAR_LOD_TENSOR ? &v->u.tensor : NULL;
    if (!t || !pd_tensor_initialized(t)) {
      st = pd_error_set(err, PD_ENOTFOUND, (pd_loc){0},
                        "cannot fetch '%s': the run left no value in it", name);
      break;
    }
    if ((st = pd_tensor_copy_to(io->fetches[i].out, t, PD_K_HOST)))
      st = pd_error_set(err, st, (pd_loc){0}, "%s fetching '%s'",
                        st == PD_ENOMEM ? "out of memory" : pd_k_cuda_error(), name);
  }
  ex->global = saved;
  if (keep && !st) *keep = run;
  else pd_scope_free(run);
  return st;
}

/* ---------------------------------------------------------------- kernel interface */

static int slot_index(const pd_slotdef *defs, int n, const char *slot) {
  for (int i = 0; i < n; i++)
    if (defs[i].name == slot || (defs[i].name[0] == slot[0] && strcmp(defs[i].name, slot) == 0))
      return i; /* the linker merges equal string literals, so the pointers often match */
  return -1;
}

static pd_variable *slot_var(const pd_exec_ctx *ctx, bool in, const char *slot, int i) {
  const pd_exec_op *x = ctx->xop;
  int d = in ? slot_index(x->def->inputs, x->def->ninputs, slot)
             : slot_index(x->def->outputs, x->def->noutputs, slot);
  if (d < 0) return NULL;
  int cnt = in ? x->in_count[d] : x->out_count[d];
  if (i < 0 || i >= cnt) return NULL;
  int idx = x->args[(in ? x->in_start[d] : x->out_start[d]) + i];
  return idx < 0 ? NULL : ctx->vars[idx];
}

bool pd_ctx_in_const(const pd_exec_ctx *ctx, const char *slot, int i) {
  const pd_exec_op *x = ctx->xop;
  int d = slot_index(x->def->inputs, x->def->ninputs, slot);
  if (d < 0 || i < 0 || i >= x->in_count[d] || !x->constant) return false;
  int idx = x->args[x->in_start[d] + i];
  return idx >= 0 && x->constant[idx];
}

bool pd_ctx_in_dies(const pd_exec_ctx *ctx, const char *slot, int i) {
  const pd_exec *ex = ctx->ex;
  const pd_exec_block *b = ex->blocks;
  const pd_exec_op *x = ctx->xop;
  if (!ex->release_io || x < b->ops || x >= b->ops + b->nops) return false;
  int d = slot_index(x->def->inputs, x->def->ninputs, slot);
  if (d < 0 || i < 0 || i >= x->in_count[d]) return false;
  int idx = x->args[x->in_start[d] + i], at = (int)(x - b->ops);
  if (idx < 0) return false;
  for (int k = b->rel_start[at]; k < b->rel_start[at + 1]; k++)
    if (b->release[k] == idx) return !run_fetches(ex, b->names[idx]);
  return false;
}

int pd_ctx_nin(const pd_exec_ctx *ctx, const char *slot) {
  int d = slot_index(ctx->def->inputs, ctx->def->ninputs, slot);
  return d < 0 ? 0 : ctx->xop->in_count[d];
}
int pd_ctx_nout(const pd_exec_ctx *ctx, const char *slot) {
  int d = slot_index(ctx->def->outputs, ctx->def->noutputs, slot);
  return d < 0 ? 0 : ctx->xop->out_count[d];
}
pd_variable *pd_ctx_in_var(const pd_exec_ctx *ctx, const char *slot, int i) {
  return slot_var(ctx, true, slot, i);
}
pd_variable *pd_ctx_out_var(const pd_exec_ctx *ctx, const char *slot, int i) {
  return slot_var(ctx, false, slot, i);
}
const char *pd_ctx_in_name(const pd_exec_ctx *ctx, const char *slot, int i) {
  pd_variable *v = slot_var(ctx, true, slot, i);
  return v ? pd_var_name(v) : NULL;
}
const char *pd_ctx_out_name(const pd_exec_ctx *ctx, const char *slot, int i) {
  pd_variable *v = slot_var(ctx, false, slot, i);
  return v ? pd_var_name(v) : NULL;
}
const pd_tensor *pd_ctx_in_at(const pd_exec_ctx *ctx, const char *slot, int i) {
  pd_variable *v = slot_var(ctx, true, slot, i);
  return v && v->type == PD_VAR_LOD_TENSOR ? &v->u.tensor : NULL;
}
const pd_tensor *pd_ctx_in(const pd_exec_ctx *ctx, const char *slot) {
  return pd_ctx_in_at(ctx, slot, 0);
}
pd_tensor *pd_ctx_out_at(const pd_exec_ctx *ctx, const char *slot, int i) {
  pd_variable *v = slot_var(ctx, false, slot, i);
  return v ? pd_var_tensor(v) : NULL;
}
pd_tensor *pd_ctx_out(const pd_exec_ctx *ctx, const char *slot) {
  return pd_ctx_out_at(ctx, slot, 0);
}

pd_status pd_ctx_resize(const pd_exec_ctx *ctx, pd_tensor *out, pd_dtype dtype, int ndims,
                        const int64_t *dims) {
  pd_tensor_clear_lod(out);
  pd_status st = pd_tensor_resize(out, dtype, ndims, dims);
  if (st == PD_ENOMEM) {
    char buf[160];
    pd_dims_str(ndims, dims, buf, sizeof buf);
    return pd_ctx_fail(ctx, st, "out of memory for an output of shape %s (%s)", buf,
                       pd_dtype_name(dtype));
  }
  if (st) return pd_ctx_fail(ctx, st, "cannot make an output of rank %d", ndims);
  return PD_OK;
}

/* The op's value of attribute `name` (NULL when it has none) and the registry's def of it. The
 * values were looked up when the op was prepared; only the def's names are compared here. */
static const pd_attr *find_attr(const pd_exec_ctx *ctx, const char *name,
                                const pd_attrdef **def) {
  const pd_opdef *d = ctx->def;
  for (int i = 0; i < d->nattrs; i++)
    if (d->attrs[i].name == name ||
        (d->attrs[i].name[0] == name[0] && strcmp(d->attrs[i].name, name) == 0)) {
      *def = &d->attrs[i];
      return ctx->xop->attr_of[i].name ? &ctx->xop->attr_of[i] : NULL;
    }
  *def = NULL;
  return pd_op_attr(ctx->op, name); /* a framework-wide attribute (op_role, ...) */
}

int64_t pd_ctx_attr_int(const pd_exec_ctx *ctx, const char *name) {
  const pd_attrdef *d;
  const pd_attr *a = find_attr(ctx, name, &d);
  if (a) switch (a->type) {
      case PD_ATTR_INT:
      case PD_ATTR_BLOCK: return a->v.i;
      case PD_ATTR_LONG: return a->v.l;
      case PD_ATTR_BOOLEAN: return a->v.b;
      case PD_ATTR_FLOAT: return (int64_t)a->v.f;
      case PD_ATTR_FLOAT64: return (int64_t)a->v.d;
      default: break;
    }
  return d && !d->required ? d->def.i : 0;
}

double pd_ctx_attr_float(const pd_exec_ctx *ctx, const char *name) {
  const pd_attrdef *d;
  const pd_attr *a = find_attr(ctx, name, &d);
  if (a) switch (a->type) {
      case PD_ATTR_FLOAT: return a->v.f;
      case PD_ATTR_FLOAT64: return a->v.d;
      case PD_ATTR_INT: return a->v.i;
      case PD_ATTR_LONG: return (double)a->v.l;
      default: break;
    }
  return d && !d->required ? d->def.f : 0.0;
}

bool pd_ctx_attr_bool(const pd_exec_ctx *ctx, const char *name) {
  const pd_attrdef *d;
  const pd_attr *a = find_attr(ctx, name, &d);
  if (a) switch (a->type) {
      case PD_ATTR_BOOLEAN: return a->v.b;
      case PD_ATTR_INT: return a->v.i != 0;
      case PD_ATTR_LONG: return a->v.l != 0;
      default: break;
    }
  return d && !d->required ? d->def.i != 0 : false;
}

const char *pd_ctx_attr_str(const pd_exec_ctx *ctx, const char *name) {
  const pd_attrdef *d;
  const pd_attr *a = find_attr(ctx, name, &d);
  if (a && a->type == PD_ATTR_STRING) return a->v.s ? a->v.s : "";
  return d && d->def.s ? d->def.s : "";
}

int pd_ctx_attr_ints(const pd_exec_ctx *ctx, const char *name, int64_t *out, int cap) {
  const pd_attrdef *d;
  const pd_attr *a = find_attr(ctx, name, &d);
  if (a && (a->type == PD_ATTR_INTS || a->type == PD_ATTR_LONGS || a->type == PD_ATTR_BOOLEANS)) {
    for (int i = 0; i < a->n && i < cap; i++)
      out[i] = a->type == PD_ATTR_INTS ? a->ints[i]
               : a->type == PD_ATTR_LONGS ? a->longs[i]
                                          : a->bools[i];
    return a->n;
  }
  if (!d || d->required) return -1;
  for (int i = 0; i < d->def.n && i < cap; i++)
    out[i] = d->type == PD_ATTR_LONGS ? d->def.l.longs[i] : d->def.l.ints[i];
  return d->def.n;
}

const pd_attr *pd_ctx_attr_raw(const pd_exec_ctx *ctx, const char *name) {
  const pd_attrdef *d;
  return find_attr(ctx, name, &d);
}

pd_status pd_ctx_fail(const pd_exec_ctx *ctx, pd_status st, const char *fmt, ...) {
  if (!ctx->err) return st;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return pd_error_set(ctx->err, st, ctx->op->loc, "%s: %s", ctx->op->type, msg);
}

pd_status pd_ctx_check(const pd_exec_ctx *ctx, pd_status st, const char *what) {
  if (!st) return PD_OK;
  if (pd_ctx_place(ctx) == PD_K_CUDA && *pd_k_cuda_error())
    return pd_ctx_fail(ctx, st, "%s on the GPU: %s (%s)", what, pd_status_str(st),
                       pd_k_cuda_error());
  return pd_ctx_fail(ctx, st, "%s: %s", what, pd_status_str(st));
}

/* ---------------------------------------------------------------- places */

pd_k_place pd_ctx_place(const pd_exec_ctx *ctx) {
  return ctx->ex && ctx->ex->gpu && ctx->k == ctx->ex->gpu ? PD_K_CUDA : PD_K_HOST;
}

void *pd_ctx_scratch(const pd_exec_ctx *ctx, size_t nbytes, pd_status *st) {
  bool gpu = pd_ctx_place(ctx) == PD_K_CUDA;
  void *p = gpu ? pd_k_dev_alloc(nbytes ? nbytes : 1) : pd_k_host_alloc(nbytes ? nbytes : 1);
  *st = p ? PD_OK
          : pd_ctx_fail(ctx, PD_ENOMEM, "out of %smemory for %zu bytes of scratch",
                        gpu ? "GPU " : "", nbytes);
  return p;
}

void pd_ctx_scratch_free(const pd_exec_ctx *ctx, void *p) {
  if (!p) return;
  if (pd_ctx_place(ctx) == PD_K_CUDA) pd_k_dev_free(p);
  else pd_k_host_free(p);
}

pd_status pd_ctx_scratch_n(const pd_exec_ctx *ctx, int n, char **bufs, const size_t *sizes) {
  pd_status st = PD_OK;
  for (int i = 0; i < n; i++) bufs[i] = NULL;
  for (int i = 0; i < n && !st; i++) bufs[i] = pd_ctx_scratch(ctx, sizes[i] + 1, &st);
  if (st) pd_ctx_scratch_free_n(ctx, n, bufs);
  return st;
}

void pd_ctx_scratch_free_n(const pd_exec_ctx *ctx, int n, char **bufs) {
  for (int i = 0; i < n; i++) {
    pd_ctx_scratch_free(ctx, bufs[i]);
    bufs[i] = NULL;
  }
}

pd_status pd_ctx_copy(const pd_exec_ctx *ctx, void *dst, const void *src, size_t nbytes) {
  pd_k_place place = pd_ctx_place(ctx);
  pd_status st = pd_mem_copy(dst, place, src, place, nbytes);
  return st ? pd_ctx_check(ctx, st, "copy") : PD_OK;
}

const void *pd_ctx_host_data(const pd_exec_ctx *ctx, const pd_tensor *t, void **tmp,
                             pd_status *st) {
  *tmp = NULL;
  *st = PD_OK;
  if (!pd_tensor_on_gpu(t)) return pd_tensor_data(t);
  size_t n = pd_tensor_nbytes(t);
  if (!(*tmp = pd_k_host_alloc(n ? n : 1))) {
    *st = pd_ctx_fail(ctx, PD_ENOMEM, "out of memory for %zu bytes", n);
    return NULL;
  }
  if ((*st = pd_mem_copy(*tmp, PD_K_HOST, pd_tensor_data(t), PD_K_CUDA, n))) {
    pd_k_host_free(*tmp);
    *tmp = NULL;
    *st = pd_ctx_fail(ctx, *st, "cannot read a value back from the GPU: %s", pd_k_cuda_error());
    return NULL;
  }
  return *tmp;
}

const void *pd_ctx_at_place(const pd_exec_ctx *ctx, const void *host, size_t nbytes, void **tmp,
                            pd_status *st) {
  *tmp = NULL;
  *st = PD_OK;
  if (pd_ctx_place(ctx) != PD_K_CUDA) return host;
  if (!(*tmp = pd_ctx_scratch(ctx, nbytes, st))) return NULL;
  if ((*st = pd_mem_copy(*tmp, PD_K_CUDA, host, PD_K_HOST, nbytes))) {
    pd_ctx_scratch_free(ctx, *tmp);
    *tmp = NULL;
    *st = pd_ctx_check(ctx, *st, "upload");
    return NULL;
  }
  return *tmp;
}

const char *pd_ctx_shape_str(const pd_tensor *t, char *buf, size_t n) {
  return pd_dims_str(t->ndims, t->dims, buf, n);
}

pd_status pd_ctx_run_sub_block(const pd_exec_ctx *ctx, pd_scope *scope) {
  if (!ctx->xop->sub) return pd_ctx_fail(ctx, PD_EFORMAT, "the op has no sub_block");
  return run_prepared(ctx->ex, ctx->xop->sub, scope, ctx->err);
}

const pd_block *pd_ctx_sub_block(const pd_exec_ctx *ctx) {
  return ctx->xop->sub ? ctx->xop->sub->block : NULL;
}
