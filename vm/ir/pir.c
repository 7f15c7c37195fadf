/* pir.c -- PaddlePaddle 3's PIR JSON programs (vm/ir/pir.h): a small JSON parser (the tree of
 * one file, every node on the heap, offsets kept for errors), then the lowering of the ops of
 * the program's top block to Fluid's ops. The layout is Paddle's serializer's
 * (paddle/fluid/pir/serialize_deserialize): an op is {"#": NAME, "I": inputs, "O": outputs,
 * "A": attributes, "OA": output attributes}; NAME is "p" (builtin.parameter) or "D.op" where D
 * is the dialect's number (0 builtin, 1 pd_op); a value is {"%": id} (0: none), an output
 * {"%": id, "TT": type}; an attribute {"N": name, "AT": {"#": "D.a_kind", "D": data}}. Inputs
 * that pd_op takes as tensors and Fluid as attributes (a reshape's shape, a pool's kernel size,
 * a dropout's probability, a scale) are folded from the full / full_int_array that made them. */
#include "config.h"
#include "vm/ir/pir.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pd_loc nowhere = {0};

/* ---- JSON ---- */

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
#define J_MAX_DEPTH 512

typedef struct jv {
  int kind;
  size_t off;      /* byte offset of the value in the text */
  bool b;
  double num;
  bool isint;      /* a number written without fraction or exponent, fitting int64 */
  int64_t i;
  char *s;         /* J_STR */
  int n;           /* J_ARR, J_OBJ: elements */
  struct jv *items;
  char **keys;     /* J_OBJ */
} jv;

typedef struct jparser {
  const char *t;
  size_t len, pos;
  const char *what;
  pd_error *err;
} jparser;

static void jv_free(jv *v) {
  if (!v) return;
  pd_free(v->s);
  for (int i = 0; i < v->n; i++) {
    jv_free(&v->items[i]);
    if (v->keys) pd_free(v->keys[i]);
  }
  pd_free(v->items);
  pd_free(v->keys);
}

static pd_status jerr(jparser *p, const char *msg) {
  return pd_error_set(p->err, PD_EFORMAT, nowhere, "%s: damaged JSON at byte %zu: %s", p->what,
                      p->pos, msg);
}

static void jws(jparser *p) {
  while (p->pos < p->len && strchr(" \t\r\n", p->t[p->pos]) && p->t[p->pos]) p->pos++;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static pd_status jstring(jparser *p, char **out) {
  p->pos++; /* the opening quote */
  size_t cap = 16, n = 0;
  char *s = pd_malloc(cap);
  if (!s) return pd_error_set(p->err, PD_ENOMEM, nowhere, "out of memory");
  for (;;) {
    if (p->pos >= p->len) return pd_free(s), jerr(p, "unterminated string");
    unsigned char c = (unsigned char)p->t[p->pos++];
    if (c == '"') break;
    if (c < 0x20) return pd_free(s), p->pos--, jerr(p, "control character in a string");
    unsigned long u = c;
    int nb = 1;
    if (c == '\\') {
      if (p->pos >= p->len) return pd_free(s), jerr(p, "unterminated string");
      char e = p->t[p->pos++];
      const char *esc = strchr("\"\\/bfnrt", e);
      if (e && esc) {
        u = (unsigned char)"\"\\/\b\f\n\r\t"[esc - "\"\\/bfnrt"];
      } else if (e == 'u') {
        u = 0;
        for (int k = 0; k < 4; k++) {
          int h = p->pos < p->len ? hexval(p->t[p->pos]) : -1;
          if (h < 0) return pd_free(s), jerr(p, "bad \\u escape");
          u = u * 16 + (unsigned long)h;
          p->pos++;
        }
        nb = u < 0x80 ? 1 : u < 0x800 ? 2 : 3; /* a surrogate half is kept as its own code */
      } else {
        return pd_free(s), p->pos--, jerr(p, "bad escape in a string");
      }
    }
    if (n + 4 >= cap && PD_GROW(s, cap, n + 5)) {
      pd_free(s);
      return pd_error_set(p->err, PD_ENOMEM, nowhere, "out of memory");
    }
    if (nb == 1) s[n++] = (char)u;
    else if (nb == 2) s[n++] = (char)(0xc0 | (u >> 6)), s[n++] = (char)(0x80 | (u & 0x3f));
    else
      s[n++] = (char)(0xe0 | (u >> 12)), s[n++] = (char)(0x80 | ((u >> 6) & 0x3f)),
      s[n++] = (char)(0x80 | (u & 0x3f));
  }
  s[n] = 0;
  *out = s;
  return PD_OK;
}

static pd_status jvalue(jparser *p, jv *v, int depth);

/* An array (obj false) or object, its '[' or '{' at p->pos. */
static pd_status jlist(jparser *p, jv *v, bool obj, int depth) {
  size_t cap = 0;
  p->pos++;
  jws(p);
  if (p->pos < p->len && p->t[p->pos] == (obj ? '}' : ']')) return p->pos++, PD_OK;
  for (;;) {
    if ((size_t)v->n + 1 > cap) {
      size_t c1 = cap, c2 = cap;
      if (PD_GROW(v->items, c1, (size_t)v->n + 1) ||
          (obj && PD_GROW(v->keys, c2, (size_t)v->n + 1)))
        return pd_error_set(p->err, PD_ENOMEM, nowhere, "out of memory");
      cap = obj && c2 < c1 ? c2 : c1;
    }
    jv *e = &v->items[v->n];
    *e = (jv){0};
    if (obj) v->keys[v->n] = NULL;
    v->n++;
    jws(p);
    if (obj) {
      if (p->pos >= p->len || p->t[p->pos] != '"') return jerr(p, "expected a key string");
      pd_status s = jstring(p, &v->keys[v->n - 1]);
      if (s) return s;
      jws(p);
      if (p->pos >= p->len || p->t[p->pos] != ':') return jerr(p, "expected ':'");
      p->pos++;
    }
    pd_status s = jvalue(p, e, depth + 1);
    if (s) return s;
    jws(p);
    if (p->pos >= p->len) return jerr(p, obj ? "unterminated object" : "unterminated array");
    char c = p->t[p->pos++];
    if (c == (obj ? '}' : ']')) return PD_OK;
    if (c != ',') return p->pos--, jerr(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static pd_status jvalue(jparser *p, jv *v, int depth) {
  jws(p);
  v->off = p->pos;
  if (depth > J_MAX_DEPTH) return jerr(p, "nested too deep");
  if (p->pos >= p->len) return jerr(p, "unexpected end of the text");
  char c = p->t[p->pos];
  if (c == '{' || c == '[') {
    v->kind = c == '{' ? J_OBJ : J_ARR;
    return jlist(p, v, c == '{', depth);
  }
  if (c == '"') {
    v->kind = J_STR;
    return jstring(p, &v->s);
  }
  static const char *const words[] = {"null", "true", "false", "NaN", "Infinity", "-Infinity"};
  for (int k = 0; k < 6; k++) {
    size_t n = strlen(words[k]);
    if (p->len - p->pos >= n && memcmp(p->t + p->pos, words[k], n) == 0) {
      p->pos += n;
      v->kind = k == 0 ? J_NULL : k < 3 ? J_BOOL : J_NUM;
      v->b = k == 1;
      v->num = k == 3 ? (double)NAN : k == 4 ? (double)INFINITY : -(double)INFINITY;
      return PD_OK;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    char buf[64];
    size_t n = 0; /* within len: the text need not end in a NUL */
    while (p->pos + n < p->len && p->t[p->pos + n] && strchr("+-0123456789.eE", p->t[p->pos + n]))
      n++;
    if (n >= sizeof buf) return jerr(p, "bad number");
    memcpy(buf, p->t + p->pos, n);
    buf[n] = 0;
    char *end;
    v->kind = J_NUM;
    v->num = strtod(buf, &end);
    if (end != buf + n) return jerr(p, "bad number");
    if (!strpbrk(buf, ".eE")) {
      errno = 0;
      long long i = strtoll(buf, &end, 10);
      v->isint = errno == 0 && end == buf + n;
      v->i = i;
    }
    p->pos += n;
    return PD_OK;
  }
  return jerr(p, "unexpected character");
}

static pd_status json_parse(const char *t, size_t len, const char *what, jv *root,
                            pd_error *err) {
  jparser p = {t, len, 0, what, err};
  *root = (jv){0};
  pd_status s = jvalue(&p, root, 0);
  if (!s) {
    jws(&p);
    if (p.pos < len) s = jerr(&p, "text after the JSON value");
  }
  if (s) jv_free(root), *root = (jv){0};
  return s;
}

static const jv *jget(const jv *o, const char *key) {
  if (!o || o->kind != J_OBJ) return NULL;
  for (int i = 0; i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) return &o->items[i];
  return NULL;
}

static const jv *jidx(const jv *a, int i) {
  return a && a->kind == J_ARR && i >= 0 && i < a->n ? &a->items[i] : NULL;
}

/* ---- Lowering ---- */

/* What a value id stands for: its var (NULL: none yet), and a constant a full or
 * full_int_array made (for the inputs Fluid takes as attributes). */
typedef struct pir_value {
  const char *var;
  const char *fetch_name; /* the name a fetch op gives it (its var is named so) */
  bool defined, isconst;
  bool unmade;            /* no op makes its var (a full_int_array, folded where it is used) */
  int nlist;              /* a list (builtin.combine, a vector result): its vars, heap */
  const char **list;
  int nconst;
  double cval[PD_MAX_RANK];
} pir_value;

typedef struct lower {
  const char *what;
  pd_program *p;
  pd_block *b;
  pir_value *vals;
  size_t nvals;
  char *probs;        /* the problems, one line each */
  size_t probs_len, probs_cap;
  int nprobs;
  int nfeeds;
  int nops;           /* ops lowered so far: an op's number in errors (nested ones counted) */
  int nextra;         /* vars the lowering adds (conditions, scopes): their ".K" */
  const char **ydst;  /* where the cf.yield ending the region now lowered assigns its values */
  int ny;
  pd_error *err;
} lower;

static pd_status oom(lower *L) { return pd_error_set(L->err, PD_ENOMEM, nowhere, "out of memory"); }

/* A problem pdlang cannot run (listed all at once at the end). */
static pd_status problem(lower *L, int opi, const char *op, const char *fmt, ...) {
  char line[512];
  int k = snprintf(line, sizeof line, "  op %d (%s): ", opi, op);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
  va_end(ap);
  size_t n = strlen(line);
  if (PD_GROW(L->probs, L->probs_cap, L->probs_len + n + 2)) return oom(L);
  memcpy(L->probs + L->probs_len, line, n);
  L->probs_len += n;
  L->probs[L->probs_len++] = '\n';
  L->probs[L->probs_len] = 0;
  L->nprobs++;
  return PD_OK;
}

static pd_status malformed(lower *L, int opi, const char *op, const char *what) {
  return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s) is malformed: %s", L->what, opi,
                      op, what);
}

#define PIR_MAX_ID (1 << 24)

/* Where value id lives in L->vals: ops' results have ids 1, 2, ..., a region's block
 * arguments -1, -2, ... (0 is no value). */
static size_t slot_of(int64_t id) { return id > 0 ? 2 * (size_t)id : 2 * (size_t)-id + 1; }
static bool id_ok(const jv *id) {
  return id && id->isint && id->i != 0 && id->i >= -PIR_MAX_ID && id->i <= PIR_MAX_ID;
}

/* The entry of value id (0 < |id| <= PIR_MAX_ID); NULL on out of memory. */
static pir_value *value(lower *L, int64_t id) {
  size_t k = slot_of(id);
  if (k >= L->nvals) {
    size_t cap = L->nvals;
    if (PD_GROW(L->vals, cap, k + 1)) return NULL;
    memset(L->vals + L->nvals, 0, (cap - L->nvals) * sizeof *L->vals);
    L->nvals = cap;
  }
  return &L->vals[k];
}

/* The defined value id, or NULL. */
static pir_value *known(lower *L, int64_t id) {
  size_t k = id ? slot_of(id) : 0;
  return k && k < L->nvals && L->vals[k].defined ? &L->vals[k] : NULL;
}

static int pir_dtype(const char *t) {
  static const struct { const char *n; int d; } m[] = {
      {"0.t_f32", PD_FP32}, {"0.t_f64", PD_FP64}, {"0.t_f16", PD_FP16}, {"0.t_i32", PD_INT32},
      {"0.t_i64", PD_INT64}, {"0.t_bool", PD_BOOL}, {"0.t_i16", PD_INT16},
      {"0.t_i8", PD_INT8}, {"0.t_ui8", PD_UINT8}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (strcmp(t, m[i].n) == 0) return m[i].d;
  return -1;
}

static int dtype_by_name(const char *s) {
  static const struct { const char *n; int d; } m[] = {
      {"float32", PD_FP32}, {"float64", PD_FP64}, {"float16", PD_FP16}, {"int32", PD_INT32},
      {"int64", PD_INT64}, {"bool", PD_BOOL}, {"int16", PD_INT16}, {"int8", PD_INT8},
      {"uint8", PD_UINT8}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++)
    if (strcmp(s, m[i].n) == 0) return m[i].d;
  return -1;
}

/* Give var v the dense tensor type tt; a problem if it is another type. */
static pd_status set_type(lower *L, int opi, const char *op, pd_var_desc *v, const jv *tt) {
  const jv *k = jget(tt, "#"), *d = jget(tt, "D");
  if (!k || k->kind != J_STR) return malformed(L, opi, op, "an output without a type");
  if (strcmp(k->s, "0.t_null") == 0) return PD_OK;
  if (strcmp(k->s, "0.t_dtensor") != 0)
    return problem(L, opi, op, "output type %s: pdlang reads only dense tensors", k->s);
  const jv *dt = jget(jidx(d, 0), "#"), *dims = jidx(d, 1);
  if (!dt || dt->kind != J_STR || !dims || dims->kind != J_ARR || dims->n > PD_MAX_RANK)
    return malformed(L, opi, op, "a dense tensor type without its dtype and dims");
  int t = pir_dtype(dt->s);
  if (t < 0) return problem(L, opi, op, "element type %s is not one pdlang has", dt->s);
  int64_t shape[PD_MAX_RANK];
  for (int i = 0; i < dims->n; i++) {
    if (!dims->items[i].isint) return malformed(L, opi, op, "a dimension that is not an integer");
    shape[i] = dims->items[i].i;
  }
  v->dtype = (pd_dtype)t;
  return pd_var_set_shape(v, dims->n, shape) ? oom(L) : PD_OK;
}

/* One pd_op op's Fluid form: input slots by position ("" for the one Fluid takes as the
 * attribute fold: a list of ints, or a float), output slots by position ("" dropped),
 * attributes renamed (pir name, fluid name). */
typedef struct op_map {
  const char *pir, *fluid;
  const char *in[6], *out[6];
  const char *rename[4][2];
  const char *fold[2];    /* the attributes of the "" inputs, in order */
  bool fold_list;
} op_map;

/* The slots a computed "" input goes to instead of its attribute, as one tensor or as a list
 * (builtin.combine): the shapes of reshape and expand, known only at run time. */
static const struct op_dyn {
  const char *pir, *dyn, *dyn_list;
} op_dyns[] = {
    {"pd_op.reshape", "Shape", "ShapeTensor"},
    {"pd_op.expand", "Shape", "expand_shapes_tensor"},
};

static const op_map op_maps[] = {
    {"pd_op.matmul", "matmul_v2", {"X", "Y"}, {"Out"},
     {{"transpose_x", "trans_x"}, {"transpose_y", "trans_y"}}, {NULL}, false},
    {"pd_op.add", "elementwise_add", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.subtract", "elementwise_sub", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.multiply", "elementwise_mul", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.divide", "elementwise_div", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.relu", "relu", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.tanh", "tanh", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.sigmoid", "sigmoid", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.softmax", "softmax", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.conv2d", "conv2d", {"Input", "Filter"}, {"Output"}, {{0}}, {NULL}, false},
    {"pd_op.depthwise_conv2d", "depthwise_conv2d", {"Input", "Filter"}, {"Output"}, {{0}}, {NULL},
     false},
    {"pd_op.pool2d", "pool2d", {"X", ""}, {"Out"}, {{0}}, {"ksize"}, true},
    {"pd_op.flatten", "flatten_contiguous_range", {"X"}, {"Out", "XShape"}, {{0}}, {NULL}, false},
    {"pd_op.reshape", "reshape2", {"X", ""}, {"Out", "XShape"}, {{0}}, {"shape"}, true},
    {"pd_op.transpose", "transpose2", {"X"}, {"Out", "XShape"}, {{"perm", "axis"}}, {NULL}, false},
    {"pd_op.scale", "scale", {"X", ""}, {"Out"}, {{0}}, {"scale"}, false},
    {"pd_op.dropout", "dropout", {"X", "Seed", ""}, {"Out", "Mask"},
     {{"mode", "dropout_implementation"}}, {"dropout_prob"}, false},
    {"pd_op.batch_norm_", "batch_norm", {"X", "Mean", "Variance", "Scale", "Bias"},
     {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"},
     {{"data_format", "data_layout"}}, {NULL}, false},
    {"pd_op.batch_norm", "batch_norm", {"X", "Mean", "Variance", "Scale", "Bias"},
     {"Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"},
     {{"data_format", "data_layout"}}, {NULL}, false},
    {"pd_op.full", "fill_constant", {0}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.layer_norm", "layer_norm", {"X", "Scale", "Bias"}, {"Y", "Mean", "Variance"}, {{0}},
     {NULL}, false},
    {"pd_op.sum", "reduce_sum", {"X", ""}, {"Out"}, {{"keepdim", "keep_dim"}}, {"dim"}, true},
    {"pd_op.mean", "reduce_mean", {"X", ""}, {"Out"}, {{"keepdim", "keep_dim"}}, {"dim"}, true},
    {"pd_op.max", "reduce_max", {"X", ""}, {"Out"}, {{"keepdim", "keep_dim"}}, {"dim"}, true},
    {"pd_op.greater_than", "greater_than", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.greater_equal", "greater_equal", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.less_than", "less_than", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.less_equal", "less_equal", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.equal", "equal", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.not_equal", "not_equal", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.logical_not", "logical_not", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.logical_and", "logical_and", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.assign", "assign", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.exp", "exp", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.sqrt", "sqrt", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.gelu", "gelu", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.maximum", "elementwise_max", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.minimum", "elementwise_min", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.embedding", "lookup_table_v2", {"Ids", "W"}, {"Out"}, {{"sparse", "is_sparse"}},
     {NULL}, false},
    {"pd_op.leaky_relu", "leaky_relu", {"X"}, {"Out"}, {{"negative_slope", "alpha"}}, {NULL},
     false},
    {"pd_op.unsqueeze", "unsqueeze2", {"X", ""}, {"Out", "XShape"}, {{0}}, {"axes"}, true},
    {"pd_op.squeeze", "squeeze2", {"X", ""}, {"Out", "XShape"}, {{0}}, {"axes"}, true},
    {"pd_op.cast", "cast", {"X"}, {"Out"}, {{"dtype", "out_dtype"}}, {NULL}, false},
    {"pd_op.slice", "slice", {"Input", "", ""}, {"Out"}, {{0}}, {"starts", "ends"}, true},
    {"pd_op.stack", "stack", {"X"}, {"Y"}, {{0}}, {NULL}, false},
    {"pd_op.concat", "concat", {"X", ""}, {"Out"}, {{0}}, {"axis"}, false},
    {"pd_op.rnn", "rnn", {"Input", "PreState", "WeightList", "SequenceLength", "-"},
     {"Out", "DropoutState", "State", "Reserve"}, {{0}}, {NULL}, false},
    {"pd_op.abs", "abs", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.log", "log", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.square", "square", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.silu", "silu", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.swish", "swish", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.logsigmoid", "logsigmoid", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.elu", "elu", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.softplus", "softplus", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.log_softmax", "log_softmax", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.elementwise_pow", "elementwise_pow", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.logical_or", "logical_or", {"X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.where", "where", {"Condition", "X", "Y"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.clip", "clip", {"X", "", ""}, {"Out"}, {{0}}, {"min", "max"}, false},
    {"pd_op.tile", "tile", {"X", ""}, {"Out"}, {{0}}, {"repeat_times"}, true},
    {"pd_op.expand", "expand_v2", {"X", ""}, {"Out"}, {{0}}, {"shape"}, true},
    {"pd_op.grid_sample", "grid_sampler", {"X", "Grid"}, {"Output"}, {{0}}, {NULL}, false},
    {"pd_op.argmax", "arg_max", {"X", ""}, {"Out"}, {{0}}, {"axis"}, false},
    {"pd_op.min", "reduce_min", {"X", ""}, {"Out"}, {{"keepdim", "keep_dim"}}, {"dim"}, true},
    {"pd_op.prod", "reduce_prod", {"X", ""}, {"Out"}, {{"keepdim", "keep_dim"}}, {"dim"}, true},
    {"pd_op.group_norm", "group_norm", {"X", "Scale", "Bias"}, {"Y", "Mean", "Variance"},
     {{"data_format", "data_layout"}}, {NULL}, false},
    {"pd_op.instance_norm", "instance_norm", {"X", "Scale", "Bias"},
     {"Y", "SavedMean", "SavedVariance"}, {{0}}, {NULL}, false},
    {"pd_op.pad3d", "pad3d", {"X", ""}, {"Out"}, {{"pad_value", "value"}}, {"paddings"}, true},
    {"pd_op.prelu", "prelu", {"X", "Alpha"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.split_with_num", "split", {"X", ""}, {"Out"}, {{0}}, {"axis"}, false},
    {"pd_op.relu6", "relu6", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.hardswish", "hard_swish", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.hardsigmoid", "hard_sigmoid", {"X"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.conv2d_transpose", "conv2d_transpose", {"Input", "Filter", ""}, {"Output"}, {{0}},
     {"output_size"}, true},
    {"pd_op.nearest_interp", "nearest_interp_v2", {"X", "OutSize", "SizeTensor", "Scale"},
     {"Out"}, {{"data_format", "data_layout"}}, {NULL}, false},
    {"pd_op.bilinear_interp", "bilinear_interp_v2", {"X", "OutSize", "SizeTensor", "Scale"},
     {"Out"}, {{"data_format", "data_layout"}}, {NULL}, false},
    {"pd_op.cumsum", "cumsum", {"X", ""}, {"Out"}, {{0}}, {"axis"}, false},
    {"pd_op.assign_value", "assign_value", {0}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.assign_value_", "assign_value", {"-"}, {"Out"}, {{0}}, {NULL}, false},
    {"pd_op.increment", "increment", {"X"}, {"Out"}, {{"value", "step"}}, {NULL}, false},
    {"pd_op.gather", "gather", {"X", "Index", ""}, {"Out"}, {{0}}, {"axis"}, false},
    {"pd_op.full_with_tensor", "fill_constant", {"", "ShapeTensor"}, {"Out"}, {{0}}, {"value"},
     false},
};

/* Attribute a (an "AT" object) as pd_attr named name on op; a problem for an unknown kind. */
static pd_status set_attr(lower *L, int opi, const char *opn, pd_op_desc *op, const char *name,
                          const jv *at) {
  const jv *k = jget(at, "#"), *d = jget(at, "D");
  if (!k || k->kind != J_STR || !d) return malformed(L, opi, opn, "an attribute without a kind");
  const char *t = k->s;
  int r = 0;
  if (strcmp(t, "0.a_bool") == 0 && d->kind == J_BOOL) r = pd_op_set_attr_bool(op, name, d->b);
  else if (strcmp(t, "0.a_i32") == 0 && d->isint) r = pd_op_set_attr_int(op, name, (int32_t)d->i);
  else if (strcmp(t, "0.a_i64") == 0 && d->isint) r = pd_op_set_attr_long(op, name, d->i);
  else if (strcmp(t, "0.a_f32") == 0 && d->kind == J_NUM)
    r = pd_op_set_attr_float(op, name, (float)d->num);
  else if (strcmp(t, "0.a_f64") == 0 && d->kind == J_NUM)
    r = pd_op_set_attr_float(op, name, (float)d->num);
  else if (strcmp(t, "0.a_str") == 0 && d->kind == J_STR) r = pd_op_set_attr_string(op, name, d->s);
  else if (strcmp(t, "1.a_dtype") == 0 && d->kind == J_STR &&
           strncmp(d->s, "Undefined", 9) == 0)
    return PD_OK; /* no dtype asked: the op's own */
  else if (strcmp(t, "1.a_dtype") == 0 && d->kind == J_STR) {
    int dt = dtype_by_name(d->s);
    if (dt < 0) return problem(L, opi, opn, "attribute %s: dtype %s is not one pdlang has", name,
                               d->s);
    r = pd_op_set_attr_int(op, name, dt);
  } else if ((strcmp(t, "0.a_array") == 0 || strcmp(t, "1.a_intarray") == 0) &&
             d->kind == J_ARR) {
    /* a list of one kind: integers become INTS, floats FLOATS, bools BOOLEANS, strings
     * STRINGS (what Fluid's ops declare) */
    int n = d->n, kind = 0; /* 1 int, 2 float, 3 bool, 4 string */
    void *buf = pd_calloc((size_t)n + 1, sizeof(double) > sizeof(char *) ? sizeof(double)
                                                                        : sizeof(char *));
    if (!buf) return oom(L);
    for (int i = 0; i < n && kind >= 0; i++) {
      const jv *e = &d->items[i], *ek = jget(e, "#"), *ed = jget(e, "D");
      if (strcmp(t, "1.a_intarray") == 0) ek = NULL, ed = e;
      int ki = !ek ? (ed && ed->isint ? 1 : -1)
             : ek->kind != J_STR || !ed ? -1
             : (!strcmp(ek->s, "0.a_i32") || !strcmp(ek->s, "0.a_i64")) && ed->isint ? 1
             : (!strcmp(ek->s, "0.a_f32") || !strcmp(ek->s, "0.a_f64")) && ed->kind == J_NUM ? 2
             : !strcmp(ek->s, "0.a_bool") && ed->kind == J_BOOL ? 3
             : !strcmp(ek->s, "0.a_str") && ed->kind == J_STR ? 4 : -1;
      if (ki < 0 || (kind && ki != kind)) kind = -1;
      else kind = ki;
      if (kind == 1) ((int32_t *)buf)[i] = (int32_t)ed->i;
      if (kind == 2) ((float *)buf)[i] = (float)ed->num;
      if (kind == 3) ((bool *)buf)[i] = ed->b;
      if (kind == 4) ((const char **)buf)[i] = ed->s;
    }
    if (kind < 0) {
      pd_free(buf);
      return problem(L, opi, opn, "attribute %s: a list of kinds pdlang does not read", name);
    }
    r = kind == 2 ? pd_op_set_attr_floats(op, name, n, buf)
      : kind == 3 ? pd_op_set_attr_bools(op, name, n, buf)
      : kind == 4 ? pd_op_set_attr_strings(op, name, n, buf)
                  : pd_op_set_attr_ints(op, name, n, buf);
    pd_free(buf);
  } else {
    return problem(L, opi, opn, "attribute %s of kind %s: pdlang does not read it", name, t);
  }
  return r ? oom(L) : PD_OK;
}

/* A const input (full / full_int_array) folded into attribute name: a list (as_list) or a
 * scalar float. */
static pd_status fold(lower *L, int opi, const char *opn, pd_op_desc *op, const char *name,
                      const pir_value *v, bool as_list) {
  if (!v || !v->isconst)
    return problem(L, opi, opn, "its input %s is computed; pdlang needs it constant (made by "
                   "pd_op.full or pd_op.full_int_array)", name);
  bool ints = as_list || strcmp(name, "axis") == 0; /* an int in Fluid */
  for (int i = 0; ints && i < (as_list ? v->nconst : 1); i++) /* past int32: UB to convert */
    if (!(v->cval[i] >= INT32_MIN && v->cval[i] <= INT32_MAX))
      return problem(L, opi, opn, "its input %s holds %g, past the int32 of Fluid's attribute",
                     name, v->cval[i]);
  if (!as_list && ints) return pd_op_set_attr_int(op, name, (int32_t)v->cval[0]) ? oom(L) : PD_OK;
  if (!as_list) return pd_op_set_attr_float(op, name, (float)v->cval[0]) ? oom(L) : PD_OK;
  int32_t xs[PD_MAX_RANK];
  for (int i = 0; i < v->nconst; i++) xs[i] = (int32_t)v->cval[i];
  return pd_op_set_attr_ints(op, name, v->nconst, xs) ? oom(L) : PD_OK;
}

/* The var of output value o ({"%": id, "TT": type}) named name (NULL: "pir_ID"). */
/* The value an op's output o defines, checked (an id in range, not defined before) into *out;
 * *out NULL for id 0 (an output no one reads). */
static pd_status new_value(lower *L, int opi, const char *opn, const jv *o, pir_value **out) {
  const jv *id = jget(o, "%");
  *out = NULL;
  if (!id || !id->isint) return malformed(L, opi, opn, "an output without an id");
  if (id->i == 0) return PD_OK;
  if (!id_ok(id))
    return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s): value id %lld is out of "
                        "range", L->what, opi, opn, (long long)id->i);
  pir_value *v = value(L, id->i);
  if (!v) return oom(L);
  if (v->defined) return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s) defines "
                                      "value %%%lld again", L->what, opi, opn, (long long)id->i);
  *out = v;
  return PD_OK;
}

static pd_status def_value(lower *L, int opi, const char *opn, const jv *o, const char *name,
                           const char **var) {
  const jv *id = jget(o, "%");
  pir_value *v;
  if (var) *var = NULL;
  pd_status st = new_value(L, opi, opn, o, &v);
  if (st || !v) return st;
  char buf[40];
  if (name && pd_block_find_var_local(L->b, name))
    return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s) defines var '%s' again",
                        L->what, opi, opn, name);
  if (!name && v->fetch_name && !pd_block_find_var_local(L->b, v->fetch_name))
    name = v->fetch_name;
  if (!name) snprintf(buf, sizeof buf, "pir_%lld", (long long)id->i), name = buf;
  pd_var_desc *d = pd_block_var(L->b, name);
  if (!d) return oom(L);
  v->defined = true;
  v->var = d->name;
  if (var) *var = d->name;
  return set_type(L, opi, opn, d, jget(o, "TT"));
}

/* The output o as the value of the existing var `var` (an in-place op's output). */
static pd_status def_alias(lower *L, int opi, const char *opn, const jv *o, const char *var) {
  pir_value *v;
  pd_status st = new_value(L, opi, opn, o, &v);
  if (st || !v) return st;
  v->defined = true;
  v->var = var;
  return PD_OK;
}

/* A vector result ({"%": id, "TT": {"#": "0.t_vec", "D": [types]}}): a var "pir_ID.K" for each
 * element, the value their list. */
static pd_status def_list(lower *L, int opi, const char *opn, const jv *o) {
  const jv *id = jget(o, "%"), *types = jget(jget(o, "TT"), "D");
  if (!id_ok(id) || !types || types->kind != J_ARR)
    return malformed(L, opi, opn, "a vector result without an id or types");
  pir_value *v = value(L, id->i);
  if (!v) return oom(L);
  if (v->defined) return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s) defines "
                                      "value %%%lld again", L->what, opi, opn, (long long)id->i);
  v->defined = true;
  if (!(v->list = pd_calloc((size_t)types->n + 1, sizeof *v->list))) return oom(L);
  for (int k = 0; k < types->n; k++) {
    char name[64];
    snprintf(name, sizeof name, "pir_%lld.%d", (long long)id->i, k);
    pd_var_desc *d = pd_block_var(L->b, name);
    if (!d) return oom(L);
    v->list[v->nlist++] = d->name;
    pd_status s = set_type(L, opi, opn, d, &types->items[k]);
    if (s) return s;
  }
  return PD_OK;
}

/* The value of input i ({"%": id}); *v NULL for id 0 (none). */
static pd_status use_value(lower *L, int opi, const char *opn, const jv *in, pir_value **v) {
  const jv *id = jget(in, "%");
  *v = NULL;
  if (!id || !id->isint) return malformed(L, opi, opn, "an input without an id");
  if (id->i == 0) return PD_OK;
  pir_value *x = id_ok(id) ? known(L, id->i) : NULL;
  if (!x)
    return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%s) uses value %%%lld, which "
                        "no op before it defines", L->what, opi, opn, (long long)id->i);
  *v = x;
  return PD_OK;
}

static const char *attr_str(const jv *op, const char *name) {
  const jv *a = jget(op, "A");
  for (int i = 0; a && a->kind == J_ARR && i < a->n; i++) {
    const jv *n = jget(&a->items[i], "N"), *d = jget(jget(&a->items[i], "AT"), "D");
    if (n && n->kind == J_STR && strcmp(n->s, name) == 0)
      return d && d->kind == J_STR ? d->s : NULL;
  }
  return NULL;
}

static const jv *attr_data(const jv *op, const char *name) {
  const jv *a = jget(op, "A");
  for (int i = 0; a && a->kind == J_ARR && i < a->n; i++) {
    const jv *n = jget(&a->items[i], "N");
    if (n && n->kind == J_STR && strcmp(n->s, name) == 0)
      return jget(jget(&a->items[i], "AT"), "D");
  }
  return NULL;
}

static pd_status lower_op(lower *L, int opi, const jv *op);

/* The ops of a block (a JSON list) into L->b. */
static pd_status lower_ops(lower *L, const jv *ops) {
  pd_status s = PD_OK;
  for (int i = 0; i < ops->n && !s; i++) s = lower_op(L, L->nops++, &ops->items[i]);
  return s;
}

/* A var the lowering adds to L->b: "pir_WHAT.K" of type t (dtype FP32 / BOOL for a
 * condition). */
static const char *extra_var(lower *L, const char *what, pd_var_type t, pd_dtype dt) {
  char name[64];
  snprintf(name, sizeof name, "pir_%s.%d", what, ++L->nextra);
  pd_var_desc *v = pd_block_var(L->b, name);
  if (!v) return NULL;
  v->type = t, v->dtype = dt;
  return v->name;
}

/* An op type with X and Out in L->b (assign, logical_not). */
static pd_status unary(lower *L, const char *type, const char *x, const char *out) {
  pd_op_desc *f = pd_block_add_op(L->b, type, -1);
  return !f || pd_op_set_input(f, "X", 1, &x) || pd_op_set_output(f, "Out", 1, &out) ? oom(L)
                                                                                     : PD_OK;
}

/* The one block of region r of op (its "regions" list), or NULL. */
static const jv *region_block(const jv *op, int r) {
  const jv *b = jidx(jget(jidx(jget(op, "regions"), r), "blocks"), 0);
  return jget(b, "ops") && jget(b, "ops")->kind == J_ARR ? b : NULL;
}

/* The region block rb as a new sub-block of L->b, its cf.yield assigning to dst (n vars). The
 * block's arguments ("args": {"#": -K, "TT": type}) are the vars args names (nargs of them). */
static pd_status lower_region(lower *L, int opi, const char *opn, const jv *rb, int *idx,
                              const char **dst, int n, const char **args, int nargs) {
  const jv *a = jget(rb, "args");
  if (!a || a->kind != J_ARR || a->n != nargs)
    return malformed(L, opi, opn, "a region whose block arguments are not its values");
  for (int i = 0; i < nargs; i++) {
    const jv *id = jget(&a->items[i], "#");
    pir_value *v = id_ok(id) ? value(L, id->i) : NULL;
    if (!id_ok(id)) return malformed(L, opi, opn, "a block argument without an id");
    if (!v) return oom(L);
    *v = (pir_value){.var = args[i], .defined = true};
  }
  pd_block *outer = L->b, *nb = pd_program_add_block(L->p, outer->idx);
  if (!nb) return oom(L);
  *idx = nb->idx;
  const char **ydst = L->ydst;
  int ny = L->ny;
  L->b = nb, L->ydst = dst, L->ny = n;
  pd_status s = lower_ops(L, jget(rb, "ops"));
  L->b = outer, L->ydst = ydst, L->ny = ny;
  return s;
}

/* pd_op.if (two regions: then, else) as Fluid's pair of conditional_blocks, on the condition
 * and its negation, each assigning the if's results; pd_op.while (one region: its block's
 * arguments the loop values, its yield the next condition and values) as Fluid's while on
 * vars holding the values, which the body assigns at its end (through temporaries, as a
 * yield may swap them). */
static pd_status lower_control(lower *L, int opi, const char *opn, const jv *op, const jv *outs,
                               pir_value **iv, int nin) {
  bool is_if = strcmp(opn, "pd_op.if") == 0;
  int n = outs->n;
  if (n > 64 || (is_if ? nin != 1 : nin != n + 1) || !iv[0])
    return malformed(L, opi, opn, "its inputs are not a condition and the loop values");
  const char *dst[65], *cond = iv[0]->var, *init[64];
  for (int i = 1; i < nin; i++) {
    if (!iv[i]) return malformed(L, opi, opn, "a loop value that is none");
    init[i - 1] = iv[i]->var;
  }
  for (int i = 0; i < n; i++) {
    pd_status s = def_value(L, opi, opn, &outs->items[i], NULL, &dst[i + 1]);
    if (s) return s;
    if (!dst[i + 1]) return malformed(L, opi, opn, "a result that is none");
  }
  const char *scope = extra_var(L, "scope", PD_VAR_STEP_SCOPES, PD_FP32);
  if (!scope) return oom(L);
  if (is_if) {
    const char *neg = extra_var(L, "not", PD_VAR_LOD_TENSOR, PD_BOOL);
    const jv *rb[2] = {region_block(op, 0), region_block(op, 1)};
    if (!rb[0] || !rb[1]) return malformed(L, opi, opn, "not two regions of one block each");
    if (!neg) return oom(L);
    pd_status s = unary(L, "logical_not", cond, neg);
    for (int r = 0; r < 2 && !s; r++) {
      pd_op_desc *f = pd_block_add_op(L->b, "conditional_block", -1);
      const char *c = r ? neg : cond;
      int idx;
      if (!f || pd_op_set_input(f, "Cond", 1, &c) || pd_op_set_output(f, "Scope", 1, &scope) ||
          (n && pd_op_set_output(f, "Out", n, dst + 1)) ||
          pd_op_set_attr_bool(f, "is_scalar_condition", true))
        return oom(L);
      s = lower_region(L, opi, opn, rb[r], &idx, dst + 1, n, NULL, 0);
      if (!s && pd_op_set_attr_block(f, "sub_block", idx)) s = oom(L);
    }
    return s;
  }
  const jv *rb = region_block(op, 0);
  if (!rb) return malformed(L, opi, opn, "not one region of one block");
  if (!(dst[0] = extra_var(L, "cond", PD_VAR_LOD_TENSOR, PD_BOOL))) return oom(L);
  pd_status s = unary(L, "assign", cond, dst[0]);
  for (int i = 0; i < n && !s; i++) s = unary(L, "assign", init[i], dst[i + 1]);
  pd_op_desc *f = s ? NULL : pd_block_add_op(L->b, "while", -1);
  if (s) return s;
  int idx;
  if (!f || pd_op_set_input(f, "X", n + 1, dst) || pd_op_set_input(f, "Condition", 1, dst) ||
      pd_op_set_output(f, "Out", n + 1, dst) || pd_op_set_output(f, "StepScopes", 1, &scope))
    return oom(L);
  s = lower_region(L, opi, opn, rb, &idx, dst, n + 1, dst + 1, n);
  if (!s && pd_op_set_attr_block(f, "sub_block", idx)) s = oom(L);
  return s;
}

/* cf.yield: the region's values assigned to L->ydst, through temporaries when there are
 * several (one may be another's source). */
static pd_status lower_yield(lower *L, int opi, const char *opn, pir_value **iv, int nin) {
  if (!L->ydst || nin != L->ny) return malformed(L, opi, opn, "not the values its region ends");
  const char *tmp[65];
  pd_status s = PD_OK;
  for (int i = 0; i < nin && !s; i++) {
    if (!iv[i]) return malformed(L, opi, opn, "a value that is none");
    tmp[i] = iv[i]->var;
    if (nin > 1) {
      const pd_var_desc *src = pd_block_find_var(L->b, iv[i]->var);
      if (!(tmp[i] = extra_var(L, "yield", PD_VAR_LOD_TENSOR, src ? src->dtype : PD_FP32)))
        return oom(L);
      s = unary(L, "assign", iv[i]->var, tmp[i]);
    }
  }
  for (int i = 0; i < nin && !s; i++) s = unary(L, "assign", tmp[i], L->ydst[i]);
  return s;
}

static pd_status lower_op(lower *L, int opi, const jv *op) {
  const jv *nm = jget(op, "#"), *ins = jget(op, "I"), *outs = jget(op, "O");
  if (!nm || nm->kind != J_STR) return malformed(L, opi, "?", "no name (\"#\")");
  char opn[128];
  const char *raw = nm->s;
  if (strcmp(raw, "p") == 0) snprintf(opn, sizeof opn, "builtin.parameter");
  else if (strncmp(raw, "0.", 2) == 0) snprintf(opn, sizeof opn, "builtin.%.100s", raw + 2);
  else if (strncmp(raw, "1.", 2) == 0) snprintf(opn, sizeof opn, "pd_op.%.100s", raw + 2);
  else if (strncmp(raw, "2.", 2) == 0) snprintf(opn, sizeof opn, "cf.%.100s", raw + 2);
  else
    return pd_error_set(L->err, PD_EFORMAT, nowhere, "%s: op %d (%.100s): not an op of a dialect "
                        "pdlang knows (builtin, pd_op, cf)", L->what, opi, raw);
  if (strcmp(opn, "builtin.parameter") == 0) {
    const jv *a = jget(op, "A"), *name = jidx(a, 3);
    if (!name || name->kind != J_STR || !outs || outs->kind != J_OBJ)
      return malformed(L, opi, opn, "no parameter name or output");
    const char *var;
    pd_status s = def_value(L, opi, opn, outs, name->s, &var);
    /* every parameter is in the .pdiparams, in sorted name order, those Paddle marks not
     * persistable too (an RNN's "dropout_state__non_persistable", of 0 elements) */
    if (!s && var) pd_block_find_var_local(L->b, var)->persistable = true;
    return s;
  }
  if (!ins || ins->kind != J_ARR || !outs || outs->kind != J_ARR)
    return malformed(L, opi, opn, "no input (\"I\") or output (\"O\") list");
  pir_value *iv[65] = {0}; /* into L->vals: valid until value() grows it (an output's) */
  if (ins->n > 65) return problem(L, opi, opn, "%d inputs: pdlang reads at most 65", ins->n);
  for (int i = 0; i < ins->n; i++) {
    pd_status s = use_value(L, opi, opn, &ins->items[i], &iv[i]);
    if (s) return s;
  }
  bool lists = strcmp(opn, "builtin.split") == 0;
  for (size_t i = 0; i < sizeof op_maps / sizeof *op_maps && !lists; i++)
    lists = strcmp(op_maps[i].pir, opn) == 0;
  for (int i = 0; i < ins->n && !lists; i++)
    if (iv[i] && iv[i]->list) return malformed(L, opi, opn, "a list where it takes a tensor");
  if (strcmp(opn, "pd_op.if") == 0 || strcmp(opn, "pd_op.while") == 0) {
    /* the values of iv may move when the results are defined: keep their vars */
    return lower_control(L, opi, opn, op, outs, iv, ins->n);
  }
  if (strcmp(opn, "cf.yield") == 0) return lower_yield(L, opi, opn, iv, ins->n);
  if (strcmp(opn, "builtin.combine") == 0) { /* a list of its inputs' vars; no op */
    const jv *id = outs->n == 1 ? jget(&outs->items[0], "%") : NULL;
    const char **list = pd_calloc((size_t)ins->n + 1, sizeof *list);
    if (!list) return oom(L);
    for (int i = 0; i < ins->n; i++) list[i] = iv[i] ? iv[i]->var : NULL;
    for (int i = 0; i < ins->n; i++)
      if (!list[i] || (iv[i] && iv[i]->list)) {
        pd_free(list);
        return malformed(L, opi, opn, "an element that is none or a list");
      }
    pir_value *v = id_ok(id) ? value(L, id->i) : NULL;
    if (!v || v->defined) {
      pd_free(list);
      return !id_ok(id) || (v && v->defined) ? malformed(L, opi, opn, "not one new result")
                                             : oom(L);
    }
    v->defined = true, v->list = list, v->nlist = ins->n;
    return PD_OK;
  }
  if (strcmp(opn, "builtin.split") == 0) { /* its results are the list's vars */
    if (ins->n != 1 || !iv[0] || !iv[0]->list || iv[0]->nlist != outs->n)
      return malformed(L, opi, opn, "not a list split into its elements");
    const char **list = iv[0]->list;
    for (int i = 0; i < outs->n; i++) {
      const jv *id = jget(&outs->items[i], "%");
      if (!id || !id->isint || (id->i && !id_ok(id)))
        return malformed(L, opi, opn, "a result without an id");
      pir_value *v = id->i ? value(L, id->i) : NULL;
      if (id->i && !v) return oom(L);
      if (v && v->defined) return malformed(L, opi, opn, "a result defined again");
      if (v) v->defined = true, v->var = list[i];
    }
    return PD_OK;
  }
  if (strcmp(opn, "pd_op.shape64") == 0 || strcmp(opn, "pd_op.shape") == 0) {
    /* Fluid's shape makes int32: cast to the int64 pd_op.shape64 makes */
    bool to64 = strcmp(opn, "pd_op.shape64") == 0;
    const char *var, *x = ins->n == 1 && iv[0] ? iv[0]->var : NULL;
    if (!x || outs->n != 1) return malformed(L, opi, opn, "not one input and one result");
    pd_status s = def_value(L, opi, opn, &outs->items[0], NULL, &var);
    if (s || !var) return s;
    const char *tmp = to64 ? extra_var(L, "shape", PD_VAR_LOD_TENSOR, PD_INT32) : var;
    pd_op_desc *f = tmp ? pd_block_add_op(L->b, "shape", -1) : NULL;
    if (!f || pd_op_set_input(f, "Input", 1, &x) || pd_op_set_output(f, "Out", 1, &tmp))
      return oom(L);
    if (!to64) return PD_OK;
    pd_op_desc *c = pd_block_add_op(L->b, "cast", -1);
    if (!c || pd_op_set_input(c, "X", 1, &tmp) || pd_op_set_output(c, "Out", 1, &var) ||
        pd_op_set_attr_int(c, "in_dtype", PD_INT32) || pd_op_set_attr_int(c, "out_dtype", PD_INT64))
      return oom(L);
    return PD_OK;
  }
  if (strcmp(opn, "pd_op.data") == 0) {
    const char *name = attr_str(op, "name");
    if (!name || outs->n != 1) return malformed(L, opi, opn, "no name or not one output");
    const char *var;
    pd_status s = def_value(L, opi, opn, &outs->items[0], name, &var);
    if (s || !var) return s;
    pd_op_desc *f = pd_block_add_op(L->b, "feed", -1);
    pd_var_desc *fv = pd_block_var(L->b, "feed");
    if (!f || !fv) return oom(L);
    fv->type = PD_VAR_FEED_MINIBATCH, fv->persistable = true;
    const char *x = "feed";
    if (pd_op_set_input(f, "X", 1, &x) || pd_op_set_output(f, "Out", 1, &var) ||
        pd_op_set_attr_int(f, "col", L->nfeeds++))
      return oom(L);
    return PD_OK;
  }
  if (strcmp(opn, "pd_op.fetch") == 0) {
    const jv *col = attr_data(op, "col");
    if (ins->n != 1 || !iv[0] || !col || !col->isint)
      return malformed(L, opi, opn, "no input or col");
    const char *name = attr_str(op, "name"), *x = iv[0]->var;
    if (name && strcmp(name, x) != 0 && !pd_block_find_var(L->b, name)) {
      /* a value whose var has another name (a list's element, a feed): copied to one named as
       * the fetch target */
      const pd_var_desc *src = pd_block_find_var(L->b, x);
      pd_var_desc *d = pd_block_var(L->b, name);
      if (!d) return oom(L);
      d->dtype = src ? src->dtype : PD_FP32;
      if (src && pd_var_set_shape(d, src->ndims, src->dims)) return oom(L);
      pd_status s = unary(L, "assign", x, d->name);
      if (s) return s;
      iv[0]->var = x = d->name;
    }
    pd_op_desc *f = pd_block_add_op(L->b, "fetch", -1);
    pd_var_desc *fv = pd_block_var(L->b, "fetch");
    if (!f || !fv) return oom(L);
    fv->type = PD_VAR_FETCH_LIST, fv->persistable = true;
    const char *o = "fetch";
    if (pd_op_set_input(f, "X", 1, &x) || pd_op_set_output(f, "Out", 1, &o) ||
        pd_op_set_attr_int(f, "col", (int32_t)col->i))
      return oom(L);
    const char *in_var = iv[0]->var; /* iv points into L->vals, which value() may move */
    for (int i = 0; i < outs->n; i++) { /* the fetched value is the input's var */
      const jv *id = jget(&outs->items[i], "%");
      if (!id || !id->isint || (id->i && !id_ok(id)))
        return malformed(L, opi, opn, "an output without an id");
      pir_value *v = id->i ? value(L, id->i) : NULL;
      if (id->i && !v) return oom(L);
      if (v) v->defined = true, v->var = in_var;
    }
    return PD_OK;
  }
  if (strcmp(opn, "pd_op.full_int_array") == 0) {
    const jv *vals = attr_data(op, "value");
    const char *var;
    if (outs->n != 1) return malformed(L, opi, opn, "not one output");
    pd_status s = def_value(L, opi, opn, &outs->items[0], NULL, &var);
    if (s || !var) return s;
    pir_value *v = known(L, jget(&outs->items[0], "%")->i);
    if (!vals || vals->kind != J_ARR || vals->n > PD_MAX_RANK)
      return problem(L, opi, opn, "a value list pdlang does not read");
    v->isconst = v->unmade = true;
    v->nconst = vals->n;
    for (int i = 0; i < vals->n; i++) {
      const jv *d = jget(&vals->items[i], "D");
      v->cval[i] = d && d->kind == J_NUM ? d->num : 0;
    }
    return PD_OK; /* used only folded into the attributes of its users */
  }
  const op_map *m = NULL;
  for (size_t i = 0; i < sizeof op_maps / sizeof *op_maps; i++)
    if (strcmp(op_maps[i].pir, opn) == 0) m = &op_maps[i];
  if (!m) {
    for (int i = 0; i < outs->n; i++) {
      pd_status s = def_value(L, opi, opn, &outs->items[i], NULL, NULL);
      if (s) return s;
    }
    return problem(L, opi, opn, "pdlang has no such op");
  }
  pd_op_desc *f = pd_block_add_op(L->b, m->fluid, -1);
  if (!f) return oom(L);
  int nfold = 0;
  for (int i = 0; i < ins->n; i++) {
    if (i >= 6 || !m->in[i]) return problem(L, opi, opn, "%d inputs: pdlang knows %d", ins->n, i);
    const char *slot = m->in[i];
    if (strcmp(slot, "-") == 0) continue; /* an input Fluid's op does not have */
    if (!*slot) { /* an input Fluid takes as an attribute */
      const char *an = m->fold[nfold < 2 ? nfold : 1];
      nfold++;
      if (!an) return problem(L, opi, opn, "input %d: pdlang has no attribute for it", i);
      const struct op_dyn *dy = NULL;
      for (size_t k = 0; k < sizeof op_dyns / sizeof *op_dyns; k++)
        if (strcmp(op_dyns[k].pir, opn) == 0) dy = &op_dyns[k];
      if (dy && iv[i] && !iv[i]->isconst && !iv[i]->unmade) {
        /* computed at run time: Fluid's op takes it as a tensor (or a list of them) */
        if (iv[i]->list ? pd_op_set_input(f, dy->dyn_list, iv[i]->nlist, iv[i]->list)
                        : pd_op_set_input(f, dy->dyn, 1, &iv[i]->var))
          return oom(L);
        continue;
      }
      pd_status s = fold(L, opi, opn, f, an, iv[i], m->fold_list);
      if (s) return s;
      if (strcmp(an, "dim") == 0 && iv[i] && iv[i]->isconst && iv[i]->nconst == 0 &&
          pd_op_set_attr_bool(f, "reduce_all", true))
        return oom(L);
      continue;
    }
    if (!iv[i]) continue;
    if (iv[i]->unmade)
      return problem(L, opi, opn, "input %s is a pd_op.full_int_array, which pdlang takes only "
                     "where Fluid has an attribute", slot);
    if (iv[i]->list ? pd_op_set_input(f, slot, iv[i]->nlist, iv[i]->list)
                    : pd_op_set_input(f, slot, 1, &iv[i]->var))
      return oom(L);
  }
  size_t opn_len = strlen(opn);
  bool inplace = opn_len > 1 && opn[opn_len - 1] == '_';
  const char *in_var[6] = {0}; /* iv's vars: defining an output may move iv's values */
  for (int j = 0; inplace && j < ins->n && j < 6 && m->in[j]; j++)
    if (iv[j] && !iv[j]->list && !iv[j]->unmade && !iv[j]->isconst) in_var[j] = iv[j]->var;
  for (int i = 0; i < outs->n; i++) {
    const char *var;
    const jv *tk = jget(jget(&outs->items[i], "TT"), "#");
    bool vec = tk && tk->kind == J_STR && strcmp(tk->s, "0.t_vec") == 0;
    /* An in-place op (batch_norm_) writes SLOTOut into the var of its input SLOT, as Fluid's
     * programs have it (batch norm's running statistics are updated where they are). */
    const char *alias = NULL;
    size_t ol = i < 6 && m->out[i] ? strlen(m->out[i]) : 0;
    for (int j = 0; inplace && !vec && ol > 3 && j < ins->n && j < 6 && m->in[j]; j++)
      if (in_var[j] && strcmp(m->out[i] + ol - 3, "Out") == 0 && strlen(m->in[j]) == ol - 3 &&
          strncmp(m->out[i], m->in[j], ol - 3) == 0)
        alias = in_var[j];
    if (alias) {
      pd_status s = def_alias(L, opi, opn, &outs->items[i], alias);
      if (s) return s;
      if (pd_op_set_output(f, m->out[i], 1, &alias)) return oom(L);
      continue;
    }
    pd_status s = vec ? def_list(L, opi, opn, &outs->items[i])
                      : def_value(L, opi, opn, &outs->items[i], NULL, &var);
    if (s) return s;
    const pir_value *v = vec ? known(L, jget(&outs->items[i], "%")->i) : NULL;
    if (!vec && !var) continue;
    if (i >= 6 || !m->out[i])
      return problem(L, opi, opn, "%d outputs: pdlang knows %d", outs->n, i);
    if (*m->out[i] && (v ? pd_op_set_output(f, m->out[i], v->nlist, v->list)
                         : pd_op_set_output(f, m->out[i], 1, &var)))
      return oom(L);
  }
  const jv *a = jget(op, "A");
  for (int i = 0; a && a->kind == J_ARR && i < a->n; i++) {
    const jv *n = jget(&a->items[i], "N"), *at = jget(&a->items[i], "AT");
    if (!n || n->kind != J_STR || !at) return malformed(L, opi, opn, "an attribute without a name");
    const char *name = n->s;
    if (!strcmp(name, "struct_name") || !strcmp(name, "place") || !strcmp(name, "stop_gradient"))
      continue;
    for (int k = 0; k < 4 && m->rename[k][0]; k++)
      if (strcmp(m->rename[k][0], name) == 0) name = m->rename[k][1];
    if (strcmp(opn, "pd_op.full") == 0 && strcmp(name, "value") == 0) {
      const jv *d = jget(at, "D");
      if (!d || d->kind != J_NUM) return malformed(L, opi, opn, "a value that is not a number");
      if (pd_op_set_attr_float(f, "value", (float)d->num)) return oom(L);
      const jv *id = outs->n == 1 ? jget(&outs->items[0], "%") : NULL;
      pir_value *v = id_ok(id) ? known(L, id->i) : NULL;
      if (v) v->isconst = true, v->nconst = 1, v->cval[0] = d->num;
      continue;
    }
    pd_status s = set_attr(L, opi, opn, f, name, at);
    if (s) return s;
  }
  const pd_attr *dec = strcmp(m->fluid, "slice") == 0 ? pd_op_attr(f, "decrease_axis") : NULL;
  const pd_slot *so = pd_op_output(f, "Out");
  const pd_var_desc *ov = so && so->nargs == 1 ? pd_block_find_var(L->b, so->args[0]) : NULL;
  if (dec && dec->n && ov && ov->ndims == 0) {
    /* a slice to 0-D: Fluid's keeps [1]; squeeze2 makes the 0-D pd_op's makes */
    const char *mid = extra_var(L, "slice", PD_VAR_LOD_TENSOR, ov->dtype), *out = ov->name;
    pd_op_desc *r = mid ? pd_block_add_op(L->b, "squeeze2", -1) : NULL;
    const int32_t axis0 = 0;
    if (!r || pd_op_set_output(f, "Out", 1, &mid) || pd_op_set_input(r, "X", 1, &mid) ||
        pd_op_set_output(r, "Out", 1, &out) || pd_op_set_attr_ints(r, "axes", 1, &axis0))
      return oom(L);
  }
  if (strcmp(m->fluid, "cast") == 0) { /* Fluid's cast names the input's dtype too */
    const pd_slot *x = pd_op_input(f, "X");
    const pd_var_desc *xv = x && x->nargs == 1 ? pd_block_find_var(L->b, x->args[0]) : NULL;
    if (xv && pd_op_set_attr_int(f, "in_dtype", (int32_t)xv->dtype)) return oom(L);
  }
  if (strcmp(m->fluid, "assign_value") == 0) { /* the values as the dtype's list */
    const jv *vals = attr_data(op, "values");
    const pd_attr *dta = pd_op_attr(f, "dtype");
    int dt = dta && dta->type == PD_ATTR_INT ? dta->v.i : -1;
    const char *list = dt == PD_FP32 || dt == PD_FP64 ? "fp32_values"
                       : dt == PD_INT32              ? "int32_values"
                       : dt == PD_INT64              ? "int64_values"
                       : dt == PD_BOOL               ? "bool_values"
                                                     : NULL;
    if (!list || !vals || vals->kind != J_ARR)
      return problem(L, opi, opn, "no values of a dtype pdlang has");
    pd_op_remove_attr(f, "values");
    size_t n = (size_t)vals->n;
    union { float *f; int32_t *i; int64_t *l; bool *b; void *p; } u;
    u.p = pd_calloc(n + 1, sizeof(int64_t));
    if (!u.p) return oom(L);
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
      const jv *d = jget(&vals->items[i], "D");
      bad |= !d || (dt == PD_BOOL ? d->kind != J_BOOL : d->kind != J_NUM);
      if (bad) break;
      if (dt == PD_BOOL) u.b[i] = d->b;
      else if (dt == PD_INT64) u.l[i] = d->isint ? d->i : (int64_t)d->num;
      else if (dt == PD_INT32) u.i[i] = (int32_t)d->num;
      else u.f[i] = (float)d->num;
    }
    int r = bad ? 0
          : dt == PD_BOOL  ? pd_op_set_attr_bools(f, list, (int)n, u.b)
          : dt == PD_INT64 ? pd_op_set_attr_longs(f, list, (int)n, u.l)
          : dt == PD_INT32 ? pd_op_set_attr_ints(f, list, (int)n, u.i)
                           : pd_op_set_attr_floats(f, list, (int)n, u.f);
    pd_free(u.p);
    if (bad) return malformed(L, opi, opn, "a value that is not of its dtype");
    if (r) return oom(L);
  }
  if (strcmp(m->fluid, "fill_constant") == 0) { /* Fluid's shape is LONGS */
    const pd_attr *sh = pd_op_attr(f, "shape");
    int64_t xs[PD_MAX_RANK];
    int n = sh && sh->type == PD_ATTR_INTS && sh->n <= PD_MAX_RANK ? sh->n : 0;
    for (int i = 0; i < n; i++) xs[i] = sh->ints[i];
    if (pd_op_set_attr_longs(f, "shape", n, xs)) return oom(L);
  }
  return PD_OK;
}

pd_status pd_pir_from_json(const char *data, size_t len, const char *what, pd_program **out,
                           pd_error *err) {
  *out = NULL;
  jv root;
  pd_status s = json_parse(data, len, what, &root, err);
  if (s) return s;
  const jv *base = jget(&root, "base_code"), *magic = jget(base, "magic");
  const jv *ver = jget(base, "version"), *prog = jget(&root, "program");
  const jv *region = jidx(jget(prog, "regions"), 0);
  const jv *block = jidx(jget(region, "blocks"), 0), *ops = jget(block, "ops");
  lower L = {.what = what, .err = err};
  if (!magic || magic->kind != J_STR || strcmp(magic->s, "pir") != 0)
    s = pd_error_set(err, PD_EFORMAT, nowhere, "%s: not a PIR program (no base_code.magic "
                     "\"pir\")", what);
  else if (!ver || !ver->isint || ver->i < 1 || ver->i > 4)
    s = pd_error_set(err, PD_EFORMAT, nowhere, "%s: PIR format version %lld; pdlang reads "
                     "versions 1 to 4 (PaddlePaddle 3.0 to 3.3)", what,
                     ver && ver->isint ? (long long)ver->i : -1LL);
  else if (!ops || ops->kind != J_ARR)
    s = pd_error_set(err, PD_EFORMAT, nowhere, "%s: no program.regions[0].blocks[0].ops list",
                     what);
  else if (!(L.p = pd_program_new()))
    s = oom(&L);
  for (int i = 0; !s && i < ops->n; i++) { /* a fetched value's var is named as its fetch */
    const jv *op = &ops->items[i], *nm = jget(op, "#"), *id = jget(jidx(jget(op, "I"), 0), "%");
    const char *name = attr_str(op, "name");
    bool fetch = nm && nm->kind == J_STR && strcmp(nm->s, "1.fetch") == 0 && name && id &&
                 id_ok(id);
    pir_value *v = fetch ? value(&L, id->i) : NULL;
    if (fetch && !v) s = oom(&L);
    if (v && !v->fetch_name) v->fetch_name = name;
  }
  if (!s) {
    L.b = L.p->blocks[0];
    s = lower_ops(&L, ops);
  }
  if (!s && L.nprobs)
    s = pd_error_set(err, PD_EINVAL, nowhere, "%s: pdlang cannot run this program (%d problem%s):"
                     "\n%.*s", what, L.nprobs, L.nprobs == 1 ? "" : "s",
                     (int)(L.probs_len ? L.probs_len - 1 : 0), L.probs ? L.probs : "");
  /* what the reader made holds the promises of a loaded ProgramDesc (pd_exec_new relies on
   * them): a damaged file's dims (below -1), names or types fail here, naming the file */
  if (!s && (s = pd_program_validate(L.p, err)) != PD_OK) pd_error_prefix(err, "%s", what);
  jv_free(&root);
  for (size_t i = 0; i < L.nvals; i++) pd_free(L.vals[i].list);
  pd_free(L.vals);
  pd_free(L.probs);
  if (s) pd_program_free(L.p);
  else *out = L.p;
  return s;
}

bool pd_pir_is_json(const char *data, size_t len) {
  char head[257];
  size_t n = len < sizeof head - 1 ? len : sizeof head - 1;
  memcpy(head, data, n);
  head[n] = 0;
  size_t i = strspn(head, " \t\r\n");
  return head[i] == '{' && strstr(head, "\"magic\"") && strstr(head, "\"pir\"");
}

pd_status pd_pir_load(const char *path, pd_program **out, pd_error *err) {
  char *data;
  size_t len;
  *out = NULL;
  pd_status s = pd_read_file(path, &data, &len, err);
  if (s) return s;
  s = pd_pir_from_json(data, len, path, out, err);
  pd_free(data);
  return s;
}
