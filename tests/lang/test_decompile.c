/* test_decompile.c -- pd_decompile (lang/decompile.h) as a library call: PaddlePaddle's LeNet
 * (tests/interop/lenet) comes out as the stdlib's layers, each call kept only after the script
 * compiled to the model's ops, and PaddlePaddle's MLP keeps its plain product (matmul); then
 * with the k-th allocation failing, for every k of the whole call (its compiles included): each
 * call returns PD_OK or PD_ENOMEM (its message, when one could be made, "out of memory"), never
 * anything else, and leaves nothing behind (a sanitizer build checks the heap on every path).
 * Then programs made here that no saved model has: attributes that are empty lists, empty
 * optional slots, var names that are no identifiers, 64 conditional_blocks one inside the other
 * (the language's nested if statements) and one whose var is read after it (op() { } kept):
 * each decompiles (the script compiles, and with if statements to the program's ops), and
 * never crashes. Last, a program compiled from the stdlib's multi_head_attention and
 * causal_mask comes back as their calls (but an attention whose mask is a parameter, which
 * the script declares: op() lines), every allocation failing in turn as above. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "lang/compile.h"
#include "lang/decompile.h"
#include "tests/tap.h"
#include "tests/vm/ir/models.h"
#include "vm/run/model.h"

enum { SAMPLES = 2000 };

static char *decompile(pd_model *m, const char *path, pd_status *st, pd_error *e) {
  pd_buf b;
  pd_buf_init(&b);
  *st = pd_decompile(m, path, "re.pdmodel", &b, e);
  char *s = !*st && !b.oom ? pd_buf_take(&b) : NULL;
  pd_buf_free(&b);
  return s;
}

/* A var of b with its shape and dtype. */
static void mkvar(pd_block *b, const char *name, pd_dtype dt, int nd, const int64_t *dims) {
  pd_var_desc *v = pd_block_var(b, name);
  v->dtype = dt;
  pd_var_set_shape(v, nd, dims);
}

static void op1(pd_block *b, const char *type, const char *in, const char *x, const char *out,
                const char *y) {
  pd_op_desc *op = pd_block_add_op(b, type, -1);
  if (in) pd_op_set_input(op, in, 1, &x);
  if (out) pd_op_set_output(op, out, 1, &y);
}

/* pd_decompile of program p (feed `in`, fetch `out`, owned by the caller); the script, NULL
 * when it fails (*st, e). */
static char *decompile_prog(pd_program *p, const char *in, const char *out, pd_status *st,
                            pd_error *e) {
  pd_model_io feeds[1] = {{.var = in, .col = 0}}, fetches[1] = {{.var = out, .col = 0}};
  pd_model m = {.program = p, .feeds = feeds, .fetches = fetches, .nfeeds = 1, .nfetches = 1};
  return decompile(&m, "odd.pdmodel", st, e);
}

/* The one var of op's Out slot. */
static const char *one_out(const pd_op_desc *op) {
  const pd_slot *s = pd_op_output(op, "Out");
  return s && s->nargs == 1 ? s->args[0] : NULL;
}

/* Whether script s compiles. */
static bool compiles(const char *s) {
  pd_source *src = NULL;
  pd_diags dg;
  pd_diags_init(&dg, 1);
  pd_unit *u = NULL;
  bool r = s && pd_source_from_string("odd.pd", s, strlen(s), &src) == PD_OK &&
           pd_compile(src, NULL, &dg, &u) == PD_OK;
  if (!r && dg.text.data) printf("# %s", dg.text.data);
  pd_unit_free(u);
  pd_diags_free(&dg);
  pd_source_free(src);
  return r;
}

static int count_of(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

enum { DEEP = 64 };

static void odd_programs(void) {
  pd_error e = {0};
  pd_status st;

  /* tests/vm/ir/models.c's hand-made programs (if / else blocks reading a var no op writes,
   * every attribute type, BLOCKS, every var kind and 0-d shapes): a script or an error that
   * says why, never a crash */
  static const char *const hand[] = {"nested", "attrs", "kinds"};
  for (size_t i = 0; i < sizeof hand / sizeof *hand; i++) {
    pd_program *hp = model_by_name(hand[i]);
    pd_model hm = {.program = hp};
    char *hs = hp ? decompile(&hm, "hand.pdmodel", &st, &e) : NULL;
    ok(hp && ((st == PD_OK && hs) || (st != PD_OK && st != PD_ENOMEM && e.msg && *e.msg)),
       "models.c's %s: %s", hand[i], st ? (e.msg ? e.msg : "no message") : "decompiled");
    pd_free(hs);
    pd_error_clear(&e);
    pd_program_free(hp);
  }

  const int64_t row[] = {-1, 4}, one[] = {1};

  /* empty lists: INTS, FLOATS, STRINGS (of a block op), BOOLEANS and FLOAT64S the registry lacks */
  pd_program *p = pd_program_new();
  pd_block *b = p->blocks[0], *sub = pd_program_add_block(p, 0);
  mkvar(b, "x", PD_FP32, 1, one);
  mkvar(b, "c", PD_BOOL, 1, one);
  mkvar(b, "v", PD_FP32, -1, NULL);
  mkvar(b, "y", PD_FP32, 1, one);
  pd_block_var(b, "scope")->type = PD_VAR_STEP_SCOPES;
  pd_op_desc *op = pd_block_add_op(b, "fill_constant", -1);
  const char *v = "v";
  pd_op_set_output(op, "Out", 1, &v);
  pd_op_set_attr_ints(op, "shape", 0, NULL);
  pd_op_set_attr_float(op, "value", 1.0f);
  pd_op_set_attr_int(op, "dtype", 5);
  pd_op_set_attr_floats(op, "odd_floats", 0, NULL);
  pd_op_set_attr_strings(op, "odd_strings", 0, NULL);
  pd_op_set_attr_bools(op, "odd_bools", 0, NULL);
  pd_op_set_attr_doubles(op, "odd_doubles", 0, NULL);
  op1(b, "greater_than", "X", "x", "Out", "c");
  pd_op_set_input(b->ops[1], "Y", 1, (const char *[]){"x"});
  op1(b, "scale", "X", "x", "Out", "y");
  op = pd_block_add_op(b, "conditional_block", -1);
  pd_op_set_input(op, "Cond", 1, (const char *[]){"c"});
  pd_op_set_input(op, "Input", 1, (const char *[]){"x"});
  pd_op_set_output(op, "Out", 1, (const char *[]){"y"});
  pd_op_set_output(op, "Scope", 1, (const char *[]){"scope"});
  pd_op_set_attr_bool(op, "is_scalar_condition", true);
  pd_op_set_attr_block(op, "sub_block", sub->idx);
  pd_op_set_attr_strings(op, "skip_eager_deletion_vars", 0, NULL);
  mkvar(sub, "t", PD_FP32, 1, one);
  op1(sub, "relu", "X", "x", "Out", "t");
  op1(sub, "assign", "X", "t", "Out", "y");
  char *s = decompile_prog(p, "x", "y", &st, &e);
  ok(s && compiles(s) && strstr(s, "if (c) {  # op 3 (conditional_block)\n") &&
         strstr(s, "    y = t  # op 1 of block 1\n"),
     "empty INTS, FLOATS, STRINGS, BOOLEANS and FLOAT64S attributes: decompiled, an if (%s)",
     e.msg ? e.msg : "ok");
  pd_free(s);
  pd_error_clear(&e);

  /* empty optional slots: an input slot of no var and one of @EMPTY@, an output of none; and
   * assign_value's empty lists (which its shape function refuses: op() { } stays) */
  op = pd_block_add_op(b, "assign_value", -1);
  pd_op_set_output(op, "Out", 1, (const char *[]){"u"});
  pd_op_set_attr_ints(op, "shape", 0, NULL);
  pd_op_set_attr_floats(op, "fp32_values", 0, NULL);
  pd_op_set_attr_strings(op, "odd_strings", 0, NULL);
  op = pd_block_add_op(b, "scale", -1);
  pd_op_set_input(op, "X", 1, (const char *[]){"y"});
  pd_op_set_input(op, "ScaleTensor", 0, NULL);
  pd_op_set_output(op, "Out", 1, (const char *[]){"z"});
  mkvar(b, "z", PD_FP32, 1, one);
  op = pd_block_add_op(b, "dropout", -1);
  pd_op_set_input(op, "X", 1, (const char *[]){"z"});
  pd_op_set_input(op, "Seed", 1, (const char *[]){PD_EMPTY_VAR_NAME});
  pd_op_set_output(op, "Out", 1, (const char *[]){"w"});
  pd_op_set_output(op, "Mask", 0, NULL);
  mkvar(b, "w", PD_FP32, 1, one);
  s = decompile_prog(p, "x", "w", &st, &e);
  ok(s && !strstr(s, "ScaleTensor") && !strstr(s, "Seed") && !strstr(s, "Mask") &&
         strstr(s, "u = op(\"assign_value\", shape = [], fp32_values = [])  # op 4\n") &&
         strstr(s, "op(\"conditional_block\", Cond = [c]") &&
         strstr(s, "w = op(\"dropout\", X = z)  # op 6\n"),
     "empty optional slots are left out; empty lists written as [] (%s)", e.msg ? e.msg : "ok");
  pd_free(s);
  pd_error_clear(&e);
  pd_program_free(p);

  /* names that are no identifiers: a digit first, dots and dashes, a keyword, a builtin's
   * name, a space, UTF-8, the empty name, and one that clashes with another's identifier */
  p = pd_program_new();
  b = p->blocks[0];
  const char *names[] = {"1st", "a.b-c", "while", "relu", "x y", "\xc3\xbc", "", "a_b_c"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) mkvar(b, names[i], PD_FP32, 2, row);
  for (size_t i = 0; i + 2 < sizeof names / sizeof *names; i++)
    op1(b, i % 2 ? "relu" : "tanh", "X", names[i], "Out", names[i + 1]);
  op1(b, "relu", "X", "", "Out", "a_b_c");
  s = decompile_prog(p, "1st", "a_b_c", &st, &e);
  ok(s && compiles(s) && strstr(s, "v_1st = data(\"1st\", [-1, 4])\n") &&
         strstr(s, "a_b_c = tanh(v_1st)") && strstr(s, "v_while = relu(a_b_c)") &&
         strstr(s, "a_b_c_2 = relu(v_)") && strstr(s, "save(\"re.pdmodel\", a_b_c_2)"),
     "names that are no identifiers become distinct ones (%s)", e.msg ? e.msg : "ok");
  pd_free(s);
  pd_error_clear(&e);
  pd_program_free(p);

  /* DEEP conditional_blocks, each the only op of the one above but the innermost's two, then
   * one whose block makes a var that is read after it: op() { } */
  for (int raw = 0; raw < 2; raw++) {
    p = pd_program_new();
    b = p->blocks[0];
    mkvar(b, "x", PD_FP32, 1, one);
    mkvar(b, "c", PD_BOOL, 1, one);
    mkvar(b, "y", PD_FP32, 1, one);
    op1(b, "greater_than", "X", "x", "Out", "c");
    pd_op_set_input(b->ops[0], "Y", 1, (const char *[]){"x"});
    if (!raw) op1(b, "scale", "X", "x", "Out", "y");
    pd_block *at = b;
    for (int k = 0; k < (raw ? 1 : DEEP); k++) {
      pd_block *in = pd_program_add_block(p, at->idx);
      char sc[32];
      snprintf(sc, sizeof sc, "scope%d", k);
      pd_block_var(at, sc)->type = PD_VAR_STEP_SCOPES;
      op = pd_block_add_op(at, "conditional_block", -1);
      const char *scp = sc;
      pd_op_set_input(op, "Cond", 1, (const char *[]){"c"});
      pd_op_set_output(op, "Out", 1, (const char *[]){"y"});
      pd_op_set_output(op, "Scope", 1, &scp);
      pd_op_set_attr_bool(op, "is_scalar_condition", true);
      pd_op_set_attr_block(op, "sub_block", in->idx);
      at = in;
    }
    mkvar(at, "t", PD_FP32, 1, one);
    op1(at, "scale", "X", "x", "Out", "t");
    op1(at, "assign", "X", "t", "Out", "y");
    s = decompile_prog(p, "x", "y", &st, &e);
    if (raw)
      ok(s && compiles(s) && strstr(s, "y = declare([1])  # written first in block 1\n") &&
             strstr(s, "op(\"conditional_block\", Cond = [c]") && !strstr(s, "if ("),
         "a var made in the block and read after it: op(\"conditional_block\") { } (%s)",
         e.msg ? e.msg : "ok");
    else
      ok(s && count_of(s, "if (c) {  # op ") == DEEP && count_of(s, "\n}\n") == 1 &&
             strstr(s, "y = t  # op 1 of block 64\n") && compiles(s),
         "%d conditional_blocks one inside the other: %d if statements (%s)", DEEP,
         count_of(s, "if (c) {"), e.msg ? e.msg : "ok");
    pd_free(s);
    pd_error_clear(&e);
    pd_program_free(p);
  }
}

/* pd_decompile of m with the k-th allocation failing, for k in 1..n (SAMPLES of them at most):
 * each result counted into *nomem (PD_ENOMEM), *passed (a script) or *other (shown). */
static void sweep(pd_model *m, const char *path, long n, int *nomem, int *passed, int *other) {
  pd_status st;
  pd_error e = {0};
  for (long k = 1; k <= n; k += n > SAMPLES ? n / SAMPLES : 1) {
    pd_alloc_fail_after(k);
    char *t = decompile(m, path, &st, &e);
    pd_alloc_fail_after(0);
    if (st == PD_ENOMEM) ++*nomem;
    else if (st == PD_OK && t) ++*passed;
    else if ((*other)++ < 3) printf("# k = %ld: %s: %s\n", k, pd_status_str(st), e.msg ? e.msg : "");
    pd_free(t);
    pd_error_clear(&e);
  }
}

/* A program compiled from the stdlib's attention (three calls: a mask [batch, Tk], a causal
 * one, a parameter): its calls come back (the third as op() lines), and with the k-th
 * allocation failing, for every k (sampled), each decompile returns PD_OK or PD_ENOMEM and then
 * the same script again. */
static void attention(void) {
  static const char text[] =
      "import \"layers\"\n"
      "x = data(\"x\", [-1, 4, 8])\n"
      "m = data(\"m\", [-1, 4])\n"
      "y = multi_head_attention(x, x, x, 2, mask = m, dropout = 0.1)\n"
      "z = multi_head_attention(y, y, y, 4, mask = causal_mask(4))\n"
      "w = multi_head_attention(z, z, z, 2, mask = param([4, 4], init = 0.0, name = \"pm\"))\n";
  pd_source *src = NULL;
  pd_diags dg;
  pd_diags_init(&dg, 1);
  pd_unit *u = NULL;
  if (!ok(pd_source_from_string("attn.pd", text, strlen(text), &src) == PD_OK &&
              pd_compile(src, NULL, &dg, &u) == PD_OK,
          "the attention script compiles")) {
    if (dg.text.data) printf("# %s", dg.text.data);
  } else {
    pd_model_io feeds[2] = {{.var = "x"}, {.var = "m"}}, fetches[1] = {{.var = NULL}};
    const pd_block *b0 = u->main->blocks[0];
    fetches[0].var = one_out(b0->ops[b0->nops - 1]);
    pd_model m = {.program = u->main, .feeds = feeds, .fetches = fetches, .nfeeds = 2,
                  .nfetches = 1};
    pd_status st;
    pd_error e = {0};
    pd_alloc_fail_after(0);
    char *clean = decompile(&m, "attn.pdmodel", &st, &e);
    long n = pd_alloc_fail_after(0);
    ok(clean && count_of(clean, "= multi_head_attention(") == 2 &&
           strstr(clean, "(x, x, x, 2, mask = m, dropout = 0.1, names = [\"linear_0.w_0\", ") &&
           strstr(clean, "= causal_mask(4)  # ops ") && strstr(clean, "pm = param(\"pm\", [4, 4])\n") &&
           strstr(clean, "_matmul_tmp_0 + pm  # op "),
       "two multi_head_attention calls and a causal_mask; the attention whose mask is a "
       "parameter as op() lines, the parameter declared (%ld allocations)", n);
    if (!clean && e.msg) printf("# %s\n", e.msg);
    pd_error_clear(&e);
    int nomem = 0, passed = 0, other = 0;
    sweep(&m, "attn.pdmodel", n, &nomem, &passed, &other);
    char *again = decompile(&m, "attn.pdmodel", &st, &e);
    ok(nomem > 0 && other == 0 && again && clean && !strcmp(again, clean),
       "attention, allocation k failing: %d out of memory, %d decompiled, %d other; the same "
       "script afterwards", nomem, passed, other);
    pd_free(again);
    pd_free(clean);
    pd_error_clear(&e);
  }
  pd_unit_free(u);
  pd_diags_free(&dg);
  pd_source_free(src);
}

int main(void) {
  const char *top = getenv("top_srcdir");
  char path[1024], mlp[1024];
  snprintf(path, sizeof path, "%s/tests/interop/lenet/model.pdmodel", top ? top : ".");
  snprintf(mlp, sizeof mlp, "%s/tests/interop/mlp/model.pdmodel", top ? top : ".");
  pd_model m = {0};
  pd_error e = {0};
  if (!ok(pd_model_load(&m, path, &e) == PD_OK, "LeNet loads (%s)", e.msg ? e.msg : "ok")) {
    pd_error_clear(&e);
    return tap_done();
  }
  pd_status st;
  pd_alloc_fail_after(0);
  char *clean = decompile(&m, path, &st, &e);
  long total = pd_alloc_fail_after(0);
  ok(st == PD_OK && clean, "decompiles (%ld allocations)", total);
  ok(clean && strstr(clean, "import \"layers\"\n") &&
         strstr(clean, "= conv(img, 6, 5, padding = 2, act = relu, name = \"conv2d_0.w_0\", "
                       "bias_name = \"conv2d_0.b_0\")  # ops 1-3\n") &&
         strstr(clean, "= max_pool(conv2d_0_tmp_2, 2)  # op 4\n") &&
         strstr(clean, "= avg_pool(conv2d_1_tmp_2, 2)  # op 8\n") &&
         strstr(clean, "= fc(fc_0_tmp_2, 10, act = softmax, name = \"fc_1.w_0\", "
                       "bias_name = \"fc_1.b_0\")  # ops 12-14\n") &&
         !strstr(clean, "op(\"") && !strstr(clean, "param("),
     "its ops are calls of conv, max_pool, avg_pool and fc, which make their parameters");

  pd_model mm = {0};
  if (pd_model_load(&mm, mlp, &e) == PD_OK) {
    char *s = decompile(&mm, mlp, &st, &e);
    ok(s && strstr(s, "= matmul(fc_0_tmp_2, w_proj)  # op 4\n") &&
           strstr(s, "w_proj = param(\"w_proj\", [16, 6])\n") && !strstr(s, "fc_0_w_0 = param"),
       "the MLP: matmul() of the parameter it declares, fc() between");
    pd_free(s);
    pd_model_free(&mm);
  } else {
    ok(0, "the MLP loads (%s)", e.msg ? e.msg : "?");
  }
  pd_error_clear(&e);

  long stride = total > SAMPLES ? total / SAMPLES : 1;
  int nomem = 0, passed = 0, other = 0, badmsg = 0;
  for (long k = 1; k <= total; k += stride) {
    pd_alloc_fail_after(k);
    char *s = decompile(&m, path, &st, &e);
    pd_alloc_fail_after(0);
    if (st == PD_ENOMEM) {
      nomem++;
      if (e.msg && strcmp(e.msg, "out of memory") != 0) {
        if (badmsg++ < 3) printf("# k = %ld: out of memory, said as '%s'\n", k, e.msg ? e.msg : "");
      }
    } else if (st == PD_OK) {
      passed++;  /* the failure hit what a fallback or a retry covers */
    } else {
      other++;
      printf("# k = %ld: %s: %s\n", k, pd_status_str(st), e.msg ? e.msg : "");
    }
    pd_free(s);
    pd_error_clear(&e);
  }
  ok(nomem > 0 && other == 0 && badmsg == 0,
     "allocation k failing (every %ld of %ld): %d out of memory, %d decompiled, %d other, %d "
     "with another message", stride, total, nomem, passed, other, badmsg);
  char *again = decompile(&m, path, &st, &e);
  ok(again && clean && strcmp(again, clean) == 0, "the same script afterwards");
  pd_free(again);
  pd_free(clean);
  pd_error_clear(&e);
  pd_model_free(&m);

  /* PaddlePaddle's static.nn.cond, whose if statement is compiled and compared too: each
   * allocation failing in turn */
  char cond[1024];
  snprintf(cond, sizeof cond, "%s/tests/interop/cond/model.pdmodel", top ? top : ".");
  pd_model mc = {0};
  if (pd_model_load(&mc, cond, &e) == PD_OK) {
    pd_alloc_fail_after(0);
    char *cs = decompile(&mc, cond, &st, &e);
    long n = pd_alloc_fail_after(0);
    ok(cs && strstr(cs, "\nif (greater_than_out_0) {  # op 4 (conditional_block)\n") &&
           strstr(cs, "\n} else {  # op 6 (conditional_block)\n") &&
           strstr(cs, "    _generated_var_4 = _generated_var_2  # op 8 (select_input)\n"),
       "static.nn.cond: if / else, select_input's output assigned in both (%ld allocations)", n);
    nomem = passed = other = 0;
    sweep(&mc, cond, n, &nomem, &passed, &other);
    ok(nomem > 0 && other == 0, "static.nn.cond, allocation k failing: %d out of memory, %d "
       "decompiled, %d other", nomem, passed, other);
    pd_free(cs);
    pd_model_free(&mc);
  } else {
    ok(0, "static.nn.cond loads (%s)", e.msg ? e.msg : "?");
  }
  pd_error_clear(&e);
  odd_programs();
  attention();
  return tap_done();
}
