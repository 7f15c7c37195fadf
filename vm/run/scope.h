/* scope.h -- the run-time scope tree and its variables (Fluid's "Design of Scope").
 *
 * A scope maps names to variables and has a parent. pd_scope_var creates a variable in the
 * scope itself (or returns the one it already has); pd_scope_find_var searches the scope, then
 * its parents, so an inner scope sees, and may shadow, the names of the outer ones. Only a scope
 * creates variables. Scopes are not popped when their block ends: the backward pass reads the
 * forward values, so the executor keeps the tree and destroys the per-minibatch part of it when
 * the minibatch is done.
 *
 * A variable is a tagged union. It starts PD_VAR_UNSET and takes a type on first use (as
 * Fluid's Variable::GetMutable<T>): LOD_TENSOR (a pd_tensor), LOD_TENSOR_ARRAY, FEED_MINIBATCH
 * and FETCH_LIST (a pd_tensor_array each), or STEP_SCOPES (scopes of the steps of an RNN or
 * while loop, kept for its backward pass). Asking a variable for another type than it holds
 * fails (NULL or PD_ETYPE); pd_var_reset makes it UNSET again.
 *
 * Ownership:
 *  - A scope owns its variables and its child scopes. A child made by pd_scope_new(parent) is
 *    owned by the parent: destroying the parent (pd_scope_free, or pd_scope_drop_kids) destroys
 *    the child first, then the parent's variables. Destroying a child unlinks it from its
 *    parent. A parent must outlive its children, which this makes automatic.
 *  - A STEP_SCOPES variable owns its step scopes; each has the scope holding the variable as
 *    its parent (so a step sees the outer names) but is not one of its kids: it is destroyed
 *    with the variable (pd_var_clear_step_scopes, pd_var_reset, erasing the variable, or
 *    destroying its scope). pd_scope_free on a step scope removes it from its variable.
 *  - Names are copied. pd_variable pointers stay valid until the variable is erased or its
 *    scope destroyed (growing the table or renaming does not move variables).
 *  - pd_scope_* is not thread-safe: one executor thread uses a tree at a time. */
#ifndef PD_SCOPE_H
#define PD_SCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "vm/ir/program.h"
#include "vm/run/tensor.h"

typedef struct pd_scope pd_scope;  /* opaque */

/* The type of a variable that holds nothing yet (not a pd_var_type of a VarDesc). */
#define PD_VAR_UNSET ((pd_var_type)0)

/* Step scopes of a STEP_SCOPES variable, in step order. */
typedef struct pd_scope_list {
  size_t n, cap;
  pd_scope **items;   /* owned by the variable */
} pd_scope_list;

typedef struct pd_variable {
  pd_var_type type;         /* PD_VAR_UNSET or one of the kinds above */
  char *name;               /* owned; read with pd_var_name */
  pd_scope *scope;          /* the scope that holds (and owns) the variable */
  union {
    pd_tensor tensor;       /* LOD_TENSOR */
    pd_tensor_array array;  /* LOD_TENSOR_ARRAY, FEED_MINIBATCH, FETCH_LIST */
    pd_scope_list steps;    /* STEP_SCOPES */
  } u;
} pd_variable;

/* ---- Scopes ---- */
/* A new scope; with a parent, the parent owns it (see above). NULL on out of memory. */
pd_scope *pd_scope_new(pd_scope *parent);
/* Destroy s, its child scopes, its variables (step scopes included); unlink it from its parent.
 * NULL is a no-op. */
void pd_scope_free(pd_scope *s);
/* Destroy every child scope of s (not step scopes: those belong to variables). */
void pd_scope_drop_kids(pd_scope *s);
pd_scope *pd_scope_parent(const pd_scope *s);
/* Children made with pd_scope_new, newest first: first kid, then siblings; NULL at the end. */
pd_scope *pd_scope_first_kid(const pd_scope *s);
pd_scope *pd_scope_next_sibling(const pd_scope *s);
size_t pd_scope_num_kids(const pd_scope *s);

/* ---- Variables of a scope ---- */
/* The variable `name` of s itself, created (UNSET) if s has none. NULL on out of memory. */
pd_variable *pd_scope_var(pd_scope *s, const char *name);
/* The variable `name` of s, else of the nearest ancestor that has one; NULL if none. */
pd_variable *pd_scope_find_var(const pd_scope *s, const char *name);
/* Only s itself. */
pd_variable *pd_scope_find_local_var(const pd_scope *s, const char *name);
/* Destroy the variable `name` of s; PD_ENOTFOUND if s has none. */
pd_status pd_scope_erase_var(pd_scope *s, const char *name);
/* Rename a variable of s (its pointer stays valid). PD_ENOTFOUND, PD_EINVAL when new_name is
 * taken in s, PD_ENOMEM. */
pd_status pd_scope_rename_var(pd_scope *s, const char *old_name, const char *new_name);
size_t pd_scope_num_vars(const pd_scope *s);
/* The variables of s in no particular order, without allocating (for code that must not fail):
 *   for (size_t i = 0; (v = pd_scope_next_var(s, &i));) ...
 * start i at 0; NULL at the end. No variable may be added to s or erased meanwhile. */
pd_variable *pd_scope_next_var(const pd_scope *s, size_t *i);
/* The names of s's own variables, sorted (strcmp), in a heap array the caller frees with
 * pd_free; the strings are borrowed from the variables. *names is NULL when there are none. */
pd_status pd_scope_var_names(const pd_scope *s, const char ***names, size_t *n);

/* ---- A variable's value ---- */
const char *pd_var_name(const pd_variable *v);
/* Give an UNSET variable a type (its value starts empty); PD_OK if it already has that type,
 * PD_ETYPE if it has another one, PD_EUNSUPPORTED for a kind the VM does not hold
 * (SELECTED_ROWS, LOD_RANK_TABLE, RAW). Never allocates. */
pd_status pd_var_set_type(pd_variable *v, pd_var_type type);
/* The tensor of a LOD_TENSOR variable (an UNSET one becomes LOD_TENSOR); NULL for another
 * type. */
pd_tensor *pd_var_tensor(pd_variable *v);
/* The array of a LOD_TENSOR_ARRAY, FEED_MINIBATCH or FETCH_LIST variable (an UNSET one becomes
 * LOD_TENSOR_ARRAY); NULL for another type. */
pd_tensor_array *pd_var_tensor_array(pd_variable *v);
/* Release the value (tensors, step scopes) and make v UNSET. */
void pd_var_reset(pd_variable *v);

/* ---- Step scopes (STEP_SCOPES variables; an UNSET variable becomes one) ---- */
/* Append a new, empty step scope whose parent is v's scope; *out receives it. PD_ETYPE when v
 * holds another type, PD_ENOMEM. */
pd_status pd_var_new_step_scope(pd_variable *v, pd_scope **out);
size_t pd_var_num_step_scopes(const pd_variable *v);               /* 0 unless STEP_SCOPES */
pd_scope *pd_var_step_scope(const pd_variable *v, size_t i);       /* NULL if out of range */
void pd_var_clear_step_scopes(pd_variable *v);                     /* destroys them all */

#endif /* PD_SCOPE_H */
