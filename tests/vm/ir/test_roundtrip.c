/* test_roundtrip.c -- round trips of compiled programs: every .pd script in examples/ (the seeds
 * ifelse.pd, rnn.pd and train.pd among them) is compiled; its main and startup programs, and the
 * main program pruned to its last op's outputs, are validated, serialized to ProgramDesc bytes,
 * parsed back and listed again (the listing must not change, nor the bytes of a second
 * encoding), and the bytes are read with protobuf-c's generated API, as another tool would read
 * them: the same blocks with the same parents, vars and ops, and sub_block attributes that are
 * BLOCK attributes naming the same blocks. */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "lang/compile.h"
#include "vm/ir/framework.pb-c.h"
#include "vm/ir/serialize.h"
#include "tests/tap.h"
#include "vm/passes/prune.h"

#ifndef PD_TOP_SRCDIR
#define PD_TOP_SRCDIR "."
#endif

typedef Paddle__Framework__Proto__ProgramDesc pb_program;

static char *listing(const pd_program *p) {
  pd_buf b;
  pd_buf_init(&b);
  pd_program_dump(p, &b);
  return b.oom ? (pd_buf_free(&b), NULL) : pd_buf_take(&b);
}

/* The sub-block an op names, or -1. */
static int sub_block(const pd_op_desc *op) {
  const pd_attr *a = pd_op_attr(op, "sub_block");
  return a && a->type == PD_ATTR_BLOCK ? a->v.i : -1;
}

/* What protobuf-c reads from the bytes agrees with the program, block by block. */
static bool same_as_protobuf(const pd_program *p, const uint8_t *bytes, size_t len) {
  pb_program *pb = pd_pb_program_desc__unpack(NULL, len, bytes);
  if (!pb) return false;
  bool same = pb->n_blocks == (size_t)p->nblocks;
  for (int i = 0; same && i < p->nblocks; i++) {
    const pd_block *b = p->blocks[i];
    const Paddle__Framework__Proto__BlockDesc *pbb = pb->blocks[i];
    same = pbb->idx == i && pbb->parent_idx == b->parent_idx &&
           pbb->n_vars == (size_t)b->nvars && pbb->n_ops == (size_t)b->nops;
    for (int j = 0; same && j < b->nvars; j++) same = strcmp(pbb->vars[j]->name, b->vars[j]->name) == 0;
    for (int j = 0; same && j < b->nops; j++) {
      const Paddle__Framework__Proto__OpDesc *op = pbb->ops[j];
      same = strcmp(op->type, b->ops[j]->type) == 0;
      int want = sub_block(b->ops[j]), got = -1;
      for (size_t k = 0; same && k < op->n_attrs; k++)
        if (strcmp(op->attrs[k]->name, "sub_block") == 0)
          got = op->attrs[k]->type == PADDLE__FRAMEWORK__PROTO__ATTR_TYPE__BLOCK &&
                        op->attrs[k]->has_block_idx
                    ? op->attrs[k]->block_idx
                    : -2;
      same = same && got == want;
    }
  }
  pd_pb_program_desc__free_unpacked(pb, NULL);
  return same;
}

static void round_trip(const char *what, const pd_program *p) {
  pd_error err = {0};
  ok(pd_program_validate(p, &err) == PD_OK, "%s: valid%s%s", what, err.msg ? ": " : "",
     err.msg ? err.msg : "");
  pd_error_clear(&err);
  uint8_t *bytes = NULL, *again = NULL;
  size_t len = 0, len2 = 0;
  pd_program *q = NULL;
  pd_status st = pd_program_to_bytes(p, &bytes, &len, &err);
  ok(st == PD_OK, "%s: serialized (%zu bytes)", what, len);
  if (!st) st = pd_program_from_bytes(bytes, len, &q, &err);
  ok(st == PD_OK && q, "%s: parsed back%s%s", what, err.msg ? ": " : "", err.msg ? err.msg : "");
  pd_error_clear(&err);
  char *lp = listing(p), *lq = q ? listing(q) : NULL;
  ok(lp && lq && strcmp(lp, lq) == 0, "%s: the same listing", what);
  if (lp && lq && strcmp(lp, lq) != 0) printf("# before:\n%s# after:\n%s", lp, lq);
  ok(q && pd_program_to_bytes(q, &again, &len2, NULL) == PD_OK && len2 == len &&
         memcmp(bytes, again, len) == 0,
     "%s: encoded again, the same bytes", what);
  ok(bytes && same_as_protobuf(p, bytes, len),
     "%s: protobuf-c reads the same blocks, parents, vars, ops and sub-blocks", what);
  free(lp);
  free(lq);
  pd_free(bytes);
  pd_free(again);
  pd_program_free(q);
}

/* The main program pruned to the outputs of its last op (what `print` of them would run). */
static void prune_and_round_trip(const char *name, const pd_program *p) {
  const pd_block *b0 = p->blocks[0];
  if (b0->nops == 0) return;
  const pd_op_desc *last = b0->ops[b0->nops - 1];
  const char *targets[16];
  int n = 0;
  for (int k = 0; k < last->noutputs; k++)
    for (int a = 0; a < last->outputs[k].nargs && n < 16; a++)
      if (pd_block_find_var_local(b0, last->outputs[k].args[a])) targets[n++] = last->outputs[k].args[a];
  if (n == 0) return;
  pd_program *q = NULL;
  pd_error err = {0};
  char what[256];
  snprintf(what, sizeof what, "%s pruned to %s%s", name, targets[0], n > 1 ? ", ..." : "");
  ok(pd_program_prune(p, n, targets, &q, &err) == PD_OK, "%s%s%s", what, err.msg ? ": " : "",
     err.msg ? err.msg : "");
  pd_error_clear(&err);
  if (q) round_trip(what, q);
  pd_program_free(q);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(void) {
  const char *dir = PD_TOP_SRCDIR "/examples";
  DIR *d = opendir(dir);
  ok(d != NULL, "open %s", dir);
  if (!d) return tap_done();
  char *names[256];
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 256;) {
    size_t len = strlen(e->d_name);
    if (len > 3 && strcmp(e->d_name + len - 3, ".pd") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  int seeds = 0;
  for (int i = 0; i < n; i++)
    seeds += strcmp(names[i], "ifelse.pd") == 0 || strcmp(names[i], "rnn.pd") == 0 ||
             strcmp(names[i], "train.pd") == 0;
  is_int(seeds, 3, "the seed examples are there (%d scripts in all)", n);

  for (int i = 0; i < n; i++) {
    char path[4096], what[512];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    pd_source *src = NULL;
    pd_unit *u = NULL;
    pd_error err = {0};
    pd_diags diags;
    pd_diags_init(&diags, 20);
    pd_status st = pd_source_open(path, &src, &err);
    if (!st) st = pd_compile(src, NULL, &diags, &u);
    /* a script that imports a saved model compiles where the model is (finetune.pd: the model
     * examples/images.pd saves; tests/driver/finetune.sh makes it and runs the script) */
    bool no_model = st && diags.text.data && strstr(diags.text.data, "import_model: cannot use '");
    if (no_model) {
      snprintf(what, sizeof what, "examples/%s compiles where the model it imports is", names[i]);
      tap_skip(what);
    } else {
      ok(st == PD_OK, "examples/%s compiles", names[i]);
      if (st) printf("# %s%s", err.msg ? err.msg : "", diags.text.data ? diags.text.data : "\n");
    }
    if (u) {
      snprintf(what, sizeof what, "%s main", names[i]);
      round_trip(what, u->main);
      snprintf(what, sizeof what, "%s startup", names[i]);
      round_trip(what, u->startup);
      prune_and_round_trip(names[i], u->main);
    }
    pd_unit_free(u);
    pd_source_free(src);
    pd_diags_free(&diags);
    pd_error_clear(&err);
    free(names[i]);
  }
  return tap_done();
}
