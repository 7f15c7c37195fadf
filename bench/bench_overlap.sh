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
# medians of the epochs after the first, and the overhead (with - without) / without; then the
# reference, measured in the same run: one MPI_Allreduce of the model's gradient bytes on idle
# ranks (bench/bench_allreduce, the best of 20), what a step's sums cost at the least when
# nothing overlaps them, and its share of the step without sums.
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
# The bytes of the parameters (fp32 and fp64) of the model in $1: its plain startup program's
# persistable vars.
grad_bytes() {
  "$pd" dump --startup "$1" | awk '/^  var / && / persistable/ {
      n = 1; s = $0; sub(/.*\[/, "", s); sub(/\].*/, "", s); k = split(s, d, ", ")
      for (i = 1; i <= k; i++) n *= d[i]
      b += n * (/ float64 / ? 8 : 4) }
    END { print b + 0 }'
}
printf '(2 x 1 thread, batch %s each; bucket %s KiB, progress %s, copy %s)\n' "$batch" \
  "${PDLANG_MPI_BUCKET_KB:-1024}" "${PDLANG_MPI_PROGRESS:-thread}" \
  "$OMPI_MCA_btl_vader_single_copy_mechanism"
printf '%-5s %14s %14s %10s %10s %14s %8s\n' model "ms/step sums" "ms/step none" overhead \
  "grad MB" "MPI_Allreduce" "share"
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
  gb=$(grad_bytes "$dir/$m.pd")
  ar=$("$mpirun" --oversubscribe -np 2 "$b/bench/bench_allreduce" "$gb" 2>&1 |
    awk -v b="$gb" '$1 == b { print $2 / 1000 }')
  awk -v m=$m -v w="$w" -v o="$o" -v gb="$gb" -v ar="${ar:-0}" 'BEGIN {
    ov = "?"; sh = "?"
    if (o > 0) ov = sprintf("%.1f", 100 * (w - o) / o)
    if (o > 0 && ar > 0) sh = sprintf("%.1f", 100 * ar / o)
    printf "%-5s %14s %14s %9s%% %10.2f %11.3f ms %7s%%\n", m, w, o, ov, gb / 1e6, ar, sh }'
done
