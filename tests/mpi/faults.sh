#!/bin/sh
# faults.sh -- a job of 2 ranks whose rank dies (kill -9 mid-epoch) ends within 10 s, non-zero,
# with a message naming the process, never hangs; a rank that fails with an error ends the job
# naming its rank and the error; and resuming from the checkpoint that rank 0 wrote before the
# kill, with 2 ranks, ends with the parameters of a run that was never interrupted. TAP output.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi faults.sh
echo "1..3"
make_data
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp \
  OMPI_MCA_btl_vader_single_copy_mechanism=none
EP=300
model mlp 8 true full.ckpt $EP > full.pd
model mlp 8 true cut.ckpt $EP > cut.pd
mpi 2 "$PDLANG" run --progress=none full.pd > full.out 2> full.err || sed 's/^/# /' full.err
# The run to kill: once rank 0 has written a checkpoint, one rank gets SIGKILL.
"$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$PDLANG" run \
  --progress=none cut.pd > cut.out 2> cut.err &
job=$!
i=0
while [ ! -f cut.ckpt ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i + 1)); done
victim=$(pgrep -P $job | tail -n 1)
if [ -n "$victim" ] && kill -0 $job 2>/dev/null; then
  kill -9 "$victim"
  t0=$(date +%s)
  i=0
  while kill -0 $job 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  if kill -0 $job 2>/dev/null; then
    kill -9 $job
    echo "not ok 1 - the job still runs 30 s after a rank was killed"
  else
    wait $job
    rc=$?
    el=$(( $(date +%s) - t0 ))
    if [ $rc -ne 0 ] && [ $el -le 10 ] && grep -qi 'signal 9\|killed' cut.err; then
      echo "ok 1 - a killed rank ends the job in ${el} s with exit $rc and a message"
    else
      echo "not ok 1 - after the kill: exit $rc in ${el} s"
      sed 's/^/# /' cut.err
    fi
  fi
else
  echo "not ok 1 - the job ended or wrote no checkpoint before the kill"
  sed 's/^/# /' cut.err
fi
# Resume the killed run with 2 ranks: the same end as the uninterrupted one.
cp cut.ckpt cut.at_kill 2>/dev/null
mpi 2 "$PDLANG" run --progress=lines cut.pd > res.out 2> res.err
rc=$?
if [ $rc -eq 0 ] && grep -q '^resuming from cut.ckpt' res.err && "$CLOSE" full.ckpt cut.ckpt 1e-6 > close.out; then
  echo "ok 2 - resumed with 2 ranks from the checkpoint: the parameters of the uninterrupted run ($(cat close.out))"
else
  echo "not ok 2 - the resumed run (exit $rc)"
  cat res.err close.out 2>/dev/null | tail -n 20 | sed 's/^/# /'
fi
# An error on one rank only (its data file is not there): the job ends, naming the rank.
model mlp 8 false e.ckpt 1000 > e.pd
sed 's/csv("mlp.csv")/csv("missing.csv")/' e.pd > e1.pd
t0=$(date +%s)
timeout -k 10 600 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np 1 "$PDLANG" run --progress=none \
  e.pd : -np 1 "$PDLANG" run --progress=none e1.pd > e.out 2> e.err
rc=$?
el=$(( $(date +%s) - t0 ))
if [ $rc -ne 0 ] && [ $el -le 10 ] && grep -q 'rank 1 of 2 failed' e.err && grep -q 'missing.csv' e.err; then
  echo "ok 3 - an error on rank 1 ends the job in ${el} s, naming the rank and the error"
else
  echo "not ok 3 - an error on one rank: exit $rc in ${el} s"
  sed 's/^/# /' e.err
fi
