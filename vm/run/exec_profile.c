/* exec_profile.c -- the executor's op profiler (`pdlang run --profile`, PDLANG_PROFILE=1): wall
 * time per op type and per op of the source (file:line:col; a loaded model's ops, which have no
 * source, by their first output's name), total and self (less the ops of the sub-blocks it
 * ran), counted by run_prepared in exec.c around each kernel call. One table
 * per thread, so that executors run by different threads of an embedding program do not mix
 * their counts. */
#include "vm/run/exec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/ops/ops.h"

typedef struct prof_row {
  const char *type;  /* the def's: "mul" or "mul_grad" (grad defs share the forward's kind) */
  uint64_t calls, total_ns, self_ns;
} prof_row;

/* One op of the source: an op type at a location (a gradient op has its forward op's). */
typedef struct prof_site {
  const pd_opdef *def;     /* NULL: an empty slot */
  char *file;              /* a copy of the op's file name (owned; NULL: none) */
  int line, col;
  char where[96];
  uint64_t calls, self_ns;
} prof_site;

enum { NROWS = 2 * PD_OP_COUNT_ };  /* a forward op type, then its gradient's */

static _Thread_local bool prof_on;
static _Thread_local uint64_t prof_child_ns; /* time of the ops nested in the running one */
static _Thread_local prof_row prof_rows[NROWS];
static _Thread_local prof_site *prof_sites;  /* open addressing, prof_cap slots (a power of 2) */
static _Thread_local size_t prof_cap, prof_nsites;
static _Thread_local bool prof_sites_failed; /* out of memory: sites no longer counted */
static _Thread_local size_t named_sites;     /* sites named after an output (no source) */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pd_exec_profile_enable(bool on) { prof_on = on; }

bool pd_exec_profile_enabled(void) { return prof_on; }

void pd_exec_profile_reset(void) {
  memset(prof_rows, 0, sizeof prof_rows);
  for (size_t i = 0; i < prof_cap; i++) pd_free(prof_sites[i].file);
  pd_free(prof_sites);
  prof_sites = NULL;
  prof_cap = prof_nsites = named_sites = 0;
  prof_sites_failed = false;
  prof_child_ns = 0;
}

uint64_t pd_exec_profile_begin(uint64_t *saved_child_ns) {
  *saved_child_ns = prof_child_ns;
  prof_child_ns = 0;
  return now_ns();
}

static size_t site_hash(const pd_opdef *def, const pd_loc *loc) {
  uint64_t h = (uint64_t)(uintptr_t)def * 0x9E3779B97F4A7C15u;
  for (const char *f = loc->file; f && *f; f++) h = (h ^ (unsigned char)*f) * 0x100000001B3u;
  h ^= 0x632BE59BD9B4E019u * (uint64_t)loc->line;
  h = (h ^ (uint64_t)loc->col) * 0xBF58476D1CE4E5B9u;
  return (size_t)(h ^ (h >> 31));
}

static bool same_file(const char *a, const char *b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* Ops at the same place are one row (every op owns its copy of the file name). */
static prof_site *site_slot(prof_site *tab, size_t cap, const pd_opdef *def, const pd_loc *loc) {
  for (size_t i = site_hash(def, loc) & (cap - 1);; i = (i + 1) & (cap - 1)) {
    prof_site *s = &tab[i];
    if (!s->def || (s->def == def && s->line == loc->line && s->col == loc->col &&
                    same_file(s->file, loc->file)))
      return s;
  }
}

static prof_site *site_get(const pd_opdef *def, const pd_loc *loc) {
  if (prof_sites_failed) return NULL;
  if (2 * (prof_nsites + 1) > prof_cap) {  /* keep the table at most half full */
    size_t cap = prof_cap ? 2 * prof_cap : 64;
    prof_site *tab = pd_calloc(cap, sizeof *tab);
    if (!tab) {
      prof_sites_failed = true;
      return NULL;
    }
    for (size_t i = 0; i < prof_cap; i++)
      if (prof_sites[i].def) {
        pd_loc l = {prof_sites[i].file, prof_sites[i].line, prof_sites[i].col};
        *site_slot(tab, cap, prof_sites[i].def, &l) = prof_sites[i];
      }
    pd_free(prof_sites);
    prof_sites = tab;
    prof_cap = cap;
  }
  prof_site *s = site_slot(prof_sites, prof_cap, def, loc);
  if (!s->def) {
    char *file = loc->file ? pd_strdup(loc->file) : NULL;
    if (loc->file && !file) {
      prof_sites_failed = true;
      return NULL;
    }
    s->def = def;
    s->file = file;
    s->line = loc->line;
    s->col = loc->col;
    if (loc->file && loc->line > 0)
      snprintf(s->where, sizeof s->where, "%s:%d:%d", loc->file, loc->line, loc->col);
    else if (loc->file)
      snprintf(s->where, sizeof s->where, "%s", loc->file);
    else
      snprintf(s->where, sizeof s->where, "(no source)");
    named_sites += loc->file && loc->line <= 0;
    prof_nsites++;
  }
  return s;
}

void pd_exec_profile_end(const pd_opdef *def, const pd_loc *loc, const char *name,
                         uint64_t start_ns, uint64_t saved_child_ns) {
  uint64_t el = now_ns() - start_ns;
  uint64_t self = el > prof_child_ns ? el - prof_child_ns : 0;
  prof_row *r = &prof_rows[2 * (int)def->kind + (def->forward != NULL)];
  r->type = def->type;
  r->calls++;
  r->total_ns += el;
  r->self_ns += self;
  /* no source: the op is its output's name (line 0 tells the two apart) */
  pd_loc named = {name, 0, 0};
  prof_site *s = site_get(def, loc->file || !name ? loc : &named);
  if (s) {
    s->calls++;
    s->self_ns += self;
  }
  prof_child_ns = saved_child_ns + el;
}

static int row_by_self(const void *a, const void *b) {
  const prof_row *x = &prof_rows[*(const int *)a], *y = &prof_rows[*(const int *)b];
  if (x->self_ns != y->self_ns) return x->self_ns < y->self_ns ? 1 : -1;
  return *(const int *)a - *(const int *)b;
}

static int site_by_self(const void *a, const void *b) {
  const prof_site *x = *(prof_site *const *)a, *y = *(prof_site *const *)b;
  if (x->self_ns != y->self_ns) return x->self_ns < y->self_ns ? 1 : -1;
  int c = strcmp(x->where, y->where);
  return c ? c : strcmp(x->def->type, y->def->type);
}

static double pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

void pd_exec_profile_report(FILE *f, size_t top_n) {
  int idx[NROWS], n = 0;
  uint64_t sum = 0, calls = 0;
  for (int k = 0; k < NROWS; k++)
    if (prof_rows[k].calls) {
      idx[n++] = k;
      sum += prof_rows[k].self_ns;
      calls += prof_rows[k].calls;
    }
  qsort(idx, (size_t)n, sizeof *idx, row_by_self);
  int nt = pd_k_threading_info().threads;
  fprintf(f, "profile: %llu ops ran for %.3f ms on %d thread%s (self: an op's own time, without "
             "the ops of the blocks it runs)\n", (unsigned long long)calls, (double)sum / 1e6, nt,
          nt == 1 ? "" : "s");
  fprintf(f, "%-34s %9s %11s %11s %7s %11s\n", "op type", "calls", "total ms", "self ms",
          "self", "self us/op");
  for (int i = 0; i < n; i++) {
    const prof_row *r = &prof_rows[idx[i]];
    fprintf(f, "%-34s %9llu %11.3f %11.3f %6.1f%% %11.2f\n", r->type,
            (unsigned long long)r->calls, (double)r->total_ns / 1e6, (double)r->self_ns / 1e6,
            pct(r->self_ns, sum), (double)r->self_ns / 1e3 / (double)r->calls);
  }
  if (!prof_nsites) return;
  prof_site **top = pd_malloc(prof_nsites * sizeof *top);
  if (!top) return;
  size_t m = 0;
  for (size_t i = 0; i < prof_cap; i++)
    if (prof_sites[i].def) top[m++] = &prof_sites[i];
  qsort(top, m, sizeof *top, site_by_self);
  fprintf(f, "hottest ops of the %s (self time%s)%s:\n",
          named_sites == m ? "model" : "source",
          named_sites ? "; an op without a source location named by its output" : "",
          prof_sites_failed ? ", of those counted before memory ran out" : "");
  for (size_t i = 0; i < m && (!top_n || i < top_n); i++)
    fprintf(f, "  %-40s %-28s %9llu %11.3f ms %6.1f%%\n", top[i]->where, top[i]->def->type,
            (unsigned long long)top[i]->calls, (double)top[i]->self_ns / 1e6,
            pct(top[i]->self_ns, sum));
  pd_free(top);
}
