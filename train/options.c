/* options.c -- train's option descriptors (train/options.h): the table made from
 * PD_TRAIN_OPTIONS, and a train call's options read through it. */
#include "config.h"
#include "train/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pd_topt_desc table[] = {
#define PD_TOPT_ROW_(name, type, dflt, choices, lo, hi, flags, expect, meaning) \
  {#name, PD_TOPT_##type, dflt, choices, lo, hi, flags, expect, meaning},
    PD_TRAIN_OPTIONS(PD_TOPT_ROW_)
#undef PD_TOPT_ROW_
};

static const char *const names[] = {
#define PD_TOPT_NAME_(name, ...) #name,
    PD_TRAIN_OPTIONS(PD_TOPT_NAME_)
#undef PD_TOPT_NAME_
    NULL};

const pd_topt_desc *pd_topt(int i) {
  return i >= 0 && i < PD_TOPT_COUNT ? &table[i] : NULL;
}

const pd_topt_desc *pd_topt_find(const char *name) {
  for (int i = 0; i < PD_TOPT_COUNT; i++)
    if (strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

const char *const *pd_topt_names(void) { return names; }

bool pd_topt_is_choice(const pd_topt_desc *d, const char *v) {
  size_t n = strlen(v);
  for (const char *c = d->choices; c && *c;) {
    const char *bar = strchr(c, '|');
    size_t k = bar ? (size_t)(bar - c) : strlen(c);
    if (k == n && n && strncmp(c, v, n) == 0) return true;
    c += k + (bar ? 1 : 0);
  }
  return false;
}

void pd_train_opts_from_action(const pd_action *a, pd_train_opts *o) {
  for (int i = 0; i < PD_TOPT_COUNT; i++) {
    o->value[i] = NULL;
    o->loc[i] = a->loc;
  }
  for (int k = 0; k < a->nopts; k++)
    for (int i = 0; i < PD_TOPT_COUNT; i++)
      if (strcmp(a->opts[k].key, table[i].name) == 0) {
        o->value[i] = a->opts[k].value;
        if (a->opts[k].loc.line > 0) o->loc[i] = a->opts[k].loc;
      }
}

bool pd_train_opt_given(const pd_train_opts *o, pd_topt_id id) {
  return o->value[id] && o->value[id]->kind != PD_CVAL_NONE;
}

/* Whether the table gives option id a default of its own (not none, not one that depends). */
static bool has_default(pd_topt_id id) {
  return table[id].dflt && strcmp(table[id].dflt, "none") != 0;
}

int64_t pd_train_opt_int(const pd_train_opts *o, pd_topt_id id, int64_t dflt) {
  const pd_cval *v = o->value[id];
  if (v && v->kind == PD_CVAL_INT) return v->i;
  return has_default(id) ? strtoll(table[id].dflt, NULL, 10) : dflt;
}

bool pd_train_opt_bool(const pd_train_opts *o, pd_topt_id id) {
  const pd_cval *v = o->value[id];
  return v && v->kind == PD_CVAL_BOOL ? v->b : has_default(id) && !strcmp(table[id].dflt, "true");
}

const char *pd_train_opt_str(const pd_train_opts *o, pd_topt_id id, char *buf, size_t n) {
  const pd_cval *v = o->value[id];
  if (v && v->kind == PD_CVAL_STRING) return v->str;
  if (!buf || !has_default(id) || table[id].dflt[0] != '"') return NULL;
  snprintf(buf, n, "%.*s", (int)strlen(table[id].dflt) - 2, table[id].dflt + 1);
  return buf;  /* "\"loss\"" -> "loss" */
}

void pd_train_opts_describe(const pd_train_opts *o, pd_buf *b) {
  for (int i = 0; i < PD_TOPT_COUNT; i++) {
    if (!(table[i].flags & PD_TOPT_CKPT)) continue;
    if (table[i].type == PD_TOPT_INT)
      pd_buf_printf(b, ", %s %lld", table[i].name,
                    (long long)pd_train_opt_int(o, (pd_topt_id)i, 0));
    else if (table[i].type == PD_TOPT_BOOL && pd_train_opt_bool(o, (pd_topt_id)i))
      pd_buf_printf(b, ", %s", table[i].name);
  }
}
