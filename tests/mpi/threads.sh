#!/bin/sh
# threads.sh -- ranks that share a host share its cores: each rank's kernel pool is sized to its
# share (the CPUs over the ranks on the host) unless PDLANG_THREADS says otherwise, so that two
# ranks on two cores do not run four computing threads. The pool is sized when the command has
# read its options (the driver once started it before, at the CPUs' count, whatever the ranks).
# `pdlang run --profile` reports the pool's size (tests/driver/bench.sh: bench --threads N).
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi threads.sh
echo "1..2"
make_data
model mlp 8 false two.ckpt 1 > mlp.pd
model mlp 8 false one.ckpt 1 > one.pd
cpus=$(nproc)
share=$((cpus / 2))
[ "$share" -ge 1 ] || share=1
if mpi 2 "$PDLANG" run --profile --progress=none mlp.pd > two.out 2> two.err &&
   grep -q "ops ran for [0-9.]* ms on $share thread" two.err; then
  echo "ok 1 - 2 ranks on $cpus CPUs: each pool has $share thread(s)"
else
  echo "not ok 1 - 2 ranks on $cpus CPUs: a pool of $share thread(s) each expected"
  grep -h "ops ran\|error" two.out two.err | sed 's/^/# /'
fi
if PDLANG_THREADS=1 "$PDLANG" run --profile --progress=none one.pd > one.out 2> one.err &&
   grep -q "ops ran for [0-9.]* ms on 1 thread " one.err; then
  echo "ok 2 - PDLANG_THREADS=1 sizes one process's pool"
else
  echo "not ok 2 - PDLANG_THREADS=1"
  grep -h "ops ran\|error" one.out one.err | sed 's/^/# /'
fi
