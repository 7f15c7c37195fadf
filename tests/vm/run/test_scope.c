/* test_scope.c -- the scope tree: lookup through levels, shadowing, variable types, erase and
 * rename (hash table integrity), destruction of children and their variables, step scopes,
 * 100,000 create/destroy cycles, and clean failure of every allocation. */
#include "config.h"
#include "vm/run/scope.h"
#include "tests/tap.h"

#include <stdio.h>
#include <stdlib.h>

static void test_lookup(void) {
  pd_scope *g = pd_scope_new(NULL), *block = pd_scope_new(g), *inner = pd_scope_new(block);
  ok(g && block && inner, "three nested scopes");
  ok(pd_scope_parent(inner) == block && pd_scope_parent(block) == g && !pd_scope_parent(g),
     "parents");
  pd_variable *w = pd_scope_var(g, "fc_0.w_0");
  pd_variable *x = pd_scope_var(block, "x");
  ok(w && x && pd_scope_var(g, "fc_0.w_0") == w, "Var returns the existing local variable");
  ok(pd_scope_find_var(inner, "fc_0.w_0") == w, "FindVar reaches the global scope 2 levels up");
  ok(pd_scope_find_var(inner, "x") == x, "FindVar reaches the parent");
  ok(pd_scope_find_var(g, "x") == NULL, "a parent does not see its child's variables");
  ok(pd_scope_find_local_var(inner, "x") == NULL, "FindLocalVar does not search parents");
  pd_variable *x2 = pd_scope_var(inner, "x");
  ok(x2 && x2 != x && pd_scope_find_var(inner, "x") == x2 && pd_scope_find_var(block, "x") == x,
     "an inner variable shadows the outer one only below it");
  is_str(pd_var_name(x2), "x", "names are copied");
  ok(pd_var_name(x2) != pd_var_name(x), "each variable owns its name");
  ok(pd_scope_var(g, NULL) == NULL && pd_scope_find_var(g, NULL) == NULL, "NULL names are refused");
  is_int(pd_scope_num_kids(g), 1, "the global scope has one child");
  pd_scope *b2 = pd_scope_new(g);
  ok(pd_scope_first_kid(g) == b2 && pd_scope_next_sibling(b2) == block &&
         pd_scope_next_sibling(block) == NULL,
     "children listed newest first");
  pd_scope_free(block);
  ok(pd_scope_num_kids(g) == 1 && pd_scope_first_kid(g) == b2,
     "destroying a child unlinks it from its parent");
  pd_scope_free(g);
  pd_scope_free(NULL);
}

static void test_types(void) {
  pd_scope *s = pd_scope_new(NULL);
  pd_variable *v = pd_scope_var(s, "t");
  is_int(v->type, PD_VAR_UNSET, "a new variable holds nothing");
  pd_tensor *t = pd_var_tensor(v);
  ok(t && v->type == PD_VAR_LOD_TENSOR && pd_var_tensor(v) == t, "first use makes a LOD_TENSOR");
  ok(pd_var_tensor_array(v) == NULL, "a LOD_TENSOR is not a tensor array");
  is_int(pd_var_set_type(v, PD_VAR_LOD_TENSOR_ARRAY), PD_ETYPE, "changing the type is refused");
  is_int(pd_var_set_type(v, PD_VAR_LOD_TENSOR), PD_OK, "setting the same type is fine");
  pd_tensor_resize(t, PD_FP32, 1, (int64_t[]){8});
  pd_var_reset(v);
  is_int(v->type, PD_VAR_UNSET, "reset releases the value");
  ok(pd_var_set_type(v, PD_VAR_FEED_MINIBATCH) == PD_OK && pd_var_tensor_array(v) != NULL &&
         pd_tensor_array_push(pd_var_tensor_array(v)) != NULL,
     "FEED_MINIBATCH holds a list of tensors");
  pd_variable *u = pd_scope_var(s, "u");
  is_int(pd_var_set_type(u, PD_VAR_SELECTED_ROWS), PD_EUNSUPPORTED, "SELECTED_ROWS unsupported");
  ok(pd_var_tensor_array(u) != NULL && u->type == PD_VAR_LOD_TENSOR_ARRAY,
     "first use as an array makes a LOD_TENSOR_ARRAY");
  pd_scope *dummy;
  is_int(pd_var_new_step_scope(u, &dummy), PD_ETYPE, "an array variable cannot hold step scopes");
  pd_scope_free(s);
}

static void test_erase_rename(void) {
  pd_scope *s = pd_scope_new(NULL);
  char name[32];
  pd_variable *vars[1000];
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "v%d@GRAD", i);
    vars[i] = pd_scope_var(s, name);
  }
  is_int(pd_scope_num_vars(s), 1000, "1000 variables in one scope");
  for (int i = 1; i < 1000; i += 2) {
    snprintf(name, sizeof name, "v%d@GRAD", i);
    pd_scope_erase_var(s, name);
  }
  bool intact = pd_scope_num_vars(s) == 500;
  for (int i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "v%d@GRAD", i);
    pd_variable *v = pd_scope_find_local_var(s, name);
    intact &= i % 2 ? v == NULL : v == vars[i];
  }
  ok(intact, "after erasing every odd variable, every even one is found (same pointer)");
  is_int(pd_scope_erase_var(s, "v1@GRAD"), PD_ENOTFOUND, "erasing a missing variable");
  pd_variable *v0 = vars[0];
  ok(pd_scope_rename_var(s, "v0@GRAD", "renamed") == PD_OK &&
         pd_scope_find_local_var(s, "renamed") == v0 && !pd_scope_find_local_var(s, "v0@GRAD"),
     "rename keeps the variable (and its pointer)");
  is_int(pd_scope_rename_var(s, "renamed", "v2@GRAD"), PD_EINVAL, "rename onto a taken name");
  is_int(pd_scope_rename_var(s, "nope", "x"), PD_ENOTFOUND, "rename of a missing variable");

  pd_scope *t = pd_scope_new(NULL);
  pd_scope_var(t, "b");
  pd_scope_var(t, "c");
  pd_scope_var(t, "a");
  const char **names;
  size_t n;
  ok(pd_scope_var_names(t, &names, &n) == PD_OK && n == 3 && strcmp(names[0], "a") == 0 &&
         strcmp(names[2], "c") == 0,
     "var_names are sorted");
  pd_free(names);
  /* next_var: each variable once, whatever the order, and nothing allocated */
  int seen[3] = {0, 0, 0}, total = 0;
  pd_variable *v;
  pd_alloc_fail_after(1);
  for (size_t i = 0; (v = pd_scope_next_var(t, &i));) {
    total++;
    if (strlen(v->name) == 1 && v->name[0] >= 'a' && v->name[0] <= 'c') seen[v->name[0] - 'a']++;
  }
  long counted = pd_alloc_fail_after(0);
  ok(total == 3 && seen[0] == 1 && seen[1] == 1 && seen[2] == 1 && counted == 0,
     "next_var visits each variable once without allocating");
  pd_scope_free(t);
  pd_scope_free(s);
}

/* Destruction is observed through shared storage: a tensor made outside the tree shares its
 * storage with variables inside; destroying the variables drops their references. */
static void test_destruction(void) {
  pd_tensor probe;
  pd_tensor_init(&probe);
  pd_tensor_resize(&probe, PD_FP32, 1, (int64_t[]){16});
  pd_scope *g = pd_scope_new(NULL), *mb = pd_scope_new(g), *sub = pd_scope_new(mb);
  pd_scope *subsub = pd_scope_new(sub);
  pd_tensor_share(pd_var_tensor(pd_scope_var(g, "param")), &probe);
  pd_tensor_share(pd_var_tensor(pd_scope_var(mb, "h")), &probe);
  pd_tensor_share(pd_var_tensor(pd_scope_var(sub, "d")), &probe);
  pd_tensor_share(pd_var_tensor(pd_scope_var(subsub, "e")), &probe);
  is_int(probe.storage->refs, 5, "four variables share the probe's storage");
  pd_scope_drop_kids(sub);
  ok(probe.storage->refs == 4 && pd_scope_num_kids(sub) == 0, "drop_kids destroys the children");
  pd_scope_free(mb);
  ok(probe.storage->refs == 2 && pd_scope_num_kids(g) == 0,
     "destroying the minibatch scope destroys its children and their variables");
  ok(pd_scope_find_var(g, "param") != NULL, "the global scope keeps its parameters");
  pd_scope_free(g);
  is_int(probe.storage->refs, 1, "destroying the root releases everything");
  pd_tensor_release(&probe);
}

static void test_step_scopes(void) {
  pd_tensor probe;
  pd_tensor_init(&probe);
  pd_tensor_resize(&probe, PD_FP32, 1, (int64_t[]){4});
  pd_scope *g = pd_scope_new(NULL), *s = pd_scope_new(g);
  pd_scope_var(g, "W");
  pd_variable *h = pd_scope_var(s, "h");
  pd_variable *steps = pd_scope_var(s, "rnn.step_scopes");
  pd_scope *st[3];
  bool made = true;
  for (int i = 0; i < 3; i++) {
    made &= pd_var_new_step_scope(steps, &st[i]) == PD_OK;
    pd_tensor_share(pd_var_tensor(pd_scope_var(st[i], "a")), &probe);
  }
  ok(made && steps->type == PD_VAR_STEP_SCOPES && pd_var_num_step_scopes(steps) == 3,
     "three step scopes");
  ok(pd_scope_parent(st[1]) == s && pd_scope_find_var(st[1], "h") == h &&
         pd_scope_find_var(st[1], "W") != NULL,
     "a step sees the loop's scope and the global one");
  ok(pd_scope_find_var(st[0], "a") != pd_scope_find_var(st[1], "a"),
     "each step has its own variables");
  is_int(pd_scope_num_kids(s), 0, "step scopes are not kids: the variable owns them");
  pd_scope_free(st[1]);
  ok(pd_var_num_step_scopes(steps) == 2 && pd_var_step_scope(steps, 0) == st[0] &&
         pd_var_step_scope(steps, 1) == st[2] && probe.storage->refs == 3,
     "freeing one step scope removes it from its variable, in order");
  pd_scope_drop_kids(s);
  is_int(pd_var_num_step_scopes(steps), 2, "drop_kids leaves step scopes alone");
  pd_scope *nested;
  pd_var_new_step_scope(pd_scope_var(st[0], "inner.steps"), &nested);
  pd_tensor_share(pd_var_tensor(pd_scope_var(nested, "b")), &probe);
  pd_scope_free(s);
  ok(probe.storage->refs == 1 && pd_scope_num_kids(g) == 0,
     "destroying the owner destroys its step scopes (nested ones too)");
  pd_variable *again = pd_scope_var(g, "steps2");
  pd_var_new_step_scope(again, &nested);
  pd_var_clear_step_scopes(again);
  ok(pd_var_num_step_scopes(again) == 0 && again->type == PD_VAR_STEP_SCOPES,
     "clear_step_scopes destroys them and keeps the type");
  pd_scope_free(g);
  pd_tensor_release(&probe);
}

static void test_cycles(void) {
  pd_scope *g = pd_scope_new(NULL);
  bool fine = true;
  for (int i = 0; i < 100000; i++) {
    pd_scope *mb = pd_scope_new(g);
    pd_variable *v = pd_scope_var(mb, "x");
    fine &= mb && v && pd_tensor_resize(pd_var_tensor(v), PD_FP32, 1, (int64_t[]){3}) == PD_OK;
    if (i % 100 == 0) {  /* now and then a deeper tree with step scopes */
      pd_scope *sub = pd_scope_new(mb), *step;
      pd_var_new_step_scope(pd_scope_var(sub, "steps"), &step);
      pd_scope_var(step, "y");
    }
    pd_scope_free(mb);
  }
  ok(fine && pd_scope_num_kids(g) == 0, "100,000 minibatch scopes created and destroyed");
  pd_scope_free(g);
}

/* Builds a little tree; every allocation in it may fail. */
static pd_status build(pd_scope **root) {
  pd_scope *g = pd_scope_new(NULL);
  *root = g;
  if (!g) return PD_ENOMEM;
  pd_scope *mb = pd_scope_new(g);
  if (!mb) return PD_ENOMEM;
  char name[16];
  for (int i = 0; i < 20; i++) {  /* enough to grow the table twice */
    snprintf(name, sizeof name, "v%d", i);
    pd_variable *v = pd_scope_var(i % 2 ? mb : g, name);
    if (!v) return PD_ENOMEM;
    pd_status st = pd_tensor_resize(pd_var_tensor(v), PD_FP32, 1, (int64_t[]){i + 1});
    if (st) return st;
  }
  pd_variable *steps = pd_scope_var(mb, "steps");
  if (!steps) return PD_ENOMEM;
  for (int i = 0; i < 5; i++) {
    pd_scope *s;
    pd_status st = pd_var_new_step_scope(steps, &s);
    if (st) return st;
    if (!pd_scope_var(s, "a")) return PD_ENOMEM;
  }
  pd_variable *arr = pd_scope_var(mb, "arr");
  if (!arr || !pd_tensor_array_push(pd_var_tensor_array(arr))) return PD_ENOMEM;
  pd_status st = pd_scope_rename_var(g, "v0", "renamed_v0");
  if (st) return st;
  const char **names;
  size_t n;
  if ((st = pd_scope_var_names(g, &names, &n))) return st;
  pd_free(names);
  return pd_scope_new(mb) ? PD_OK : PD_ENOMEM;
}

static void test_alloc_failures(void) {
  int failures = 0;
  bool clean = true;
  for (long k = 1; k < 10000; k++) {
    pd_scope *g = NULL;
    pd_alloc_fail_after(k);
    pd_status st = build(&g);
    pd_alloc_fail_after(0);
    if (st == PD_OK) {
      clean &= pd_scope_find_local_var(g, "renamed_v0") != NULL;
      pd_scope_free(g);
      break;
    }
    failures++;
    clean &= st == PD_ENOMEM;
    /* The partial tree still works: lookups, then destruction. */
    if (g) pd_scope_find_var(g, "v2");
    pd_scope_free(g);
  }
  ok(failures > 50, "%d allocation failures exercised (every allocation of the scenario)",
     failures);
  ok(clean, "every failure returned PD_ENOMEM and the partial tree was destroyed cleanly");
}

int main(void) {
  test_lookup();
  test_types();
  test_erase_rename();
  test_destruction();
  test_step_scopes();
  test_cycles();
  test_alloc_failures();
  return tap_done();
}
