/* test_infer_control.c -- shape inference of sequence ops (sequence_pool, lod_reset), the
 * control-flow ops (conditional_block, while, recurrent: sub-block and condition checks), the
 * optimizers (sgd, momentum, adam), and pd_opdef_infer_shape called on its own. */
#include "config.h"

#include "tests/vm/ops/fixture.h"

static void test_sequence(void) {
  fx f;
  fx_init(&f);
  decl_lod(f.b, "s", PD_FP32, "[7, 8]", 1);
  decl_lod(f.b, "s2", PD_FP32, "[-1, 8]", 2);
  decl(f.b, "t", PD_FP32, "[7, 8]");
  decl_lod(f.b, "x", PD_FP32, "[6, 1]", 0);
  decl_lod(f.b, "xu", PD_FP32, "[-1, 1]", 1);
  decl_lod(f.b, "y2", PD_FP32, "[6, 1]", 2);
  decl(f.b, "y0", PD_INT32, "[1, 3]");
  pd_op_desc *op = add_op(&f, "sequence_pool", "X=s", "Out=p MaxIndex=mi");
  pd_op_set_attr_string(op, "pooltype", "MAX");
  expect_shape(&f, op, "p", "[-1, 8]", "sequence_pool: one row per sequence");
  ok(lod_of(&f, "p") == 0 && dtype_of(&f, "mi") == PD_INT32 && strcmp(shape_of(&f, "mi"), "[-1, 8]") == 0,
     "sequence_pool: no LoD left; MaxIndex int32 like Out");
  expect_shape(&f, add_op(&f, "sequence_pool", "X=s2", "Out=p2"), "p2", "[-1, 8]",
               "sequence_pool of nested sequences");
  is_int(lod_of(&f, "p2"), 1, "sequence_pool removes one LoD level");
  expect_error(&f, add_op(&f, "sequence_pool", "X=t", "Out=p"), PD_ETYPE,
               "sequence_pool: X must be a sequence (lod_level >= 1), got lod_level 0",
               "sequence_pool of a plain tensor");
  op = add_op(&f, "sequence_pool", "X=s", "Out=p");
  pd_op_set_attr_string(op, "pooltype", "MEAN");
  expect_error(&f, op, PD_EINVAL,
               "sequence_pool: attribute pooltype is 'MEAN'; expected one of 'AVERAGE', 'SUM', "
               "'SQRT', 'LAST', 'FIRST', 'MAX'",
               "sequence_pool: unknown pooltype");

  op = add_op(&f, "lod_reset", "X=x", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){0, 2, 6});
  expect_shape(&f, op, "r", "[6, 1]", "lod_reset keeps the shape");
  is_int(lod_of(&f, "r"), 1, "lod_reset by target_lod gives one level");
  op = add_op(&f, "lod_reset", "X=x", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){0, 2, 5});
  expect_error(&f, op, PD_ESHAPE, "lod_reset: target_lod [0, 2, 5] ends at 5 but X [6, 1] has 6 rows",
               "lod_reset: offsets do not cover X");
  op = add_op(&f, "lod_reset", "X=xu", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){0, 2, 5});
  expect_shape(&f, op, "r", "[-1, 1]", "lod_reset of an unknown number of rows");
  expect_error(&f, add_op(&f, "lod_reset", "X=x", "Out=r"), PD_EINVAL,
               "lod_reset: without Y, target_lod must give at least 2 offsets, got []",
               "lod_reset without target");
  op = add_op(&f, "lod_reset", "X=x", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){1, 3, 6});
  expect_error(&f, op, PD_EINVAL, "lod_reset: target_lod [1, 3, 6] must start at 0 and never decrease",
               "lod_reset: offsets not from 0");
  /* A long target_lod is checked to its end; the message shows its start. */
  int32_t offsets[101];
  for (int i = 0; i < 101; i++) offsets[i] = i;
  decl(f.b, "x100", PD_FP32, "[100, 1]");
  decl(f.b, "x101", PD_FP32, "[101, 1]");
  op = add_op(&f, "lod_reset", "X=x100", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 101, offsets);
  expect_shape(&f, op, "r", "[100, 1]", "lod_reset with 100 sequences");
  op = add_op(&f, "lod_reset", "X=x101", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 101, offsets);
  is_int(prep(&f, op), PD_ESHAPE, "lod_reset: a long target_lod that stops short");
  ok(f.err.msg && strncmp(f.err.msg, "lod_reset: target_lod [0, 1, 2, 3, ", 35) == 0 &&
         strstr(f.err.msg, ", ...] ends at 100 but X [101, 1] has 101 rows"),
     "the message cuts the list short: %s", f.err.msg ? f.err.msg : "(null)");
  offsets[70] = 3;
  op = add_op(&f, "lod_reset", "X=x100", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 101, offsets);
  is_int(prep(&f, op), PD_EINVAL, "lod_reset: a decreasing offset far down the list");
  decl_lod(f.b, "xs", PD_FP32, "[6, 1]", 1);
  op = add_op(&f, "lod_reset", "X=xs", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){0, 2, 3});
  expect_shape(&f, op, "r", "[6, 1]", "lod_reset: target_lod grouping X's sequences");
  is_int(lod_of(&f, "r"), 2, "lod_reset: grouping adds a top level");
  op = add_op(&f, "lod_reset", "X=xs", "Out=r");
  pd_op_set_attr_ints(op, "target_lod", 3, (const int32_t[]){0, 2, 3});
  pd_op_set_attr_bool(op, "append", true);
  expect_error(&f, op, PD_ESHAPE, "lod_reset: target_lod [0, 2, 3] ends at 3 but X [6, 1] has 6 rows",
               "lod_reset: an appended level must cover X's rows");
  expect_shape(&f, add_op(&f, "lod_reset", "X=x Y=y2", "Out=r"), "r", "[6, 1]", "lod_reset by Y");
  is_int(lod_of(&f, "r"), 2, "lod_reset by Y takes Y's levels");
  expect_shape(&f, add_op(&f, "lod_reset", "X=x Y=y0", "Out=r"), "r", "[6, 1]", "lod_reset by Y's data");
  is_int(lod_of(&f, "r"), 1, "lod_reset by Y's data gives one level");
  op = add_op(&f, "lod_reset", "X=xu Y=y0", "Out=r");
  pd_op_set_attr_bool(op, "append", true);
  expect_shape(&f, op, "r", "[-1, 1]", "lod_reset with append");
  is_int(lod_of(&f, "r"), 2, "lod_reset with append adds a level");
  fx_free(&f);
}

static void test_control_flow(void) {
  fx f;
  fx_init(&f);
  pd_block *b1 = pd_program_add_block(f.p, 0);
  pd_block *b2 = b1 ? pd_program_add_block(f.p, 1) : NULL;
  if (!b2) bail("out of memory");
  decl(f.b, "c", PD_BOOL, "[1]");
  decl(f.b, "rows", PD_BOOL, "[-1, 1]");
  decl(f.b, "c2", PD_BOOL, "[2]");
  decl(f.b, "cf", PD_FP32, "[1]");
  decl(f.b, "ci", PD_INT64, "[1]");
  decl(f.b, "x", PD_FP32, "[-1, 4]");
  decl(f.b, "o", PD_FP32, "[-1, 4]");
  pd_var_desc *scope = pd_block_var(f.b, "scope");
  if (!scope) bail("out of memory");
  scope->type = PD_VAR_STEP_SCOPES;

  pd_op_desc *op = add_op(&f, "conditional_block", "Cond=c Input=x", "Out=o Scope=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  pd_op_set_attr_bool(op, "is_scalar_condition", true);
  expect_shape(&f, op, "o", "[-1, 4]", "conditional_block leaves Out as the compiler shaped it");
  op = add_op(&f, "conditional_block", "Cond=rows Input=x", "Out=o Scope=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_shape(&f, op, "o", "[-1, 4]", "conditional_block with a per-row condition");
  op = add_op(&f, "conditional_block", "Cond=cf", "Scope=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_error(&f, op, PD_ETYPE, "conditional_block: Cond must be bool, got float32",
               "conditional_block: a float condition");
  op = add_op(&f, "conditional_block", "Cond=c2", "Scope=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  pd_op_set_attr_bool(op, "is_scalar_condition", true);
  expect_error(&f, op, PD_ESHAPE, "conditional_block: Cond must hold one element, got [2]",
               "conditional_block: a scalar condition of two elements");
  op = add_op(&f, "conditional_block", "Cond=c", "Scope=scope");
  pd_op_set_attr_block(op, "sub_block", 2);
  expect_error(&f, op, PD_EINVAL, "conditional_block: sub_block 2 has parent block 1, not the op's block 0",
               "conditional_block: a sub_block of another block");

  op = add_op(&f, "while", "X=x Condition=c", "Out=o StepScopes=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_shape(&f, op, "o", "[-1, 4]", "while");
  op = add_op(&f, "while", "Condition=ci", "StepScopes=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_error(&f, op, PD_ETYPE, "while: Condition must be bool, got int64", "while: int condition");
  op = add_op(&f, "while", "Condition=c2", "StepScopes=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_error(&f, op, PD_ESHAPE, "while: Condition must hold one element, got [2]",
               "while: a condition of two elements");
  op = add_op(&f, "while", "Condition=c,c", "StepScopes=scope");
  pd_op_set_attr_block(op, "sub_block", 1);
  expect_error(&f, op, PD_EINVAL, "while: Condition takes one var, got 2", "while: two conditions");

  /* The sub-block's own ops run in block 1 and see block 0's vars. */
  f.b = b1;
  op = add_op(&f, "while", "Condition=c", "StepScopes=scope");
  pd_op_set_attr_block(op, "sub_block", 2);
  pd_error_clear(&f.err);
  is_int(prep(&f, op), PD_OK, "a while nested in block 1 with its body in block 2");
  fx_free(&f);
}

static void test_recurrent(void) {
  fx f;
  fx_init(&f);
  if (!pd_program_add_block(f.p, 0)) bail("out of memory");
  decl(f.b, "x", PD_FP32, "[7, -1, 4]");
  decl(f.b, "x5", PD_FP32, "[5, -1, 4]");
  decl(f.b, "h0", PD_FP32, "[-1, 4]");
  decl(f.b, "w", PD_FP32, "[4, 4]");
  decl(f.b, "out", PD_FP32, "[7, -1, 4]");
  static const char *const ex[] = {"h_pre"}, *const st[] = {"h"}, *const st2[] = {"h", "g"};
  pd_op_desc *op = add_op(&f, "recurrent", "inputs=x initial_states=h0 parameters=w",
                          "outputs=out step_scopes=scopes");
  pd_op_set_attr_block(op, "sub_block", 1);
  pd_op_set_attr_strings(op, "ex_states", 1, ex);
  pd_op_set_attr_strings(op, "states", 1, st);
  pd_op_set_attr_bool(op, "has_states", true);
  expect_shape(&f, op, "out", "[7, -1, 4]", "recurrent");
  pd_op_set_attr_strings(op, "states", 2, st2);
  expect_error(&f, op, PD_EINVAL, "recurrent: 1 ex_states but 2 states", "recurrent: states mismatch");
  op = add_op(&f, "recurrent", "inputs=x", "outputs=out step_scopes=scopes");
  pd_op_set_attr_block(op, "sub_block", 1);
  pd_op_set_attr_strings(op, "ex_states", 1, ex);
  pd_op_set_attr_strings(op, "states", 1, st);
  expect_error(&f, op, PD_EINVAL, "recurrent: 1 ex_states but 0 initial_states",
               "recurrent: no initial state for an ex_state");
  op = add_op(&f, "recurrent", "inputs=x,x5", "outputs=out step_scopes=scopes");
  pd_op_set_attr_block(op, "sub_block", 1);
  pd_op_set_attr_strings(op, "ex_states", 0, ex);
  pd_op_set_attr_strings(op, "states", 0, st);
  expect_error(&f, op, PD_ESHAPE,
               "recurrent: inputs[1] [5, -1, 4] has 5 steps but inputs[0] [7, -1, 4] has 7",
               "recurrent: inputs of different lengths");
  fx_free(&f);
}

static void test_optimizers(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "w", PD_FP32, "[784, 10]");
  decl(f.b, "w@GRAD", PD_FP32, "[784, 10]");
  decl(f.b, "g5", PD_FP32, "[784, 5]");
  decl(f.b, "g64", PD_FP64, "[784, 10]");
  decl(f.b, "lr", PD_FP32, "[1]");
  decl(f.b, "lr2", PD_FP32, "[2]");
  decl(f.b, "n", PD_INT64, "[784, 10]");
  decl(f.b, "v", PD_FP32, "[784, 10]");
  decl(f.b, "m1", PD_FP32, "[784, 10]");
  decl(f.b, "m2", PD_FP32, "[784, 10]");
  decl(f.b, "m784", PD_FP32, "[784]");
  decl(f.b, "b1p", PD_FP32, "[1]");
  decl(f.b, "b2p", PD_FP32, "[1]");
  expect_shape(&f, add_op(&f, "sgd", "Param=w Grad=w@GRAD LearningRate=lr", "ParamOut=w"), "w",
               "[784, 10]", "sgd updates Param in place");
  expect_shape(&f, add_op(&f, "sgd", "Param=w Grad=w@GRAD LearningRate=lr", "ParamOut=w2"), "w2",
               "[784, 10]", "sgd: ParamOut takes Param's shape");
  expect_error(&f, add_op(&f, "sgd", "Param=w Grad=g5 LearningRate=lr", "ParamOut=w"), PD_ESHAPE,
               "sgd: Grad [784, 5] must have the shape of Param [784, 10]", "sgd: Grad shape");
  expect_error(&f, add_op(&f, "sgd", "Param=w Grad=w@GRAD LearningRate=lr2", "ParamOut=w"), PD_ESHAPE,
               "sgd: LearningRate must hold one element, got [2]", "sgd: LearningRate shape");
  expect_error(&f, add_op(&f, "sgd", "Param=w Grad=g64 LearningRate=lr", "ParamOut=w"), PD_ETYPE,
               "sgd: Grad has dtype float64 but Param has dtype float32", "sgd: Grad dtype");
  expect_error(&f, add_op(&f, "sgd", "Param=n Grad=n LearningRate=lr", "ParamOut=n"), PD_ETYPE,
               "sgd: Param must be float16, float32 or float64, got int64", "sgd: integer Param");

  const char *mom_in = "Param=w Grad=w@GRAD Velocity=v LearningRate=lr";
  expect_error(&f, add_op(&f, "momentum", mom_in, "ParamOut=w VelocityOut=v2"), PD_EINVAL,
               "momentum: attribute mu is required", "momentum needs mu");
  pd_op_desc *op = add_op(&f, "momentum", mom_in, "ParamOut=w VelocityOut=v2");
  pd_op_set_attr_float(op, "mu", 0.9f);
  expect_shape(&f, op, "v2", "[784, 10]", "momentum: VelocityOut takes Velocity's shape");

  const char *adam_in = "Param=w Grad=w@GRAD LearningRate=lr Moment1=m1 Moment2=m2 Beta1Pow=b1p "
                        "Beta2Pow=b2p";
  op = add_op(&f, "adam", adam_in,
              "ParamOut=wo Moment1Out=m1o Moment2Out=m2o Beta1PowOut=b1o Beta2PowOut=b2o");
  expect_shape(&f, op, "m2o", "[784, 10]", "adam: Moment2Out");
  ok(strcmp(shape_of(&f, "wo"), "[784, 10]") == 0 && strcmp(shape_of(&f, "b1o"), "[1]") == 0 &&
         strcmp(shape_of(&f, "b2o"), "[1]") == 0 && strcmp(shape_of(&f, "m1o"), "[784, 10]") == 0,
     "adam: every output takes its input's shape");
  op = add_op(&f, "adam",
              "Param=w Grad=w@GRAD LearningRate=lr Moment1=m1 Moment2=m784 Beta1Pow=b1p Beta2Pow=b2p",
              "ParamOut=w Moment1Out=m1 Moment2Out=m784 Beta1PowOut=b1p Beta2PowOut=b2p");
  expect_error(&f, op, PD_ESHAPE, "adam: Moment2 [784] must have the shape of Param [784, 10]",
               "adam: Moment2 shape");
  fx_free(&f);
}

/* pd_opdef_infer_shape on its own: defaults stand in for attributes the op does not set, and
 * what pd_opdef_check would have caught is still reported, not crashed on. */
static void test_infer_alone(void) {
  fx f;
  fx_init(&f);
  decl(f.b, "x", PD_FP32, "[-1, 10]");
  pd_op_desc *op = add_op(&f, "softmax", "X=x", "Out=p");
  is_int(pd_opdef_infer_shape(op, f.b, &f.err), PD_OK, "infer_shape without defaults filled");
  ok(op->nattrs == 0 && strcmp(shape_of(&f, "p"), "[-1, 10]") == 0, "defaults are read, not added");
  op = add_op(&f, "mul", "X=x", "Out=o");
  is_int(pd_opdef_infer_shape(op, f.b, &f.err), PD_EINVAL, "a missing input");
  is_str(f.err.msg, "mul: input Y is missing", "a missing input is named");
  pd_error_clear(&f.err);
  op = add_op(&f, "relu", "X=x", "");
  if (pd_op_set_output(op, "Out", 1, (const char *const[]){"ghost"})) bail("out of memory");
  is_int(pd_opdef_infer_shape(op, f.b, &f.err), PD_ENOTFOUND, "an undeclared output");
  is_str(f.err.msg, "relu: output Out names 'ghost', which is not declared", "an undeclared output is named");
  pd_error_clear(&f.err);
  op = add_op(&f, "relu", "", "Out=o");
  if (pd_op_set_input(op, "X", 1, (const char *const[]){"nope\x01"})) bail("out of memory");
  is_int(pd_opdef_infer_shape(op, f.b, &f.err), PD_ENOTFOUND, "an undeclared input");
  is_str(f.err.msg, "relu: input X names 'nope\\x01', which is not declared",
         "names from the op are quoted safely");
  pd_error_clear(&f.err);
  is_int(pd_opdef_infer_shape(op, f.b, NULL), PD_ENOTFOUND, "errors without an error record");
  fx_free(&f);
}

int main(void) {
  test_sequence();
  test_control_flow();
  test_recurrent();
  test_optimizers();
  test_infer_alone();
  return tap_done();
}
