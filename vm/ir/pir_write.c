/* pir_write.c -- the writer of PaddlePaddle 3's default model format (vm/ir/pir.h): a pdlang
 * inference program (Fluid ops, with feed and fetch ops) as a PIR program in JSON, the layout
 * Paddle 3.3's serializer writes (format version 4) and its deserializer reads.
 *
 * Fluid's vars are names written again and again; PIR's values are written once. The writer
 * walks the blocks in order and keeps, for each var name, the value it holds now: an op's
 * outputs bind their names to new values, and the control-flow ops become PIR's regions:
 *   - conditional_block (a scalar condition) is pd_op.if: its Out vars are the results; the
 *     true region runs the sub-block and yields their values, the false region yields their
 *     values before the if (zeros where there was none, as Paddle's own translator does);
 *   - while is pd_op.while: its loop-carried vars (the Out vars it had before the loop) are the
 *     block's arguments and the results, the body yields the new condition and their values.
 * The parameters are builtin.parameter ops at the top, in the order of the .pdiparams (sorted
 * names), as Paddle loads them. What pd_op takes as a tensor and Fluid as an attribute (a
 * reshape's shape, a pool's kernel size, a scale) becomes a full_int_array or full op.
 *
 * The table below gives each Fluid op its pd_op: operands, results and attributes (their PIR
 * kinds, from Paddle 3.3's op definitions, and the Fluid attributes they come from). */
#include "config.h"
#include "vm/ir/pir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

static const pd_loc nowhere = {0};

/* ---- The table ----
 * ins: the operands, space-separated: SLOT (the Fluid input slot's var; none when absent),
 *   "-" (none), "#ATTR" (a full_int_array int64 of the Fluid attribute's integers; "#ATTR|SLOT|
 *   LIST": unless the op binds SLOT, a tensor, or LIST, tensors combined), "%ATTR:DT"
 *   (a full of shape [1] and dtype DT holding the numeric attribute), "@ATTR" (the list of the
 *   slot's vars as one builtin.combine: "@X").
 * outs: the results: SLOT, or "-DT" (a result Fluid does not have: dtype DT, the first
 *   operand's shape; "-null": no type), "-DT:1" (rank 1, unknown size).
 * attrs: NAME:KIND=FLUID|DEFAULT, space-separated; KIND is b, i32, i64, f32, f64, s, ai32,
 *   ai64, af64 (a_array of those), dt (a dtype, from Fluid's dtype number). FLUID empty: the default
 *   alone; DEFAULT empty: the attribute must be there. */
typedef struct wmap {
  const char *fluid, *pir, *ins, *outs, *attrs;
} wmap;

#define UNARY(f, p) {f, p, "X", "Out", ""}
#define BINARY(f, p) {f, p, "X Y", "Out", ""}
static const wmap wmaps[] = {
    UNARY("abs", "abs"), UNARY("exp", "exp"), UNARY("log", "log"), UNARY("sqrt", "sqrt"),
    UNARY("relu", "relu"), UNARY("tanh", "tanh"), UNARY("sigmoid", "sigmoid"),
    UNARY("square", "square"), UNARY("silu", "silu"), UNARY("logsigmoid", "logsigmoid"),
    UNARY("assign", "assign"), UNARY("logical_not", "logical_not"),
    {"relu6", "relu6", "X", "Out", ""},
    {"gelu", "gelu", "X", "Out", "approximate:b=approximate|false"},
    {"leaky_relu", "leaky_relu", "X", "Out", "negative_slope:f64=alpha|0.02"},
    {"elu", "elu", "X", "Out", "alpha:f32=alpha|1"},
    {"softplus", "softplus", "X", "Out", "beta:f64=beta|1 threshold:f64=threshold|20"},
    {"swish", "swish", "X", "Out", ""},
    {"hard_swish", "hardswish", "X", "Out", ""},
    {"hard_sigmoid", "hardsigmoid", "X", "Out", "slope:f32=slope|0.2 offset:f32=offset|0.5"},
    {"softmax", "softmax", "X", "Out", "axis:i32=axis|-1"},
    {"log_softmax", "log_softmax", "X", "Out", "axis:i32=axis|-1"},
    BINARY("elementwise_add", "add"), BINARY("elementwise_sub", "subtract"),
    BINARY("elementwise_mul", "multiply"), BINARY("elementwise_div", "divide"),
    BINARY("elementwise_max", "maximum"), BINARY("elementwise_min", "minimum"),
    BINARY("elementwise_pow", "elementwise_pow"),
    BINARY("greater_than", "greater_than"), BINARY("greater_equal", "greater_equal"),
    BINARY("less_than", "less_than"), BINARY("less_equal", "less_equal"),
    BINARY("equal", "equal"), BINARY("not_equal", "not_equal"),
    BINARY("logical_and", "logical_and"), BINARY("logical_or", "logical_or"),
    {"matmul_v2", "matmul", "X Y", "Out",
     "transpose_x:b=trans_x|false transpose_y:b=trans_y|false"},
    {"cast", "cast", "X", "Out", "dtype:dt=out_dtype"},
    {"scale", "scale", "X %scale:float32", "Out",
     "bias:f32=bias|0 bias_after_scale:b=bias_after_scale|true"},
    {"conv2d", "conv2d", "Input Filter", "Output",
     "strides:ai32=strides paddings:ai32=paddings padding_algorithm:s=padding_algorithm|EXPLICIT "
     "dilations:ai32=dilations groups:i32=groups|1 data_format:s=data_format|NCHW"},
    {"depthwise_conv2d", "depthwise_conv2d", "Input Filter", "Output",
     "strides:ai32=strides paddings:ai32=paddings padding_algorithm:s=padding_algorithm|EXPLICIT "
     "groups:i32=groups|1 dilations:ai32=dilations data_format:s=data_format|NCHW"},
    {"conv2d_transpose", "conv2d_transpose", "Input Filter #output_size", "Output",
     "strides:ai32=strides paddings:ai32=paddings output_padding:ai32=output_padding| "
     "padding_algorithm:s=padding_algorithm|EXPLICIT groups:i32=groups|1 "
     "dilations:ai32=dilations data_format:s=data_format|NCHW"},
    {"pool2d", "pool2d", "X #ksize", "Out",
     "strides:ai64=strides paddings:ai64=paddings ceil_mode:b=ceil_mode|false "
     "exclusive:b=exclusive|true data_format:s=data_format|NCHW "
     "pooling_type:s=pooling_type global_pooling:b=global_pooling|false "
     "adaptive:b=adaptive|false padding_algorithm:s=padding_algorithm|EXPLICIT"},
    {"batch_norm", "batch_norm_", "X Mean Variance Scale Bias",
     "Y MeanOut VarianceOut SavedMean SavedVariance -uint8",
     "is_test:b=|true momentum:f32=momentum|0.9 epsilon:f32=epsilon|1e-05 "
     "data_format:s=data_layout|NCHW use_global_stats:b=use_global_stats|false "
     "trainable_statistics:b=trainable_statistics|false"},
    {"layer_norm", "layer_norm", "X Scale Bias", "Y Mean Variance",
     "epsilon:f32=epsilon|1e-05 begin_norm_axis:i32=begin_norm_axis|1"},
    {"instance_norm", "instance_norm", "X Scale Bias", "Y SavedMean SavedVariance",
     "epsilon:f32=epsilon|1e-05"},
    {"group_norm", "group_norm", "X Scale Bias", "Y Mean Variance",
     "epsilon:f64=epsilon|1e-05 groups:i32=groups data_format:s=data_layout|NCHW"},
    {"dropout", "dropout", "X - %dropout_prob:float32", "Out -uint8",
     "is_test:b=|true mode:s=dropout_implementation|downgrade_in_infer seed:i32=seed|0 "
     "fix_seed:b=fix_seed|false"},
#define INTERP(f, p)                                                                          \
  {f, p, "X OutSize @SizeTensor Scale", "Out",                                                \
   "data_format:s=data_layout|NCHW out_d:i32=out_d|-1 out_h:i32=out_h|-1 out_w:i32=out_w|-1 "    \
   "scale:af64=scale| interp_method:s=interp_method align_corners:b=align_corners|false "         \
   "align_mode:i32=align_mode|1"}
    INTERP("nearest_interp_v2", "nearest_interp"), INTERP("bilinear_interp_v2", "bilinear_interp"),
#undef INTERP
    {"reshape2", "reshape", "X #shape|Shape|ShapeTensor", "Out", ""},
    {"transpose2", "transpose", "X", "Out", "perm:ai32=axis"},
    {"flatten_contiguous_range", "flatten", "X", "Out",
     "start_axis:i32=start_axis|1 stop_axis:i32=stop_axis|-1"},
    {"squeeze2", "squeeze", "X #axes", "Out", ""},
    {"unsqueeze2", "unsqueeze", "X #axes", "Out", ""},
    {"slice", "slice", "Input #starts #ends", "Out",
     "axes:ai64=axes infer_flags:ai64=infer_flags| decrease_axis:ai64=decrease_axis|"},
    {"concat", "concat", "@X %axis:int32", "Out", ""},
    {"stack", "stack", "@X", "Y", "axis:i32=axis|0"},
    {"lookup_table_v2", "embedding", "Ids W", "Out",
     "padding_idx:i64=padding_idx|-1 sparse:b=is_sparse|false"},
    {"gather", "gather", "X Index %axis:int32", "Out", ""},
    {"increment", "increment", "X", "Out", "value:f32=step|1"},
    {"shape", "shape", "Input", "Out", ""},
    {"reduce_sum", "sum", "X #dim", "Out", "dtype:dt=out_dtype|-1 keepdim:b=keep_dim|false"},
    {"reduce_mean", "mean", "X #dim", "Out", "keepdim:b=keep_dim|false"},
    {"reduce_max", "max", "X #dim", "Out", "keepdim:b=keep_dim|false"},
    {"reduce_min", "min", "X #dim", "Out", "keepdim:b=keep_dim|false"},
    {"reduce_prod", "prod", "X #dim", "Out", "keepdim:b=keep_dim|false reduce_all:b=reduce_all|false"},
    {"arg_max", "argmax", "X %axis:int64", "Out",
     "keepdims:b=keepdims|false flatten:b=flatten|false dtype:dt=dtype|3"},
    {"cumsum", "cumsum", "X %axis:int32", "Out",
     "flatten:b=flatten|false exclusive:b=exclusive|false reverse:b=reverse|false"},
    {"where", "where", "Condition X Y", "Out", ""},
    {"clip", "clip", "X %min:float32 %max:float32", "Out", ""},
    {"prelu", "prelu", "X Alpha", "Out", "data_format:s=data_format|NCHW mode:s=mode|all"},
    {"pad3d", "pad3d", "X #paddings", "Out",
     "mode:s=mode|constant pad_value:f64=value|0 data_format:s=data_format|NCDHW"},
    {"tile", "tile", "X #repeat_times", "Out", ""},
    {"expand_v2", "expand", "X #shape|Shape|expand_shapes_tensor", "Out", ""},
    {"grid_sampler", "grid_sample", "X Grid", "Output",
     "mode:s=mode|bilinear padding_mode:s=padding_mode|zeros align_corners:b=align_corners|true"},
    {"split", "split_with_num", "X %axis:int32", "", "num:i32=num"},
    {"rnn", "rnn", "Input @PreState @WeightList SequenceLength %dropout_state:float32",
     "Out -uint8 @State -float32",
     "dropout_prob:f32=dropout_prob|0 is_bidirec:b=is_bidirec|false input_size:i32=input_size "
     "hidden_size:i32=hidden_size num_layers:i32=num_layers|1 mode:s=mode seed:i32=seed|0 "
     "is_test:b=|true"},
};
#undef UNARY
#undef BINARY

/* ---- The writer's state ---- */

/* What the outputs of an op that could not be written hold: using it is no further problem. */
#define POISON INT64_MAX

typedef struct wtype {
  int dt;                    /* pd_dtype; -1: the null type */
  int nd;
  int64_t d[PD_MAX_RANK];
} wtype;

typedef struct undo {
  const char *name;
  int64_t old;               /* 0: the name had no value */
} undo;

typedef struct wr {
  const pd_program *p;
  pd_buf *o;
  pd_strmap cur;             /* var name -> the value it holds now */
  undo *log;                 /* the bindings to take back when a region ends */
  size_t nlog, caplog;
  wtype *types;              /* a value's type, by id */
  size_t ntypes;
  int64_t next_id, next_arg; /* results count up from 1, block arguments down from -1 */
  int region, block;         /* region_K / block_K numbering */
  bool first;                /* no op written yet in the block being written */
  pd_buf probs;
  int nprobs;
  const char *what;
  pd_error *err;
} wr;

static void problem(wr *w, const pd_op_desc *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(wr *w, const pd_op_desc *op, const char *fmt, ...) {
  w->nprobs++;
  pd_loc at = op ? pd_op_user_loc(op) : nowhere;
  if (at.file) pd_buf_printf(&w->probs, "  %s:%d:%d: ", at.file, at.line, at.col);
  else pd_buf_puts(&w->probs, "  ");
  if (op) pd_buf_printf(&w->probs, "%s: ", op->type);
  va_list ap;
  va_start(ap, fmt);
  pd_buf_vprintf(&w->probs, fmt, ap);
  va_end(ap);
  pd_buf_puts(&w->probs, "\n");
}

static wtype *type_of(wr *w, int64_t id) {
  if (id == POISON || id == 0) return NULL;
  size_t k = id > 0 ? 2 * (size_t)id : 2 * (size_t)-id + 1;
  if (k >= w->ntypes) {
    size_t cap = w->ntypes ? w->ntypes : 64;
    while (cap <= k) cap *= 2;
    wtype *t = pd_realloc(w->types, cap * sizeof *t);
    if (!t) return NULL;
    memset(t + w->ntypes, 0, (cap - w->ntypes) * sizeof *t);
    w->types = t, w->ntypes = cap;
  }
  return &w->types[k];
}

static wtype var_type(const pd_var_desc *v) {
  wtype t = {.dt = PD_FP32, .nd = 0};
  if (!v) return t;
  t.dt = (int)v->dtype;
  t.nd = v->ndims < 0 ? 1 : v->ndims;
  for (int i = 0; i < t.nd && i < PD_MAX_RANK; i++) t.d[i] = v->ndims < 0 ? -1 : v->dims[i];
  return t;
}

/* The value var name holds now (0: none). */
static int64_t cur(wr *w, const char *name) {
  pd_strmap_entry *e = name ? pd_strmap_find(&w->cur, name) : NULL;
  return e ? e->val.i : 0;
}

static bool bind(wr *w, const char *name, int64_t id) {
  if (w->nlog == w->caplog) {
    size_t cap = w->caplog ? 2 * w->caplog : 64;
    undo *l = pd_realloc(w->log, cap * sizeof *l);
    if (!l) return false;
    w->log = l, w->caplog = cap;
  }
  bool added;
  pd_strmap_entry *e = pd_strmap_add(&w->cur, name, &added);
  if (!e) return false;
  w->log[w->nlog++] = (undo){name, added ? 0 : e->val.i};
  e->val.i = id;
  return true;
}

/* Take back the bindings made since the log had mark entries. */
static void unbind_to(wr *w, size_t mark) {
  while (w->nlog > mark) {
    undo u = w->log[--w->nlog];
    if (u.old) pd_strmap_find(&w->cur, u.name)->val.i = u.old;
    else pd_strmap_remove(&w->cur, u.name);
  }
}

/* ---- JSON output ---- */

static void jstr(pd_buf *o, const char *s) {
  pd_buf_puts(o, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') pd_buf_printf(o, "\\%c", c);
    else if (c < 0x20) pd_buf_printf(o, "\\u%04x", c);
    else pd_buf_append(o, s, 1);
  }
  pd_buf_puts(o, "\"");
}

static void jnum(pd_buf *o, double v, bool f32) {
  char t[40];
  snprintf(t, sizeof t, f32 ? "%.9g" : "%.17g", v);
  pd_buf_puts(o, t);
  if (!strpbrk(t, ".eEn")) pd_buf_puts(o, ".0");
}

static const char *dt_tag(int dt) {
  switch (dt) {
    case PD_FP32: return "0.t_f32";
    case PD_FP64: return "0.t_f64";
    case PD_FP16: return "0.t_f16";
    case PD_INT32: return "0.t_i32";
    case PD_INT64: return "0.t_i64";
    case PD_INT16: return "0.t_i16";
    case PD_BOOL: return "0.t_bool";
    case PD_UINT8: return "0.t_ui8";
    case PD_INT8: return "0.t_i8";
    default: return NULL;
  }
}

static const char *dt_name(int dt) {
  switch (dt) {
    case PD_FP32: return "float32";
    case PD_FP64: return "float64";
    case PD_FP16: return "float16";
    case PD_INT32: return "int32";
    case PD_INT64: return "int64";
    case PD_INT16: return "int16";
    case PD_BOOL: return "bool";
    case PD_UINT8: return "uint8";
    case PD_INT8: return "int8";
    default: return NULL;
  }
}

static void jtype(pd_buf *o, const wtype *t) {
  const char *tag = t->dt < 0 ? NULL : dt_tag(t->dt);
  if (!tag) {
    pd_buf_puts(o, "{\"#\":\"NULL\"}");
    return;
  }
  pd_buf_printf(o, "{\"#\":\"0.t_dtensor\",\"D\":[{\"#\":\"%s\"},[", tag);
  for (int i = 0; i < t->nd; i++) pd_buf_printf(o, "%s%lld", i ? "," : "", (long long)t->d[i]);
  pd_buf_puts(o, "],\"NCHW\",[],0]}");
}

/* Attributes, appended to a (the body of an "A" list; each starts with a comma after the
 * first). */
static void attr_head(pd_buf *a, const char *kind) {
  if (a->len) pd_buf_puts(a, ",");
  pd_buf_printf(a, "{\"AT\":{\"#\":\"%s\",\"D\":", kind);
}
static void attr_tail(pd_buf *a, const char *name) {
  pd_buf_puts(a, "},\"N\":");
  jstr(a, name);
  pd_buf_puts(a, "}");
}
static void a_bool(pd_buf *a, const char *name, bool v) {
  attr_head(a, "0.a_bool");
  pd_buf_puts(a, v ? "true" : "false");
  attr_tail(a, name);
}
static void a_int(pd_buf *a, const char *name, bool i64, int64_t v) {
  attr_head(a, i64 ? "0.a_i64" : "0.a_i32");
  pd_buf_printf(a, "%lld", (long long)v);
  attr_tail(a, name);
}
static void a_float(pd_buf *a, const char *name, bool f64, double v) {
  attr_head(a, f64 ? "0.a_f64" : "0.a_f32");
  jnum(a, v, !f64);
  attr_tail(a, name);
}
static void a_str(pd_buf *a, const char *name, const char *v) {
  attr_head(a, "0.a_str");
  jstr(a, v);
  attr_tail(a, name);
}
static void a_ints(pd_buf *a, const char *name, bool i64, int n, const int64_t *v) {
  attr_head(a, "0.a_array");
  pd_buf_puts(a, "[");
  for (int i = 0; i < n; i++)
    pd_buf_printf(a, "%s{\"#\":\"%s\",\"D\":%lld}", i ? "," : "", i64 ? "0.a_i64" : "0.a_i32",
                  (long long)v[i]);
  pd_buf_puts(a, "]");
  attr_tail(a, name);
}
static void a_intarray(pd_buf *a, const char *name, int n, const int64_t *v) {
  attr_head(a, "1.a_intarray");
  pd_buf_puts(a, "[");
  for (int i = 0; i < n; i++) pd_buf_printf(a, "%s%lld", i ? "," : "", (long long)v[i]);
  pd_buf_puts(a, "]");
  attr_tail(a, name);
}
static void a_dtype(pd_buf *a, const char *name, int dt) {
  attr_head(a, "1.a_dtype");
  jstr(a, dt < 0 ? "Undefined(ALL_DTYPE)" : dt_name(dt));
  attr_tail(a, name);
}
static void a_place(pd_buf *a, bool cpu) {
  attr_head(a, "1.a_place");
  pd_buf_puts(a, cpu ? "[1,0,\"\"]" : "[0,0,\"\"]");
  attr_tail(a, "place");
}

/* Write one op: name ("1.relu"), operands, results (their types; ids are assigned and returned
 * in out), attributes a (NULL: none). The op's regions, when it has some, follow before
 * op_end: the op is left open. */
static void op_begin(wr *w, const char *name, int nin, const int64_t *in, int nout,
                     const wtype *ot, int64_t *out, const pd_buf *a) {
  pd_buf *o = w->o;
  pd_buf_printf(o, "%s{\"#\":\"%s\",\"A\":[", w->first ? "" : ",", name);
  w->first = false;
  if (a && a->len) pd_buf_append(o, a->data, a->len);
  pd_buf_puts(o, "],\"I\":[");
  for (int i = 0; i < nin; i++) pd_buf_printf(o, "%s{\"%%\":%lld}", i ? "," : "", (long long)in[i]);
  pd_buf_puts(o, "],\"O\":[");
  for (int i = 0; i < nout; i++) {
    int64_t id = w->next_id++;
    wtype *t = type_of(w, id);
    if (t) *t = ot[i];
    if (out) out[i] = id;
    pd_buf_printf(o, "%s{\"%%\":%lld,\"TT\":", i ? "," : "", (long long)id);
    jtype(o, &ot[i]);
    pd_buf_puts(o, "}");
  }
  pd_buf_puts(o, "],\"OA\":[");
  if (nout && strcmp(name, "2.yield") != 0) {
    pd_buf_puts(o, "{\"AT\":{\"#\":\"0.a_array\",\"D\":[");
    for (int i = 0; i < nout; i++) pd_buf_printf(o, "%s{\"#\":\"0.a_bool\",\"D\":false}", i ? "," : "");
    pd_buf_puts(o, "]},\"N\":\"stop_gradient\"}");
  }
  pd_buf_puts(o, "]");
}
static void op_end(wr *w) { pd_buf_puts(w->o, "}"); }

static void emit(wr *w, const char *name, int nin, const int64_t *in, int nout, const wtype *ot,
                 int64_t *out, const pd_buf *a) {
  op_begin(w, name, nin, in, nout, ot, out, a);
  op_end(w);
}

/* A full_int_array (int64) of n values; its id. */
static int64_t int_array(wr *w, int n, const int64_t *v) {
  pd_buf a;
  pd_buf_init(&a);
  a_ints(&a, "value", true, n, v);
  a_dtype(&a, "dtype", PD_INT64);
  a_place(&a, true);
  wtype t = {.dt = PD_INT64, .nd = 1, .d = {n}};
  int64_t id;
  emit(w, "1.full_int_array", 0, NULL, 1, &t, &id, &a);
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  return id;
}

/* A full of shape (nd dims), dtype dt, every element v; its id. */
static int64_t full(wr *w, int nd, const int64_t *shape, int dt, double v) {
  pd_buf a;
  pd_buf_init(&a);
  a_intarray(&a, "shape", nd, shape);
  a_float(&a, "value", true, v);
  a_dtype(&a, "dtype", dt);
  a_place(&a, true);
  wtype t = {.dt = dt, .nd = nd};
  for (int i = 0; i < nd; i++) t.d[i] = shape[i];
  int64_t id;
  emit(w, "1.full", 0, NULL, 1, &t, &id, &a);
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  return id;
}

/* ---- Fluid attributes ---- */

static bool attr_num(const pd_op_desc *op, const char *name, double *v) {
  const pd_attr *a = name && *name ? pd_op_attr(op, name) : NULL;
  if (!a) return false;
  switch (a->type) {
    case PD_ATTR_INT: *v = a->v.i; return true;
    case PD_ATTR_LONG: *v = (double)a->v.l; return true;
    case PD_ATTR_FLOAT: *v = a->v.f; return true;
    case PD_ATTR_FLOAT64: *v = a->v.d; return true;
    case PD_ATTR_BOOLEAN: *v = a->v.b; return true;
    default: return false;
  }
}

/* The attribute's integers (INT, LONG: one; INTS, LONGS: all); -1 when it has none. */
static int attr_ints(const pd_op_desc *op, const char *name, int64_t *v, int max) {
  const pd_attr *a = name && *name ? pd_op_attr(op, name) : NULL;
  if (!a) return -1;
  if (a->type == PD_ATTR_INT || a->type == PD_ATTR_LONG) {
    v[0] = a->type == PD_ATTR_INT ? a->v.i : a->v.l;
    return 1;
  }
  if ((a->type != PD_ATTR_INTS && a->type != PD_ATTR_LONGS) || a->n > max) return -1;
  for (int i = 0; i < a->n; i++) v[i] = a->type == PD_ATTR_INTS ? a->ints[i] : a->longs[i];
  return a->n;
}

/* One attribute of the spec "NAME:KIND=FLUID|DEFAULT" onto a; false (a problem) when neither
 * the Fluid attribute nor a default gives it a value. */
static bool spec_attr(wr *w, const pd_op_desc *op, const char *spec, size_t len, pd_buf *a) {
  char s[160];
  if (len >= sizeof s) len = sizeof s - 1;
  memcpy(s, spec, len);
  s[len] = 0;
  char *kind = strchr(s, ':'), *src = strchr(s, '='), *def = strchr(s, '|');
  if (!kind || !src) return false;
  *kind++ = 0, *src++ = 0;
  if (def) *def++ = 0;
  const char *name = s;
  const pd_attr *fa = *src ? pd_op_attr(op, src) : NULL;
  if (!fa && !def) {
    problem(w, op, "no attribute %s (PaddlePaddle's %s)", src, name);
    return true;
  }
  double num = 0;
  int64_t ints[64];
  if (strcmp(kind, "s") == 0) {
    a_str(a, name, fa && fa->type == PD_ATTR_STRING ? fa->v.s : def ? def : "");
  } else if (strcmp(kind, "af64") == 0) { /* a_array of a_f64 */
    const pd_attr *fl = fa && (fa->type == PD_ATTR_FLOATS || fa->type == PD_ATTR_FLOAT64S) ? fa
                                                                                          : NULL;
    attr_head(a, "0.a_array");
    pd_buf_puts(a, "[");
    for (int i = 0; fl && i < fl->n; i++) {
      double v = fl->type == PD_ATTR_FLOATS ? fl->floats[i] : fl->doubles[i];
      pd_buf_printf(a, "%s{\"#\":\"0.a_f64\",\"D\":", i ? "," : "");
      jnum(a, isfinite(v) ? v : 0, false);
      pd_buf_puts(a, "}");
      if (!isfinite(v)) problem(w, op, "attribute %s is not finite", src);
    }
    pd_buf_puts(a, "]");
    attr_tail(a, name);
  } else if (kind[0] == 'a') { /* ai32, ai64 */
    int n = fa ? attr_ints(op, src, ints, 64) : 0;
    if (n < 0) n = 0;
    if (!fa && def && *def) ints[n++] = strtoll(def, NULL, 10);
    a_ints(a, name, strcmp(kind, "ai64") == 0, n, ints);
  } else if (strcmp(kind, "dt") == 0) {
    int dt = fa && attr_num(op, src, &num) ? (int)num : (int)strtol(def ? def : "-1", NULL, 10);
    if (dt >= 0 && !dt_name(dt)) problem(w, op, "attribute %s: dtype %d has no PIR name", src, dt);
    a_dtype(a, name, dt);
  } else {
    if (!fa || !attr_num(op, src, &num)) {
      if (!def) {
        problem(w, op, "attribute %s is not a number", src);
        return true;
      }
      num = strcmp(def, "true") == 0 ? 1 : strcmp(def, "false") == 0 ? 0 : strtod(def, NULL);
    }
    if (strcmp(kind, "b") == 0) a_bool(a, name, num != 0);
    else if (strcmp(kind, "i32") == 0) a_int(a, name, false, (int64_t)num);
    else if (strcmp(kind, "i64") == 0) a_int(a, name, true, (int64_t)num);
    else if (strcmp(kind, "f32") == 0 || strcmp(kind, "f64") == 0) {
      if (!isfinite(num)) problem(w, op, "attribute %s is not finite", src);
      a_float(a, name, strcmp(kind, "f64") == 0, isfinite(num) ? num : 0);
    } else return false;
  }
  return true;
}

/* ---- Ops ---- */

static const wmap *find_map(const char *fluid) {
  for (size_t i = 0; i < sizeof wmaps / sizeof *wmaps; i++)
    if (strcmp(wmaps[i].fluid, fluid) == 0) return &wmaps[i];
  return NULL;
}

static const pd_var_desc *find_var(wr *w, const pd_block *b, const char *name) {
  (void)w;
  return name ? pd_block_find_var(b, name) : NULL;
}

/* The value of an input var; a problem (and 0) when it has none. */
static int64_t use(wr *w, const pd_op_desc *op, const char *name) {
  int64_t id = cur(w, name);
  if (!id) problem(w, op, "input %s has no value here", name);
  return id == POISON ? 0 : id;
}

/* The outputs of an op that could not be written: their later uses are no problem of theirs. */
static void poison(wr *w, const pd_op_desc *op) {
  for (int i = 0; i < op->noutputs; i++)
    for (int k = 0; k < op->outputs[i].nargs; k++)
      if (!bind(w, op->outputs[i].args[k], POISON)) w->o->oom = true;
}

static int dtype_by_name(const char *s) {
  for (int dt = 0; dt <= PD_INT8; dt++)
    if (dt_name(dt) && strcmp(dt_name(dt), s) == 0) return dt;
  return -1;
}

/* A builtin.combine of the slot's vars; its id (0 when the slot is absent). */
static int64_t combine(wr *w, const pd_op_desc *op, const pd_slot *s) {
  if (!s || !s->nargs) return 0;
  int64_t in[64];
  int n = s->nargs < 64 ? s->nargs : 64;
  pd_buf o;
  pd_buf_init(&o);
  pd_buf_puts(&o, "[");
  for (int i = 0; i < n; i++) {
    in[i] = use(w, op, s->args[i]);
    wtype *t = in[i] ? type_of(w, in[i]) : NULL;
    wtype z = {.dt = PD_FP32};
    if (i) pd_buf_puts(&o, ",");
    jtype(&o, t ? t : &z);
  }
  pd_buf_puts(&o, "]");
  int64_t id = w->next_id++;
  pd_buf *b = w->o;
  pd_buf_printf(b, "%s{\"#\":\"0.combine\",\"A\":[],\"I\":[", w->first ? "" : ",");
  w->first = false;
  for (int i = 0; i < n; i++) pd_buf_printf(b, "%s{\"%%\":%lld}", i ? "," : "", (long long)in[i]);
  pd_buf_printf(b, "],\"O\":[{\"%%\":%lld,\"TT\":{\"#\":\"0.t_vec\",\"D\":", (long long)id);
  pd_buf_append(b, o.data ? o.data : "", o.len);
  pd_buf_puts(b, "}}],\"OA\":[]}");
  b->oom |= o.oom;
  pd_buf_free(&o);
  return id;
}

/* A vector result (id) split into the slot's vars (builtin.split), each bound to its name. */
static void split(wr *w, int64_t id, const pd_block *b, const pd_slot *s) {
  if (!s || !s->nargs) return;
  wtype t[64];
  int n = s->nargs < 64 ? s->nargs : 64;
  for (int i = 0; i < n; i++) t[i] = var_type(find_var(w, b, s->args[i]));
  int64_t out[64];
  emit(w, "0.split", 1, &id, n, t, out, NULL);
  for (int i = 0; i < n; i++)
    if (!bind(w, s->args[i], out[i])) w->o->oom = true;
}

static bool write_block(wr *w, const pd_block *b);

/* The table's ops. */
static void table_op(wr *w, const pd_block *b, const pd_op_desc *op, const wmap *m) {
  int64_t in[8];
  int nin = 0;
  const char *p = m->ins;
  const pd_slot *list_out = NULL;
  while (*p && nin < 8) {
    size_t len = strcspn(p, " ");
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)len, p);
    p += len + (p[len] == ' ');
    if (strcmp(tok, "-") == 0) {
      in[nin++] = 0;
    } else if (tok[0] == '#') {
      /* #ATTR|SLOT|LIST: the attribute unless the op gives it at run time, as the tensor SLOT
       * or the tensors LIST */
      char *slot = strchr(tok, '|'), *list = NULL;
      if (slot) *slot++ = 0, list = strchr(slot, '|');
      if (list) *list++ = 0;
      const char *sv = slot ? pd_op_input1(op, slot) : NULL;
      const pd_slot *lv = list ? pd_op_input(op, list) : NULL;
      if (sv || (lv && lv->nargs)) {
        in[nin++] = sv ? use(w, op, sv) : combine(w, op, lv);
        continue;
      }
      int64_t v[PD_MAX_RANK * 2 + 8];
      int n = attr_ints(op, tok + 1, v, (int)(sizeof v / sizeof *v));
      if (n < 0) n = 0; /* reduce_all: an empty list */
      if (strcmp(tok + 1, "dim") == 0) {
        const pd_attr *ra = pd_op_attr(op, "reduce_all");
        if (ra && ra->type == PD_ATTR_BOOLEAN && ra->v.b) n = 0;
      }
      in[nin++] = int_array(w, n, v);
    } else if (tok[0] == '%') {
      char *c = strchr(tok, ':');
      if (c) *c++ = 0;
      double v = 0;
      if (!attr_num(op, tok + 1, &v) && strcmp(tok + 1, "dropout_state") != 0 &&
          !(strcmp(tok + 1, "axis") == 0 && strcmp(op->type, "concat") == 0))
        problem(w, op, "no attribute %s", tok + 1);
      int dt = dtype_by_name(c ? c : "float32");
      int64_t one = 1;
      in[nin++] = full(w, strcmp(tok + 1, "dropout_state") ? 1 : 0, &one, dt, v);
    } else if (tok[0] == '@') {
      in[nin++] = combine(w, op, pd_op_input(op, tok + 1));
    } else {
      const char *v = pd_op_input1(op, tok);
      in[nin++] = v ? use(w, op, v) : 0;
    }
  }
  /* results */
  wtype ot[8];
  const char *oslot[8] = {0};
  int nout = 0;
  p = m->outs;
  while (*p && nout < 8) {
    size_t len = strcspn(p, " ");
    char tok[64];
    snprintf(tok, sizeof tok, "%.*s", (int)len, p);
    p += len + (p[len] == ' ');
    if (tok[0] == '-') {
      const wtype *t0 = in[0] ? type_of(w, in[0]) : NULL;
      wtype t = t0 ? *t0 : (wtype){.dt = PD_FP32, .nd = 1, .d = {-1}};
      t.dt = strcmp(tok + 1, "null") == 0 ? -1 : dtype_by_name(tok + 1);
      ot[nout++] = t;
    } else if (tok[0] == '@') {
      list_out = pd_op_output(op, tok + 1);
      oslot[nout] = tok[0] == '@' ? "@" : NULL;
      ot[nout++] = (wtype){.dt = PD_FP32};
    } else {
      const char *v = pd_op_output1(op, tok);
      oslot[nout] = v;
      ot[nout++] = v ? var_type(find_var(w, b, v)) : (wtype){.dt = PD_FP32, .nd = 1, .d = {-1}};
    }
  }
  if (!*m->outs) { /* split: a vector of its Out vars */
    list_out = pd_op_output(op, "Out");
    oslot[0] = "@";
    nout = 1;
  }
  pd_buf a;
  pd_buf_init(&a);
  for (p = m->attrs; *p;) {
    size_t len = strcspn(p, " ");
    if (len && !spec_attr(w, op, p, len, &a)) problem(w, op, "bad attribute spec (a bug)");
    p += len + (p[len] == ' ');
  }
  char name[80];
  snprintf(name, sizeof name, "1.%s", m->pir);
  int64_t out[8];
  bool vec = false;
  for (int i = 0; i < nout; i++) vec |= oslot[i] && strcmp(oslot[i], "@") == 0;
  if (!vec) {
    emit(w, name, nin, in, nout, ot, out, &a);
  } else { /* a vector result: its type lists the elements' */
    pd_buf *o = w->o;
    pd_buf_printf(o, "%s{\"#\":\"%s\",\"A\":[", w->first ? "" : ",", name);
    w->first = false;
    pd_buf_append(o, a.data ? a.data : "", a.len);
    pd_buf_puts(o, "],\"I\":[");
    for (int i = 0; i < nin; i++) pd_buf_printf(o, "%s{\"%%\":%lld}", i ? "," : "", (long long)in[i]);
    pd_buf_puts(o, "],\"O\":[");
    for (int i = 0; i < nout; i++) {
      out[i] = w->next_id++;
      wtype *t = type_of(w, out[i]);
      if (t) *t = ot[i];
      pd_buf_printf(o, "%s{\"%%\":%lld,\"TT\":", i ? "," : "", (long long)out[i]);
      if (oslot[i] && strcmp(oslot[i], "@") == 0) {
        pd_buf_puts(o, "{\"#\":\"0.t_vec\",\"D\":[");
        for (int k = 0; list_out && k < list_out->nargs; k++) {
          wtype et = var_type(find_var(w, b, list_out->args[k]));
          if (k) pd_buf_puts(o, ",");
          jtype(o, &et);
        }
        pd_buf_puts(o, "]}");
      } else {
        jtype(o, &ot[i]);
      }
      pd_buf_puts(o, "}");
    }
    pd_buf_puts(o, "],\"OA\":[]}");
  }
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  for (int i = 0; i < nout; i++) {
    if (!oslot[i]) continue;
    if (strcmp(oslot[i], "@") == 0) split(w, out[i], b, list_out);
    else if (!bind(w, oslot[i], out[i])) w->o->oom = true;
  }
}

/* elementwise ops with Fluid's axis: Y's dims line up with X's from axis on; unsqueeze Y to
 * X's rank first (numpy broadcasting aligns the trailing dims). */
static void elementwise(wr *w, const pd_block *b, const pd_op_desc *op, const wmap *m) {
  double axis = -1;
  attr_num(op, "axis", &axis);
  const pd_var_desc *x = find_var(w, b, pd_op_input1(op, "X"));
  const pd_var_desc *y = find_var(w, b, pd_op_input1(op, "Y"));
  if (axis < 0 || !x || !y || x->ndims < 0 || y->ndims < 0 || x->ndims <= y->ndims ||
      (int)axis + y->ndims == x->ndims) {
    table_op(w, b, op, m);
    return;
  }
  int64_t axes[PD_MAX_RANK];
  int n = 0;
  for (int i = 0; i < (int)axis; i++) axes[n++] = i;
  for (int i = (int)axis + y->ndims; i < x->ndims; i++) axes[n++] = i;
  int64_t yv = use(w, op, y->name);
  int64_t in[2] = {yv, int_array(w, n, axes)};
  wtype t = var_type(y);
  t.nd = x->ndims;
  for (int i = 0, k = 0; i < x->ndims; i++) t.d[i] = i < (int)axis || k >= y->ndims ? 1 : y->dims[k++];
  int64_t uy;
  emit(w, "1.unsqueeze", 2, in, 1, &t, &uy, NULL);
  int64_t xy[2] = {use(w, op, x->name), uy};
  const char *o = pd_op_output1(op, "Out");
  wtype ot = var_type(find_var(w, b, o));
  char name[80];
  snprintf(name, sizeof name, "1.%s", m->pir);
  int64_t out;
  emit(w, name, 2, xy, 1, &ot, &out, NULL);
  if (o && !bind(w, o, out)) w->o->oom = true;
}

/* mul: X flattened to x_num_col_dims + 1 dims when it has more (reshape with 0s), times Y
 * (2-D) as matmul. */
static void mul(wr *w, const pd_block *b, const pd_op_desc *op) {
  double xk = 1, yk = 1;
  attr_num(op, "x_num_col_dims", &xk);
  attr_num(op, "y_num_col_dims", &yk);
  const pd_var_desc *x = find_var(w, b, pd_op_input1(op, "X"));
  const pd_var_desc *y = find_var(w, b, pd_op_input1(op, "Y"));
  const char *o = pd_op_output1(op, "Out");
  if (!x || !y || !o || x->ndims < 0 || y->ndims != 2 || yk != 1 || xk < 1 || xk >= x->ndims) {
    problem(w, op, "a mul pdlang writes only with a 2-D Y and x_num_col_dims < rank(X)");
    poison(w, op);
    return;
  }
  int64_t xv = use(w, op, x->name);
  if ((int)xk + 1 < x->ndims) {
    int64_t shape[PD_MAX_RANK];
    for (int i = 0; i < (int)xk; i++) shape[i] = 0;
    shape[(int)xk] = -1;
    int64_t in[2] = {xv, int_array(w, (int)xk + 1, shape)};
    wtype t = var_type(x);
    t.nd = (int)xk + 1, t.d[(int)xk] = -1;
    emit(w, "1.reshape", 2, in, 1, &t, &xv, NULL);
  }
  pd_buf a;
  pd_buf_init(&a);
  a_bool(&a, "transpose_x", false);
  a_bool(&a, "transpose_y", false);
  int64_t in[2] = {xv, use(w, op, y->name)}, out;
  wtype ot = var_type(find_var(w, b, o));
  emit(w, "1.matmul", 2, in, 1, &ot, &out, &a);
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  if (!bind(w, o, out)) w->o->oom = true;
}

/* lookup_table (v1): ids [..., 1] -> [..., D]: embedding, then squeeze the 1. */
static void lookup_v1(wr *w, const pd_block *b, const pd_op_desc *op) {
  const char *o = pd_op_output1(op, "Out");
  int64_t in[2] = {use(w, op, pd_op_input1(op, "Ids")), use(w, op, pd_op_input1(op, "W"))};
  wtype ot = var_type(find_var(w, b, o));
  wtype mt = ot;
  if (mt.nd < PD_MAX_RANK) {
    mt.d[mt.nd] = mt.nd ? mt.d[mt.nd - 1] : -1;
    if (mt.nd) mt.d[mt.nd - 1] = 1;
    mt.nd++;
  }
  pd_buf a;
  pd_buf_init(&a);
  double pad = -1;
  attr_num(op, "padding_idx", &pad);
  a_int(&a, "padding_idx", true, (int64_t)pad);
  a_bool(&a, "sparse", false);
  int64_t e, out;
  emit(w, "1.embedding", 2, in, 1, &mt, &e, &a);
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  int64_t m2 = -2, sq[2] = {e, int_array(w, 1, &m2)};
  emit(w, "1.squeeze", 2, sq, 1, &ot, &out, NULL);
  if (o && !bind(w, o, out)) w->o->oom = true;
}

static void fill_constant(wr *w, const pd_block *b, const pd_op_desc *op) {
  const char *o = pd_op_output1(op, "Out");
  const char *st = pd_op_input1(op, "ShapeTensor");
  if ((pd_op_input(op, "ShapeTensorList") && pd_op_input(op, "ShapeTensorList")->nargs) ||
      pd_op_input1(op, "ValueTensor")) {
    problem(w, op, "a shape given as a list of tensors or a value as a tensor: pdlang writes "
            "a shape tensor or constant ones only");
    poison(w, op);
    return;
  }
  if (st) { /* full_with_tensor(value, shape) */
    double v = 0, dt = PD_FP32;
    attr_num(op, "value", &v);
    attr_num(op, "dtype", &dt);
    const pd_attr *sv = pd_op_attr(op, "str_value");
    if (sv && sv->type == PD_ATTR_STRING && sv->v.s[0]) v = strtod(sv->v.s, NULL);
    if (!dt_name((int)dt)) problem(w, op, "dtype %d has no PIR name", (int)dt);
    int64_t one = 1;
    int64_t in[2] = {full(w, 1, &one, (int)dt, isfinite(v) ? v : 0), use(w, op, st)}, id;
    pd_buf a;
    pd_buf_init(&a);
    a_dtype(&a, "dtype", (int)dt);
    wtype t = var_type(find_var(w, b, o));
    emit(w, "1.full_with_tensor", 2, in, 1, &t, &id, &a);
    w->o->oom |= a.oom;
    pd_buf_free(&a);
    if (o && !bind(w, o, id)) w->o->oom = true;
    return;
  }
  int64_t shape[PD_MAX_RANK];
  int n = attr_ints(op, "shape", shape, PD_MAX_RANK);
  if (n < 0) n = 0;
  double v = 0, dt = PD_FP32;
  attr_num(op, "value", &v);
  const pd_attr *sv = pd_op_attr(op, "str_value");
  if (sv && sv->type == PD_ATTR_STRING && sv->v.s[0]) v = strtod(sv->v.s, NULL);
  attr_num(op, "dtype", &dt);
  if (!dt_name((int)dt)) problem(w, op, "dtype %d has no PIR name", (int)dt);
  if (!isfinite(v)) problem(w, op, "a value that is not finite");
  int64_t id = full(w, n, shape, (int)dt, isfinite(v) ? v : 0);
  (void)b;
  if (o && !bind(w, o, id)) w->o->oom = true;
}

/* assign_value: its values as Scalars of the dtype's kind (fp32_values for float32 and
 * float64, int32_values, int64_values, bool_values). */
static void assign_value(wr *w, const pd_block *b, const pd_op_desc *op) {
  const char *o = pd_op_output1(op, "Out");
  double dtn = PD_FP32;
  attr_num(op, "dtype", &dtn);
  int dt = (int)dtn;
  int64_t shape[PD_MAX_RANK];
  int n = attr_ints(op, "shape", shape, PD_MAX_RANK);
  const char *list = dt == PD_FP32 || dt == PD_FP64 ? "fp32_values"
                     : dt == PD_INT32              ? "int32_values"
                     : dt == PD_INT64              ? "int64_values"
                     : dt == PD_BOOL               ? "bool_values"
                                                   : NULL;
  const pd_attr *va = list ? pd_op_attr(op, list) : NULL;
  if (!va || n < 0 || !dt_name(dt)) {
    problem(w, op, "no shape, dtype or values PaddlePaddle's assign_value takes");
    poison(w, op);
    return;
  }
  const char *kind = dt == PD_FP32 ? "0.a_f32" : dt == PD_FP64 ? "0.a_f64" : dt == PD_INT32 ? "0.a_i32"
                     : dt == PD_INT64 ? "0.a_i64" : "0.a_bool";
  pd_buf a;
  pd_buf_init(&a);
  a_ints(&a, "shape", false, n, shape);
  a_dtype(&a, "dtype", dt);
  attr_head(&a, "0.a_array");
  pd_buf_puts(&a, "[");
  for (int i = 0; i < va->n; i++) {
    pd_buf_printf(&a, "%s{\"#\":\"%s\",\"D\":", i ? "," : "", kind);
    if (va->type == PD_ATTR_FLOATS) jnum(&a, va->floats[i], dt == PD_FP32);
    else if (va->type == PD_ATTR_INTS) pd_buf_printf(&a, "%d", (int)va->ints[i]);
    else if (va->type == PD_ATTR_LONGS) pd_buf_printf(&a, "%lld", (long long)va->longs[i]);
    else if (va->type == PD_ATTR_BOOLEANS) pd_buf_puts(&a, va->bools[i] ? "true" : "false");
    pd_buf_puts(&a, "}");
  }
  pd_buf_puts(&a, "]");
  attr_tail(&a, "values");
  a_place(&a, false);
  wtype t = var_type(find_var(w, b, o));
  int64_t id;
  emit(w, "1.assign_value", 0, NULL, 1, &t, &id, &a);
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  if (o && !bind(w, o, id)) w->o->oom = true;
}

/* Whether Fluid's matmul of X and Y (vm/oplist.h) is pd_op.matmul's product (NumPy's): not where
 * a 1-D operand is transposed (NumPy's ignores that) or both are batched with leading dims
 * declared differently (Fluid's pairs the matrices by their count: [2, 3, M, K] by [6, K, N]).
 * A dim declared -1 on both sides is taken for the same one (a model's batch, as BERT's
 * attention heads have it). */
static bool matmul_v1_as_numpy(const pd_var_desc *x, const pd_var_desc *y, bool tx, bool ty) {
  if (!x || !y || x->ndims < 1 || y->ndims < 1) return false;
  if ((tx && x->ndims == 1) || (ty && y->ndims == 1)) return false;
  if (x->ndims <= 2 || y->ndims <= 2) return true;
  if (x->ndims != y->ndims) return false;
  for (int i = 0; i + 2 < x->ndims; i++)
    if (x->dims[i] != y->dims[i]) return false;
  return true;
}

/* matmul (v1): matmul, then scale by alpha when it is not 1. */
static void matmul_v1(wr *w, const pd_block *b, const pd_op_desc *op) {
  double tx = 0, ty = 0, alpha = 1;
  attr_num(op, "transpose_X", &tx);
  attr_num(op, "transpose_Y", &ty);
  attr_num(op, "alpha", &alpha);
  if (!matmul_v1_as_numpy(find_var(w, b, pd_op_input1(op, "X")),
                          find_var(w, b, pd_op_input1(op, "Y")), tx != 0, ty != 0))
    problem(w, op, "no pd_op.matmul computes this product: a 1-D operand transposed, or two "
            "batches declared with other dims (Fluid's matmul pairs their matrices by count)");
  const char *o = pd_op_output1(op, "Out");
  int64_t in[2] = {use(w, op, pd_op_input1(op, "X")), use(w, op, pd_op_input1(op, "Y"))}, out;
  wtype ot = var_type(find_var(w, b, o));
  pd_buf a;
  pd_buf_init(&a);
  a_bool(&a, "transpose_x", tx != 0);
  a_bool(&a, "transpose_y", ty != 0);
  emit(w, "1.matmul", 2, in, 1, &ot, &out, &a);
  pd_buf_clear(&a);
  if (alpha != 1) {
    int64_t one = 1, s[2] = {out, full(w, 1, &one, PD_FP32, alpha)};
    a_float(&a, "bias", false, 0);
    a_bool(&a, "bias_after_scale", true);
    emit(w, "1.scale", 2, s, 1, &ot, &out, &a);
  }
  w->o->oom |= a.oom;
  pd_buf_free(&a);
  if (o && !bind(w, o, out)) w->o->oom = true;
}

/* Open a region of one block (its arguments nargs, types at); ops follow, then
 * region_close. */
static void region_open(wr *w, int nargs, const wtype *at, int64_t *args) {
  pd_buf *o = w->o;
  pd_buf_printf(o, "{\"#\":\"region_%d\",\"blocks\":[{\"#\":\"block_%d\",\"args\":[", w->region++,
                w->block++);
  for (int i = 0; i < nargs; i++) {
    int64_t id = w->next_arg--;
    wtype *t = type_of(w, id);
    if (t) *t = at[i];
    args[i] = id;
    pd_buf_printf(o, "%s{\"#\":%lld,\"TT\":", i ? "," : "", (long long)id);
    jtype(o, &at[i]);
    pd_buf_puts(o, "}");
  }
  pd_buf_puts(o, "],\"ops\":[");
  w->first = true;
}
static void region_close(wr *w) { pd_buf_puts(w->o, "]}]}"); }

static void yield(wr *w, int n, const int64_t *vals) {
  emit(w, "2.yield", n, vals, 0, NULL, NULL, NULL);
}

static const pd_block *sub_block(wr *w, const pd_op_desc *op) {
  const pd_attr *sb = pd_op_attr(op, "sub_block");
  const pd_block *b = sb && sb->type == PD_ATTR_BLOCK ? pd_program_block(w->p, sb->v.i) : NULL;
  if (!b) problem(w, op, "no sub_block");
  return b;
}

/* conditional_block with a scalar condition: pd_op.if. */
static void cond_block(wr *w, const pd_block *b, const pd_op_desc *op) {
  const pd_attr *sc = pd_op_attr(op, "is_scalar_condition");
  const pd_slot *cs = pd_op_input(op, "Cond"), *os = pd_op_output(op, "Out");
  const pd_block *body = sub_block(w, op);
  if (!sc || sc->type != PD_ATTR_BOOLEAN || !sc->v.b || !cs || cs->nargs != 1) {
    problem(w, op, "an if over a batch's rows: PaddlePaddle 3's if takes one condition");
    poison(w, op);
    return;
  }
  int n = os ? os->nargs : 0;
  if (n > 64) problem(w, op, "more than 64 outputs");
  if (!body || n > 64) {
    poison(w, op);
    return;
  }
  int64_t c = use(w, op, cs->args[0]), before[64] = {0}, res[64] = {0};
  wtype t[64] = {{0}};
  for (int i = 0; i < n; i++) {
    before[i] = cur(w, os->args[i]);
    t[i] = var_type(find_var(w, body, os->args[i]));
  }
  op_begin(w, "1.if", 1, &c, n, t, res, NULL);
  pd_buf_puts(w->o, ",\"regions\":[");
  /* true: the block, then its outputs' values */
  size_t mark = w->nlog;
  int64_t dummy;
  region_open(w, 0, NULL, &dummy);
  write_block(w, body);
  int64_t y[64] = {0};
  for (int i = 0; i < n; i++) {
    y[i] = cur(w, os->args[i]);
    if (!y[i]) problem(w, op, "output %s has no value in the block", os->args[i]);
  }
  yield(w, n, y);
  region_close(w);
  unbind_to(w, mark);
  pd_buf_puts(w->o, ",");
  /* false: the values before (zeros where there was none) */
  region_open(w, 0, NULL, &dummy);
  for (int i = 0; i < n; i++) {
    y[i] = before[i];
    if (!y[i]) {
      int64_t shape[PD_MAX_RANK];
      for (int k = 0; k < t[i].nd; k++) shape[k] = t[i].d[k] < 0 ? 1 : t[i].d[k];
      y[i] = full(w, t[i].nd, shape, t[i].dt, 0);
    }
  }
  yield(w, n, y);
  region_close(w);
  pd_buf_puts(w->o, "]");
  op_end(w);
  w->first = false;
  for (int i = 0; i < n; i++)
    if (!bind(w, os->args[i], res[i])) w->o->oom = true;
}

/* while: pd_op.while over the condition and the loop-carried vars (its Out vars with a value
 * before the loop). */
static void while_op(wr *w, const pd_block *b, const pd_op_desc *op) {
  (void)b;
  const pd_slot *os = pd_op_output(op, "Out");
  const char *cname = pd_op_input1(op, "Condition");
  const pd_block *body = sub_block(w, op);
  if (!body || !cname) {
    if (!cname) problem(w, op, "no Condition");
    poison(w, op);
    return;
  }
  const char *names[65];
  int64_t in[65] = {0}, args[65] = {0}, res[65] = {0};
  wtype t[65] = {{0}};
  int n = 0;
  in[0] = use(w, op, cname);
  for (int i = 0; os && i < os->nargs; i++) {
    const char *v = os->args[i];
    if (strcmp(v, cname) == 0 || !cur(w, v)) continue;
    bool dup = false;
    for (int k = 0; k < n; k++) dup |= strcmp(names[k], v) == 0;
    if (dup) continue;
    if (n == 64) {
      problem(w, op, "more than 64 loop-carried vars");
      poison(w, op);
      return;
    }
    names[n] = v;
    in[n + 1] = cur(w, v);
    wtype *vt = type_of(w, in[n + 1]);
    t[n] = vt ? *vt : var_type(find_var(w, body, v));
    n++;
  }
  op_begin(w, "1.while", n + 1, in, n, t, res, NULL);
  pd_buf_puts(w->o, ",\"regions\":[");
  size_t mark = w->nlog;
  region_open(w, n, t, args);
  for (int i = 0; i < n; i++)
    if (!bind(w, names[i], args[i])) w->o->oom = true;
  write_block(w, body);
  int64_t y[65] = {0};
  y[0] = cur(w, cname);
  for (int i = 0; i < n; i++) y[i + 1] = cur(w, names[i]);
  yield(w, n + 1, y);
  region_close(w);
  unbind_to(w, mark);
  pd_buf_puts(w->o, "]");
  op_end(w);
  w->first = false;
  for (int i = 0; i < n; i++)
    if (!bind(w, names[i], res[i])) w->o->oom = true;
}

static void write_op(wr *w, const pd_block *b, const pd_op_desc *op) {
  const char *t = op->type;
  if (strcmp(t, "feed") == 0) {
    const char *o = pd_op_output1(op, "Out");
    const pd_var_desc *v = find_var(w, b, o);
    if (!v) {
      problem(w, op, "no output var");
      return;
    }
    wtype vt = var_type(v);
    if (!dt_name(vt.dt)) problem(w, op, "input %s: dtype %s has no PIR name", o,
                                 pd_dtype_name(v->dtype));
    pd_buf a;
    pd_buf_init(&a);
    a_str(&a, "name", o);
    a_intarray(&a, "shape", vt.nd, vt.d);
    a_dtype(&a, "dtype", vt.dt);
    a_place(&a, false);
    int64_t id;
    emit(w, "1.data", 0, NULL, 1, &vt, &id, &a);
    w->o->oom |= a.oom;
    pd_buf_free(&a);
    if (!bind(w, o, id)) w->o->oom = true;
  } else if (strcmp(t, "fetch") == 0) {
    const char *x = pd_op_input1(op, "X");
    int64_t in = use(w, op, x), out;
    double col = 0;
    attr_num(op, "col", &col);
    pd_buf a;
    pd_buf_init(&a);
    a_str(&a, "name", x ? x : "?");
    a_int(&a, "col", false, (int64_t)col);
    wtype *it = in ? type_of(w, in) : NULL, z = {.dt = PD_FP32};
    emit(w, "1.fetch", 1, &in, 1, it ? it : &z, &out, &a);
    w->o->oom |= a.oom;
    pd_buf_free(&a);
  } else if (strcmp(t, "mul") == 0) {
    mul(w, b, op);
  } else if (strcmp(t, "matmul") == 0) {
    matmul_v1(w, b, op);
  } else if (strcmp(t, "lookup_table") == 0) {
    lookup_v1(w, b, op);
  } else if (strcmp(t, "fill_constant") == 0) {
    fill_constant(w, b, op);
  } else if (strcmp(t, "assign_value") == 0) {
    assign_value(w, b, op);
  } else if (strcmp(t, "conditional_block") == 0) {
    cond_block(w, b, op);
  } else if (strcmp(t, "while") == 0) {
    while_op(w, b, op);
  } else {
    const wmap *m = find_map(t);
    if (!m) {
      problem(w, op, "pdlang has no PIR op for it (save the model as .pdmodel)");
      poison(w, op);
    }
    else if (strncmp(t, "elementwise_", 12) == 0) elementwise(w, b, op, m);
    else table_op(w, b, op, m);
  }
}

static bool write_block(wr *w, const pd_block *b) {
  for (int i = 0; i < b->nops; i++) write_op(w, b, b->ops[i]);
  return true;
}

/* Whether Paddle's writer would make the op (a table row or one of the ops above). */
bool pd_pir_writes_op(const char *type) {
  static const char *const special[] = {"feed",          "fetch",        "mul",
                                        "matmul",        "lookup_table", "fill_constant",
                                        "assign_value",  "conditional_block", "while"};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    if (strcmp(special[i], type) == 0) return true;
  return find_map(type) != NULL;
}

pd_status pd_pir_to_json(const pd_program *p, int nparams, const char *const *params,
                         const char *what, pd_buf *out, pd_error *err) {
  wr w = {.p = p, .o = out, .next_id = 1, .next_arg = -1, .region = 1, .block = 1,
          .what = what, .err = err};
  pd_strmap_init(&w.cur, false);
  pd_buf_init(&w.probs);
  const pd_block *b0 = p->blocks[0];
  pd_buf_puts(out, "{\"base_code\":{\"magic\":\"pir\",\"trainable\":true,\"version\":4},"
                   "\"program\":{\"regions\":[{\"#\":\"region_0\",\"blocks\":[{\"#\":\"block_0\","
                   "\"args\":[],\"ops\":[");
  w.first = true;
  for (int i = 0; i < nparams; i++) { /* the parameters, in the .pdiparams order */
    const pd_var_desc *v = pd_block_find_var_local(b0, params[i]);
    if (!v) {
      problem(&w, NULL, "parameter %s is not a var of the program", params[i]);
      continue;
    }
    int64_t id = w.next_id++;
    wtype t = var_type(v), *tt = type_of(&w, id);
    if (tt) *tt = t;
    pd_buf_printf(out, "%s{\"#\":\"p\",\"A\":[0,1,%d,", w.first ? "" : ",", v->stop_gradient ? 0 : 1);
    w.first = false;
    jstr(out, v->name);
    pd_buf_printf(out, "],\"DA\":[],\"O\":{\"%%\":%lld,\"TT\":", (long long)id);
    jtype(out, &t);
    pd_buf_printf(out, "},\"OA\":[1,%d,1],\"QA\":[]}", v->stop_gradient ? 1 : 0);
    if (!bind(&w, v->name, id)) out->oom = true;
  }
  write_block(&w, b0);
  pd_buf_puts(out, "]}]}]}}\n");
  pd_status st = PD_OK;
  if (out->oom || w.probs.oom) st = pd_error_set(err, PD_ENOMEM, nowhere, "out of memory");
  else if (w.nprobs)
    st = pd_error_set(err, PD_EUNSUPPORTED, nowhere,
                      "%s: pdlang cannot write this program as a PaddlePaddle 3 PIR program "
                      "(%d problem%s):\n%.*s", what, w.nprobs, w.nprobs == 1 ? "" : "s",
                      (int)(w.probs.len ? w.probs.len - 1 : 0), w.probs.data ? w.probs.data : "");
  pd_strmap_free(&w.cur);
  pd_free(w.log);
  pd_free(w.types);
  pd_buf_free(&w.probs);
  return st;
}
