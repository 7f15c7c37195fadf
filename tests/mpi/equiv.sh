#!/bin/sh
# equiv.sh -- data parallelism changes nothing but the speed: 2 ranks with batch b each end with
# the parameters (and optimizer state) of 1 process with batch 2b, on the same data and seed,
# with and without shuffling, within 1e-5 relative (tests/mpi/ckpt_close), for an MLP, a CNN
# and an RNN with an `if` over rows; and the job prints once (rank 0) and counts its processes.
# With buckets of 1 KiB (a sum in flight during most of the backward pass), the same with the
# progress thread and with the ops' own tests (PDLANG_MPI_PROGRESS); and a gradient that fills
# a bucket by itself, summed in place in its own var, gives the very bits of the packed sums.
# Ranks started with different programs, bucket sizes or PDLANG_MPI_SKIP_ALLREDUCE are refused
# at start-up, and a malformed PDLANG_MPI_BUCKET_KB is an error.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi equiv.sh
echo "1..15"
make_data
t=1
for m in mlp cnn rnn; do
  case $m in mlp) b=8 ;; cnn) b=4 ;; rnn) b=3 ;; esac
  for shuf in false true; do
    if same_as_one $m $b $shuf 1e-5 --progress=lines; then
      echo "ok $t - $m, shuffle = $shuf: 2 ranks of batch $b = 1 process of batch $((2 * b)) ($(cat close.out))"
    else
      echo "not ok $t - $m, shuffle = $shuf: 2 ranks of batch $b differ from 1 process of batch $((2 * b))"
      cat one.err two.err close.out 2>/dev/null | sed 's/^/# /'
    fi
    t=$((t + 1))
  done
done
# One voice: eval printed once, by rank 0, with every rank's samples; the epoch lines say 2.
n=$(grep -c '^eval:' two.out)
if [ "$n" = 1 ] && grep -q '(24 samples' two.out && grep -q ', 2 processes)' two.err; then
  echo "ok $t - rank 0 alone prints; eval counts every rank's samples; the progress says 2 processes"
else
  echo "not ok $t - the output of a 2-rank job"
  sed 's/^/# /' two.out two.err
fi
t=$((t + 1))
# refused WHAT PATTERN ARGS...: the job `mpi ARGS` (1 rank, then ": -np 1 ..." for a second
# one started otherwise) exits non-zero with PATTERN in its errors: refused at start-up.
refused() {
  what=$1
  pat=$2
  shift 2
  mpi "$@" > rf.out 2> rf.err
  rc=$?
  if [ $rc -ne 0 ] && grep -q "$pat" rf.err; then
    echo "ok $t - $what"
  else
    echo "not ok $t - $what (exit $rc)"
    sed 's/^/# /' rf.err
  fi
  t=$((t + 1))
}
# Ranks that run different programs, would pack different buckets, or of which one skips the
# sums, are refused at start-up, naming the rank (each would wait in a sum the other never
# starts); a malformed bucket size is an error.
model mlp 8 false a.ckpt > a.pd
sed 's/fc(x, 16/fc(x, 17/' a.pd > b.pd
refused "mismatched programs are refused at start-up" \
  'the ranks run different programs: the main program of rank 1' \
  1 "$PDLANG" run a.pd : -np 1 "$PDLANG" run b.pd
refused "ranks with different bucket sizes are refused at start-up" \
  'rank 1 packs gradients into buckets of 1024 KiB and rank 0 into buckets of 64 KiB' \
  1 env PDLANG_MPI_BUCKET_KB=64 "$PDLANG" run a.pd : -np 1 "$PDLANG" run a.pd
refused "a rank that skips the sums is refused at start-up" \
  'PDLANG_MPI_SKIP_ALLREDUCE is set on rank 1 and not on rank 0' \
  1 "$PDLANG" run a.pd : -np 1 env PDLANG_MPI_SKIP_ALLREDUCE=1 "$PDLANG" run a.pd
refused "a malformed PDLANG_MPI_BUCKET_KB is an error" \
  "PDLANG_MPI_BUCKET_KB is '12k'; expected the size of the gradient buckets in KiB" \
  2 -x PDLANG_MPI_BUCKET_KB=12k "$PDLANG" run a.pd
# Small buckets: every gradient starts its own sum during the backward pass; moved forward by
# the progress thread (the default) or by the ops' tests alone.
model cnn 8 true one.ckpt > one.pd
model cnn 4 true two.ckpt > two.pd
rm -f one.ckpt
"$PDLANG" run --progress=none one.pd > one.out 2> one.err
for pm in thread test; do
  rm -f two.ckpt
  mpi 2 -x PDLANG_MPI_BUCKET_KB=1 -x PDLANG_MPI_PROGRESS=$pm "$PDLANG" run --progress=none \
    two.pd > two.out 2> two.err
  r2=$?
  if [ $r2 -eq 0 ] && "$CLOSE" one.ckpt two.ckpt 1e-5 > close.out; then
    echo "ok $t - cnn, buckets of 1 KiB, progress $pm: 2 ranks = 1 process ($(cat close.out))"
  else
    echo "not ok $t - cnn, buckets of 1 KiB, progress $pm (exit $r2)"
    cat two.err close.out 2>/dev/null | sed 's/^/# /'
  fi
  t=$((t + 1))
done
# A gradient of a bucket's size or more is summed in place (no copy into a bucket and back): the
# rnn's embedding gradient (8 KiB) with buckets of 1 KiB, under either kind of progress, ends
# with the same bits as with the default buckets, where it is packed with the others.
model rnn 3 true two.ckpt > two.pd
rm -f two.ckpt
mpi 2 "$PDLANG" run --progress=none two.pd > packed.out 2> packed.err
r1=$?
mv two.ckpt packed.ckpt 2> /dev/null
for pm in thread test; do
  rm -f two.ckpt
  mpi 2 -x PDLANG_MPI_BUCKET_KB=1 -x PDLANG_MPI_PROGRESS=$pm "$PDLANG" run --progress=none \
    two.pd > two.out 2> two.err
  r2=$?
  if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && "$CLOSE" packed.ckpt two.ckpt 0 > close.out; then
    echo "ok $t - rnn, the embedding's gradient summed in place, progress $pm: the bits of the packed sums ($(cat close.out))"
  else
    echo "not ok $t - rnn, the embedding's gradient summed in place, progress $pm (exit $r1, $r2)"
    cat packed.err two.err close.out 2>/dev/null | sed 's/^/# /'
  fi
  t=$((t + 1))
done
