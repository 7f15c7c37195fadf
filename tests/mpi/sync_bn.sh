#!/bin/sh
# sync_bn.sh -- train(..., sync_batch_norm = true): in a job of 2 ranks the training program's
# batch norms are PaddlePaddle's sync_batch_norm (and its gradient), which normalise with the
# statistics of every rank's batch: 2 ranks of batch b end with the parameters and the running
# statistics of 1 process of batch 2b, to rounding (tests/mpi/ckpt_close, 1e-5 relative). Plain
# batch norm under MPI normalises with each rank's own batch, and ends elsewhere. One process
# trains as plain batch norm does (the option changes nothing there). The program
# transformation (`pdlang dump --nranks 2`) is checked in every build.
set -u
. "$top_srcdir/tests/mpi/lib.sh"
echo "1..5"
make_data
# bn SYNC BATCH CKPT: a CNN with batch norm after its convolution, on cnn.csv.
bn() {
  cat <<PD
import "layers"
x = data("features", [-1, 1, 6, 6])
label = data("label", [-1, 1], int64)
c = max_pool(batch_norm(conv(x, 4, 3, padding = 1, bias = false), act = relu), 2)
y = fc(c, 3)
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("cnn.csv"), batch = $2, epochs = 3, optimizer = momentum(0.05),
      shuffle = false, seed = 3, checkpoint = "$3", sync_batch_norm = $1)
PD
}
bn true 4 two.ckpt > sync.pd
"$PDLANG" dump --train --nranks 2 sync.pd > t2.txt 2>&1
"$PDLANG" dump --train sync.pd > t1.txt 2>&1
if grep -q 'op [0-9]*: sync_batch_norm @' t2.txt && grep -q 'op [0-9]*: sync_batch_norm_grad @' t2.txt &&
   ! grep -q 'op [0-9]*: batch_norm' t2.txt && grep -q 'op [0-9]*: batch_norm @' t1.txt &&
   ! grep -q 'op [0-9]*: sync_batch_norm' t1.txt; then
  echo "ok 1 - dump --nranks 2: batch_norm and its gradient are sync_batch_norm's; one process keeps batch_norm"
else
  echo "not ok 1 - the sync_batch_norm rewrite"
  grep -n 'op [0-9]*: .*batch_norm' t1.txt t2.txt | sed 's/^/# /' | head -20
fi
if [ -z "${MPIRUN:-}" ]; then
  for t in 2 3 4 5; do echo "ok $t # SKIP pdlang was built without MPI (configure --with-mpi)"; done
  exit 0
fi
# same SYNC TOL: 1 process of batch 8 (one.ckpt) and 2 ranks of batch 4 (two.ckpt); close.out
# says how close their checkpoints are (ckpt_close exits 0 within TOL).
same() {
  bn "$1" 8 one.ckpt > one.pd
  bn "$1" 4 two.ckpt > two.pd
  rm -f one.ckpt two.ckpt close.out
  "$PDLANG" run --progress=none one.pd > one.out 2> one.err || return 2
  mpi 2 "$PDLANG" run --progress=none two.pd > two.out 2> two.err || return 2
  "$CLOSE" one.ckpt two.ckpt "$2" > close.out
}
same true 1e-5
rc=$?
cp two.ckpt sync.ckpt 2>/dev/null
if [ $rc = 0 ]; then
  echo "ok 2 - sync_batch_norm: 2 ranks of batch 4 = 1 process of batch 8, parameters and running statistics ($(cat close.out))"
else
  echo "not ok 2 - sync_batch_norm: 2 ranks of batch 4 differ from 1 process of batch 8 ($rc)"
  cat one.err two.err close.out 2>/dev/null | sed 's/^/# /' | head -20
fi
same false 1e-5
rc=$?
if [ $rc = 1 ]; then
  echo "ok 3 - plain batch norm under MPI: each rank's own statistics, not 1 process's ($(cat close.out))"
else
  echo "not ok 3 - plain batch norm under MPI ($rc): expected other parameters than 1 process's"
  cat one.err two.err close.out 2>/dev/null | sed 's/^/# /' | head -20
fi
# One process: sync_batch_norm = true trains as plain batch norm, bit for bit.
bn true 8 a.ckpt > a.pd
bn false 8 b.ckpt > b.pd
rm -f a.ckpt b.ckpt
if "$PDLANG" run --progress=none a.pd > /dev/null 2>&1 &&
   "$PDLANG" run --progress=none b.pd > /dev/null 2>&1 && "$CLOSE" a.ckpt b.ckpt 0 > close.out; then
  echo "ok 4 - one process: sync_batch_norm = true is plain batch norm ($(cat close.out))"
else
  echo "not ok 4 - one process: sync_batch_norm = true differs from plain batch norm"
  cat close.out 2>/dev/null | sed 's/^/# /'
fi
# The resume: a checkpoint records the option (the setup says ", sync_batch_norm").
bn false 4 sync.ckpt > plain.pd
mpi 2 "$PDLANG" run --progress=none plain.pd > out 2> err
if [ $? -ne 0 ] && grep -q 'sync_batch_norm' err; then
  echo "ok 5 - a checkpoint of sync_batch_norm = true is not resumed by a run without it"
else
  echo "not ok 5 - resuming a sync_batch_norm checkpoint without the option"
  sed 's/^/# /' err | head -10
fi
