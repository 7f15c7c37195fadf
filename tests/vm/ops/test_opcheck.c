/* test_opcheck.c -- pd_opdef_check and pd_opdef_fill_defaults: unknown ops, slots and
 * attributes (with suggestions), missing slots and attributes, arity, undeclared vars, attribute
 * types and allowed values, block references, framework-wide attributes, defaults, and clean
 * failure when allocations fail. */
#include "config.h"

#include "tests/vm/ops/fixture.h"

static void test_unknown_op(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[2, 3]");
  pd_op_desc *op = add_op(&f, "elementwise_ad", "X=x Y=x", "Out=o");
  expect_error(&f, op, PD_ENOTFOUND, "unknown op type 'elementwise_ad' (did you mean 'elementwise_add'?)",
               "unknown op type, with a suggestion");
  op = add_op(&f, "frobnicate", "X=x", "Out=o");
  expect_error(&f, op, PD_ENOTFOUND, "unknown op type 'frobnicate'", "unknown op type");
  pd_error_clear(&f.err);
  is_int(pd_opdef_fill_defaults(op, &f.err), PD_ENOTFOUND, "fill_defaults: unknown op type");
  pd_error_clear(&f.err);
  is_int(pd_opdef_infer_shape(op, f.b, &f.err), PD_ENOTFOUND, "infer_shape: unknown op type");
  fx_free(&f);
}

static void test_slots(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[-1, 784]");
  decl(f.b, "x2", PD_FP32, "[-1, 784]");
  decl(f.b, "w", PD_FP32, "[784, 10]");
  expect_error(&f, add_op(&f, "mul", "X=x", "Out=o"), PD_EINVAL, "mul: input Y is missing",
               "a required input is missing");
  expect_error(&f, add_op(&f, "mul", "X=x Y=w", ""), PD_EINVAL, "mul: output Out is missing",
               "a required output is missing");
  expect_error(&f, add_op(&f, "mul", "X=x Y=w Z=x", "Out=o"), PD_EINVAL,
               "mul: unknown input slot Z (mul's inputs are X, Y)", "an unknown input slot");
  expect_error(&f, add_op(&f, "mul", "x=x Y=w", "Out=o"), PD_EINVAL,
               "mul: unknown input slot x (did you mean X?)", "a misspelt input slot");
  expect_error(&f, add_op(&f, "mul", "X=x Y=w", "Outt=o"), PD_EINVAL,
               "mul: unknown output slot Outt (did you mean Out?)", "a misspelt output slot");
  expect_error(&f, add_op(&f, "mul", "X=x,x2 Y=w", "Out=o"), PD_EINVAL,
               "mul: input X takes one var, got 2", "two vars in a one-var slot");
  expect_error(&f, add_op(&f, "mul", "X=nope Y=w", "Out=o"), PD_ENOTFOUND,
               "mul: input X names 'nope', which is not declared in block 0", "an undeclared var");
  expect_shape(&f, add_op(&f, "sum", "X=x,x2", "Out=s"), "s", "[-1, 784]",
               "a list slot takes several vars");
  expect_shape(&f, add_op(&f, "dropout", "X=x", "Out=d Mask=@EMPTY@"), "d", "[-1, 784]",
               "@EMPTY@ stands for no var");
  expect_shape(&f, add_op(&f, "concat", "X=x", "Out=c1"), "c1", "[-1, 784]",
               "dispensable inputs may be left out");

  /* A nested block sees its parents' vars; an undeclared name is reported with the block. */
  pd_block *sub = pd_program_add_block(f.p, 0);
  if (!sub) bail("out of memory");
  f.b = sub;
  decl(sub, "w2", PD_FP32, "[784, 5]");
  expect_shape(&f, add_op(&f, "mul", "X=x Y=w2", "Out=inner"), "inner", "[-1, 5]",
               "an op in a sub-block sees the parent's vars");
  expect_error(&f, add_op(&f, "mul", "X=x Y=q", "Out=o2"), PD_ENOTFOUND,
               "mul: input Y names 'q', which is not declared in block 1 or its parents",
               "an undeclared var in a sub-block");
  fx_free(&f);
}

static void test_attrs(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[-1, 784]");
  decl(f.b, "w", PD_FP32, "[784, 10]");
  decl(f.b, "img", PD_FP32, "[-1, 3, 32, 32]");
  pd_op_desc *op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_int(op, "x_num_col_dim", 1);
  expect_error(&f, op, PD_EINVAL, "mul: unknown attribute x_num_col_dim (did you mean x_num_col_dims?)",
               "a misspelt attribute");
  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_int(op, "foo", 1);
  expect_error(&f, op, PD_EINVAL,
               "mul: unknown attribute foo (mul's attributes are x_num_col_dims, y_num_col_dims)",
               "an unknown attribute");
  op = add_op(&f, "relu", "X=x", "Out=o");
  pd_op_set_attr_float(op, "alpha", 0.1f);
  expect_error(&f, op, PD_EINVAL, "relu: unknown attribute alpha (relu has no attributes)",
               "an attribute on an op without attributes");

  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_float(op, "x_num_col_dims", 1.0f);
  expect_error(&f, op, PD_ETYPE, "mul: attribute x_num_col_dims must be INT, got FLOAT",
               "an attribute of the wrong type");
  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_long(op, "x_num_col_dims", 1);
  expect_shape(&f, op, "o", "[-1, 10]", "a LONG that fits is accepted for an INT");
  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_long(op, "x_num_col_dims", (int64_t)1 << 40);
  expect_error(&f, op, PD_ETYPE,
               "mul: attribute x_num_col_dims must be INT, got LONG with a value out of its range",
               "a LONG that does not fit an INT");
  op = add_op(&f, "fill_constant", "", "Out=fc");
  pd_op_set_attr_ints(op, "shape", 2, (const int32_t[]){4, 5});
  expect_shape(&f, op, "fc", "[4, 5]", "INTS are accepted for LONGS");
  op = add_op(&f, "reshape2", "X=x", "Out=r");
  pd_op_set_attr_longs(op, "shape", 2, (const int64_t[]){-1, 28});
  expect_shape(&f, op, "r", "[-1, 28]", "LONGS are accepted for INTS");
  op = add_op(&f, "scale", "X=x", "Out=sc");
  pd_op_set_attr_double(op, "scale", 2.0);
  expect_shape(&f, op, "sc", "[-1, 784]", "FLOAT64 is accepted for FLOAT");
  op = add_op(&f, "scale", "X=x", "Out=sc");
  pd_op_set_attr_string(op, "scale", "2");
  expect_error(&f, op, PD_ETYPE, "scale: attribute scale must be FLOAT, got STRING",
               "a string for a float");

  op = add_op(&f, "pool2d", "X=img", "Out=p");
  pd_op_set_attr_string(op, "pooling_type", "mean");
  pd_op_set_attr_ints(op, "ksize", 2, (const int32_t[]){2, 2});
  expect_error(&f, op, PD_EINVAL, "pool2d: attribute pooling_type is 'mean'; expected one of 'max', 'avg'",
               "a value not among the allowed ones");
  op = add_op(&f, "pool2d", "X=img", "Out=p");
  pd_op_set_attr_string(op, "pooling_type", "max");
  expect_error(&f, op, PD_EINVAL, "pool2d: attribute ksize is required", "a required attribute");
  op = add_op(&f, "cast", "X=x", "Out=c");
  pd_op_set_attr_int(op, "in_dtype", PD_FP32);
  expect_error(&f, op, PD_EINVAL, "cast: attribute out_dtype is required", "cast needs out_dtype");

  /* Framework-wide attributes, as Fluid writes them on every op. */
  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_int(op, "op_role", 0);
  pd_op_set_attr_strings(op, "op_callstack", 1, (const char *const[]){"t.pd:3:7"});
  pd_op_set_attr_bool(op, "use_mkldnn", false);
  pd_op_set_attr_string(op, "op_namescope", "/");
  expect_shape(&f, op, "o", "[-1, 10]", "framework-wide attributes are accepted");
  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_string(op, "op_role", "forward");
  expect_error(&f, op, PD_ETYPE, "mul: attribute op_role must be INT, got STRING",
               "framework-wide attributes are type-checked");
  fx_free(&f);
}

static void test_block_attr(void) {
  fx f;
  fx_init(&f);
  pd_block *body = pd_program_add_block(f.p, 0);
  if (!body) bail("out of memory");
  decl(f.b, "cond", PD_BOOL, "[1]");
  pd_op_desc *op = add_op(&f, "while", "X=cond Condition=cond", "Out=cond StepScopes=scopes");
  expect_error(&f, op, PD_EINVAL, "while: attribute sub_block is required", "while needs a block");
  pd_op_set_attr_block(op, "sub_block", 0);
  expect_error(&f, op, PD_EINVAL, "while: attribute sub_block cannot be block 0, the global block",
               "sub_block 0");
  pd_op_set_attr_block(op, "sub_block", 7);
  expect_error(&f, op, PD_EINVAL, "while: attribute sub_block names block 7, but the program has 2 blocks",
               "sub_block out of range");
  pd_op_set_attr_int(op, "sub_block", 1);
  expect_error(&f, op, PD_ETYPE, "while: attribute sub_block must be BLOCK, got INT",
               "an INT is not a BLOCK");
  pd_op_set_attr_block(op, "sub_block", body->idx);
  pd_error_clear(&f.err);
  is_int(pd_opdef_prepare(op, f.b, &f.err), PD_OK, "while with a good sub_block");
  fx_free(&f);
}

static const pd_attr *attr(const pd_op_desc *op, const char *name, pd_attr_type t) {
  const pd_attr *a = pd_op_attr(op, name);
  return a && a->type == t ? a : NULL;
}

static void test_defaults(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "img", PD_FP32, "[-1, 3, 32, 32]");
  decl(f.b, "k", PD_FP32, "[16, 3, 3, 3]");
  decl(f.b, "x", PD_FP32, "[-1, 784]");
  decl(f.b, "w", PD_FP32, "[784, 10]");
  pd_op_desc *op = add_op(&f, "conv2d", "Input=img Filter=k", "Output=y");
  pd_error_clear(&f.err);
  is_int(pd_opdef_check(op, f.b, &f.err), PD_OK, "conv2d without attributes checks");
  is_int(op->nattrs, 0, "check leaves the op alone");
  is_int(pd_opdef_fill_defaults(op, &f.err), PD_OK, "fill_defaults");
  is_int(op->nattrs, pd_opdef_lookup("conv2d")->nattrs, "every attribute filled");
  const pd_attr *a = attr(op, "strides", PD_ATTR_INTS);
  ok(a && a->n == 2 && a->ints[0] == 1 && a->ints[1] == 1, "strides = [1, 1]");
  a = attr(op, "paddings", PD_ATTR_INTS);
  ok(a && a->n == 2 && a->ints[0] == 0 && a->ints[1] == 0, "paddings = [0, 0]");
  a = attr(op, "dilations", PD_ATTR_INTS);
  ok(a && a->n == 2 && a->ints[0] == 1 && a->ints[1] == 1, "dilations = [1, 1]");
  a = attr(op, "groups", PD_ATTR_INT);
  ok(a && a->v.i == 1, "groups = 1");
  a = attr(op, "padding_algorithm", PD_ATTR_STRING);
  ok(a && strcmp(a->v.s, "EXPLICIT") == 0, "padding_algorithm = EXPLICIT");
  a = attr(op, "data_format", PD_ATTR_STRING);
  ok(a && strcmp(a->v.s, "NCHW") == 0, "data_format = NCHW");
  is_int(pd_opdef_fill_defaults(op, &f.err), PD_OK, "fill_defaults twice");
  is_int(op->nattrs, pd_opdef_lookup("conv2d")->nattrs, "nothing added twice");

  op = add_op(&f, "fill_constant", "", "Out=c");
  is_int(pd_opdef_fill_defaults(op, &f.err), PD_OK, "fill_constant defaults");
  a = attr(op, "shape", PD_ATTR_LONGS);
  ok(a && a->n == 0, "shape = [] (LONGS)");
  a = attr(op, "value", PD_ATTR_FLOAT);
  ok(a && a->v.f == 0.0f, "value = 0.0");
  a = attr(op, "dtype", PD_ATTR_INT);
  ok(a && a->v.i == PD_FP32, "dtype = FP32");
  a = attr(op, "str_value", PD_ATTR_STRING);
  ok(a && strcmp(a->v.s, "") == 0, "str_value = \"\"");
  a = attr(op, "force_cpu", PD_ATTR_BOOLEAN);
  ok(a && !a->v.b, "force_cpu = false");

  op = add_op(&f, "mul", "X=x Y=w", "Out=o");
  pd_op_set_attr_int(op, "x_num_col_dims", 1);
  pd_op_set_attr_int(op, "y_num_col_dims", 1);
  pd_op_set_attr_int(op, "x_num_col_dims", 1);
  is_int(prep(&f, op), PD_OK, "mul prepares");
  ok(attr(op, "x_num_col_dims", PD_ATTR_INT)->v.i == 1 && op->nattrs == 2,
     "attributes the op sets are kept");
  op = add_op(&f, "recurrent", "inputs=x", "step_scopes=s");
  is_int(pd_opdef_fill_defaults(op, &f.err), PD_OK, "recurrent defaults");
  ok(!pd_op_attr(op, "sub_block") && !pd_op_attr(op, "states"), "required attributes get no default");
  a = attr(op, "skip_eager_deletion_vars", PD_ATTR_STRINGS);
  ok(a && a->n == 0, "an empty STRINGS default");
  a = attr(op, "is_train", PD_ATTR_BOOLEAN);
  ok(a && a->v.b, "is_train = true");
  fx_free(&f);
}

/* Every allocation that check + defaults + shape inference make may fail: each failure is
 * reported as PD_ENOMEM and leaks nothing (the sanitizer build checks the leaks). */
static void test_alloc_failure(void) {
  int failures = 0, bad = 0;
  for (long k = 1; k < 200; k++) {
    fx f;
    fx_init(&f);
    decl(f.b, "img", PD_FP32, "[-1, 3, 32, 32]");
    decl(f.b, "k", PD_FP32, "[16, 3, 3, 3]");
    pd_op_desc *op = add_op(&f, "conv2d", "Input=img Filter=k", "Output=y");
    pd_alloc_fail_after(k);
    pd_status st = pd_opdef_prepare(op, f.b, &f.err);
    pd_alloc_fail_after(0);
    if (st == PD_OK) {
      ok(strcmp(shape_of(&f, "y"), "[-1, 16, 30, 30]") == 0, "prepare succeeds once allocations do");
      fx_free(&f);
      break;
    }
    failures++;
    bad += st != PD_ENOMEM;
    fx_free(&f);
  }
  ok(failures > 5, "allocations were made to fail (%d)", failures);
  is_int(bad, 0, "every failure is PD_ENOMEM");
}

int main(void) {
  test_unknown_op();
  test_slots();
  test_attrs();
  test_block_attr();
  test_defaults();
  test_alloc_failure();
  return tap_done();
}
