/* test_optable.c -- the driver of the op-test table (optest.h): each row runs on the CPU in fp64
 * and fp32 against its reference, on the GPU against the CPU where a GPU opens (forward for ops
 * flagged GPU, gradients for GPU_GRAD), and through the fp64 finite-difference check of its
 * gradient op (DIFF); script rows compile their program in fp64, check the cost's value and
 * every parameter's gradient. Then the coverage: every op flagged GPU, GPU_GRAD or DIFF has a
 * row, and every DIFF op passed a finite-difference check.
 *
 * Arguments: family names (elementwise, norm, ...) run only those tables and skip the coverage,
 * for working on one family; OT_OP=type runs only that op's rows. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "tests/lang/fp64.h"
#include "tests/lang/fp64_grad.h"
#include "tests/vm/ops/gradcheck.h"
#include "tests/vm/ops/optest.h"
#include "vm/passes/backward.h"

/* ---------------------------------------------------------------- the reference's view */

enum { MAX_VALS = 48 };

typedef struct named_val {
  char slot[64];
  int idx;
  ot_val val;
} named_val;

struct ot_ref {
  const ot_row *row;
  rt *r;                   /* the run: the op's attributes, its outputs */
  pd_dtype dt;             /* the pass's float type */
  int nin, nexp, ngot;
  named_val in[OT_MAX_IN];
  named_val exp[MAX_VALS]; /* what the reference expects */
  named_val got[MAX_VALS]; /* outputs read for a check */
  char why[512];           /* a check's first failure */
};

static void val_free(ot_val *v) {
  free(v->v);
  v->v = NULL;
}

static void ref_free(ot_ref *f) {
  for (int i = 0; i < f->nin; i++) val_free(&f->in[i].val);
  for (int i = 0; i < f->nexp; i++) val_free(&f->exp[i].val);
  for (int i = 0; i < f->ngot; i++) val_free(&f->got[i].val);
  f->nin = f->nexp = f->ngot = 0;
}

int64_t ot_numel(int nd, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= dims[i];
  return n;
}

const ot_val *ot_in_at(ot_ref *f, const char *slot, int i) {
  for (int k = 0; k < f->nin; k++)
    if (f->in[k].idx == i && strcmp(f->in[k].slot, slot) == 0) return &f->in[k].val;
  return NULL;
}

const ot_val *ot_in(ot_ref *f, const char *slot) { return ot_in_at(f, slot, 0); }

int ot_nin(ot_ref *f, const char *slot) {
  int n = 0;
  for (int k = 0; k < f->nin; k++) n += strcmp(f->in[k].slot, slot) == 0;
  return n;
}

double *ot_out_at(ot_ref *f, const char *slot, int i, int nd, const int64_t *dims) {
  if (f->nexp == MAX_VALS || nd > OT_MAX_DIMS) bail("optest: too many expected outputs");
  named_val *e = &f->exp[f->nexp++];
  snprintf(e->slot, sizeof e->slot, "%s", slot);
  e->idx = i;
  e->val.nd = nd;
  for (int d = 0; d < nd; d++) e->val.dims[d] = dims[d];
  e->val.n = ot_numel(nd, dims);
  if (!(e->val.v = calloc((size_t)e->val.n + 1, sizeof(double)))) bail("out of memory");
  return e->val.v;
}

double *ot_out(ot_ref *f, const char *slot, int nd, const int64_t *dims) {
  return ot_out_at(f, slot, 0, nd, dims);
}

double *ot_out_like(ot_ref *f, const char *slot, const ot_val *v) {
  return ot_out_at(f, slot, 0, v->nd, v->dims);
}

static const pd_attr *attr_of(ot_ref *f, const char *name) {
  const pd_attr *a = pd_op_attr(f->r->op, name);
  if (!a) {
    printf("Bail out! optest: %s has no attribute %s\n", f->row->op, name);
    exit(1);
  }
  return a;
}

pd_dtype ot_amp(ot_ref *f) {
  const pd_attr *a = pd_op_attr(f->r->op, "mkldnn_data_type");
  if (!a || a->type != PD_ATTR_STRING || ot_dtype(f) != PD_FP32) return (pd_dtype)0;
  return !strcmp(a->v.s, "bfloat16") ? PD_BF16 : !strcmp(a->v.s, "float16") ? PD_FP16 : (pd_dtype)0;
}

int64_t ot_int(ot_ref *f, const char *name) {
  const pd_attr *a = attr_of(f, name);
  return a->type == PD_ATTR_LONG ? a->v.l : a->type == PD_ATTR_BOOLEAN ? a->v.b : a->v.i;
}

double ot_float(ot_ref *f, const char *name) {
  const pd_attr *a = attr_of(f, name);
  return a->type == PD_ATTR_FLOAT64 ? a->v.d : a->v.f;
}

bool ot_bool(ot_ref *f, const char *name) { return attr_of(f, name)->v.b; }

const char *ot_str(ot_ref *f, const char *name) { return attr_of(f, name)->v.s; }

int ot_ints(ot_ref *f, const char *name, int64_t *v, int cap) {
  const pd_attr *a = attr_of(f, name);
  for (int i = 0; i < a->n && i < cap; i++)
    v[i] = a->type == PD_ATTR_LONGS ? a->longs[i] : a->ints[i];
  return a->n;
}

pd_dtype ot_dtype(ot_ref *f) { return f->dt; }

const char *ot_op(ot_ref *f) { return f->row->op; }

void ot_fail(ot_ref *f, const char *fmt, ...) {
  if (f->why[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->why, sizeof f->why, fmt, ap);
  va_end(ap);
  if (!f->why[0]) snprintf(f->why, sizeof f->why, "(failed)");
}

/* A tensor's values as doubles (NULL for a dtype this table does not read). */
static bool to_val(const pd_tensor *t, ot_val *v) {
  memset(v, 0, sizeof *v);
  v->dt = t->dtype;
  v->nd = t->ndims;
  for (int d = 0; d < t->ndims && d < OT_MAX_DIMS; d++) v->dims[d] = t->dims[d];
  v->n = pd_tensor_numel(t);
  if (!(v->v = calloc((size_t)v->n + 1, sizeof(double)))) bail("out of memory");
  for (int64_t i = 0; i < v->n; i++) switch (t->dtype) {
      case PD_FP32: v->v[i] = PD_TENSOR_F32(t)[i]; break;
      case PD_FP64: v->v[i] = PD_TENSOR_F64(t)[i]; break;
      case PD_INT32: v->v[i] = PD_TENSOR_I32(t)[i]; break;
      case PD_INT64: v->v[i] = (double)PD_TENSOR_I64(t)[i]; break;
      case PD_BOOL:
      case PD_UINT8: v->v[i] = PD_TENSOR_BOOL(t)[i]; break;
      default: val_free(v); return false;
    }
  if (t->nlod > 0) {
    v->nlod = (int)t->lod[0].n;
    v->lod = t->lod[0].offsets;
  }
  return true;
}

/* ---------------------------------------------------------------- building a row's op */

/* The name of input (or output) var k of a slot. */
static void var_name(char *buf, size_t n, const char *slot, int k, bool output) {
  snprintf(buf, n, "%s%s", slot, output ? "_out" : "");
  if (k > 0) snprintf(buf + strlen(buf), n - strlen(buf), "_%d", k);
}

/* Deterministic values in [0, 1): an LCG seeded by the row and the input (their names,
 * attributes and shape: a row's inputs do not change when other rows come or go). */
static double uniform01(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

static pd_dtype type_of(ot_type t, pd_dtype fdt) {
  switch (t) {
    case OT_I64: return PD_INT64;
    case OT_I32: return PD_INT32;
    case OT_BOOL: return PD_BOOL;
    case OT_F32: return PD_FP32;
    default: return fdt;
  }
}

/* Set the row's attributes ("name=value ...", typed as the op's def wants them). */
static void set_attrs(const ot_row *row, pd_op_desc *op, pd_dtype fdt) {
  const pd_opdef *def = pd_opdef_lookup(row->op);
  const char *p = row->attrs ? row->attrs : "";
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    const char *eq = strchr(p, '=');
    if (!eq) bail("optest: an attribute without '='");
    char name[64], val[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - p), p);
    const char *v = eq + 1, *end;
    if (*v == '[' || *v == '"') {
      end = strchr(v + 1, *v == '[' ? ']' : '"');
      if (!end) bail("optest: an attribute's list or string is not closed");
      end++;
    } else {
      end = v + strcspn(v, " ");
    }
    snprintf(val, sizeof val, "%.*s", (int)(end - v), v);
    p = end;
    if (strcmp(val, "$F") == 0) snprintf(val, sizeof val, "%d", (int)fdt);
    const pd_attrdef *ad = pd_opdef_attr(def, name);
    if (!ad && (def->flags & PD_OPF_AMP) && strcmp(name, "mkldnn_data_type") == 0) {
      /* the amp pass's mark (vm/passes/amp.h), which the op's signature does not list */
      if (pd_op_set_attr_string(op, name, val)) bail("out of memory");
      continue;
    }
    if (!ad) {
      printf("Bail out! optest: %s has no attribute %s\n", row->op, name);
      exit(1);
    }
    int e = 0;
    switch (ad->type) {
      case PD_ATTR_INT: e = pd_op_set_attr_int(op, name, (int32_t)strtoll(val, NULL, 10)); break;
      case PD_ATTR_LONG: e = pd_op_set_attr_long(op, name, strtoll(val, NULL, 10)); break;
      case PD_ATTR_FLOAT: e = pd_op_set_attr_float(op, name, strtof(val, NULL)); break;
      case PD_ATTR_FLOAT64: e = pd_op_set_attr_double(op, name, strtod(val, NULL)); break;
      case PD_ATTR_BOOLEAN: e = pd_op_set_attr_bool(op, name, strcmp(val, "true") == 0); break;
      case PD_ATTR_STRING: {
        char *s = val[0] == '"' ? val + 1 : val;
        size_t l = strlen(s);
        if (l && s[l - 1] == '"') s[l - 1] = '\0';
        e = pd_op_set_attr_string(op, name, s);
        break;
      }
      case PD_ATTR_INTS:
      case PD_ATTR_LONGS:
      case PD_ATTR_FLOATS: {
        int32_t ints[32];
        int64_t longs[32];
        float floats[32];
        int n = 0;
        for (char *q = val + 1; *q && *q != ']' && n < 32;) {
          char *qe;
          double d = strtod(q, &qe);
          if (qe == q) break;
          ints[n] = (int32_t)d;
          longs[n] = (int64_t)d;
          floats[n++] = (float)d;
          q = qe;
          while (*q == ',' || *q == ' ') q++;
        }
        e = ad->type == PD_ATTR_INTS    ? pd_op_set_attr_ints(op, name, n, ints)
            : ad->type == PD_ATTR_LONGS ? pd_op_set_attr_longs(op, name, n, longs)
                                        : pd_op_set_attr_floats(op, name, n, floats);
        break;
      }
      default: bail("optest: an attribute type the table cannot write");
    }
    if (e) bail("out of memory");
  }
}

/* The output slots to bind: "Out Y:2" (two vars in Y; "Out=X": Out is bound to the vars of
 * input slot X, in place), or the op's needed and TEMP ones. */
static int out_slots(const ot_row *row, char names[][64], int *counts, int cap) {
  int n = 0;
  if (row->outs) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", row->outs);
    char *sv = NULL;
    for (char *t = strtok_r(buf, " ", &sv); t && n < cap; t = strtok_r(NULL, " ", &sv)) {
      char *colon = strchr(t, ':');
      counts[n] = colon ? atoi(colon + 1) : 1;
      if (colon) *colon = '\0';
      snprintf(names[n++], 64, "%s", t);
    }
    return n;
  }
  const pd_opdef *def = pd_opdef_lookup(row->op);
  for (int s = 0; s < def->noutputs && n < cap; s++) {
    unsigned fl = def->outputs[s].flags;
    if ((fl & PD_SLOT_DISPENSABLE) && !(fl & PD_SLOT_INTERMEDIATE)) continue;
    counts[n] = 1;
    snprintf(names[n++], 64, "%s", def->outputs[s].name);
  }
  return n;
}

/* Build the row's op in r (inputs valued, attributes set) for a pass in dtype fdt; the
 * reference's view of the inputs goes to f. */
static void build(const ot_row *row, rt *r, pd_dtype fdt, ot_ref *f) {
  rt_init(r);
  r->seed = row->seed;
  memset(f, 0, sizeof *f);
  f->row = row;
  f->r = r;
  f->dt = fdt;
  char ins[1024] = "", outs[1024] = "";
  for (int i = 0; i < OT_MAX_IN && row->in[i].slot; i++) {
    const ot_input *in = &row->in[i];
    int k = 0;
    for (int j = 0; j < i; j++) k += strcmp(row->in[j].slot, in->slot) == 0;
    char name[80];
    var_name(name, sizeof name, in->slot, k, false);
    int64_t dims[16];
    int nd = parse_shape(in->shape, dims);
    int64_t n = ot_numel(nd, dims);
    pd_dtype dt = type_of(in->type, fdt);
    named_val *nv = &f->in[f->nin++];
    snprintf(nv->slot, sizeof nv->slot, "%s", in->slot);
    nv->idx = k;
    nv->val.dt = dt;
    nv->val.nd = nd;
    for (int d = 0; d < nd; d++) nv->val.dims[d] = dims[d];
    nv->val.n = n;
    if (!(nv->val.v = calloc((size_t)n + 1, sizeof(double)))) bail("out of memory");
    char key[512];
    snprintf(key, sizeof key, "%s/%s/%s/%s/%d/%s", row->op, row->what ? row->what : "",
             row->attrs ? row->attrs : "", in->slot, k, in->shape);
    uint64_t s = pd_hash_bytes(key, strlen(key));
    double lo = in->lo, hi = in->hi;
    if (lo == 0 && hi == 0) lo = -1, hi = 1;
    void *data = calloc((size_t)n + 1, 8);
    if (!data) bail("out of memory");
    for (int64_t e = 0; e < n; e++) {
      double v = in->v ? in->v[e] : 0;
      bool is_int = dt == PD_INT64 || dt == PD_INT32 || dt == PD_BOOL;
      if (!in->v)
        v = is_int ? lo + floor(uniform01(&s) * (hi - lo + 1)) : lo + (hi - lo) * uniform01(&s);
      switch (dt) {
        case PD_FP32: ((float *)data)[e] = (float)v; v = (float)v; break;
        case PD_FP64: ((double *)data)[e] = v; break;
        case PD_INT64: ((int64_t *)data)[e] = (int64_t)v; break;
        case PD_INT32: ((int32_t *)data)[e] = (int32_t)v; break;
        case PD_BOOL: ((uint8_t *)data)[e] = v != 0; v = v != 0; break;
        default: bail("optest: an input type the table cannot write");
      }
      nv->val.v[e] = v;
    }
    rt_in(r, name, dt, in->shape, data);
    free(data);
    if (in->lod) {
      rt_lod(r, name, in->nlod, in->lod);
      nv->val.nlod = in->nlod;
      nv->val.lod = in->lod;
    }
    /* "X=a,b": a slot's vars in order, the slot where it first appears. */
    if (k == 0) {
      size_t l = strlen(ins);
      snprintf(ins + l, sizeof ins - l, "%s%s=%s", l ? " " : "", in->slot, name);
      for (int j = i + 1, kk = 1; j < OT_MAX_IN && row->in[j].slot; j++) {
        if (strcmp(row->in[j].slot, in->slot) != 0) continue;
        char more[80];
        var_name(more, sizeof more, in->slot, kk++, false);
        l = strlen(ins);
        snprintf(ins + l, sizeof ins - l, ",%s", more);
      }
    }
  }
  char slots[16][64];
  int counts[16];
  int ns = out_slots(row, slots, counts, 16);
  for (int s = 0; s < ns; s++) {
    /* "Out=X": Out is bound to X's vars */
    size_t eq = strcspn(slots[s], "=");
    bool in_place = slots[s][eq] == '=';
    char slot[64], src[64];
    snprintf(slot, sizeof slot, "%.*s", (int)eq, slots[s]);
    snprintf(src, sizeof src, "%s", in_place ? slots[s] + eq + 1 : slot);
    if (in_place) {
      counts[s] = 0;
      for (int i = 0; i < OT_MAX_IN && row->in[i].slot; i++)
        counts[s] += strcmp(row->in[i].slot, src) == 0;
    }
    size_t l = strlen(outs);
    snprintf(outs + l, sizeof outs - l, "%s%s=", l ? " " : "", slot);
    for (int k = 0; k < counts[s]; k++) {
      char name[80];
      var_name(name, sizeof name, src, k, !in_place);
      l = strlen(outs);
      snprintf(outs + l, sizeof outs - l, "%s%s", k ? "," : "", name);
    }
  }
  pd_op_desc *op = rt_op(r, row->op, ins, outs);
  set_attrs(row, op, fdt);
}

/* The name of var i of the row's op's output slot (NULL when it has none). */
static const char *out_name(rt *r, const char *slot, int i) {
  const pd_slot *s = pd_op_output(r->op, slot);
  return s && i < s->nargs ? s->args[i] : NULL;
}

/* The TAP name of a row. */
static const char *label(const ot_row *row, char *buf, size_t n) {
  snprintf(buf, n, "%s%s%s", row->op, row->what ? " " : "", row->what ? row->what : "");
  return buf;
}

/* A var's value in r's scope as doubles, or false. */
static bool value_of(rt *r, const char *name, ot_val *v) {
  const pd_tensor *t = rt_get(r, name);
  return t && to_val(t, v);
}

/* Compare got with want: floats within tol of max(1, |want|), integer types exactly. Fills
 * why with the first difference. */
static bool close_enough(const ot_val *got, const ot_val *want, bool exact, double tol,
                         char *why, size_t n) {
  if (got->n != want->n) {
    snprintf(why, n, "%lld elements, want %lld", (long long)got->n, (long long)want->n);
    return false;
  }
  for (int64_t i = 0; i < got->n; i++) {
    double g = got->v[i], w = want->v[i], s = fabs(w) > 1 ? fabs(w) : 1;
    bool same = exact ? g == w
                      : g == w || (isfinite(w) && fabs(g - w) <= tol * s) || (isnan(g) && isnan(w));
    if (!same) {
      snprintf(why, n, "element %lld: %.10g, want %.10g", (long long)i, g, w);
      return false;
    }
  }
  return true;
}

/* Do got's dims equal want's? Fills why with both when not. */
static bool same_shape(const ot_val *got, const ot_val *want, char *why, size_t n) {
  bool same = got->nd == want->nd;
  for (int d = 0; same && d < got->nd; d++) same = got->dims[d] == want->dims[d];
  if (same) return true;
  char g[128], w[128];
  snprintf(why, n, "dims %s, want %s", pd_dims_str(got->nd, got->dims, g, sizeof g),
           pd_dims_str(want->nd, want->dims, w, sizeof w));
  return false;
}

static bool is_exact(pd_dtype dt) { return dt != PD_FP32 && dt != PD_FP64; }

/* ---------------------------------------------------------------- the checks */

typedef struct coverage {
  bool row[PD_OP_COUNT_];   /* the op has a row */
  bool fd[PD_OP_COUNT_];    /* its gradient passed a finite-difference check */
} coverage;

static bool gpu_open;

/* The forward pass of a row in one dtype against its reference (or check). */
static void check_values(const ot_row *row, pd_dtype fdt) {
  char lab[160];
  label(row, lab, sizeof lab);
  const char *dn = fdt == PD_FP64 ? "fp64" : "fp32";
  rt r;
  ot_ref f;
  build(row, &r, fdt, &f);
  pd_status st = rt_run(&r);
  if (!ok(st == PD_OK, "%s %s: runs", lab, dn)) {
    printf("#   %s\n", r.f.err.msg ? r.f.err.msg : pd_status_str(st));
  } else if (row->ref) {
    row->ref(&f);
    bool all = f.nexp > 0;
    char why[300] = "the reference expects nothing";
    for (int e = 0; e < f.nexp && all; e++) {
      const char *name = out_name(&r, f.exp[e].slot, f.exp[e].idx);
      const pd_tensor *t = name ? rt_get(&r, name) : NULL;
      ot_val got;
      if (!t || !to_val(t, &got)) {
        snprintf(why, sizeof why, "%s %d has no value", f.exp[e].slot, f.exp[e].idx);
        all = false;
        break;
      }
      double tol = fdt == PD_FP64 ? (row->tol64 > 0 ? row->tol64 : 1e-10)
                                  : (row->tol > 0 ? row->tol : 1e-5);
      char w[240];
      if (!same_shape(&got, &f.exp[e].val, w, sizeof w) ||
          !close_enough(&got, &f.exp[e].val, is_exact(t->dtype), tol, w, sizeof w)) {
        snprintf(why, sizeof why, "%s: %s", name, w);
        all = false;
      }
      val_free(&got);
    }
    if (!ok(all, "%s %s: the outputs match the reference", lab, dn)) printf("#   %s\n", why);
  } else if (row->check) {
    row->check(&f);
    if (!ok(!f.why[0], "%s %s: the outputs pass the check", lab, dn)) printf("#   %s\n", f.why);
  }
  ref_free(&f);
  rt_free(&r);
}

const ot_val *ot_got_at(ot_ref *f, const char *slot, int i) {
  for (int k = 0; k < f->ngot; k++)
    if (f->got[k].idx == i && strcmp(f->got[k].slot, slot) == 0) return &f->got[k].val;
  if (f->ngot == MAX_VALS) bail("optest: too many outputs read");
  const char *name = out_name(f->r, slot, i);
  named_val *g = &f->got[f->ngot];
  if (!name || !value_of(f->r, name, &g->val)) return NULL;
  snprintf(g->slot, sizeof g->slot, "%s", slot);
  g->idx = i;
  f->ngot++;
  return &g->val;
}

const ot_val *ot_got(ot_ref *f, const char *slot) { return ot_got_at(f, slot, 0); }

/* The inputs whose gradients count: the row's .wrt, or every OT_F input slot. */
static void wrt_of(const ot_row *row, char *buf, size_t n) {
  if (row->wrt) {
    snprintf(buf, n, "%s", row->wrt);
    return;
  }
  buf[0] = '\0';
  for (int i = 0; i < OT_MAX_IN && row->in[i].slot; i++) {
    if (row->in[i].type != OT_F) continue;
    char pat[80];
    snprintf(pat, sizeof pat, " %s ", row->in[i].slot);
    char padded[512];
    snprintf(padded, sizeof padded, " %s ", buf);
    if (strstr(padded, pat)) continue;
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", l ? " " : "", row->in[i].slot);
  }
}

/* The outputs the gradient check weighs: .loss, or the first bound output slot. */
static void loss_of(const ot_row *row, char *buf, size_t n) {
  if (row->loss) {
    snprintf(buf, n, "%s", row->loss);
    return;
  }
  char slots[16][64];
  int counts[16];
  int ns = out_slots(row, slots, counts, 16);
  snprintf(buf, n, "%s", ns ? slots[0] : "");
  buf[strcspn(buf, "=")] = '\0';
}

/* The GPU against the CPU: the outputs (GPU) and the gradients (GPU_GRAD), fp32. */
static void check_gpu(const ot_row *row, const pd_opdef *def) {
  char lab[160];
  label(row, lab, sizeof lab);
  bool grad = (def->flags & PD_OPF_GPU_GRAD) && !row->no_grad;
  char wrt[256], loss[256];
  wrt_of(row, wrt, sizeof wrt);
  loss_of(row, loss, sizeof loss);
  rt r[2];
  ot_ref f[2];
  pd_scope *gscope[2] = {NULL, NULL};
  pd_status st = PD_OK;
  int gb = -1;
  for (int p = 0; p < 2; p++) {
    build(row, &r[p], PD_FP32, &f[p]);
    r[p].place = p ? PD_K_CUDA : PD_K_HOST;
    if (!st) st = rt_run(&r[p]);
    if (!st && grad) {
      gb = gc_add_grad_op(&r[p], wrt, loss);
      pd_block *b = pd_program_block(r[p].f.p, gb);
      pd_exec *ex = NULL;
      pd_exec_options o = {.seed = row->seed, .place = r[p].place};
      st = pd_opdef_prepare(b->ops[0], b, &r[p].f.err);
      if (!st) st = pd_exec_new(r[p].f.p, &o, &ex, &r[p].f.err);
      if (!st && !(gscope[p] = pd_scope_new(r[p].scope))) bail("out of memory");
      if (!st) st = pd_exec_run_block(ex, gb, gscope[p], &r[p].f.err);
      pd_exec_free(ex);
    }
    if (st) printf("#   %s: %s\n", p ? "GPU" : "CPU", r[p].f.err.msg ? r[p].f.err.msg : "?");
  }
  char why[300] = "";
  bool same = st == PD_OK;
  /* Every output var, and every gradient. */
  const pd_op_desc *op = r[0].op;
  for (int s = 0; same && s < op->noutputs; s++)
    for (int a = 0; same && a < op->outputs[s].nargs; a++) {
      const char *name = op->outputs[s].args[a];
      ot_val v[2];
      bool have0 = value_of(&r[0], name, &v[0]), have1 = value_of(&r[1], name, &v[1]);
      if (have0 != have1) {
        snprintf(why, sizeof why, "%s: a value on one side only", name);
        same = false;
      } else if (have0) {
        char w[240];
        const pd_tensor *t = rt_get(&r[0], name);
        if (!close_enough(&v[1], &v[0], is_exact(t->dtype), row->tol > 0 ? row->tol : 1e-5, w,
                          sizeof w)) {
          snprintf(why, sizeof why, "%s: %s", name, w);
          same = false;
        }
      }
      if (have0) val_free(&v[0]);
      if (have1) val_free(&v[1]);
    }
  ok(same, "%s: the GPU's outputs match the CPU's", lab);
  if (!same && why[0]) printf("#   %s\n", why);
  if (grad) {
    bool gsame = st == PD_OK;
    const pd_op_desc *g = gb >= 0 ? pd_program_block(r[0].f.p, gb)->ops[0] : NULL;
    for (int s = 0; gsame && g && s < g->noutputs; s++)
      for (int a = 0; gsame && a < g->outputs[s].nargs; a++) {
        const char *name = g->outputs[s].args[a];
        pd_variable *v0 = pd_scope_find_local_var(gscope[0], name),
                    *v1 = pd_scope_find_local_var(gscope[1], name);
        pd_tensor *t0 = v0 ? pd_var_tensor(v0) : NULL, *t1 = v1 ? pd_var_tensor(v1) : NULL;
        if (t1 && pd_tensor_on_gpu(t1) && pd_tensor_to_place(t1, PD_K_HOST)) bail("download");
        ot_val x0, x1;
        if (!t0 || !t1 || !to_val(t0, &x0)) {
          snprintf(why, sizeof why, "%s: no gradient", name);
          gsame = false;
          break;
        }
        if (!to_val(t1, &x1)) bail("optest: a gradient of an unexpected dtype");
        char w[240];
        if (!close_enough(&x1, &x0, false, row->tol > 0 ? row->tol : 1e-5, w, sizeof w)) {
          snprintf(why, sizeof why, "%s: %s", name, w);
          gsame = false;
        }
        val_free(&x0);
        val_free(&x1);
      }
    if (!ok(gsame, "%s: the GPU's gradients match the CPU's", lab)) printf("#   %s\n", why);
  }
  for (int p = 0; p < 2; p++) {
    ref_free(&f[p]);
    rt_free(&r[p]);
  }
}

/* The fp64 finite-difference check of the op's gradient. */
static bool check_grad(const ot_row *row) {
  char lab[160], wrt[256], loss[256];
  label(row, lab, sizeof lab);
  wrt_of(row, wrt, sizeof wrt);
  loss_of(row, loss, sizeof loss);
  if (!wrt[0] || !loss[0]) {
    ok(0, "%s: a gradient check needs a float input and an output", lab);
    return false;
  }
  rt r;
  ot_ref f;
  build(row, &r, PD_FP64, &f);
  bool pass = grad_check_tol(&r, wrt, loss, row->gtol > 0 ? row->gtol : 1e-6, lab);
  ref_free(&f);
  rt_free(&r);
  return pass;
}

/* Does any block of p hold an op of type `type`? */
static bool holds_op(const pd_program *p, const char *type) {
  for (int b = 0; b < p->nblocks; b++)
    for (int i = 0; i < p->blocks[b]->nops; i++)
      if (strcmp(p->blocks[b]->ops[i]->type, type) == 0) return true;
  return false;
}

/* A script row: the ops it covers are in the program, the cost's value, every gradient. */
static bool check_script(const ot_row *row, coverage *cov) {
  char lab[160];
  label(row, lab, sizeof lab);
  pd_source *src = NULL;
  pd_unit *unit = NULL;
  pd_runner *rn = NULL;
  pd_program *fwd = NULL, *bwd = NULL;
  pd_exec *fex = NULL, *bex = NULL;
  pd_backward pg;
  memset(&pg, 0, sizeof pg);
  pd_error err = {0};
  bool pass = false;
  pd_status st = fp64_setup(row->op, row->script, row->cost, &src, &unit, &rn, &fwd, &err);
  if (!st && !(bwd = pd_program_clone(fwd))) st = PD_ENOMEM;
  if (!st) st = pd_append_backward(bwd, row->cost, &pg, &err);
  if (!st) st = pd_program_validate(bwd, &err);
  if (!st) st = pd_exec_new(fwd, NULL, &fex, &err);
  if (!st) st = pd_exec_new(bwd, NULL, &bex, &err);
  if (!ok(st == PD_OK, "%s: compiles, with its backward pass", lab)) {
    printf("#   %s\n", err.msg ? err.msg : pd_status_str(st));
    goto done;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", row->covers ? row->covers : row->op);
  bool held = true;
  for (char *sv = NULL, *t = strtok_r(buf, " ", &sv); t; t = strtok_r(NULL, " ", &sv)) {
    if (!ok(holds_op(fwd, t), "%s: the program holds a %s op", lab, t)) held = false;
  }
  /* The cost's value. */
  pd_tensor t;
  pd_tensor_init(&t);
  pd_exec_fetch fe = {row->cost, &t};
  pd_exec_io io = {0, NULL, 1, &fe};
  st = pd_exec_run(fex, pd_runner_scope(rn), &io, NULL, &err);
  ot_val got = {0};
  bool valued = st == PD_OK && to_val(&t, &got);
  ot_val want = {.n = row->nwant, .v = (double *)row->want};
  char why[240] = "no value";
  if (!ok(valued && close_enough(&got, &want, false, row->tol64 > 0 ? row->tol64 : 1e-9, why,
                                 sizeof why),
          "%s: %s has the value worked out by hand", lab, row->cost))
    printf("#   %s\n", st ? (err.msg ? err.msg : "?") : why);
  if (valued) val_free(&got);
  pd_tensor_release(&t);
  fp64_grad_run g = {fex, bex, pd_runner_scope(rn), &pg, {0, NULL, 0, NULL}, row->cost, &err};
  pass = fp64_check_grads(&g, lab, row->nparams) && held;
  if (pass) {
    snprintf(buf, sizeof buf, "%s", row->covers ? row->covers : row->op);
    for (char *sv = NULL, *tt = strtok_r(buf, " ", &sv); tt; tt = strtok_r(NULL, " ", &sv)) {
      const pd_opdef *d = pd_opdef_lookup(tt);
      if (d) cov->fd[d->kind] = true;
    }
  }
done:
  pd_exec_free(fex);
  pd_exec_free(bex);
  pd_program_free(fwd);
  pd_program_free(bwd);
  pd_backward_release(&pg);
  pd_runner_free(rn);
  pd_unit_free(unit);
  pd_source_free(src);
  pd_error_clear(&err);
  return pass;
}

static void run_row(const ot_row *row, coverage *cov) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", row->covers ? row->covers : row->op);
  for (char *sv = NULL, *t = strtok_r(buf, " ", &sv); t; t = strtok_r(NULL, " ", &sv)) {
    const pd_opdef *d = pd_opdef_lookup(t);
    if (!d) {
      printf("Bail out! optest: no op %s\n", t);
      exit(1);
    }
    cov->row[d->kind] = true;
  }
  if (row->script) {
    check_script(row, cov);
    return;
  }
  const pd_opdef *def = pd_opdef_lookup(row->op);
  if (!row->no_fp64) check_values(row, PD_FP64);
  check_values(row, PD_FP32);
  if (gpu_open && (def->flags & PD_OPF_GPU)) check_gpu(row, def);
  if ((def->flags & PD_OPF_DIFF) && !row->no_grad && !row->no_fp64 && check_grad(row))
    cov->fd[def->kind] = true;
}

/* ---------------------------------------------------------------- main */

typedef struct family {
  const char *name;
  const ot_row *rows;
} family;

static const family families[] = {
#define OT_ENTRY_(f) {#f, ot_rows_##f},
    OT_FAMILIES(OT_ENTRY_)
#undef OT_ENTRY_
};

int main(int argc, char **argv) {
  coverage cov;
  memset(&cov, 0, sizeof cov);
  if (pd_k_cuda_built()) {
    pd_error err = {0};
    gpu_open = pd_k_cuda_open(0, &err) == PD_OK;
    if (!gpu_open) printf("# no GPU: %s\n", err.msg ? err.msg : "?");
    pd_error_clear(&err);
  }
  const char *only_op = getenv("OT_OP");
  for (size_t i = 0; i < PD_ARRAY_LEN(families); i++) {
    bool chosen = argc < 2;
    for (int a = 1; a < argc; a++) chosen = chosen || strcmp(argv[a], families[i].name) == 0;
    for (const ot_row *row = families[i].rows; row->op; row++)
      if (chosen && (!only_op || strcmp(only_op, row->op) == 0)) run_row(row, &cov);
  }
  if (!gpu_open) tap_skip("the GPU against the CPU: no GPU opens here");
  if (argc < 2 && !only_op) {
    for (int k = 0; k < PD_OP_COUNT_; k++) {
      const pd_opdef *d = &pd_opdefs[k];
      unsigned fl = d->flags;
      if (!(fl & (PD_OPF_GPU | PD_OPF_GPU_GRAD | PD_OPF_DIFF))) continue;
      ok(cov.row[k], "%s (flagged%s%s%s) has a row in the op-test table", d->type,
         fl & PD_OPF_DIFF ? " DIFF" : "", fl & PD_OPF_GPU ? " GPU" : "",
         fl & PD_OPF_GPU_GRAD ? " GPU_GRAD" : "");
      if (fl & PD_OPF_DIFF)
        ok(cov.fd[k], "%s: its gradient passed a finite-difference check in the table", d->type);
    }
  }
  if (gpu_open) pd_k_dev_trim();
  return tap_done();
}
