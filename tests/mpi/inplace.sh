#!/bin/sh
# inplace.sh -- gradients summed in their vars' own storage (tests/mpi/inplace_check under 2
# ranks, buckets of 1 KiB), with the progress thread and with the tests between ops
# (PDLANG_MPI_PROGRESS); rank 0's TAP lines, renumbered, and one line for the job's exit.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi inplace.sh
t=0
for pm in thread test; do
  mpi 2 -x PDLANG_MPI_BUCKET_KB=1 -x PDLANG_MPI_PROGRESS=$pm "$top_builddir/tests/mpi/inplace_check" \
    > check.out 2> check.err
  rc=$?
  grep -E '^(ok|not ok|#)' check.out | awk -v t=$t -v pm=$pm '
    /^(ok|not ok) / { sub(/^(ok|not ok) [0-9]+ -/, ($1 == "ok" ? "ok " : "not ok ") (t + ++k) " - progress " pm ":") }
    { print }'
  t=$((t + $(grep -cE '^(ok|not ok) ' check.out)))
  t=$((t + 1))
  if [ $rc -eq 0 ] && grep -q '^1\.\.' check.out; then
    echo "ok $t - progress $pm: both ranks passed"
  else
    echo "not ok $t - progress $pm: the job exited $rc"
    sed 's/^/# /' check.out check.err
  fi
done
echo "1..$t"
