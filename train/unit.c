/* unit.c -- the actions' values (train/unit.h): an action's options, a record's fields, a value
 * written for people. */
#include "config.h"
#include "train/unit.h"

#include <string.h>

const char *pd_action_name(pd_action_kind kind) {
  static const char *const names[] = {"print", "train", "eval", "save", "load", "assert_close",
                                      "predict"};
  return (unsigned)kind < PD_ARRAY_LEN(names) ? names[kind] : "?";
}

const pd_cval *pd_action_opt(const pd_action *a, const char *key) {
  for (int i = 0; i < a->nopts; i++)
    if (strcmp(a->opts[i].key, key) == 0) return a->opts[i].value;
  return NULL;
}

const pd_cval *pd_cval_field(const pd_cval *r, const char *key) {
  if (!r || r->kind != PD_CVAL_RECORD) return NULL;
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->fields[i].key, key) == 0) return r->fields[i].value;
  return NULL;
}

int64_t pd_cval_int_field(const pd_cval *r, const char *key, int64_t dflt) {
  const pd_cval *v = pd_cval_field(r, key);
  return v && v->kind == PD_CVAL_INT ? v->i : dflt;
}

bool pd_cval_bool_field(const pd_cval *r, const char *key, bool dflt) {
  const pd_cval *v = pd_cval_field(r, key);
  return v && v->kind == PD_CVAL_BOOL ? v->b : dflt;
}

const char *pd_cval_str_field(const pd_cval *r, const char *key, const char *dflt) {
  const pd_cval *v = pd_cval_field(r, key);
  return v && v->kind == PD_CVAL_STRING ? v->str : dflt;
}

pd_loc pd_cval_field_loc(const pd_cval *r, const char *key, pd_loc fallback) {
  if (!r || r->kind != PD_CVAL_RECORD) return fallback;
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->fields[i].key, key) == 0 && r->fields[i].loc.line > 0) return r->fields[i].loc;
  return r->loc.line > 0 ? r->loc : fallback;
}

void pd_cval_format(const pd_cval *v, pd_buf *out) {
  switch (v->kind) {
  case PD_CVAL_NONE: pd_buf_puts(out, "none"); break;
  case PD_CVAL_BOOL: pd_buf_puts(out, v->b ? "true" : "false"); break;
  case PD_CVAL_INT: pd_buf_printf(out, "%lld", (long long)v->i); break;
  case PD_CVAL_FLOAT: pd_buf_printf(out, "%g", v->f); break;
  case PD_CVAL_STRING: pd_buf_printf(out, "\"%s\"", v->str); break;
  case PD_CVAL_TENSOR: pd_buf_printf(out, "tensor %s", v->str); break;
  case PD_CVAL_DTYPE: pd_buf_puts(out, pd_dtype_name(v->dtype)); break;
  case PD_CVAL_FUNC: pd_buf_puts(out, v->str); break;
  case PD_CVAL_LIST:
  case PD_CVAL_RECORD:
    pd_buf_printf(out, "%s%s", v->kind == PD_CVAL_RECORD ? v->str : "",
                  v->kind == PD_CVAL_RECORD ? "(" : "[");
    for (int i = 0; i < v->n; i++) {
      if (i) pd_buf_puts(out, ", ");
      if (v->kind == PD_CVAL_RECORD) {
        pd_buf_printf(out, "%s = ", v->fields[i].key);
        pd_cval_format(v->fields[i].value, out);
      } else {
        pd_cval_format(v->items[i], out);
      }
    }
    pd_buf_puts(out, v->kind == PD_CVAL_RECORD ? ")" : "]");
    break;
  }
}
