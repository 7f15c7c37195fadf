#!/bin/sh
# optimizers.sh -- adamw, rmsprop (centered, with momentum) and adagrad end to end: each trains
# a small classifier to accuracy >= 0.9, its state vars (Fluid's names) are in the checkpoint,
# and a run interrupted after 2 epochs and resumed from the checkpoint ends with exactly the
# parameters of an uninterrupted 4-epoch run (which it could not without the optimizer's
# state). TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_opt.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..12"
# Two classes split by x1 - x2 = 0.
awk 'BEGIN { srand(7); print "f1,f2,label";
  for (i = 0; i < 300; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
    if (a - b > 0.2 || a - b < -0.2) printf "%.4f,%.4f,%d\n", a, b, (a - b > 0) } }' > points.csv
script() { # $1: epochs, $2: the optimizer, $3: train's other options, $4: params file
  cat <<PD
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 8, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("points.csv", label = "label"), batch = 16, epochs = $1,
      optimizer = $2, seed = 3$3)
eval(accuracy(y, label), reader = csv("points.csv", label = "label"))
save("$4")
PD
}
i=0
for opt in "adamw(0.05, weight_decay = 0.05)|moment1_0" \
           "rmsprop(0.01, momentum = 0.5, centered = true)|mean_grad_0" \
           "adagrad(0.3, initial_accumulator_value = 0.1)|moment_0"; do
  spec=${opt%|*}
  state=${opt#*|}
  name=${spec%%(*}
  rm -rf ck
  script 4 "$spec" "" a.params > a.pd
  "$PDLANG" run --progress=none a.pd > a.out 2> a.err
  rc=$?
  acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' a.out)
  i=$((i + 1))
  if [ $rc -eq 0 ] && [ -n "$acc" ] && awk "BEGIN { exit !($acc >= 0.9) }"; then
    echo "ok $i - $name trains to accuracy $acc"
  else echo "not ok $i - $name training (rc $rc, accuracy '$acc')"; sed 's/^/# /' a.err a.out; fi
  script 2 "$spec" ', checkpoint = "ck"' b.params > b.pd
  "$PDLANG" run --progress=none b.pd > b.out 2>&1
  i=$((i + 1))
  if grep -aq "fc_0.w_0_$state" ck 2> /dev/null; then
    echo "ok $i - $name's state (fc_0.w_0_$state) is in the checkpoint"
  else echo "not ok $i - $name: no fc_0.w_0_$state in the checkpoint"; fi
  script 4 "$spec" ', checkpoint = "ck"' c.params > c.pd
  "$PDLANG" run --progress=lines c.pd > c.out 2> c.err
  i=$((i + 1))
  if grep -q 'resuming from ck: epoch 3' c.err; then echo "ok $i - $name resumes from the checkpoint"
  else echo "not ok $i - $name: no resume"; sed 's/^/# /' c.err; fi
  i=$((i + 1))
  if cmp -s a.params c.params && ! cmp -s a.params b.params; then
    echo "ok $i - $name: the resumed run ends with the uninterrupted run's parameters, bit for bit"
  else echo "not ok $i - $name: resumed parameters differ"; fi
done
