#!/bin/sh
# bench_overlap.sh -- what the gradient sums add to a data-parallel training step: the models of
# examples/train.pd (MLP 784-256-10) and examples/cnn.pd (LeNet: conv 20@5x5 - pool - conv 50@5x5
# - pool - fc 500 - fc 10), Adam, 2 processes x 1 thread (Open MPI's own binding: each rank on a
# core), on the 10,000 Fashion-MNIST test images; each run once with the sums (c_allreduce_sum,
# bucketed and overlapped) and once with PDLANG_MPI_SKIP_ALLREDUCE=1 (the same program and
# steps, the communication skipped: a benchmark switch, not a way to train), alternately, ROUNDS
# times (default 3). BATCH is the batch of each process: 32 (the default: a step takes the 64
# images of one process at the examples' batch) or 64 (the examples' own `batch = 64`, which
# `mpirun -np 2 pdlang run examples/train.pd` gives each rank). Prints ms per step of each,
# medians of the epochs after the first, and the overhead (with - without) / without.
# Indicative numbers: run it alone (flock /tmp/bench.lock sh bench/bench_overlap.sh BUILD).
# Usage: bench_overlap.sh BUILD_DIR [ROUNDS [BATCH [MODELS]]] (MODELS: "mlp lenet", the default,
# or one of them); PDLANG_MPI_BUCKET_KB etc. pass through, and so does
# OMPI_MCA_btl_vader_single_copy_mechanism (default none, as in the tests: shared memory copied
# in and out; cma, Open MPI's own default where the kernel lets one process read another's
# memory, moves a message in one call).
set -u
b=${1:?usage: bench_overlap.sh BUILD_DIR [ROUNDS [BATCH [MODELS]]]}
rounds=${2:-3}
batch=${3:-32}
models=${4:-mlp lenet}
pd="$b/pdlang"
mpirun=${MPIRUN:-mpirun}
dir=${TMPDIR:-/tmp}/pd_bench_overlap.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp \
  OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none} \
  PDLANG_THREADS=1
. "$(dirname "$0")/mpi_nets.sh"
# ms per step of each epoch after the first: 2 x batch images per step over the samples/s.
steps() {
  sed -n 's/^epoch \([0-9]*\)\/.*(\([0-9.]*\) samples\/s, 2 processes).*/\1 \2/p' |
    awk -v b="$batch" '$1 > 1 { printf "%.3f\n", 2000 * b / $2 }'
}
xs=""   # the settings of the sums that are set reach both ranks
for v in PDLANG_MPI_BUCKET_KB PDLANG_MPI_PROGRESS; do
  eval "[ -n \"\${$v+set}\" ]" && xs="$xs -x $v"
done
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
printf '%-5s %14s %14s %10s   (2 x 1 thread, batch %s each; bucket %s KiB, progress %s, copy %s)\n' \
  model "ms/step sums" "ms/step none" overhead "$batch" "${PDLANG_MPI_BUCKET_KB:-1024}" \
  "${PDLANG_MPI_PROGRESS:-thread}" "$OMPI_MCA_btl_vader_single_copy_mechanism"
for m in $models; do
  if [ $m = mlp ]; then ep=4; else ep=2; fi
  net $m "$batch" $ep > "$dir/$m.pd"
  : > "$dir/with" && : > "$dir/without"
  r=0
  while [ $r -lt "$rounds" ]; do
    for mode in with without; do
      skip=0
      [ $mode = without ] && skip=1
      PDLANG_MPI_SKIP_ALLREDUCE=$skip "$mpirun" --oversubscribe -np 2 \
        -x PDLANG_THREADS -x PDLANG_MPI_SKIP_ALLREDUCE $xs \
        "$pd" run --progress=lines "$dir/$m.pd" 2>&1 | steps >> "$dir/$mode"
    done
    r=$((r + 1))
  done
  w=$(median < "$dir/with")
  o=$(median < "$dir/without")
  printf '%-5s %14s %14s %9s%%\n' $m "$w" "$o" \
    "$(awk -v w="$w" -v o="$o" 'BEGIN { if (o > 0) printf "%.1f", 100 * (w - o) / o; else print "?" }')"
done
