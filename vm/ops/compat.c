/* compat.c -- the facts of compat.h (what other PaddlePaddle/Fluid versions write that does not
 * change the math) and pd_compat_apply, which drops them from a loaded program and lists every
 * problem of a program pdlang cannot run. */
#include "config.h"
#include "vm/ops/compat.h"

#include <stdio.h>
#include <string.h>

#include "vm/ops/ops.h"

#define ONEDNN "a oneDNN (MKL-DNN) backend hint"
#define QUANT "an int8 quantization scale of the oneDNN backend"
#define FUSED "a step fused into the op by Paddle's inference passes"

/* Sorted by op (NULL, every op, first), then name. The attributes every op may carry
 * (op_role, use_mkldnn, ...: common_attrs in vm/ops/ops.c) are accepted there, not listed here. */
const pd_compat_fact pd_compat_facts[] = {
    {NULL, "Scale_in", PD_COMPAT_ANY, QUANT},
    {NULL, "Scale_in_eltwise", PD_COMPAT_ANY, QUANT},
    {NULL, "Scale_out", PD_COMPAT_ANY, QUANT},
    {NULL, "Scale_weights", PD_COMPAT_ANY, QUANT},
    {NULL, "Scale_x", PD_COMPAT_ANY, QUANT},
    {NULL, "Scale_y", PD_COMPAT_ANY, QUANT},
    {NULL, "force_fp32_output", PD_COMPAT_ANY, ONEDNN},
    {NULL, "scale_out", PD_COMPAT_ANY, QUANT},
    {NULL, "scale_x", PD_COMPAT_ANY, QUANT},
    {NULL, "scale_y", PD_COMPAT_ANY, QUANT},
    {NULL, "use_onednn", PD_COMPAT_ANY, ONEDNN},
    {NULL, "use_quantizer", PD_COMPAT_ANY, ONEDNN},
    {NULL, "x_data_format", PD_COMPAT_ANY, "an unused layout hint of Fluid 1.x"},
    {NULL, "y_data_format", PD_COMPAT_ANY, "an unused layout hint of Fluid 1.x"},
    {"batch_norm", "fuse_with_relu", PD_COMPAT_FALSE, FUSED},
    {"batch_norm", "trainable_statistics", PD_COMPAT_FALSE,
     "batch statistics in inference (pdlang uses the running ones when is_test)"},
    {"conv2d", "exhaustive_search", PD_COMPAT_ANY, "a cuDNN algorithm search hint"},
    {"conv2d", "fuse_activation", PD_COMPAT_EMPTY_STR, FUSED},
    {"conv2d", "fuse_alpha", PD_COMPAT_ANY, "the parameter of a fused activation"},
    {"conv2d", "fuse_beta", PD_COMPAT_ANY, "the parameter of a fused activation"},
    {"conv2d", "fuse_relu", PD_COMPAT_FALSE, FUSED},
    {"conv2d", "fuse_relu_before_depthwise_conv", PD_COMPAT_FALSE, FUSED},
    {"conv2d", "fuse_residual_connection", PD_COMPAT_FALSE, FUSED},
    {"conv2d", "use_addto", PD_COMPAT_FALSE, "a cuDNN accumulate-into-output mode"},
    {"conv2d", "workspace_size_MB", PD_COMPAT_ANY, "a cuDNN workspace size"},
    {"elementwise_add", "act", PD_COMPAT_EMPTY_STR, FUSED},
    {"scale", "BiasTensor", PD_COMPAT_EMPTY_SLOT,
     "a tensor bias, which Paddle 3.x binds to nothing"},
    {"slice", "EndsTensor", PD_COMPAT_EMPTY_SLOT, "ends given at run time"},
    {"slice", "EndsTensorList", PD_COMPAT_EMPTY_SLOT, "ends given at run time"},
    {"slice", "StartsTensor", PD_COMPAT_EMPTY_SLOT, "starts given at run time"},
    {"slice", "StartsTensorList", PD_COMPAT_EMPTY_SLOT, "starts given at run time"},
};
const int pd_compat_nfacts = (int)PD_ARRAY_LEN(pd_compat_facts);

static const pd_compat_fact *find_fact(const char *op, const char *name, bool slot) {
  for (int i = 0; i < pd_compat_nfacts; i++) {
    const pd_compat_fact *f = &pd_compat_facts[i];
    if ((f->rule == PD_COMPAT_EMPTY_SLOT) != slot || strcmp(f->name, name) != 0) continue;
    if (!f->op || strcmp(f->op, op) == 0) return f;
  }
  return NULL;
}

/* Whether attribute a keeps the math at the value the fact allows. */
static bool value_ok(const pd_compat_fact *f, const pd_attr *a) {
  switch (f->rule) {
    case PD_COMPAT_ANY: return true;
    case PD_COMPAT_FALSE:
      return (a->type == PD_ATTR_BOOLEAN && !a->v.b) || (a->type == PD_ATTR_INT && !a->v.i) ||
             (a->type == PD_ATTR_LONG && !a->v.l);
    case PD_COMPAT_EMPTY_STR: return a->type == PD_ATTR_STRING && (!a->v.s || !a->v.s[0]);
    default: return false;
  }
}

/* The value of a scalar attribute as text (lists: their type and length). */
static void value_text(const pd_attr *a, char *buf, size_t n) {
  switch (a->type) {
    case PD_ATTR_INT: snprintf(buf, n, "%d", (int)a->v.i); break;
    case PD_ATTR_LONG: snprintf(buf, n, "%lld", (long long)a->v.l); break;
    case PD_ATTR_FLOAT: snprintf(buf, n, "%g", (double)a->v.f); break;
    case PD_ATTR_FLOAT64: snprintf(buf, n, "%g", a->v.d); break;
    case PD_ATTR_BOOLEAN: snprintf(buf, n, "%s", a->v.b ? "true" : "false"); break;
    case PD_ATTR_STRING: {
      char ex[64];
      snprintf(buf, n, "'%s'", pd_program_excerpt(a->v.s ? a->v.s : "", ex, sizeof ex));
      break;
    }
    default: snprintf(buf, n, "a %s of %d", pd_attr_type_name(a->type), a->n); break;
  }
}

/* One problem line, "  block B op I (TYPE): MSG", appended to list. */
static void problem(pd_buf *list, int *count, const pd_block *b, int i, const char *msg) {
  char type[64];
  pd_buf_printf(list, "\n  block %d op %d (%s): %s", b->idx, i,
                pd_program_excerpt(b->ops[i]->type, type, sizeof type), msg);
  (*count)++;
}

/* Drop what the facts allow from op i of b; note each refused value in list. */
static void apply_op(const pd_block *b, int i, pd_buf *list, int *count) {
  pd_op_desc *op = b->ops[i];
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def) return;  /* pd_opdef_check names it */
  char msg[400], name[64], val[96];
  for (int k = 0; k < op->nattrs;) {
    const pd_attr *a = &op->attrs[k];
    const pd_compat_fact *f =
        a->name && !pd_opdef_attr(def, a->name) ? find_fact(op->type, a->name, false) : NULL;
    if (!f) {
      k++;
      continue;
    }
    if (!value_ok(f, a)) {
      value_text(a, val, sizeof val);
      snprintf(msg, sizeof msg, "attribute %s is %s, which pdlang cannot honour (%s; only %s "
               "keeps the math)", pd_program_excerpt(a->name, name, sizeof name), val, f->why,
               f->rule == PD_COMPAT_FALSE ? "false (0)" : "''");
      problem(list, count, b, i, msg);
      k++;
      continue;
    }
    pd_op_remove_attr(op, a->name);
  }
  for (int k = 0; k < op->ninputs;) {
    const pd_slot *s = &op->inputs[k];
    const pd_compat_fact *f =
        s->param && !pd_opdef_input(def, s->param) ? find_fact(op->type, s->param, true) : NULL;
    if (!f) {
      k++;
      continue;
    }
    if (s->nargs > 0) {
      snprintf(msg, sizeof msg, "input %s is bound to '%s', which pdlang cannot honour (%s)",
               pd_program_excerpt(s->param, name, sizeof name),
               pd_program_excerpt(s->args[0], val, sizeof val), f->why);
      problem(list, count, b, i, msg);
      k++;
      continue;
    }
    pd_op_remove_input(op, s->param);
  }
}

pd_status pd_compat_apply(pd_program *p, const char *what, pd_error *err) {
  pd_buf list;
  pd_buf_init(&list);
  int count = 0;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *b = p->blocks[bi];
    for (int i = 0; i < b->nops; i++) {
      int before = count;
      apply_op(b, i, &list, &count);
      if (count > before) continue;  /* the op's own check would repeat the refusal */
      pd_error e = {0};
      if (pd_opdef_check(b->ops[i], b, &e)) {
        if (e.status == PD_ENOMEM) {
          pd_error_clear(&e);
          pd_buf_free(&list);
          return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
        }
        /* The check's message starts "TYPE: ", which the line says already. */
        const char *msg = e.msg ? e.msg : pd_status_str(e.status);
        size_t tn = strlen(b->ops[i]->type);
        if (strncmp(msg, b->ops[i]->type, tn) == 0 && strncmp(msg + tn, ": ", 2) == 0)
          msg += tn + 2;
        problem(&list, &count, b, i, msg);
      }
      pd_error_clear(&e);
    }
  }
  pd_status st = PD_OK;
  if (list.oom)
    st = pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
  else if (count)
    st = pd_error_set(err, PD_EINVAL, (pd_loc){0}, "%s: pdlang cannot run this program (%d "
                      "problem%s):%s", what, count, count == 1 ? "" : "s", list.data);
  pd_buf_free(&list);
  return st;
}
