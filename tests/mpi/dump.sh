#!/bin/sh
# dump.sh -- the data-parallel program transformation as `pdlang dump --nranks 2` shows it, for
# the MLP, the CNN and the RNN with an `if` of tests/mpi/lib.sh: the startup program broadcasts
# each of its persistable vars exactly once from rank 0; the training program hands every
# gradient the optimizer reads (its ops' Grad inputs) to exactly one c_allreduce_sum, before a
# c_sync_comm_stream that lists each exactly once, all before the first update; the cost's
# gradient (the op with op_role 257, backward | loss) is scaled by 1/2 by the op right after it,
# and that is the one scale by 1/2 (no gradient is scaled after its sum); with one rank there is
# no collective op. Needs no MPI. TAP output.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
echo "1..4"
make_data
t=1
for m in mlp cnn rnn; do
  model $m 4 true c.ckpt > $m.pd
  "$PDLANG" dump --startup $m.pd > s1.txt 2>&1 &&
    "$PDLANG" dump --startup --nranks 2 $m.pd > s2.txt 2>&1 &&
    "$PDLANG" dump --train --nranks 2 $m.pd > t2.txt 2>&1
  rc=$?
  # Startup: every persistable var of the plain startup program, one c_broadcast each.
  bad=$(awk 'FNR == 1 { f++ }
    f == 1 && /^  var / && / persistable/ { v = $2; sub(/:$/, "", v); want[v] = 1 }
    f == 2 && /^  op [0-9]+: / { op = $3 }
    f == 2 && op == "c_broadcast" && /^    in  X: / { x = $3; gsub(/[][]/, "", x); got[x]++ }
    f == 2 && op == "c_broadcast" && /attr root: INT 0/ { roots++ }
    END { n = 0; for (v in want) { n++; if (got[v] != 1) print "broadcasts of " v ": " got[v] + 0 }
          for (v in got) if (!(v in want)) print "broadcast of a non-parameter " v
          if (roots != n) print "roots " roots + 0 " of " n
          if (n == 0) print "no parameters" }' s1.txt s2.txt)
  # Training: the Grad of each update op; one all-reduce each, before the sync; the sync lists
  # each once; the first update after it; the loss gradient's scale by 0.5 right after the op
  # that sets it, and no other scale by 0.5.
  bad2=$(awk '/^  op [0-9]+: / { op = $3; idx++; sc_x = "" }
    /^    out Out: / { out = $3; gsub(/[][]/, "", out) }
    /attr op_role: INT 257$/ { loss = out; lossidx = idx }
    op == "c_allreduce_sum" && /^    in  X: / { x = $3; gsub(/[][]/, "", x); ar[x]++; if (sync) late++ }
    op == "c_sync_comm_stream" && /^    in  X: / { sync = idx; s = $0; sub(/.*\[/, "", s); sub(/\].*/, "", s)
      k = split(s, l, ", "); for (i = 1; i <= k; i++) sy[l[i]]++ }
    op == "scale" && /^    in  X: / { sc_x = $3; gsub(/[][]/, "", sc_x) }
    op == "scale" && /attr scale: FLOAT 0.5$/ { scales++; sc[sc_x]++; if (sc_x == loss && idx == lossidx + 1) lossscaled++ }
    /^    in  Grad: / && op != "" { g = $3; gsub(/[][]/, "", g); grad[g] = 1; if (!first) first = idx }
    END { n = 0; for (g in grad) { n++
            if (ar[g] != 1 || sy[g] != 1 || sc[g] != 0) print g ": " ar[g] + 0 " all-reduces, " sy[g] + 0 " in the sync, " sc[g] + 0 " scales" }
          for (g in ar) if (!(g in grad)) print "all-reduce of " g " that no update reads"
          if (late) print late " all-reduces after the sync"
          if (!(sync < first)) print "the sync comes after the first update"
          if (loss == "") print "no op with op_role 257 (the loss gradient)"
          else if (lossscaled != 1 || scales != 1) print "the loss gradient " loss ": " lossscaled + 0 " scales by 0.5 right after it, " scales + 0 " in all"
          if (n == 0) print "no gradients" }' t2.txt)
  if [ $rc -eq 0 ] && [ -z "$bad" ] && [ -z "$bad2" ]; then
    echo "ok $t - $m: one broadcast per parameter, the loss gradient scaled by 1/2, one all-reduce per gradient, synced before the updates"
  else
    echo "not ok $t - $m: the 2-rank programs"
    printf '%s\n%s\n' "$bad" "$bad2" | sed 's/^/# /'
    [ $rc -eq 0 ] || sed 's/^/# /' s1.txt s2.txt t2.txt | head -20
  fi
  t=$((t + 1))
done
"$PDLANG" dump --train mlp.pd > t1.txt 2>&1
if [ $? -eq 0 ] && grep -q ': adam' t1.txt && ! grep -q ': c_' t1.txt; then
  echo "ok $t - one rank: the training program has no collective op"
else
  echo "not ok $t - one rank's training program"
  head -20 t1.txt | sed 's/^/# /'
fi
