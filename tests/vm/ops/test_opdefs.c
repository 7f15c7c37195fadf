/* test_opdefs.c -- the registry itself: every entry well formed, names unique and sorted, lookup
 * finds every op and nothing else, listing by prefix, "did you mean", the differentiable ops and
 * their gradient ops, kind tests on op descs, and spot checks of slot and attribute names
 * against PaddlePaddle Fluid's OpMakers. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tests/tap.h"
#include "vm/ops/ops.h"

/* Why entry d is malformed, or NULL. */
static const char *entry_problem(const pd_opdef *d, int index) {
  static char why[256];
  if (!d->type || !*d->type) return "no name";
  if ((int)d->kind != index) return "kind is not its index";
  if (!d->infer_shape) return "no shape function";
  if (!d->kernel) return "no kernel";
  if (d->forward) return "a forward op pointing at a forward op";
  if (d->noutputs < 1) return "no outputs";
  for (int io = 0; io < 2; io++) {
    const pd_slotdef *s = io ? d->outputs : d->inputs;
    int n = io ? d->noutputs : d->ninputs;
    for (int i = 0; i < n; i++) {
      if (!s[i].name || !*s[i].name) return "a slot without a name";
      for (int k = 0; k < i; k++)
        if (strcmp(s[i].name, s[k].name) == 0) {
          snprintf(why, sizeof why, "slot %s twice", s[i].name);
          return why;
        }
      if ((s[i].flags & PD_SLOT_INTERMEDIATE) && (!io || !(s[i].flags & PD_SLOT_DISPENSABLE)))
        return "an intermediate slot that is an input or not dispensable";
    }
  }
  for (int i = 0; i < d->nattrs; i++) {
    const pd_attrdef *a = &d->attrs[i];
    if (!a->name || !*a->name) return "an attribute without a name";
    for (int k = 0; k < i; k++)
      if (strcmp(a->name, d->attrs[k].name) == 0) {
        snprintf(why, sizeof why, "attribute %s twice", a->name);
        return why;
      }
    if (a->type == PD_ATTR_BLOCK && !a->required) return "a BLOCK attribute with a default";
    if (a->choices) {
      if (a->type != PD_ATTR_STRING) return "choices on a non-string attribute";
      bool found = a->required;
      for (int k = 0; a->choices[k]; k++) found = found || strcmp(a->choices[k], a->def.s) == 0;
      if (!found) {
        snprintf(why, sizeof why, "attribute %s: default not among its choices", a->name);
        return why;
      }
    }
    if (a->def.n > 0 && a->type != PD_ATTR_INTS && a->type != PD_ATTR_LONGS)
      return "a list default on an attribute that is not an integer list";
  }
  /* A row-wise op has the input slots its flag names its rows in. */
  if ((d->flags & PD_OPF_ROW_X) && !pd_opdef_input(d, "X")) return "ROW_X without an input X";
  if ((d->flags & PD_OPF_ROW_XY) && (!pd_opdef_input(d, "X") || !pd_opdef_input(d, "Y")))
    return "ROW_XY without inputs X and Y";
  if ((d->flags & PD_OPF_ROW_IDS) && !pd_opdef_input(d, "Ids"))
    return "ROW_IDS without an input Ids";
  if ((d->flags & PD_OPF_GPU_GRAD) && !(d->flags & PD_OPF_DIFF)) return "GPU_GRAD without DIFF";
  return NULL;
}

static void test_entries(void) {
  is_int(PD_ARRAY_LEN(pd_opdefs), PD_OP_COUNT_, "the registry has one entry per op kind");
  ok(PD_OP_COUNT_ >= 60, "at least 60 ops (%d)", PD_OP_COUNT_);
  for (int i = 0; i < PD_OP_COUNT_; i++) {
    const char *why = entry_problem(&pd_opdefs[i], i);
    ok(!why, "%s is well formed%s%s", pd_opdefs[i].type ? pd_opdefs[i].type : "(null)",
       why ? ": " : "", why ? why : "");
  }
}

static void test_sorted_lookup(void) {
  int first_bad = -1;
  for (int i = 1; i < PD_OP_COUNT_ && first_bad < 0; i++)
    if (strcmp(pd_opdefs[i - 1].type, pd_opdefs[i].type) >= 0) first_bad = i;
  ok(first_bad < 0, "names are unique and sorted (vm/oplist.h order)");
  if (first_bad >= 0)
    printf("#   '%s' comes before '%s'\n", pd_opdefs[first_bad - 1].type, pd_opdefs[first_bad].type);

  int found = 0;
  for (int i = 0; i < PD_OP_COUNT_; i++)
    found += pd_opdef_lookup(pd_opdefs[i].type) == &pd_opdefs[i] &&
             pd_opdef_get((pd_op_kind)i) == &pd_opdefs[i];
  is_int(found, PD_OP_COUNT_, "lookup by name and by kind finds every op");

  ok(pd_opdef_lookup("mul") == &pd_opdefs[PD_OP_mul], "PD_OP_mul is mul");
  is_str(pd_opdefs[PD_OP_while].type, "while", "PD_OP_while is while");
  is_str(pd_opdef_get(PD_OP_elementwise_add)->type, "elementwise_add", "get by kind");
  ok(!pd_opdef_lookup("Mul") && !pd_opdef_lookup("") && !pd_opdef_lookup(NULL) &&
         !pd_opdef_lookup("elementwise") && !pd_opdef_lookup("mul ") && !pd_opdef_lookup("zzz") &&
         !pd_opdef_lookup("aaa"),
     "lookup of unknown names gives NULL");
  ok(!pd_opdef_get(PD_OP_COUNT_) && !pd_opdef_get((pd_op_kind)-1), "get out of range gives NULL");

  const pd_opdef *mul = pd_opdef_lookup("mul");
  ok(pd_opdef_input(mul, "Y") == &mul->inputs[1] && !pd_opdef_input(mul, "Out") &&
         pd_opdef_output(mul, "Out") == &mul->outputs[0] && !pd_opdef_output(mul, "X"),
     "slot lookup in a def");
  ok(pd_opdef_attr(mul, "y_num_col_dims") == &mul->attrs[1] && !pd_opdef_attr(mul, "axis"),
     "attribute lookup in a def");
}

static void test_names(void) {
  const char *all[PD_OP_COUNT_ + 1];
  is_int(pd_opdef_names(NULL, NULL, 0), PD_OP_COUNT_, "names: count with cap 0");
  is_int(pd_opdef_names("", all, PD_OP_COUNT_ + 1), PD_OP_COUNT_, "names: all of them");
  int same = 0;
  for (int i = 0; i < PD_OP_COUNT_; i++) same += all[i] == pd_opdefs[i].type;
  is_int(same, PD_OP_COUNT_, "names: alphabetical, the registry's strings");

  const char *ew[8];
  is_int(pd_opdef_names("elementwise_", ew, 8), 7, "names: 7 start with elementwise_");
  is_str(ew[0], "elementwise_add", "names: first elementwise_");
  is_str(ew[6], "elementwise_sub", "names: last elementwise_");
  const char *two[2] = {NULL, NULL};
  is_int(pd_opdef_names("reduce_", two, 2), 5, "names: count beyond cap");
  ok(two[0] && strcmp(two[0], "reduce_max") == 0 && two[1] && strcmp(two[1], "reduce_mean") == 0,
     "names: only cap names written");
  is_int(pd_opdef_names("zz", ew, 8), 0, "names: no match");
  is_int(pd_opdef_names("while", ew, 8), 1, "names: the last op");
  is_int(pd_opdef_names("abs", ew, 8), 1, "names: the first op");
  is_int(pd_opdef_names("lookup_table", ew, 8), 2, "names: a name that prefixes another");
}

static void test_suggest(void) {
  is_str(pd_opdef_suggest("elementwise_ad"), "elementwise_add", "suggest: a letter missing");
  is_str(pd_opdef_suggest("sofmax"), "softmax", "suggest: a typo");
  is_str(pd_opdef_suggest("Relu"), "relu", "suggest: case");
  ok(pd_opdef_suggest("xyzzy") == NULL, "suggest: nothing close");
  ok(pd_opdef_suggest("mul") == NULL, "suggest: nothing for a known name");
  ok(pd_opdef_suggest(NULL) == NULL, "suggest: NULL");
}

/* Exactly the ops marked DIFF have a gradient op, "<type>_grad", found by name too. */
static void test_differentiable(void) {
  int marked = 0, others = 0;
  for (int i = 0; i < PD_OP_COUNT_; i++) {
    const pd_opdef *d = &pd_opdefs[i], *g = pd_opdef_grad(d);
    if (!(d->flags & PD_OPF_DIFF)) {
      if (g) printf("#   %s is not marked DIFF but has gradient op %s\n", d->type, g->type);
      others += g != NULL;
      continue;
    }
    marked++;
    char name[80];
    snprintf(name, sizeof name, "%s_grad", d->type);
    ok(g && strcmp(g->type, name) == 0 && g->forward == d && g->kind == d->kind && g->kernel &&
           g->infer_shape && g->flags == 0 && pd_opdef_lookup(name) == g &&
           pd_opdef_grad(g) == NULL,
       "%s has a gradient op %s with a kernel%s", d->type, name,
       g ? "" : " (is DIFF written first in its flags?)");
  }
  is_int(others, 0, "no op without DIFF has a gradient op");
  is_int(pd_opdef_grad_count(), marked, "pd_opdef_grad_count counts the ops marked DIFF (%d)",
         marked);
  ok((pd_opdef_lookup("mul")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("elementwise_add")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("softmax_with_cross_entropy")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("lookup_table")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("recurrent")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("while")->flags & PD_OPF_DIFF) &&
         (pd_opdef_lookup("conditional_block")->flags & PD_OPF_DIFF),
     "layers, losses, embeddings and control flow are differentiable");
  ok(!(pd_opdef_lookup("sgd")->flags & PD_OPF_DIFF) &&
         !(pd_opdef_lookup("less_than")->flags & PD_OPF_DIFF) &&
         !(pd_opdef_lookup("fill_constant")->flags & PD_OPF_DIFF),
     "optimizers, comparisons and initialisers are not differentiable");
  const pd_opdef *mg = pd_opdef_lookup("mul_grad");
  ok(mg && pd_opdef_input(mg, "X") && pd_opdef_input(mg, "Y") && pd_opdef_input(mg, "Out") &&
         pd_opdef_input(mg, "Out@GRAD") && pd_opdef_output(mg, "X@GRAD") &&
         pd_opdef_output(mg, "Y@GRAD") && mg->noutputs == 2 && pd_opdef_attr(mg, "x_num_col_dims"),
     "mul_grad: forward inputs and outputs, Out@GRAD in; X@GRAD, Y@GRAD out; mul's attributes");
  ok(pd_opdef_lookup("less_than_grad") == NULL && pd_opdef_lookup("_grad") == NULL &&
         pd_opdef_lookup("mul_grad_grad") == NULL,
     "no gradient op for non-differentiable ops or gradient ops");
}

/* pd_opdef_of, pd_opdef_is, pd_opdef_is_grad: an op desc's def and kind. */
static void test_kind_of_desc(void) {
  char t_mul[] = "mul", t_mul_grad[] = "mul_grad", t_bad[] = "mulx";
  pd_op_desc mul = {.type = t_mul}, mul_grad = {.type = t_mul_grad}, bad = {.type = t_bad};
  ok(pd_opdef_of(&mul) == &pd_opdefs[PD_OP_mul] &&
         pd_opdef_of(&mul_grad) == pd_opdef_lookup("mul_grad") && !pd_opdef_of(&bad) &&
         !pd_opdef_of(NULL),
     "pd_opdef_of: the def of the op's type, NULL for unknown types");
  ok(pd_opdef_is(&mul, PD_OP_mul) && !pd_opdef_is(&mul_grad, PD_OP_mul) &&
         !pd_opdef_is(&mul, PD_OP_elementwise_mul) && !pd_opdef_is(&bad, PD_OP_mul),
     "pd_opdef_is: the forward op of a kind only");
  ok(pd_opdef_is_grad(&mul_grad, PD_OP_mul) && !pd_opdef_is_grad(&mul, PD_OP_mul) &&
         !pd_opdef_is_grad(&mul_grad, PD_OP_sum) && !pd_opdef_is_grad(&bad, PD_OP_mul),
     "pd_opdef_is_grad: the gradient op of a kind only");
}

/* The flags' spelling in vm/oplist.h as the preprocessor sees it (PD_IF_DIFF). */
static void test_if_diff(void) {
  int on[] = {0 PD_IF_DIFF(DIFF, +1) PD_IF_DIFF(DIFF | FP_IN, +2) PD_IF_DIFF(FP_IN, +4)
                  PD_IF_DIFF(0, +8) PD_IF_DIFF(GPU | DIFF, +16)};
  is_int(on[0], 3, "PD_IF_DIFF: DIFF first is found; other flags, 0, or DIFF later are not");
}

/* Slots and attributes as Fluid's OpMakers declare them. */
static void slots_are(const char *type, bool inputs, const char *want) {
  const pd_opdef *d = pd_opdef_lookup(type);
  char got[512] = "";
  size_t len = 0;
  int n = d ? (inputs ? d->ninputs : d->noutputs) : 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", i ? " " : "",
                            (inputs ? d->inputs : d->outputs)[i].name);
  is_str(got, want, "%s %s are Fluid's", type, inputs ? "inputs" : "outputs");
}

static void test_fluid_names(void) {
  slots_are("mul", true, "X Y");
  slots_are("conv2d", true, "Input Filter");
  slots_are("conv2d", false, "Output");
  slots_are("softmax_with_cross_entropy", true, "Logits Label");
  slots_are("softmax_with_cross_entropy", false, "Softmax Loss");
  slots_are("cross_entropy", false, "Y");
  slots_are("top_k", false, "Out Indices");
  slots_are("accuracy", true, "Out Indices Label");
  slots_are("accuracy", false, "Accuracy Correct Total");
  slots_are("lookup_table_v2", true, "W Ids");
  slots_are("dropout", false, "Out Mask");
  slots_are("reshape2", false, "Out XShape");
  slots_are("conditional_block", true, "Cond Input");
  slots_are("conditional_block", false, "Out Scope");
  slots_are("while", true, "X Condition");
  slots_are("while", false, "Out StepScopes");
  slots_are("recurrent", true, "inputs initial_states parameters");
  slots_are("recurrent", false, "outputs step_scopes");
  slots_are("sgd", true, "Param LearningRate Grad MasterParam");
  slots_are("momentum", false, "ParamOut VelocityOut MasterParamOut");
  slots_are("adam", true,
            "Param Grad LearningRate Moment1 Moment2 Beta1Pow Beta2Pow Beta1Tensor Beta2Tensor "
            "EpsilonTensor MasterParam SkipUpdate");
  slots_are("adam", false, "ParamOut Moment1Out Moment2Out Beta1PowOut Beta2PowOut MasterParamOut");
  slots_are("fill_constant", true, "ValueTensor ShapeTensor ShapeTensorList");

  const pd_opdef *d = pd_opdef_lookup("conv2d");
  const pd_attrdef *a = pd_opdef_attr(d, "strides");
  ok(a && a->type == PD_ATTR_INTS && a->def.n == 2 && a->def.l.ints[0] == 1 && a->def.l.ints[1] == 1,
     "conv2d strides: INTS [1, 1]");
  a = pd_opdef_attr(d, "groups");
  ok(a && a->type == PD_ATTR_INT && a->def.i == 1, "conv2d groups: INT 1");
  a = pd_opdef_attr(pd_opdef_lookup("pool2d"), "pooling_type");
  ok(a && a->required && a->choices && strcmp(a->choices[0], "max") == 0 &&
         strcmp(a->choices[1], "avg") == 0 && !a->choices[2],
     "pool2d pooling_type: required, max or avg");
  a = pd_opdef_attr(pd_opdef_lookup("elementwise_mul"), "axis");
  ok(a && a->type == PD_ATTR_INT && a->def.i == -1, "elementwise axis: INT -1");
  a = pd_opdef_attr(pd_opdef_lookup("mul"), "x_num_col_dims");
  ok(a && a->type == PD_ATTR_INT && a->def.i == 1, "mul x_num_col_dims: INT 1");
  a = pd_opdef_attr(pd_opdef_lookup("dropout"), "dropout_prob");
  ok(a && a->type == PD_ATTR_FLOAT && a->def.f == 0.5, "dropout dropout_prob: FLOAT 0.5");
  a = pd_opdef_attr(pd_opdef_lookup("fill_constant"), "shape");
  ok(a && a->type == PD_ATTR_LONGS && a->def.n == 0, "fill_constant shape: LONGS []");
  a = pd_opdef_attr(pd_opdef_lookup("fill_constant"), "dtype");
  ok(a && a->type == PD_ATTR_INT && a->def.i == PD_FP32, "fill_constant dtype: INT 5 (FP32)");
  a = pd_opdef_attr(pd_opdef_lookup("uniform_random"), "min");
  ok(a && a->type == PD_ATTR_FLOAT && a->def.f == -1.0, "uniform_random min: FLOAT -1");
  a = pd_opdef_attr(pd_opdef_lookup("reduce_sum"), "dim");
  ok(a && a->type == PD_ATTR_INTS && a->def.n == 1 && a->def.l.ints[0] == 0, "reduce dim: INTS [0]");
  a = pd_opdef_attr(pd_opdef_lookup("cast"), "out_dtype");
  ok(a && a->required && a->type == PD_ATTR_INT, "cast out_dtype: required INT");
  a = pd_opdef_attr(pd_opdef_lookup("arg_max"), "axis");
  ok(a && a->required && a->type == PD_ATTR_LONG, "arg_max axis: required LONG");
  a = pd_opdef_attr(pd_opdef_lookup("lookup_table"), "padding_idx");
  ok(a && a->type == PD_ATTR_LONG && a->def.i == -1, "lookup_table padding_idx: LONG -1");
  a = pd_opdef_attr(pd_opdef_lookup("while"), "sub_block");
  ok(a && a->required && a->type == PD_ATTR_BLOCK, "while sub_block: required BLOCK");
  a = pd_opdef_attr(pd_opdef_lookup("adam"), "min_row_size_to_use_multithread");
  ok(a && a->type == PD_ATTR_LONG && a->def.i == 1000, "adam min_row_size_to_use_multithread");
  a = pd_opdef_attr(pd_opdef_lookup("sequence_pool"), "pooltype");
  ok(a && strcmp(a->def.s, "AVERAGE") == 0, "sequence_pool pooltype: AVERAGE");
}

int main(void) {
  test_entries();
  test_sorted_lookup();
  test_names();
  test_suggest();
  test_differentiable();
  test_kind_of_desc();
  test_if_diff();
  test_fluid_names();
  return tap_done();
}
