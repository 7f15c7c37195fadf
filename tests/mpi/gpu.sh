#!/bin/sh
# gpu.sh -- GPU ranks: `mpirun -np 2 pdlang run --device gpu` computes on GPU local_rank of each
# rank and sums through NCCL. With NCCL and two GPUs: 2 GPU ranks of batch b end with the
# parameters of 1 GPU process of batch 2b (MLP and CNN, shuffled; tests/mpi/ckpt_close, 1e-4:
# the GPU's reductions add in another order than the CPU's); skipped, saying why, elsewhere
# (NCCL will not put two ranks on one GPU). Without NCCL: such a job is refused at start-up
# with a message saying so, within seconds. TAP output.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
need_mpi gpu.sh
echo "1..3"
make_data
model mlp 8 true two.ckpt > two.pd
if [ -z "${PD_HAVE_NCCL:-}" ]; then
  t0=$(date +%s)
  mpi 2 "$PDLANG" run --device gpu two.pd > no.out 2> no.err
  rc=$?
  el=$(( $(date +%s) - t0 ))
  if [ $rc -ne 0 ] && [ $el -le 10 ] && grep -q 'built without it' no.err &&
     grep -q 'train on CPU ranks' no.err; then
    echo "ok 1 - without NCCL, 2 ranks with --device gpu are refused in ${el} s (exit $rc)"
  else
    echo "not ok 1 - without NCCL, 2 ranks with --device gpu: exit $rc in ${el} s"
    sed 's/^/# /' no.err
  fi
else
  echo "ok 1 # SKIP built with NCCL: GPU ranks are not refused"
fi
gpus=0
if [ -n "${PD_HAVE_NCCL:-}" ] && command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
fi
t=2
for m in mlp cnn; do
  if [ -z "${PD_HAVE_NCCL:-}" ]; then
    echo "ok $t # SKIP $m on 2 GPU ranks: this pdlang was built without NCCL"
  elif [ "$gpus" -lt 2 ]; then
    echo "ok $t # SKIP $m on 2 GPU ranks: $gpus GPU(s) here (nvidia-smi -L), and NCCL needs a GPU per rank"
  else
    case $m in mlp) b=8 ;; cnn) b=4 ;; esac
    if same_as_one $m $b true 1e-4 --device gpu --progress=none; then
      echo "ok $t - $m: 2 GPU ranks of batch $b (NCCL) = 1 GPU process of batch $((2 * b)) ($(cat close.out))"
    else
      echo "not ok $t - $m: 2 GPU ranks of batch $b differ from 1 GPU process"
      cat one.err two.err close.out 2> /dev/null | sed 's/^/# /'
    fi
  fi
  t=$((t + 1))
done
