/* test_budget.c -- one budget of compile-time work for a whole compilation (issue 44): loops over
 * compile-time lists nested inside each other multiply past any one loop's limit (two loops of
 * 100,000 grew the compiler to 5.9 GB), as do functions calling functions, lists and strings
 * doubled in a loop. Each is refused with one error at the outermost loop being unrolled (or at
 * the call, outside loops) after a bounded number of allocations, and nothing else is reported;
 * a program of the size real ones have compiles. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/diag.h"
#include "lang/compile.h"
#include "tests/tap.h"

static const char *stdlib_dir;

/* Compile text; the status, the diagnostics in *text (pd_free) and the allocations made. */
static pd_status compile(const char *text, char **diags, long *allocs) {
  pd_source *src = NULL;
  if (pd_source_from_string("b.pd", text, strlen(text), &src)) return PD_ENOMEM;
  pd_compile_options opts = {.stdlib_dir = stdlib_dir};
  pd_diags d;
  pd_diags_init(&d, 20);
  pd_unit *u = NULL;
  pd_alloc_fail_after(0);
  pd_status st = pd_compile(src, &opts, &d, &u);
  *allocs = pd_alloc_fail_after(0);
  *diags = pd_buf_take(&d.text);
  pd_unit_free(u);
  pd_diags_free(&d);
  pd_source_free(src);
  return st;
}

/* The program is refused with one error, at want (a "b.pd:LINE:COL: error: " prefix), whose
 * message has the words `says`. */
static void refused(const char *what, const char *text, const char *want, const char *says) {
  char *d = NULL;
  long allocs;
  pd_status st = compile(text, &d, &allocs);
  const char *err = d ? strstr(d, "error: ") : NULL;
  ok(st != PD_OK && d && strncmp(d, want, strlen(want)) == 0 && strstr(d, says) &&
         err && !strstr(err + 1, "error: "),
     "%s: refused at %s", what, want);
  /* A pass of the loops below makes some allocations; the budget bounds them all (a sanitizer
   * build allocates each of the arena's nodes alone: some millions). */
  ok(allocs < 10000000, "%s: within a bounded number of allocations (%ld)", what, allocs);
  if (d && strncmp(d, want, strlen(want)) != 0) printf("# %s", d);
  pd_free(d);
}

int main(void) {
  const char *top = getenv("top_srcdir");
  static char dir[1024];
  snprintf(dir, sizeof dir, "%s/stdlib", top ? top : ".");
  stdlib_dir = dir;

  refused("two nested loops of 100,000",
          "x = 0\n"
          "for (i in range(100000)) {\n"
          "  for (j in range(100000)) {\n"
          "    x = x + 1\n"
          "  }\n"
          "}\n",
          "b.pd:2:1: error: this loop takes more compile-time work", "in its pass ");
  refused("three nested loops of 1,000, ops made in the innermost",
          "x = data(\"x\", [-1, 2])\n"
          "y = x\n"
          "for (i in range(1000)) {\n"
          "  for (j in range(1000)) {\n"
          "    for (k in range(1000)) {\n"
          "      y = y + x\n"
          "    }\n"
          "  }\n"
          "}\n",
          "b.pd:3:1: error: this loop takes more compile-time work", "loops inside it multiply");
  refused("a list doubled in a loop",
          "l = [1]\n"
          "for (i in range(40)) {\n"
          "  l = l + l\n"
          "}\n",
          "b.pd:2:1: error: this loop takes more compile-time work", "of 40");
  refused("a string doubled in a loop",
          "s = \"abcdefgh\"\n"
          "for (i in range(60)) {\n"
          "  s = s + s\n"
          "}\n",
          "b.pd:2:1: error: this loop takes more compile-time work", "of 60");
  /* functions that call the one before twice: 2^40 calls, no loop */
  char text[4096];
  size_t n = (size_t)snprintf(text, sizeof text, "def f0(x) {\n  return x + 1\n}\n");
  for (int i = 1; i <= 40; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "def f%d(x) {\n  return f%d(f%d(x))\n}\n",
                          i, i - 1, i - 1);
  snprintf(text + n, sizeof text - n, "y = f40(1)\n");
  char *d = NULL;
  long allocs;
  pd_status st = compile(text, &d, &allocs);
  ok(st != PD_OK && d && strstr(d, "error: this takes more compile-time work") &&
         allocs < 10000000,
     "functions calling functions 2^40 times: refused (%ld allocations)", allocs);
  pd_free(d);

  /* What real programs do: well inside the budget. */
  st = compile("x = data(\"x\", [-1, 4])\n"
               "y = x\n"
               "for (i in range(100)) {\n"
               "  for (j in range(20)) {\n"
               "    y = y * 1.0 + x\n"
               "  }\n"
               "}\n",
               &d, &allocs);
  ok(st == PD_OK, "two nested loops of 100 and 20 making 4,000 ops compile");
  if (st) printf("# %s", d ? d : "");
  pd_free(d);
  return tap_done();
}
