/* compat.c -- the facts of compat.h (what other PaddlePaddle/Fluid versions write that does not
 * change the math) and pd_compat_apply, which drops them from a loaded program, converts the
 * attributes older versions typed otherwise, and lists every problem of a program pdlang cannot
 * run. */
#include "config.h"
#include "vm/ops/compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm/ops/ops.h"

#define ONEDNN "a oneDNN (MKL-DNN) backend hint"
#define QUANT "an int8 quantization scale of the oneDNN backend"
#define FUSED "a step fused into the op by Paddle's inference passes"
#define FUSED_ARG "the parameter of a fused activation"
#define LAYOUT "Fluid 1.x's layout hint for oneDNN (unused)"
#define PSERVER "a parameter-server setting of distributed training, unused by a local lookup"
#define RUNTIME "an attribute given as a tensor at run time"
#define LOOKUPS "lookup_table lookup_table_v2"
#define FUSED_SHAPE "a reshape or transpose fused into the product by Paddle's oneDNN passes"
#define MATMULS "matmul matmul_v2"

/* A rule per attribute (or slot) name, for every op that Paddle writes it on (ops NULL), or for
 * the ops listed; sorted by ops (NULL first), then name. The attributes every op may carry
 * (op_role, use_mkldnn, use_cudnn, mkldnn_data_type, is_test, ...: common_attrs in
 * vm/ops/ops.c) are accepted there, not listed here. An op's own attribute (vm/oplist.h) is
 * never dropped: the facts apply to the names its def lacks. */
const pd_compat_fact pd_compat_facts[] = {
    {NULL, "*Tensor", PD_COMPAT_EMPTY_SLOT, NULL, RUNTIME},
    {NULL, "*TensorList", PD_COMPAT_EMPTY_SLOT, NULL, "an attribute given as tensors at run time"},
    {NULL, "Scale_in", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "Scale_in_eltwise", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "Scale_out", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "Scale_weights", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "Scale_x", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "Scale_y", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "exhaustive_search", PD_COMPAT_ANY, NULL, "a cuDNN algorithm search hint"},
    {NULL, "force_fp32_output", PD_COMPAT_ANY, NULL, ONEDNN},
    {NULL, "fuse_activation", PD_COMPAT_KEEPS, "\"\"", FUSED},
    {NULL, "fuse_alpha", PD_COMPAT_ANY, NULL, FUSED_ARG},
    {NULL, "fuse_beta", PD_COMPAT_ANY, NULL, FUSED_ARG},
    {NULL, "fuse_brelu", PD_COMPAT_KEEPS, "false", FUSED},
    {NULL, "fuse_brelu_threshold", PD_COMPAT_ANY, NULL, FUSED_ARG},
    {NULL, "fuse_relu", PD_COMPAT_KEEPS, "false", FUSED},
    {NULL, "fuse_relu_before_depthwise_conv", PD_COMPAT_KEEPS, "false", FUSED},
    {NULL, "fuse_residual_connection", PD_COMPAT_KEEPS, "false", FUSED},
    {NULL, "fuse_with_relu", PD_COMPAT_KEEPS, "false", FUSED},
    {NULL, "onednn_data_type", PD_COMPAT_ANY, NULL, ONEDNN},
    {NULL, "scale_out", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "scale_x", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "scale_y", PD_COMPAT_ANY, NULL, QUANT},
    {NULL, "use_addto", PD_COMPAT_KEEPS, "false", "a cuDNN accumulate-into-output mode"},
    {NULL, "use_onednn", PD_COMPAT_ANY, NULL, ONEDNN},
    {NULL, "use_quantizer", PD_COMPAT_ANY, NULL, ONEDNN},
    {NULL, "workspace_size_MB", PD_COMPAT_ANY, NULL, "a cuDNN workspace size"},
    {NULL, "x_data_format", PD_COMPAT_ANY, NULL, LAYOUT},
    {NULL, "y_data_format", PD_COMPAT_ANY, NULL, LAYOUT},
    {"batch_norm", "trainable_statistics", PD_COMPAT_KEEPS, "false",
     "batch statistics in inference (pdlang uses the running ones when is_test)"},
    {"conv2d depthwise_conv2d", "Bias", PD_COMPAT_EMPTY_SLOT, NULL,
     "a bias the oneDNN kernel adds, which Paddle binds to nothing"},
    {"conv2d depthwise_conv2d", "ResidualData", PD_COMPAT_EMPTY_SLOT, NULL,
     "a residual the oneDNN kernel adds (fuse_residual_connection)"},
    {"elementwise_add", "act", PD_COMPAT_KEEPS, "\"\"", FUSED},
    {"fc", "fused_output_scale", PD_COMPAT_KEEPS, "1.0", "an output scale fused in by Paddle's "
     "oneDNN passes"},
    {"fc", "fused_reshape2_shape", PD_COMPAT_KEEPS, "{}", "a reshape fused in by Paddle's oneDNN "
     "passes"},
    {LOOKUPS, "entry", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "entry_config", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "epmap", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "grad_inplace", PD_COMPAT_ANY, NULL, "whether the gradient op reuses a var"},
    {LOOKUPS, "height_sections", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "slot", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "table_class", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "table_names", PD_COMPAT_ANY, NULL, PSERVER},
    {LOOKUPS, "trainer_id", PD_COMPAT_ANY, NULL, PSERVER},
    {"matmul", "head_number", PD_COMPAT_KEEPS, "1",
     "the heads of Paddle's MKLML product (Y's columns split among them)"},
    {MATMULS, "fused_reshape_Out", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {MATMULS, "fused_reshape_X", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {MATMULS, "fused_reshape_Y", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {MATMULS, "fused_transpose_Out", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {MATMULS, "fused_transpose_X", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {MATMULS, "fused_transpose_Y", PD_COMPAT_KEEPS, "{}", FUSED_SHAPE},
    {"sequence_softmax softmax", "data_format", PD_COMPAT_KEEPS,
     "\"AnyLayout\"|\"NCHW\"", "the layout Paddle picks its kernel for; pdlang's tensors are NCHW"},
    {"tile", "RepeatTimes", PD_COMPAT_EMPTY_SLOT, NULL, "the repeats given at run time"},
    {"tile", "repeat_times_tensor", PD_COMPAT_EMPTY_SLOT, NULL,
     "the repeats given as tensors at run time"},
};
const int pd_compat_nfacts = (int)PD_ARRAY_LEN(pd_compat_facts);

bool pd_compat_names_op(const pd_compat_fact *f, const char *type) {
  if (!f->ops) return true;
  size_t n = strlen(type);
  for (const char *p = f->ops; *p;) {
    size_t w = strcspn(p, " ");
    if (w == n && strncmp(p, type, n) == 0) return true;
    p += w;
    p += strspn(p, " ");
  }
  return false;
}

/* Whether name matches pattern: the same, or "*SUFFIX" and name ends with SUFFIX. */
static bool name_matches(const char *pattern, const char *name) {
  if (pattern[0] != '*') return strcmp(pattern, name) == 0;
  size_t pn = strlen(pattern + 1), n = strlen(name);
  return n > pn && strcmp(name + n - pn, pattern + 1) == 0;
}

const pd_compat_fact *pd_compat_find(const char *type, const char *name, bool slot) {
  for (int i = 0; i < pd_compat_nfacts; i++) {
    const pd_compat_fact *f = &pd_compat_facts[i];
    if ((f->rule == PD_COMPAT_EMPTY_SLOT) != slot || !name_matches(f->name, name)) continue;
    if (pd_compat_names_op(f, type)) return f;
  }
  return NULL;
}

/* The number text t (n chars) writes, in *v; false and true stand for 0 and 1. */
static bool number_of(const char *t, size_t n, double *v) {
  char buf[48], *end;
  if (n >= sizeof buf) return false;
  memcpy(buf, t, n);
  buf[n] = '\0';
  if (strcmp(buf, "false") == 0 || strcmp(buf, "true") == 0) {
    *v = buf[0] == 't';
    return true;
  }
  *v = strtod(buf, &end);
  return end != buf && !*end;
}

/* Whether a has the value t (n chars) writes. */
static bool keeps_one(const pd_attr *a, const char *t, size_t n) {
  double d;
  bool num = number_of(t, n, &d);
  switch (a->type) {
    case PD_ATTR_BOOLEAN: return num && d == a->v.b;
    case PD_ATTR_INT: return num && d == a->v.i;
    case PD_ATTR_LONG: return num && d == (double)a->v.l;
    case PD_ATTR_FLOAT: return num && (float)d == a->v.f;
    case PD_ATTR_FLOAT64: return num && d == a->v.d;
    case PD_ATTR_STRING: {
      const char *s = a->v.s ? a->v.s : "";
      return n >= 2 && t[0] == '"' && strlen(s) == n - 2 && strncmp(s, t + 1, n - 2) == 0;
    }
    default: return pd_attr_type_is_list(a->type) && a->n == 0 && n == 2 && !strncmp(t, "{}", 2);
  }
}

bool pd_compat_keeps(const pd_compat_fact *f, const pd_attr *a) {
  if (f->rule == PD_COMPAT_ANY) return true;
  if (f->rule != PD_COMPAT_KEEPS || !f->keeps) return false;
  for (const char *p = f->keeps;; p++) {
    size_t w = strcspn(p, "|");
    if (keeps_one(a, p, w)) return true;
    p += w;
    if (!*p) return false;
  }
}

/* The values f keeps, for a message: "false (0)", "''", "'AnyLayout' or 'NCHW'". */
static void keeps_text(const pd_compat_fact *f, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (const char *p = f->keeps ? f->keeps : ""; *p && len < cap;) {
    size_t w = strcspn(p, "|");
    const char *sep = len ? " or " : "";
    if (w == 5 && !strncmp(p, "false", 5))
      len += (size_t)snprintf(buf + len, cap - len, "%sfalse (0)", sep);
    else if (p[0] == '"' && w >= 2)
      len += (size_t)snprintf(buf + len, cap - len, "%s'%.*s'", sep, (int)w - 2, p + 1);
    else
      len += (size_t)snprintf(buf + len, cap - len, "%s%.*s", sep, (int)w, p);
    p += w + (p[w] == '|');
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

/* The message of e without the "TYPE: " the problem line says already. */
static const char *msg_of(const pd_error *e, const char *type) {
  const char *msg = e->msg ? e->msg : pd_status_str(e->status);
  size_t tn = strlen(type);
  if (strncmp(msg, type, tn) == 0 && strncmp(msg + tn, ": ", 2) == 0) msg += tn + 2;
  return msg;
}

/* Drop what the facts allow from op i of b and convert the attributes typed otherwise; note
 * each refused value in list. PD_ENOMEM, else PD_OK. */
static pd_status apply_op(const pd_block *b, int i, pd_buf *list, int *count) {
  pd_op_desc *op = b->ops[i];
  const pd_opdef *def = pd_opdef_lookup(op->type);
  if (!def) return PD_OK; /* pd_opdef_check names it */
  char msg[480], name[64], val[96], keeps[96];
  for (int k = 0; k < op->nattrs;) {
    pd_attr *a = &op->attrs[k];
    const pd_compat_fact *f =
        a->name && !pd_opdef_attr(def, a->name) ? pd_compat_find(op->type, a->name, false) : NULL;
    if (!f) {
      pd_error e = {0};
      pd_status st = pd_opdef_convert_attr(def, op, a, &e);
      if (st && st != PD_ENOMEM) problem(list, count, b, i, msg_of(&e, op->type));
      pd_error_clear(&e);
      if (st == PD_ENOMEM) return st;
      k++;
      continue;
    }
    if (!pd_compat_keeps(f, a)) {
      value_text(a, val, sizeof val);
      keeps_text(f, keeps, sizeof keeps);
      snprintf(msg, sizeof msg, "attribute %s is %s, which pdlang cannot honour (%s; only %s "
               "keeps the math)", pd_program_excerpt(a->name, name, sizeof name), val, f->why,
               keeps);
      problem(list, count, b, i, msg);
      k++;
      continue;
    }
    pd_op_remove_attr(op, a->name);
  }
  for (int k = 0; k < op->ninputs;) {
    const pd_slot *s = &op->inputs[k];
    const pd_compat_fact *f =
        s->param && !pd_opdef_input(def, s->param) ? pd_compat_find(op->type, s->param, true)
                                                   : NULL;
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
  return PD_OK;
}

pd_status pd_compat_apply(pd_program *p, const char *what, pd_error *err) {
  pd_buf list;
  pd_buf_init(&list);
  int count = 0;
  for (int bi = 0; bi < p->nblocks; bi++) {
    const pd_block *b = p->blocks[bi];
    for (int i = 0; i < b->nops; i++) {
      int before = count;
      pd_error e = {0};
      pd_status st = apply_op(b, i, &list, &count);
      if (!st && count == before && (st = pd_opdef_check(b->ops[i], b, &e)) && st != PD_ENOMEM)
        problem(&list, &count, b, i, msg_of(&e, b->ops[i]->type));
      pd_error_clear(&e);
      if (st == PD_ENOMEM) {
        pd_buf_free(&list);
        return pd_error_set(err, PD_ENOMEM, (pd_loc){0}, "out of memory");
      }
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
