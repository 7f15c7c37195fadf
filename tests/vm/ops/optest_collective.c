/* optest_collective.c -- the op-test table's rows of vm/ops/collective.c (optest.h): Fluid's
 * c_allreduce_sum, c_broadcast and c_sync_comm_stream as one rank of a job of one runs them
 * (the table's process has no MPI job). The sum over one rank is that rank's X, and a broadcast
 * from root 0 hands X to itself: Out = X, whether the sum is written at once
 * (use_calc_stream) or left to the sync. The sync has no sums in flight and writes nothing. */
#include "config.h"

#include <string.h>

#include "tests/vm/ops/optest.h"

/* c_allreduce_sum, c_broadcast over one rank: Out = X. */
static void ref_one_rank(ot_ref *r) {
  const ot_val *x = ot_in(r, "X");
  memcpy(ot_out_like(r, "Out", x), x->v, sizeof(double) * (size_t)x->n);
}

/* c_sync_comm_stream in place (Out is X, as Fluid's programs bind it): each Out[i] is X[i]. */
static void ref_sync(ot_ref *r) {
  for (int i = 0; i < ot_nin(r, "X"); i++) {
    const ot_val *x = ot_in_at(r, "X", i);
    memcpy(ot_out_at(r, "Out", i, x->nd, x->dims), x->v, sizeof(double) * (size_t)x->n);
  }
}

/* c_sync_comm_stream waits for the sums in flight and writes each into its var, which Out must
 * list as X does (the sums are written in place). Here the table binds Out to vars of their
 * own, and with one rank no sum is in flight: the op succeeds and leaves them without value (it
 * copies nothing, as Fluid's, which only waits on its stream). */
static void check_sync(ot_ref *r) {
  for (int i = 0; i < ot_nin(r, "X"); i++)
    if (ot_got_at(r, "Out", i)) ot_fail(r, "Out[%d] has a value: the op wrote it", i);
}

const ot_row ot_rows_collective[] = {
    {.op = "c_allreduce_sum", .in = {{"X", "[3, 4]"}}, .ref = ref_one_rank},
    {.op = "c_allreduce_sum", .what = "use_calc_stream", .attrs = "use_calc_stream=true",
     .in = {{"X", "[2, 5]"}}, .ref = ref_one_rank},
    {.op = "c_broadcast", .in = {{"X", "[3, 4]"}}, .ref = ref_one_rank},
    {.op = "c_broadcast", .what = "use_calc_stream", .attrs = "root=0 use_calc_stream=true",
     .in = {{"X", "[6]"}}, .ref = ref_one_rank},
    /* In place, as the data-parallel pass writes them: Out is X's var. */
    {.op = "c_allreduce_sum", .what = "in place", .in = {{"X", "[3, 2]"}}, .outs = "Out=X",
     .ref = ref_one_rank},
    {.op = "c_sync_comm_stream", .what = "in place", .in = {{"X", "[3]"}, {"X", "[2, 2]"}},
     .outs = "Out=X", .ref = ref_sync},
    {.op = "c_sync_comm_stream", .what = "other vars", .in = {{"X", "[3]"}, {"X", "[2, 2]"}},
     .outs = "Out:2", .check = check_sync},
    {0},
};
