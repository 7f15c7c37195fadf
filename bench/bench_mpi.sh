#!/bin/sh
# bench_mpi.sh -- data-parallel throughput on this machine: the MLP of examples/train.pd and a
# small CNN on Fashion-MNIST, one epoch on the 10,000 test images, as 1 process x 2 threads (batch 64)
# against 2 processes x 1 thread (batch 32 each: the same 64 images per step); then the
# gradient buckets against MPI_Allreduce (bench/bench_allreduce). Indicative numbers: run it
# alone (flock /tmp/bench.lock sh bench/bench_mpi.sh BUILD). Usage: bench_mpi.sh BUILD_DIR
set -u
b=${1:?usage: bench_mpi.sh BUILD_DIR}
pd="$b/pdlang"
mpirun=${MPIRUN:-mpirun}
dir=${TMPDIR:-/tmp}/pd_bench_mpi.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp \
  OMPI_MCA_btl_vader_single_copy_mechanism=none
. "$(dirname "$0")/mpi_nets.sh"
for m in mlp cnn; do
  net $m 64 > "$dir/one.pd"
  net $m 32 > "$dir/two.pd"
  one=$(PDLANG_THREADS=2 "$pd" run --progress=lines "$dir/one.pd" 2>&1 | grep '^epoch 1/1:')
  two=$(PDLANG_THREADS=1 "$mpirun" --oversubscribe --bind-to none -np 2 -x PDLANG_THREADS \
        "$pd" run --progress=lines "$dir/two.pd" 2>&1 | grep '^epoch 1/1:')
  echo "$m, 1 process x 2 threads:  $one"
  echo "$m, 2 processes x 1 thread: $two"
done
"$mpirun" --oversubscribe --bind-to none -np 2 "$b/bench/bench_allreduce"
