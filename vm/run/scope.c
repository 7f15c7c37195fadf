/* scope.c -- the scope tree: a hash map (base/strmap.h) of variables per scope, a doubly
 * linked list of child scopes, and variables as tagged unions (tensor, tensor array, step
 * scopes). */
#include "config.h"
#include "vm/run/scope.h"

#include <stdlib.h>
#include <string.h>

#include "base/strmap.h"

struct pd_scope {
  pd_scope *parent;
  pd_scope *first_kid;       /* owned children, newest first */
  pd_scope *prev, *next;     /* siblings in the parent's list */
  size_t nkids;
  pd_variable *step_owner;   /* a step scope: the STEP_SCOPES variable that owns it */
  pd_strmap vars;            /* name -> pd_variable *; keys borrowed: each variable's name */
};

/* ---- Tree ---- */

static pd_scope *scope_alloc(pd_scope *parent) {
  pd_scope *s = pd_calloc(1, sizeof *s);
  if (s) s->parent = parent;
  return s;
}

static void destroy_tree(pd_scope *s);

static void var_release(pd_variable *v) {
  switch (v->type) {
    case PD_VAR_LOD_TENSOR: pd_tensor_release(&v->u.tensor); break;
    case PD_VAR_LOD_TENSOR_ARRAY:
    case PD_VAR_FEED_MINIBATCH:
    case PD_VAR_FETCH_LIST: pd_tensor_array_release(&v->u.array); break;
    case PD_VAR_STEP_SCOPES:
      for (size_t i = 0; i < v->u.steps.n; i++) destroy_tree(v->u.steps.items[i]);
      pd_free(v->u.steps.items);
      break;
    default: break;
  }
  memset(&v->u, 0, sizeof v->u);
  v->type = PD_VAR_UNSET;
}

static void var_destroy(pd_variable *v) {
  var_release(v);
  pd_free(v->name);
  pd_free(v);
}

/* Free s and everything it owns; s is already unlinked from whoever referred to it. Children
 * go first (their variables may refer to the parent's), then the variables. */
static void destroy_tree(pd_scope *s) {
  while (s->first_kid) {
    pd_scope *k = s->first_kid;
    s->first_kid = k->next;
    destroy_tree(k);
  }
  pd_strmap_entry *e;
  for (size_t i = 0; (e = pd_strmap_next(&s->vars, &i));) var_destroy(e->val.p);
  pd_strmap_free(&s->vars);
  pd_free(s);
}

pd_scope *pd_scope_new(pd_scope *parent) {
  pd_scope *s = scope_alloc(parent);
  if (!s || !parent) return s;
  s->next = parent->first_kid;
  if (s->next) s->next->prev = s;
  parent->first_kid = s;
  parent->nkids++;
  return s;
}

void pd_scope_free(pd_scope *s) {
  if (!s) return;
  if (s->step_owner) {
    pd_scope_list *l = &s->step_owner->u.steps;
    for (size_t i = 0; i < l->n; i++) {
      if (l->items[i] == s) {
        memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *l->items);
        l->n--;
        break;
      }
    }
  } else if (s->parent) {
    if (s->prev) s->prev->next = s->next;
    else s->parent->first_kid = s->next;
    if (s->next) s->next->prev = s->prev;
    s->parent->nkids--;
  }
  destroy_tree(s);
}

void pd_scope_drop_kids(pd_scope *s) {
  while (s->first_kid) pd_scope_free(s->first_kid);
}

pd_scope *pd_scope_parent(const pd_scope *s) { return s->parent; }
pd_scope *pd_scope_first_kid(const pd_scope *s) { return s->first_kid; }
pd_scope *pd_scope_next_sibling(const pd_scope *s) { return s->next; }
size_t pd_scope_num_kids(const pd_scope *s) { return s->nkids; }

/* ---- Variables ---- */

pd_variable *pd_scope_find_local_var(const pd_scope *s, const char *name) {
  if (!name) return NULL;
  pd_strmap_entry *e = pd_strmap_find(&s->vars, name);
  return e ? e->val.p : NULL;
}

pd_variable *pd_scope_find_var(const pd_scope *s, const char *name) {
  if (!name) return NULL;
  uint64_t h = pd_str_hash(name);  /* once for the whole chain */
  for (; s; s = s->parent) {
    pd_strmap_entry *e = pd_strmap_find_hashed(&s->vars, name, h);
    if (e) return e->val.p;
  }
  return NULL;
}

pd_variable *pd_scope_var(pd_scope *s, const char *name) {
  if (!name) return NULL;
  pd_variable *v = pd_scope_find_local_var(s, name);
  if (v) return v;
  if (pd_strmap_reserve(&s->vars, s->vars.count + 1)) return NULL;
  v = pd_calloc(1, sizeof *v);
  if (!v) return NULL;
  v->name = pd_strdup(name);
  if (!v->name) {
    pd_free(v);
    return NULL;
  }
  v->scope = s;
  v->type = PD_VAR_UNSET;
  pd_strmap_set_ptr(&s->vars, v->name, v);  /* room reserved: cannot fail */
  return v;
}

pd_status pd_scope_erase_var(pd_scope *s, const char *name) {
  pd_variable *v = pd_scope_find_local_var(s, name);
  if (!v) return PD_ENOTFOUND;
  pd_strmap_remove(&s->vars, name);
  var_destroy(v);
  return PD_OK;
}

pd_status pd_scope_rename_var(pd_scope *s, const char *old_name, const char *new_name) {
  if (!old_name || !new_name) return PD_EINVAL;
  pd_variable *v = pd_scope_find_local_var(s, old_name);
  if (!v) return PD_ENOTFOUND;
  if (strcmp(old_name, new_name) == 0) return PD_OK;
  if (pd_scope_find_local_var(s, new_name)) return PD_EINVAL;
  char *copy = pd_strdup(new_name);
  if (!copy) return PD_ENOMEM;
  pd_strmap_remove(&s->vars, v->name);
  pd_free(v->name);
  v->name = copy;
  pd_strmap_set_ptr(&s->vars, copy, v);  /* same count as before: no growth needed */
  return PD_OK;
}

size_t pd_scope_num_vars(const pd_scope *s) { return s->vars.count; }

pd_variable *pd_scope_next_var(const pd_scope *s, size_t *i) {
  pd_strmap_entry *e = pd_strmap_next(&s->vars, i);
  return e ? e->val.p : NULL;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

pd_status pd_scope_var_names(const pd_scope *s, const char ***names, size_t *n) {
  *names = NULL;
  *n = 0;
  if (!s->vars.count) return PD_OK;
  const char **arr = pd_malloc(s->vars.count * sizeof *arr);
  if (!arr) return PD_ENOMEM;
  size_t k = 0;
  pd_strmap_entry *e;
  for (size_t i = 0; (e = pd_strmap_next(&s->vars, &i));) arr[k++] = e->key;
  qsort(arr, k, sizeof *arr, cmp_names);
  *names = arr;
  *n = k;
  return PD_OK;
}

const char *pd_var_name(const pd_variable *v) { return v->name; }

pd_status pd_var_set_type(pd_variable *v, pd_var_type type) {
  switch (type) {
    case PD_VAR_LOD_TENSOR:
    case PD_VAR_LOD_TENSOR_ARRAY:
    case PD_VAR_FEED_MINIBATCH:
    case PD_VAR_FETCH_LIST:
    case PD_VAR_STEP_SCOPES: break;
    default: return PD_EUNSUPPORTED;
  }
  if (v->type == type) return PD_OK;
  if (v->type != PD_VAR_UNSET) return PD_ETYPE;
  memset(&v->u, 0, sizeof v->u);
  if (type == PD_VAR_LOD_TENSOR) pd_tensor_init(&v->u.tensor);
  else if (type != PD_VAR_STEP_SCOPES) pd_tensor_array_init(&v->u.array);
  v->type = type;
  return PD_OK;
}

pd_tensor *pd_var_tensor(pd_variable *v) {
  if (v->type == PD_VAR_UNSET) pd_var_set_type(v, PD_VAR_LOD_TENSOR);
  return v->type == PD_VAR_LOD_TENSOR ? &v->u.tensor : NULL;
}

pd_tensor_array *pd_var_tensor_array(pd_variable *v) {
  if (v->type == PD_VAR_UNSET) pd_var_set_type(v, PD_VAR_LOD_TENSOR_ARRAY);
  switch (v->type) {
    case PD_VAR_LOD_TENSOR_ARRAY:
    case PD_VAR_FEED_MINIBATCH:
    case PD_VAR_FETCH_LIST: return &v->u.array;
    default: return NULL;
  }
}

void pd_var_reset(pd_variable *v) { var_release(v); }

/* ---- Step scopes ---- */

pd_status pd_var_new_step_scope(pd_variable *v, pd_scope **out) {
  *out = NULL;
  pd_status st = pd_var_set_type(v, PD_VAR_STEP_SCOPES);
  if (st) return st;
  pd_scope_list *l = &v->u.steps;
  if (PD_GROW(l->items, l->cap, l->n + 1)) return PD_ENOMEM;
  pd_scope *s = scope_alloc(v->scope);
  if (!s) return PD_ENOMEM;
  s->step_owner = v;
  l->items[l->n++] = s;
  *out = s;
  return PD_OK;
}

size_t pd_var_num_step_scopes(const pd_variable *v) {
  return v->type == PD_VAR_STEP_SCOPES ? v->u.steps.n : 0;
}

pd_scope *pd_var_step_scope(const pd_variable *v, size_t i) {
  return i < pd_var_num_step_scopes(v) ? v->u.steps.items[i] : NULL;
}

void pd_var_clear_step_scopes(pd_variable *v) {
  if (v->type != PD_VAR_STEP_SCOPES) return;
  pd_scope_list *l = &v->u.steps;
  while (l->n) destroy_tree(l->items[--l->n]);
}
