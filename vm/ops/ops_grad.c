/* ops_grad.c -- the gradient ops of the registry: for every op marked DIFF in vm/oplist.h, an op
 * "<type>_grad" whose def is derived from the forward op's:
 *   inputs   the forward inputs, the forward outputs, and the gradient of each forward output
 *            ("Out@GRAD"), all optional, each as duplicable as its forward slot;
 *   outputs  the gradient of each forward input ("X@GRAD"), optional;
 *   attrs    the forward op's;
 *   shape    each X@GRAD var takes the dtype, shape and LoD level of the forward var it is the
 *            gradient of (the var bound at the same position of slot X);
 *   kernel   the entry's gradient kernel (vm/ops/opkernels.h), with the forward op's constant;
 *   slots    where their values must be on the GPU as the forward slots they derive from, but
 *            that the gradient of a host input is made where the op computes.
 * This is Fluid's default grad-op maker: a gradient op may read any forward value (the scopes
 * the forward pass left behind hold them all), and binds only the gradients someone needs. The
 * defs are built once, on first use, into static storage (no allocation, so they cannot fail). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "vm/ops/infershape.h"
#include "vm/ops/opkernels.h"
#include "vm/ops/ops.h"

#define GRAD_SUFFIX "@GRAD"
enum { MAX_SLOTS = 16, NAME_MAX_ = 48 };

typedef struct grad_entry {
  pd_opdef def;
  pd_slotdef in[3 * MAX_SLOTS];
  pd_slotdef out[MAX_SLOTS];
  char type[64];
  char names[2 * MAX_SLOTS][NAME_MAX_];  /* "<out>@GRAD" then "<in>@GRAD" */
} grad_entry;

static grad_entry grads[PD_OP_COUNT_];
static bool has_grad[PD_OP_COUNT_];
static pthread_once_t grads_once = PTHREAD_ONCE_INIT;

/* The gradient kernel of each DIFF op, by kind; NULL for the others. */
#define KERNELS(fwd, grad, arg) fwd, grad, arg
#define KERNEL(family, arg) family, family##_grad, arg
static const pd_kernel_fn grad_kernels[PD_OP_COUNT_] = {
#define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) \
  PD_IF_DIFF(flags, [PD_OP_##name] = PD_KERNEL_GRAD_(kernel), )
#include "vm/oplist.h"
#undef PD_OPK
};
#undef KERNEL
#undef KERNELS

/* How many: one per DIFF op. */
static const int ngrads = 0
#define PD_OPK(name, flags, infer, inputs, outputs, attrs, kernel) PD_IF_DIFF(flags, +1)
#include "vm/oplist.h"
#undef PD_OPK
    ;

static pd_status infer_grad(pd_infer_ctx *c);

static void build_one(pd_op_kind kind, pd_kernel_fn kernel) {
  const pd_opdef *f = &pd_opdefs[kind];
  grad_entry *g = &grads[kind];
  if (f->ninputs + f->noutputs > MAX_SLOTS) return; /* never: no op has that many slots */
  snprintf(g->type, sizeof g->type, "%s_grad", f->type);
  int ni = 0, nn = 0;
  for (int i = 0; i < f->ninputs; i++)
    g->in[ni++] = (pd_slotdef){f->inputs[i].name, f->inputs[i].flags | PD_SLOT_DISPENSABLE};
  for (int i = 0; i < f->noutputs; i++)
    g->in[ni++] = (pd_slotdef){f->outputs[i].name,
                               (f->outputs[i].flags & ~PD_SLOT_INTERMEDIATE) | PD_SLOT_DISPENSABLE};
  for (int i = 0; i < f->noutputs; i++) {
    snprintf(g->names[nn], NAME_MAX_, "%s" GRAD_SUFFIX, f->outputs[i].name);
    g->in[ni++] = (pd_slotdef){g->names[nn++],
                               (f->outputs[i].flags & ~PD_SLOT_INTERMEDIATE) | PD_SLOT_DISPENSABLE};
  }
  int no = 0;
  /* A gradient is computed where the op computes, even of an input read on the host. */
  for (int i = 0; i < f->ninputs; i++) {
    snprintf(g->names[nn], NAME_MAX_, "%s" GRAD_SUFFIX, f->inputs[i].name);
    g->out[no++] = (pd_slotdef){g->names[nn++],
                                (f->inputs[i].flags & ~PD_SLOT_HOST) | PD_SLOT_DISPENSABLE};
  }
  g->def = (pd_opdef){.kind = kind,
                      .type = g->type,
                      .flags = 0,
                      .ninputs = ni,
                      .noutputs = no,
                      .nattrs = f->nattrs,
                      .inputs = g->in,
                      .outputs = g->out,
                      .attrs = f->attrs,
                      .infer_shape = infer_grad,
                      .kernel = kernel,
                      .karg = f->karg,
                      .forward = f};
  has_grad[kind] = true;
}

static void build_all(void) {
  for (int k = 0; k < PD_OP_COUNT_; k++)
    if (grad_kernels[k]) build_one((pd_op_kind)k, grad_kernels[k]);
}

const pd_opdef *pd_opdef_grad(const pd_opdef *fwd) {
  if (!fwd || fwd->forward || (unsigned)fwd->kind >= PD_OP_COUNT_) return NULL;
  pthread_once(&grads_once, build_all);
  return has_grad[fwd->kind] ? &grads[fwd->kind].def : NULL;
}

int pd_opdef_grad_count(void) { return ngrads; }

/* Each "X@GRAD" output var gets the dtype, shape and LoD level of the var at the same position
 * of input slot "X"; a gradient bound to no forward var is left alone. */
static pd_status infer_grad(pd_infer_ctx *c) {
  const pd_op_desc *op = c->op;
  for (int s = 0; s < op->noutputs; s++) {
    const pd_slot *gs = &op->outputs[s];
    size_t len = strlen(gs->param), sl = strlen(GRAD_SUFFIX);
    if (len <= sl || strcmp(gs->param + len - sl, GRAD_SUFFIX) != 0) continue;
    char fwd_slot[NAME_MAX_];
    snprintf(fwd_slot, sizeof fwd_slot, "%.*s", (int)(len - sl), gs->param);
    const pd_slot *fs = pd_op_input(op, fwd_slot);
    for (int a = 0; a < gs->nargs; a++) {
      if (strcmp(gs->args[a], PD_EMPTY_VAR_NAME) == 0) continue;
      if (!fs || a >= fs->nargs)
        return pd_infer_fail(c, PD_EINVAL, "output %s has %d vars but input %s has %d", gs->param,
                             gs->nargs, fwd_slot, fs ? fs->nargs : 0);
      const pd_var_desc *fv = pd_block_find_var_visible(c->block, fs->args[a], NULL);
      pd_var_desc *gv = pd_block_find_var_visible(c->block, gs->args[a], NULL);
      if (!fv || !gv) continue;  /* pd_opdef_check reports undeclared vars */
      gv->dtype = fv->dtype;
      gv->lod_level = fv->lod_level;
      if (pd_var_set_shape(gv, fv->ndims, fv->dims))
        return pd_infer_fail(c, PD_ENOMEM, "out of memory");
    }
  }
  return PD_OK;
}
