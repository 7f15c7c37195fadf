/* test_program.c -- unit tests of vm/ir/program.c and vm/ir/program_dump.c: a nested program built by
 * hand, name lookup through parents and gradient blocks, shadowing, the hash index against a
 * linear scan, rename/remove, ops and slots, attribute replacement, deep clones, validation
 * messages, the exact listing, the Graphviz form, and a failure of every allocation in turn. */
#include "config.h"
#include "vm/ir/program.h"

#include <stdlib.h>

#include "tests/vm/ir/models.h"
#include "tests/tap.h"

static char *listing(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump(p, &b);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

static char *dot_of(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump_dot(p, &b);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

/* ---- Building and looking up ---- */

static void test_nested_lookup(void) {
  pd_program *p = model_nested();
  ok(p != NULL, "the nested model builds");
  if (!p) return;
  is_int(p->nblocks, 5, "five blocks");
  pd_block *b0 = p->blocks[0], *b1 = p->blocks[1], *b2 = p->blocks[2], *b3 = p->blocks[3],
           *b4 = p->blocks[4];
  ok(b0->parent_idx == -1 && b1->parent_idx == 0 && b2->parent_idx == 0 && b3->parent_idx == 1 &&
         b4->parent_idx == 0,
     "parents: -1 0 0 1 0");
  ok(b4->forward_block_idx == 1 && b0->forward_block_idx == -1 && b3->forward_block_idx == -1,
     "block 4 is the gradient block of block 1");
  ok(pd_block_parent(b0) == NULL && pd_block_parent(b3) == b1 && pd_block_parent(b4) == b0,
     "pd_block_parent");
  ok(pd_program_block(p, 4) == b4 && !pd_program_block(p, 5) && !pd_program_block(p, -1),
     "pd_program_block checks its range");
  ok(b3->program == p && b1->idx == 1, "blocks know their program and index");

  pd_var_desc *d1 = pd_block_find_var_local(b1, "d"), *d2 = pd_block_find_var_local(b2, "d");
  pd_var_desc *x = pd_block_find_var_local(b0, "x"), *y0 = pd_block_find_var_local(b0, "y");
  pd_var_desc *y2 = pd_block_find_var_local(b2, "y");
  ok(d1 && d2 && d1 != d2 && x && y0 && y2 && y0 != y2, "local lookups");
  ok(pd_block_find_var(b3, "t") == pd_block_find_var_local(b3, "t"), "a while-body var is local");
  ok(pd_block_find_var(b3, "d") == d1, "the while body sees the 'if' branch's d");
  ok(pd_block_find_var(b3, "x") == x, "and the global x, two levels up");
  ok(pd_block_find_var_local(b3, "x") == NULL, "x is not local to the while body");
  ok(pd_block_find_var(b2, "y") == y2, "the else branch's y shadows the global y");
  ok(pd_block_find_var(b1, "y") == y0, "the if branch sees the global y");
  ok(pd_block_find_var(b2, "loop_cond") == NULL, "a sibling block's var is not visible");
  ok(pd_block_find_var(b0, "d") == NULL, "a child block's var is not visible from its parent");
  ok(pd_block_find_var(b3, "nope") == NULL, "unknown names are not found");

  const pd_block *owner = NULL;
  ok(pd_block_find_var(b4, "d") == NULL, "the gradient block's parent chain has no d");
  ok(pd_block_find_var_visible(b4, "d", &owner) == d1 && owner == b1,
     "but the gradient block sees d in its forward block");
  ok(pd_block_find_var_visible(b4, "d@GRAD", &owner) == pd_block_find_var_local(b4, "d@GRAD") &&
         owner == b4,
     "its own vars first");
  ok(pd_block_find_var_visible(b3, "x", &owner) == x && owner == b0,
     "visible lookup goes through parents too");
  ok(pd_block_find_var_visible(b2, "loop_cond", NULL) == NULL, "visible lookup skips siblings");

  int n = b0->nvars;
  ok(pd_block_var(b0, "x") == x && b0->nvars == n, "pd_block_var returns an existing var");
  pd_var_desc *fresh = pd_block_var(b1, "fresh");
  ok(fresh && fresh->type == PD_VAR_LOD_TENSOR && fresh->dtype == PD_FP32 &&
         fresh->ndims == -1 && fresh->dims == NULL && fresh->lod_level == 0 &&
         !fresh->persistable && !fresh->stop_gradient,
     "new vars: LOD_TENSOR float32, shape unknown, not persistable");
  ok(pd_var_set_shape(fresh, 0, NULL) == 0 && fresh->ndims == 0, "a 0-d shape");
  ok(pd_var_set_shape(fresh, -2, NULL) == -1 && pd_var_set_shape(fresh, 2, NULL) == -1 &&
         fresh->ndims == 0,
     "bad shapes are refused and change nothing");
  int64_t dims[] = {-1, 7};
  ok(pd_var_set_shape(fresh, 2, dims) == 0 && fresh->dims != dims && fresh->dims[1] == 7,
     "the shape is copied");
  dims[1] = 9;
  is_int(fresh->dims[1], 7, "the caller's array is not kept");
  is_int(pd_program_validate(p, NULL), PD_OK, "the nested model validates");
  pd_program_free(p);
}

/* ---- The hash index ---- */

/* The var named `name` in b by a linear scan: the naive reference for the index. */
static pd_var_desc *scan(const pd_block *b, const char *name) {
  for (int i = 0; i < b->nvars; i++)
    if (strcmp(b->vars[i]->name, name) == 0) return b->vars[i];
  return NULL;
}

static void test_index(void) {
  pd_program *p = pd_program_new();
  pd_block *b = p ? p->blocks[0] : NULL;
  ok(b != NULL, "an empty program has block 0");
  if (!b) return;
  char name[32];
  int made = 0;
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "v%d", i);
    made += pd_block_var(b, name) != NULL;
  }
  is_int(made, 3000, "3000 vars created");
  int removed = 0, renamed = 0;
  for (int i = 0; i < 3000; i += 3) {
    snprintf(name, sizeof name, "v%d", i);
    removed += pd_block_remove_var(b, name) == 0;
  }
  for (int i = 1; i < 3000; i += 7) {
    snprintf(name, sizeof name, "v%d", i);
    pd_var_desc *v = pd_block_find_var_local(b, name);
    char to[32];
    snprintf(to, sizeof to, "r%d", i);
    if (v) renamed += pd_block_rename_var(b, v, to) == 0;
  }
  is_int(removed, 1000, "1000 removed");
  is_int(b->nvars, 2000, "2000 left");
  ok(renamed > 200, "%d renamed", renamed);
  int agree = 0;
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "v%d", i);
    agree += pd_block_find_var_local(b, name) == scan(b, name);
    snprintf(name, sizeof name, "r%d", i);
    agree += pd_block_find_var_local(b, name) == scan(b, name);
  }
  is_int(agree, 6000, "the index agrees with a linear scan on 6000 names");
  int ordered = 1;
  for (int i = 1; i < b->nvars; i++) {
    int prev = atoi(b->vars[i - 1]->name + 1), cur = atoi(b->vars[i]->name + 1);
    ordered &= prev < cur;
  }
  ok(ordered, "vars keep their declaration order");

  pd_var_desc *v1 = pd_block_find_var_local(b, "v2"), *v2 = pd_block_find_var_local(b, "v4");
  ok(pd_block_rename_var(b, v1, "v4") == -1 && strcmp(v1->name, "v2") == 0 &&
         pd_block_find_var_local(b, "v4") == v2,
     "renaming onto an existing name is refused");
  ok(pd_block_rename_var(b, v1, "v2") == 0 && pd_block_find_var_local(b, "v2") == v1,
     "renaming to the same name is a no-op");
  pd_block *other = pd_program_add_block(p, 0);
  ok(other && pd_block_rename_var(other, v1, "elsewhere") == -1,
     "renaming through a block that does not own the var is refused");
  ok(pd_block_remove_var(b, "v0") == -1 && pd_block_remove_var(b, "nope") == -1,
     "removing a missing var fails");
  ok(pd_block_var(NULL, "x") == NULL && pd_block_var(b, NULL) == NULL &&
         pd_block_find_var_local(b, NULL) == NULL,
     "NULL arguments are refused");
  pd_program_free(p);
}

/* ---- Ops and slots ---- */

static void test_ops(void) {
  pd_program *p = pd_program_new();
  if (!p) return;
  pd_block *b = p->blocks[0];
  pd_op_desc *a = pd_block_add_op(b, "a", -1), *c = pd_block_add_op(b, "c", -1);
  pd_op_desc *mid = pd_block_add_op(b, "b", 1), *z = pd_block_add_op(b, "z", 0);
  ok(a && c && mid && z && b->nops == 4 && b->ops[0] == z && b->ops[1] == a && b->ops[2] == mid &&
         b->ops[3] == c,
     "append, insert in the middle and at the front");
  ok(pd_block_add_op(b, "bad", 5) == NULL && pd_block_add_op(b, "bad", -2) == NULL &&
         pd_block_add_op(b, NULL, -1) == NULL && b->nops == 4,
     "positions out of range are refused");
  ok(pd_block_add_op(b, "end", 4) == b->ops[4], "pos == nops appends");
  pd_block_remove_op(b, 1);
  pd_block_remove_op(b, 9);
  pd_block_remove_op(b, -1);
  ok(b->nops == 4 && b->ops[0] == z && b->ops[1] == mid && strcmp(b->ops[3]->type, "end") == 0,
     "remove_op removes one op, ignores bad indexes");

  char u[] = "u";
  const char *two[] = {u, "v"}, *one[] = {"w"};
  ok(pd_op_set_input(z, "X", 2, two) == 0, "bind X");
  u[0] = 'U';
  ok(strcmp(pd_op_input(z, "X")->args[0], "u") == 0, "argument names are copied");
  ok(pd_op_set_input(z, "X", 1, one) == 0 && z->ninputs == 1 &&
         strcmp(pd_op_input1(z, "X"), "w") == 0 && pd_op_input(z, "X")->nargs == 1,
     "rebinding X replaces it");
  ok(pd_op_set_input(z, "Y", 2, two) == 0 && z->ninputs == 2 && z->inputs[1].nargs == 2,
     "a second slot");
  ok(pd_op_set_input(z, "E", 0, NULL) == 0 && pd_op_input(z, "E") != NULL &&
         pd_op_input(z, "E")->nargs == 0 && pd_op_input1(z, "E") == NULL,
     "an empty slot exists but has no first var");
  ok(pd_op_input(z, "Out") == NULL && pd_op_input1(z, "Out") == NULL, "missing slots");
  ok(pd_op_set_output(z, "Out", 1, one) == 0 && strcmp(pd_op_output1(z, "Out"), "w") == 0 &&
         pd_op_input(z, "Out") == NULL,
     "outputs are separate from inputs");
  ok(pd_op_set_input(z, "X", -1, NULL) == -1 && pd_op_set_input(z, "X", 2, NULL) == -1 &&
         pd_op_set_input(z, NULL, 0, NULL) == -1 && strcmp(pd_op_input1(z, "X"), "w") == 0,
     "bad bindings are refused and change nothing");

  char file[] = "f.pd";
  ok(pd_op_set_loc(z, (pd_loc){file, 3, 4}) == 0 && z->loc.file != file &&
         strcmp(z->loc.file, "f.pd") == 0 && z->loc.line == 3 && z->loc.col == 4,
     "the location's file is copied");
  ok(pd_op_set_loc(z, (pd_loc){NULL, 5, 0}) == 0 && z->loc.file == NULL && z->loc.line == 5,
     "a location without a file");
  pd_program_free(p);
}

/* ---- Attributes ---- */

static void test_attrs(void) {
  pd_program *p = pd_program_new();
  pd_op_desc *op = p ? pd_block_add_op(p->blocks[0], "op", -1) : NULL;
  if (!op) return;
  ok(pd_op_set_attr_int(op, "axis", 1) == 0 && pd_op_set_attr_float(op, "scale", 2.5f) == 0,
     "two attributes");
  ok(pd_op_set_attr_int(op, "axis", 5) == 0 && op->nattrs == 2 &&
         strcmp(op->attrs[0].name, "axis") == 0 && op->attrs[0].v.i == 5,
     "setting axis again replaces it in place");
  ok(pd_op_set_attr_string(op, "axis", "x") == 0 && op->nattrs == 2 &&
         op->attrs[0].type == PD_ATTR_STRING && strcmp(op->attrs[0].v.s, "x") == 0,
     "replacing with another type");
  int32_t ints[] = {1, 2, 3};
  ok(pd_op_set_attr_ints(op, "axis", 3, ints) == 0 && op->attrs[0].type == PD_ATTR_INTS &&
         op->attrs[0].n == 3 && op->attrs[0].ints != ints && op->attrs[0].ints[2] == 3,
     "and with a list, copied");
  ok(pd_op_attr(op, "scale") == &op->attrs[1] && pd_op_attr(op, "missing") == NULL &&
         pd_op_attr(op, NULL) == NULL,
     "pd_op_attr");
  ok(pd_op_set_attr_ints(op, "bad", -1, ints) == -1 &&
         pd_op_set_attr_ints(op, "bad", 2, NULL) == -1 &&
         pd_op_set_attr_list(op, "bad", PD_ATTR_INT, 1, ints) == -1 &&
         pd_op_set_attr_string(op, "bad", NULL) == -1 && pd_op_set_attr_int(op, NULL, 1) == -1 &&
         pd_op_attr(op, "bad") == NULL && op->nattrs == 2,
     "bad attributes are refused");

  /* Every typed setter stores its type and value. */
  const int64_t longs[] = {INT64_MIN};
  const float floats[] = {0.5f};
  const double doubles[] = {0.25};
  const bool bools[] = {true, false};
  const char *const strings[] = {"s", ""};
  const int32_t blocks[] = {1};
  int rc = pd_op_set_attr_long(op, "l", INT64_MAX) | pd_op_set_attr_double(op, "d", 0.125) |
           pd_op_set_attr_bool(op, "b", true) | pd_op_set_attr_block(op, "blk", 2) |
           pd_op_set_attr_longs(op, "ls", 1, longs) | pd_op_set_attr_floats(op, "fs", 1, floats) |
           pd_op_set_attr_doubles(op, "ds", 1, doubles) | pd_op_set_attr_bools(op, "bs", 2, bools) |
           pd_op_set_attr_strings(op, "ss", 2, strings) |
           pd_op_set_attr_blocks(op, "blks", 1, blocks) | pd_op_set_attr_ints(op, "none", 0, NULL);
  is_int(rc, 0, "every setter succeeds");
  const pd_attr *a;
  ok((a = pd_op_attr(op, "l")) && a->type == PD_ATTR_LONG && a->v.l == INT64_MAX, "LONG");
  ok((a = pd_op_attr(op, "d")) && a->type == PD_ATTR_FLOAT64 && a->v.d == 0.125, "FLOAT64");
  ok((a = pd_op_attr(op, "b")) && a->type == PD_ATTR_BOOLEAN && a->v.b, "BOOLEAN");
  ok((a = pd_op_attr(op, "blk")) && a->type == PD_ATTR_BLOCK && a->v.i == 2, "BLOCK");
  ok((a = pd_op_attr(op, "ls")) && a->type == PD_ATTR_LONGS && a->longs[0] == INT64_MIN, "LONGS");
  ok((a = pd_op_attr(op, "fs")) && a->type == PD_ATTR_FLOATS && a->floats[0] == 0.5f, "FLOATS");
  ok((a = pd_op_attr(op, "ds")) && a->type == PD_ATTR_FLOAT64S && a->doubles[0] == 0.25,
     "FLOAT64S");
  ok((a = pd_op_attr(op, "bs")) && a->type == PD_ATTR_BOOLEANS && a->n == 2 && a->bools[0] &&
         !a->bools[1],
     "BOOLEANS");
  ok((a = pd_op_attr(op, "ss")) && a->type == PD_ATTR_STRINGS && a->strings != (char **)strings &&
         strcmp(a->strings[0], "s") == 0 && a->strings[1][0] == '\0',
     "STRINGS, copied");
  ok((a = pd_op_attr(op, "blks")) && a->type == PD_ATTR_BLOCKS && a->ints[0] == 1, "BLOCKS");
  ok((a = pd_op_attr(op, "none")) && a->n == 0 && pd_attr_list(a) == NULL, "an empty list");
  ok(pd_attr_list(pd_op_attr(op, "l")) == NULL && pd_attr_list_elem_size(PD_ATTR_LONG) == 0 &&
         pd_attr_list_elem_size(PD_ATTR_BOOLEANS) == sizeof(bool),
     "pd_attr_list and element sizes");

  /* pd_op_set_attr copies an attribute of any type from elsewhere. */
  pd_op_desc *op2 = pd_block_add_op(p->blocks[0], "op2", -1);
  ok(op2 && pd_op_set_attr(op2, pd_op_attr(op, "ss")) == 0 &&
         op2->attrs[0].strings[0] != pd_op_attr(op, "ss")->strings[0] &&
         strcmp(op2->attrs[0].strings[0], "s") == 0,
     "pd_op_set_attr makes a deep copy");
  ok(strcmp(pd_attr_type_name(PD_ATTR_FLOAT64S), "FLOAT64S") == 0 &&
         strcmp(pd_attr_type_name((pd_attr_type)99), "?") == 0 &&
         strcmp(pd_var_type_name(PD_VAR_STEP_SCOPES), "STEP_SCOPES") == 0 &&
         pd_attr_type_is_list(PD_ATTR_BLOCKS) && !pd_attr_type_is_list(PD_ATTR_BLOCK) &&
         pd_var_type_has_tensor(PD_VAR_SELECTED_ROWS) && !pd_var_type_has_tensor(PD_VAR_RAW) &&
         !pd_var_type_valid(14) && !pd_attr_type_valid(13),
     "enum names and predicates");
  pd_program_free(p);
}

/* ---- Clones ---- */

static void test_clone(void) {
  for (size_t m = 0; m < model_count; m++) {
    pd_program *p = model_by_name(model_names[m]);
    pd_program *c = p ? pd_program_clone(p) : NULL;
    char *lp = p ? listing(p) : NULL, *lc = c ? listing(c) : NULL;
    ok(lp && lc && strcmp(lp, lc) == 0, "the clone of %s lists the same", model_names[m]);
    ok(c && pd_program_validate(c, NULL) == PD_OK, "and validates");
    if (c && c->blocks[0]->nvars > 0) {
      pd_var_desc *v = c->blocks[0]->vars[0];
      ok(pd_block_find_var_local(c->blocks[0], v->name) == v &&
             pd_block_find_var_local(p->blocks[0], v->name) != v,
         "the clone's index points at the clone's vars");
      ok(pd_block_rename_var(c->blocks[0], v, "renamed_in_clone") == 0 &&
             pd_block_add_op(c->blocks[0], "extra", -1) != NULL,
         "the clone can be changed");
      char *again = listing(p);
      ok(again && strcmp(again, lp) == 0, "without changing the original");
      pd_free(again);
    }
    pd_free(lp);
    pd_free(lc);
    pd_program_free(c);
    pd_program_free(p);
  }
  ok(pd_program_clone(NULL) == NULL, "clone(NULL)");
}

/* ---- Validation: one corruption of the nested model each, and the exact message ---- */

static pd_block *blk(pd_program *p, int i) { return p->blocks[i]; }
static pd_op_desc *opx(pd_program *p, int b, int j) { return p->blocks[b]->ops[j]; }
static pd_var_desc *varx(pd_program *p, int b, const char *name) {
  return pd_block_find_var_local(p->blocks[b], name);
}

static void c_parent_range(pd_program *p) { blk(p, 3)->parent_idx = 9; }
static void c_parent_cycle(pd_program *p) { blk(p, 1)->parent_idx = 3; }
static void c_own_parent(pd_program *p) { blk(p, 3)->parent_idx = 3; }
static void c_too_deep(pd_program *p) { /* blocks 5, 6, ... each inside the one before */
  for (int i = 0; i < 260; i++)
    if (!pd_program_add_block(p, i ? p->nblocks - 1 : 0)) return;
}
static void c_global_parent(pd_program *p) { blk(p, 0)->parent_idx = 1; }
static void c_forward_self(pd_program *p) { blk(p, 4)->forward_block_idx = 4; }
static void c_forward_range(pd_program *p) { blk(p, 4)->forward_block_idx = -2; }
static void c_block_idx(pd_program *p) { blk(p, 2)->idx = 7; }
static void c_sub_block_range(pd_program *p) {
  pd_op_set_attr_block(opx(p, 0, 4), "sub_block", 5);
}
static void c_sub_block_global(pd_program *p) {
  pd_op_set_attr_block(opx(p, 0, 4), "sub_block", 0);
}
static void c_sub_block_ancestor(pd_program *p) {
  pd_op_set_attr_block(opx(p, 3, 0), "sub_block", 1);
}
static void c_blocks_range(pd_program *p) {
  pd_op_set_attr_blocks(opx(p, 0, 6), "branches", 2, (const int32_t[]){2, 7});
}
static void c_negative_dim(pd_program *p) { varx(p, 0, "x")->dims[0] = -3; }
static void c_rank(pd_program *p) {
  pd_var_set_shape(varx(p, 0, "x"), 10, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
}
static void c_overflow(pd_program *p) {
  pd_var_set_shape(varx(p, 0, "x"), 3, (const int64_t[]){-1, INT64_MAX / 2, 3});
}
static void c_dtype(pd_program *p) { varx(p, 0, "y")->dtype = (pd_dtype)99; }
static void c_var_type(pd_program *p) { varx(p, 0, "y")->type = (pd_var_type)14; }
static void c_lod(pd_program *p) { varx(p, 0, "words")->lod_level = -1; }
static void c_empty_name(pd_program *p) { pd_block_var(blk(p, 1), ""); }
static void c_empty_type(pd_program *p) { pd_block_add_op(blk(p, 3), "", 1); }
static void c_undeclared(pd_program *p) {
  pd_op_set_input(opx(p, 2, 0), "X", 2, (const char *const[]){"z", "q"});
}
static void c_child_var(pd_program *p) {
  pd_op_set_output(opx(p, 0, 7), "Out", 1, (const char *const[]){"t"});
}
static void c_empty_arg(pd_program *p) {
  pd_op_set_input(opx(p, 1, 1), "X", 1, (const char *const[]){""});
}
static void c_string_null(pd_program *p) {
  pd_attr *a = &opx(p, 2, 0)->attrs[0]; /* x_num_col_dims, an INT: nothing to free */
  a->type = PD_ATTR_STRING;
  a->v.s = NULL;
}
static void c_attr_type(pd_program *p) { opx(p, 2, 0)->attrs[1].type = (pd_attr_type)13; }
static void c_loc(pd_program *p) { opx(p, 1, 2)->loc.col = -4; }
static void c_dup_var(pd_program *p) {
  /* Only a program changed behind the API's back can hold a name twice. */
  pd_var_desc *y = varx(p, 2, "y");
  char *d = pd_strdup("d");
  if (!d) return;
  pd_free(y->name);
  y->name = d;
}

static const struct {
  void (*corrupt)(pd_program *p);
  const char *msg;
} corruptions[] = {
    {c_parent_range, "block 3 has parent 9, but the program has 5 blocks"},
    {c_parent_cycle, "block 1 never reaches block 0 through its parents: they form a cycle "
                     "(1 -> 3 -> 1 -> 3 -> 1 -> 3 -> 1 -> 3 -> ...)"},
    {c_too_deep, "block 261 is nested 257 deep; programs may nest blocks at most 256 deep"},
    {c_own_parent, "block 3 never reaches block 0 through its parents: they form a cycle "
                   "(3 -> 3 -> 3 -> 3 -> 3 -> 3 -> 3 -> 3 -> ...)"},
    {c_global_parent, "block 0 (the global block) has parent 1; it must have none (-1)"},
    {c_forward_self, "block 4 names itself as its forward block"},
    {c_forward_range, "block 4 has forward block -2, but the program has 5 blocks"},
    {c_block_idx, "the block at position 2 has idx 7"},
    {c_sub_block_range, "block 0, op 4 (conditional_block): attribute 'sub_block' points at "
                        "block 5, but the program has 5 blocks"},
    {c_sub_block_global, "block 0, op 4 (conditional_block): attribute 'sub_block' points at "
                         "block 0, the global block"},
    {c_sub_block_ancestor, "block 3, op 0 (scale): attribute 'sub_block' points at block 1, "
                           "which contains the op itself"},
    {c_blocks_range, "block 0, op 6 (conditional_block): attribute 'branches' points at block "
                     "7, but the program has 5 blocks"},
    {c_negative_dim, "block 0, var 'x': dimension 0 is -3; only -1 (unknown) or a size >= 0 is "
                     "allowed"},
    {c_rank, "block 0, var 'x': 10 dimensions; the most allowed is 9"},
    {c_overflow, "block 0, var 'x': the shape has more elements than an int64 can count"},
    {c_dtype, "block 0, var 'y': unknown dtype 99"},
    {c_var_type, "block 0, var 'y': unknown var type 14"},
    {c_lod, "block 0, var 'words': lod_level -1 is negative"},
    {c_empty_name, "block 1: var 5 has no name"},
    {c_empty_type, "block 3: op 1 has no type"},
    {c_undeclared, "block 2, op 0 (mul): input 'X' names var 'q', which block 2 cannot see"},
    {c_child_var, "block 0, op 7 (fetch): output 'Out' names var 't', which block 0 cannot see"},
    {c_empty_arg, "block 1, op 1 (assign): input 'X' argument 0 has no name"},
    {c_string_null, "block 2, op 0 (mul): attribute 'x_num_col_dims' (STRING) has no value"},
    {c_attr_type, "block 2, op 0 (mul): attribute 'y_num_col_dims' has unknown type 13"},
    {c_loc, "block 1, op 2 (softmax): bad source position 7:-4"},
    {c_dup_var, "block 2 declares var 'd' twice"},
};

static void test_validate(void) {
  pd_error err = {0};
  is_int(pd_program_validate(NULL, &err), PD_EFORMAT, "NULL is not a program");
  is_str(err.msg, "the program has no blocks", "and says so");
  for (size_t i = 0; i < PD_ARRAY_LEN(corruptions); i++) {
    pd_program *p = model_nested();
    if (!p) continue;
    corruptions[i].corrupt(p);
    pd_status st = pd_program_validate(p, &err);
    is_int(st, PD_EFORMAT, "corruption %zu is found", i);
    is_str(err.msg, corruptions[i].msg, "corruption %zu: message", i);
    /* Listings stay safe on invalid programs. */
    pd_buf b;
    pd_buf_init(&b);
    pd_program_dump(p, &b);
    pd_program_dump_dot(p, &b);
    ok(!b.oom && b.len > 0, "corruption %zu: the listings still work", i);
    pd_buf_free(&b);
    pd_program_free(p);
  }
  pd_error_clear(&err);
}

/* ---- Listings ---- */

static const char attrs_listing[] =
    "program: 3 blocks, version 2004000\n"
    "block tree:\n"
    "  block 0\n"
    "    block 1  <- sub_block of block 0 op 0 (all_attrs) and 1 more\n"
    "    block 2  <- blocks of block 0 op 0 (all_attrs)\n"
    "\n"
    "block 0 (global):\n"
    "  var in: LOD_TENSOR float32 [2, 3] stop_gradient\n"
    "  var out: LOD_TENSOR float32 [2, 3]\n"
    "  op 0: all_attrs @ dir:with:colons/attrs.pd:12:34\n"
    "    in  X: [in]\n"
    "    in  Empty: []\n"
    "    out Out: [out]\n"
    "    attr b: BOOLEAN true\n"
    "    attr blocks -> blocks [1, 2]\n"
    "    attr bools: BOOLEANS [true, false, true]\n"
    "    attr d: FLOAT64 0.1\n"
    "    attr doubles: FLOAT64S [0.1, -2.5e-300, 0.3333333333333333]\n"
    "    attr f: FLOAT 0.1\n"
    "    attr floats: FLOATS [0.1, -0, 1e-45, 3.4028235e+38, 0.33333334]\n"
    "    attr i_min: INT -2147483648\n"
    "    attr ints: INTS [-2147483648, -1, 0, 2147483647]\n"
    "    attr ints_empty: INTS []\n"
    "    attr l_max: LONG 9223372036854775807\n"
    "    attr longs: LONGS [-9223372036854775808, -1, 0, 9223372036854775807]\n"
    "    attr s_odd: STRING \"line\\nbreak \\\"q\\\" \\x01\"\n"
    "    attr s_plain: STRING \"hello\"\n"
    "    attr strings: STRINGS [\"a\", \"\", \"tab\\there\", \"quote\\\"back\\\\slash\", "
    "\"caf\\xc3\\xa9\"]\n"
    "    attr sub_block -> block 1\n"
    "  op 1: noloc\n"
    "    in  X: [out]\n"
    "    attr op_callstack: STRINGS [\"not a location\"]\n"
    "\n"
    "block 1 (parent 0):\n"
    "  op 0: nop @ ?:7:0\n"
    "\n"
    "block 2 (parent 0):\n"
    "  op 0: nop @ b2.pd:1:1\n";

static const char kinds_listing[] =
    "program: 1 block, version 0\n"
    "block tree:\n"
    "  block 0\n"
    "\n"
    "block 0 (global):\n"
    "  var lod_fp16: LOD_TENSOR float16 [2, 3]\n"
    "  var rows: SELECTED_ROWS int64 [-1, 8]\n"
    "  var feed: FEED_MINIBATCH persistable\n"
    "  var fetch: FETCH_LIST persistable\n"
    "  var scopes: STEP_SCOPES\n"
    "  var rank_table: LOD_RANK_TABLE\n"
    "  var array: LOD_TENSOR_ARRAY float64 [-1, 4] lod_level 2\n"
    "  var raw: RAW\n"
    "  var unknown_shape: LOD_TENSOR int32 (shape unknown)\n"
    "  var scalar: LOD_TENSOR float32 [] persistable\n"
    "  var zero_size: LOD_TENSOR float32 [0, 5]\n"
    "  var flags: LOD_TENSOR bool [1] persistable stop_gradient\n"
    "  var i8: LOD_TENSOR int8 [1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    "  var u8: LOD_TENSOR uint8 [4294967296, 4]\n"
    "  var i16: LOD_TENSOR int16 [-1, -1] lod_level 3\n"
    "  var \"odd name \\\"x\\\"\": LOD_TENSOR float32 [1]\n"
    "  var \"caf\\xc3\\xa9\": LOD_TENSOR float32 [1]\n";

/* A broken program lists without looping: block 2 and 3 are each other's parents. */
static const char cycle_listing[] =
    "program: 4 blocks, version 0\n"
    "block tree:\n"
    "  block 0\n"
    "    block 1\n"
    "  block 2 (not under block 0: parent 3)\n"
    "  block 3 (not under block 0: parent 2)\n"
    "\n"
    "block 0 (global):\n"
    "  (empty)\n"
    "\n"
    "block 1 (parent 0):\n"
    "  (empty)\n"
    "\n"
    "block 2 (parent 3):\n"
    "  (empty)\n"
    "\n"
    "block 3 (parent 2):\n"
    "  (empty)\n";

static void test_listing(void) {
  pd_program *p = model_attrs();
  char *text = p ? listing(p) : NULL;
  is_str(text, attrs_listing, "the listing of every attribute type, sorted by name");
  pd_free(text);
  pd_program_free(p);

  p = model_kinds();
  text = p ? listing(p) : NULL;
  is_str(text, kinds_listing, "the listing of every var kind and dtype");
  pd_free(text);
  pd_program_free(p);

  p = pd_program_new();
  if (p && pd_program_add_block(p, 0) && pd_program_add_block(p, 3) &&
      pd_program_add_block(p, 2)) {
    text = listing(p);
    is_str(text, cycle_listing, "a parent cycle is listed, not followed");
    pd_free(text);
  }
  pd_program_free(p);
}

/* The depth of the cluster opened by `needle` in a DOT text (0 = top level), or -1. */
static int cluster_depth(const char *dot, const char *needle) {
  const char *at = strstr(dot, needle);
  if (!at) return -1;
  int depth = 0;
  for (const char *s = dot; s < at; s++) depth += (*s == '{') - (*s == '}');
  return depth;
}

static void test_dot(void) {
  pd_program *p = model_nested();
  char *dot = p ? dot_of(p) : NULL;
  ok(dot && strncmp(dot, "digraph program {\n", 18) == 0, "a digraph");
  if (dot) {
    int depth = 0, lowest = 0;
    for (const char *s = dot; *s; s++) {
      depth += (*s == '{') - (*s == '}');
      if (depth < lowest) lowest = depth;
    }
    ok(depth == 0 && lowest == 0, "braces balance");
    ok(cluster_depth(dot, "subgraph cluster_b0 {") == 1 &&
           cluster_depth(dot, "subgraph cluster_b1 {") == 2 &&
           cluster_depth(dot, "subgraph cluster_b3 {") == 3 &&
           cluster_depth(dot, "subgraph cluster_b2 {") == 2 &&
           cluster_depth(dot, "subgraph cluster_b4 {") == 2,
       "each block is a cluster inside its parent's");
    ok(strstr(dot, "  b0_o4 -> b1 [lhead=cluster_b1, style=dashed, label=\"sub_block\"];\n") &&
           strstr(dot, "  b1_o3 -> b3 [lhead=cluster_b3, style=dashed, label=\"sub_block\"];\n"),
       "ops link to their sub-blocks");
    ok(strstr(dot, "  b0_v2 -> b0_o3 [label=\"X\"];\n") &&
           strstr(dot, "  b0_o3 -> b0_v6 [label=\"Out\"];\n"),
       "data flow: x -> greater_than -> cond");
    ok(strstr(dot, "  b1_v0 -> b3_o0 [label=\"X\"];\n") &&
           strstr(dot, "  b1_v0 -> b4_o1 [label=\"Out\"];\n"),
       "edges reach vars of enclosing and forward blocks");
    ok(strstr(dot, "  b2_v1 -> b2_o3 [label=\"X\"];\n") != NULL,
       "a shadowing var is the one used");
    ok(strstr(dot, "b4 -> b1 [ltail=cluster_b4, lhead=cluster_b1, style=dotted") != NULL,
       "a gradient block links to its forward block");
  }
  pd_free(dot);
  pd_program_free(p);
}

/* ---- Allocation failures ---- */

/* Every var of b is found through the index, and only those. */
static bool index_consistent(const pd_block *b) {
  for (int i = 0; i < b->nvars; i++)
    if (pd_block_find_var_local(b, b->vars[i]->name) != b->vars[i]) return false;
  return true;
}

/* Build, clone, change and list the nested model with the k-th allocation failing. Returns 1
 * when the run had no failure to meet (k is past the last allocation). */
static int run_failing_at(long k, int *unreported) {
  pd_alloc_fail_after(k);
  pd_program *p = model_nested();
  pd_program *c = p ? pd_program_clone(p) : NULL;
  int changed = -1;
  pd_buf b;
  pd_buf_init(&b);
  if (c) {
    pd_block *b1 = c->blocks[1];
    pd_var_desc *v = pd_block_var(b1, "another");
    changed = !v || pd_block_rename_var(b1, v, "renamed") ||
              pd_op_set_attr_int(c->blocks[0]->ops[0], "col", 3) ||
              pd_op_set_attr_strings(c->blocks[0]->ops[0], "extra", 1,
                                     (const char *const[]){"e"}) ||
              !pd_block_add_op(b1, "late", 0) || pd_block_remove_var(b1, "renamed");
    pd_program_dump(c, &b);
    pd_program_dump_dot(c, &b);
    /* Whatever did or did not happen, the program is still sound. */
    if (pd_program_validate(c, NULL) != PD_OK || !index_consistent(b1)) ++*unreported;
  }
  long used = pd_alloc_fail_after(0);
  int met = used >= k;
  if (met && p && c && changed == 0 && !b.oom) ++*unreported;
  pd_buf_free(&b);
  pd_program_free(c);
  pd_program_free(p);
  return !met;
}

static void test_alloc_failures(void) {
  int unreported = 0;
  long k = 1;
  while (!run_failing_at(k, &unreported) && k < 100000) k++;
  ok(k > 200, "the run makes %ld allocations; each was made to fail once", k - 1);
  is_int(unreported, 0, "every failure was reported and left the program sound");
}

int main(void) {
  test_nested_lookup();
  test_index();
  test_ops();
  test_attrs();
  test_clone();
  test_validate();
  test_listing();
  test_dot();
  test_alloc_failures();
  return tap_done();
}
