#!/bin/sh
# train_save_exec.sh -- training end to end on a small synthetic data set (two classes split by
# the line x1 + x2 = 0, written as CSV): train reaches a high accuracy; the same seed gives the
# same losses and parameters, bit for bit; a run stopped after 2 epochs with a checkpoint and
# resumed for 2 more ends with exactly the parameters of a 4-epoch run; the saved inference
# model runs with `pdlang exec` and classifies new points. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_tse.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..9"
awk 'BEGIN { srand(7); print "f1,f2,label";
  for (i = 0; i < 400; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
    if (a + b > 0.2 || a + b < -0.2) printf "%.4f,%.4f,%d\n", a, b, (a + b > 0) } }' > points.csv
script() { # $1: epochs, $2: train's options, $3: params file
  cat <<PD
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(x, 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("points.csv", label = "label"), batch = 16, epochs = $1,
      optimizer = adam(0.05), seed = 3$2)
eval(accuracy(y, label), reader = csv("points.csv", label = "label"))
save("$3")
save("model.pdmodel", y)
PD
}
script 4 "" a.params > a.pd
"$PDLANG" run --progress=lines a.pd > a.out 2> a.err
rc=$?
acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' a.out)
if [ $rc -eq 0 ] && awk "BEGIN { exit !($acc >= 0.95) }"; then echo "ok 1 - trains to accuracy $acc"
else echo "not ok 1 - training (rc $rc, accuracy '$acc')"; sed 's/^/# /' a.err a.out; fi

cp a.params a1.params
"$PDLANG" run --progress=lines a.pd > /dev/null 2> a2.err
# The epoch summaries' losses (the step lines' count depends on the speed: one a second).
losses() { sed -n 's/^\(epoch [0-9]*\/[0-9]*: loss [0-9.]*\),.*/\1/p' "$1"; }
if [ "$(losses a.err | wc -l)" -eq 4 ] && [ "$(losses a.err)" = "$(losses a2.err)" ] &&
   cmp -s a.params a1.params; then
  echo "ok 2 - the same seed gives the same losses and parameters"
else echo "not ok 2 - runs with the same seed differ"; fi

grep -q '^epoch 4/4: loss' a.err && echo "ok 3 - an end-of-epoch summary per epoch" || echo "not ok 3 - no epoch summary"

# Interrupted after 2 epochs (by running 2), then resumed to 4 from the checkpoint.
script 2 ', checkpoint = "ck"' b.params > b.pd
"$PDLANG" run --progress=none b.pd > /dev/null 2>&1
script 4 ', checkpoint = "ck"' c.params > c.pd
"$PDLANG" run --progress=lines c.pd > c.out 2> c.err
if grep -q 'resuming from ck: epoch 3' c.err; then echo "ok 4 - training resumes from the checkpoint"
else echo "not ok 4 - no resume"; sed 's/^/# /' c.err; fi
if cmp -s a.params c.params; then echo "ok 5 - the resumed run ends with the uninterrupted run's parameters, bit for bit"
else echo "not ok 5 - resumed parameters differ"; fi
tail -n 1 a.err > a.last; tail -n 1 c.err > c.last
grep -q '^epoch 4/4: loss' a.last && grep -q '^epoch 4/4: loss' c.last &&
  [ "$(cut -d, -f1 a.last)" = "$(cut -d, -f1 c.last)" ] && echo "ok 6 - and the same last-epoch loss" ||
  { echo "not ok 6 - last epoch differs"; cat a.last c.last | sed 's/^/# /'; }

# The inference model on two new points: (1, 1) is class 1, (-1, -1) class 0.
{ printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"
  printf '%*s\n' 58 ''   # the header pads to 128 bytes
  printf '\000\000\200\077\000\000\200\077\000\000\200\277\000\000\200\277'; } > pts.npy
"$PDLANG" exec model.pdmodel --feed features=pts.npy > e.out 2> e.err
rc=$?
classes=$(tr -d '[],' < e.out | awk 'NF == 2 { print ($2 > $1) ? 1 : 0 }' | tr '\n' ' ')
if [ $rc -eq 0 ] && [ "$classes" = "1 0 " ]; then echo "ok 7 - pdlang exec classifies new points"
else echo "not ok 7 - exec (rc $rc, classes '$classes')"; sed 's/^/# /' e.out e.err; fi
"$PDLANG" exec model.pdmodel > /dev/null 2> e2.err
rc=$?
if [ $rc -eq 1 ] && grep -q 'features float32 \[-1, 2\]' e2.err; then echo "ok 8 - exec without inputs lists what the model needs"
else echo "not ok 8 - exec without inputs (rc $rc)"; sed 's/^/# /' e2.err; fi

# log_every = 1: a progress line after every step but an epoch's last (its summary line).
script 2 ', log_every = 1' d.params > d.pd
"$PDLANG" run --progress=lines d.pd > /dev/null 2> d.err
steps=$(grep -c '^epoch 1/2 step' d.err)
last=$(sed -n 's/^epoch 1\/2 step \([0-9]*\)\/\([0-9]*\) .*/\1 \2/p' d.err | tail -n 1)
if [ "$steps" -gt 2 ] && [ "$last" = "$steps $((steps + 1))" ]; then
  echo "ok 9 - log_every = 1 gives a line a step ($steps in an epoch of $((steps + 1)))"
else echo "not ok 9 - log_every = 1: $steps lines, last '$last'"; sed 's/^/# /' d.err; fi
