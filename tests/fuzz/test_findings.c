/* test_findings.c -- what the fuzzers found that replaying their inputs cannot keep fixed (the
 * replays check behaviour, not cost): compiling was quadratic in the number of blocks and of
 * vars made from one name (every new var scanned every block, then tried "y.1", "y.2", ... from
 * 1). The names the program index gives (pd_program_has_var_name, pd_program_free_suffix) are
 * checked against a plain scan of every block through adds, removes and renames, and the
 * compiler's allocations must grow linearly with a script of sequential tensor ifs (allocation
 * counts, not timings: pd_alloc_fail_after). The PIR JSON reader read a number past the end
 * of its text (up to a NUL, which a file need not have): the bytes after the length are set so
 * that the reader sees them when it looks too far; a constant past int32 folded into an INTS
 * attribute was converted (undefined behaviour) where it is now refused. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "tests/tap.h"
#include "vm/ir/pir.h"
#include "vm/ir/program.h"

/* ---- The index against a scan ---- */

static bool scan_has(const pd_program *p, const char *name) {
  for (int i = 0; i < p->nblocks; i++)
    if (pd_block_find_var_local(p->blocks[i], name)) return true;
  return false;
}

static int64_t scan_suffix(const pd_program *p, const char *hint) {
  char name[64];
  for (int64_t k = 1;; k++) {
    snprintf(name, sizeof name, "%s.%lld", hint, (long long)k);
    if (!scan_has(p, name)) return k;
  }
}

static uint64_t rng = 0x1234567u;
static unsigned next(unsigned n) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)(rng >> 33) % n;
}

static void test_index(void) {
  static const char *const hints[] = {"y", "h", "y.2"};
  pd_program *p = pd_program_new();
  for (int i = 0; i < 3; i++) pd_program_add_block(p, 0);
  bool agree = true, suffixes = true;
  int ops = 0;
  for (int step = 0; step < 3000 && agree && suffixes; step++) {
    char name[64];
    const char *hint = hints[next(3)];
    unsigned k = next(12);
    if (k == 0) snprintf(name, sizeof name, "%s", hint);
    else snprintf(name, sizeof name, "%s.%u", hint, k);
    pd_block *b = p->blocks[next((unsigned)p->nblocks)];
    switch (next(4)) {
      case 0:
      case 1: pd_block_var(b, name); break;   /* add (or find) */
      case 2: pd_block_remove_var(b, name); break;
      default: {
        pd_var_desc *v = pd_block_find_var_local(b, name);
        char to[64];
        snprintf(to, sizeof to, "%s.%u", hints[next(3)], next(12) + 1);
        if (v) pd_block_rename_var(b, v, to);
      }
    }
    ops++;
    for (int h = 0; h < 3; h++) {
      for (unsigned j = 0; j <= 13 && agree; j++) {
        if (j == 0) snprintf(name, sizeof name, "%s", hints[h]);
        else snprintf(name, sizeof name, "%s.%u", hints[h], j);
        agree = pd_program_has_var_name(p, name) == scan_has(p, name);
        if (!agree) printf("#   step %d: has_var_name('%s') disagrees with a scan\n", step, name);
      }
      if (next(3) == 0) {   /* ask at random moments, so that a stale memory shows */
        int64_t got = pd_program_free_suffix(p, hints[h]), want = scan_suffix(p, hints[h]);
        suffixes = got == want;
        if (!suffixes)
          printf("#   step %d: free suffix of '%s' is %lld, a scan says %lld\n", step, hints[h],
                 (long long)got, (long long)want);
      }
    }
  }
  ok(agree, "pd_program_has_var_name agrees with a scan of every block (%d adds, removes, renames)",
     ops);
  ok(suffixes, "pd_program_free_suffix is the least free K, also after removes and renames");
  pd_program *c = pd_program_clone(p);
  ok(c && pd_program_has_var_name(c, "y.1") == scan_has(p, "y.1") &&
         pd_program_free_suffix(c, "h") == scan_suffix(p, "h"),
     "a clone has the same names");
  pd_program_free(c);
  pd_program_free(p);
}

/* ---- Compiling n sequential tensor ifs: allocations linear in n ---- */

static long compile_ifs(int n) {
  pd_buf s;
  pd_buf_init(&s);
  pd_buf_puts(&s, "x = var([1.5])\ny = x\n");
  for (int k = 0; k < n; k++) pd_buf_printf(&s, "if (x < %d.0) {\n    y = y * 1.0\n}\n", k);
  pd_buf_puts(&s, "print(y)\n");
  pd_source *src = NULL;
  long allocs = -1;
  if (!s.oom && pd_source_from_string("ifs.pd", s.data, s.len, &src) == PD_OK) {
    pd_diags d;
    pd_diags_init(&d, 20);
    pd_unit *u = NULL;
    pd_alloc_fail_after(0);
    pd_status st = pd_compile(src, NULL, &d, &u);
    allocs = pd_alloc_fail_after(0);
    if (st) {
      printf("#   %s", d.text.data ? d.text.data : "compile failed\n");
      allocs = -1;
    }
    pd_unit_free(u);
    pd_diags_free(&d);
    pd_source_free(src);
  }
  pd_buf_free(&s);
  return allocs;
}

static void test_linear(void) {
  long a = compile_ifs(500), b = compile_ifs(2000);
  ok(a > 0 && b > 0, "500 and 2000 sequential tensor ifs compile (%ld, %ld allocations)", a, b);
  ok(a > 0 && b > 0 && b <= 5 * a,
     "4 times the ifs take at most 5 times the allocations (%.2f times)", a > 0 ? (double)b / a : 0.0);
}

/* ---- The PIR JSON reader within its length ---- */

static void pir_case(const char *text, size_t len, const char *want, const char *what) {
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status st = pd_pir_from_json(text, len, "m.json", &p, &err);
  ok(st == PD_EFORMAT && !p && err.msg && strstr(err.msg, want), "%s: %s", what,
     err.msg ? err.msg : "no message");
  pd_error_clear(&err);
  pd_program_free(p);
}

static void test_pir_bounds(void) {
  /* "123" followed in memory by more digits: the number is 123, the text a number, not a
   * program (reading on gave "bad number", or a number that is not in the text) */
  pir_case("12345", 3, "not a PIR program", "a number ending the text");
  pir_case("{\"a\":12345", 8, "damaged JSON at byte 8: unterminated object",
           "a number ending a cut object");
  /* A shape constant past int32, folded into reshape2's INTS attribute: converting it was
   * undefined (fuzz_pir, corpus_pir/crash_fold_past_int32.json); now a problem naming it. */
  static const char reshape[] =
      "{\"base_code\":{\"magic\":\"pir\",\"version\":4},\"program\":{\"regions\":[{\"blocks\":[{"
      "\"ops\":[{\"#\":\"1.data\",\"A\":[{\"AT\":{\"#\":\"0.a_str\",\"D\":\"x\"},\"N\":\"name\"}],"
      "\"I\":[],\"O\":[{\"%\":1,\"TT\":{\"#\":\"0.t_dtensor\",\"D\":[{\"#\":\"0.t_f32\"},[-1,4],"
      "\"NCHW\",[],0]}}]},{\"#\":\"1.full_int_array\",\"A\":[{\"AT\":{\"#\":\"0.a_array\",\"D\":["
      "{\"#\":\"0.a_i64\",\"D\":-1},{\"#\":\"0.a_i64\",\"D\":1e30}]},\"N\":\"value\"}],\"I\":[],"
      "\"O\":[{\"%\":2,\"TT\":{\"#\":\"0.t_dtensor\",\"D\":[{\"#\":\"0.t_i64\"},[2],\"NCHW\",[],0]}}]},"
      "{\"#\":\"1.reshape\",\"A\":[],\"I\":[{\"%\":1},{\"%\":2}],\"O\":[{\"%\":3,\"TT\":{\"#\":"
      "\"0.t_dtensor\",\"D\":[{\"#\":\"0.t_f32\"},[-1,4],\"NCHW\",[],0]}},{\"%\":0}]}]}]}]}}";
  pd_program *p = NULL;
  pd_error err = {0};
  pd_status st = pd_pir_from_json(reshape, strlen(reshape), "m.json", &p, &err);
  ok(st == PD_EINVAL && !p && err.msg && strstr(err.msg, "op 2 (pd_op.reshape): its input shape "
                                                         "holds 1e+30, past the int32"),
     "a reshape's shape past int32: %s", err.msg ? err.msg : "no message");
  pd_error_clear(&err);
  pd_program_free(p);
}

int main(void) {
  test_index();
  test_linear();
  test_pir_bounds();
  return tap_done();
}
