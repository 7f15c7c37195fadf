#!/bin/sh
# valid_train.sh -- train(..., valid =, metrics =, early_stop =, keep_best =) end to end: the
# validation's values on the epoch line against a hand computation, early stopping, keep_best
# restoring the best epoch's parameters, and a run stopped after 2 epochs and resumed from its
# checkpoint that ends, early stop and keep_best included, with exactly the parameters of an
# uninterrupted run; the same with valid_every_steps (validation counted in steps: its lines on
# the progress output and in the log, early stopping counting validations, the resume bit for
# bit). TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_valid.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..13"
i=0
report() { # $1: 0 = ok, $2: the test's name, $3: a file to show on failure
  i=$((i + 1))
  if [ "$1" -eq 0 ]; then echo "ok $i - $2"
  else echo "not ok $i - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}

# 1. Values. y = x @ w + [0, 0.5] with w all ones and the learning rate 1e-30 (the parameters do
# not move in fp32): the row [0.5, 0.25] gives y = [0.75, 1.25], softmax [0.377541, 0.622459];
# label 1: the loss -log(0.622459) = 0.474077, the accuracy 1.
printf 'f1,f2,label\n0.5,0.25,1\n' > one.csv
cat > values.pd <<'PD'
x = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
w = param([2, 2], init = 1.0, name = "w")
y = x @ w + var([0.0, 0.5])
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("one.csv", label = "label"), epochs = 2, optimizer = sgd(1e-30),
      valid = csv("one.csv", label = "label"), metrics = [accuracy(y, label)])
PD
"$PDLANG" run --progress=lines values.pd > values.out 2> values.err
grep -q '^epoch 2/2: loss 0.4741, valid loss 0.4741, valid accuracy 1.0000, lr 1e-30, 1 samples' \
  values.err
report $? "the epoch line shows the validation's loss and accuracy (0.474077, 1)" values.err

# Two classes split by x1 - x2 = 0, with noisy labels (so that the validation loss rises again);
# a validation set drawn apart.
points() { # $1: seed, $2: rows
  awk -v seed="$1" -v n="$2" 'BEGIN { srand(seed); print "f1,f2,label";
    for (i = 0; i < n; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
      u = rand() * 2 - 1 + rand() * 2 - 1; printf "%.4f,%.4f,%d\n", a, b, (a - b + u > 0) } }'
}
points 7 200 > train.csv
points 11 60 > valid.csv
script() { # $1: epochs, $2: train's other options, $3: the params file
  cat <<PD
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 32, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("train.csv", label = "label"), batch = 16, epochs = $1,
      optimizer = sgd(1.0), seed = 3, valid = csv("valid.csv", label = "label"),
      metrics = [accuracy(y, label)], early_stop = 2, keep_best = true$2)
eval(cost, reader = csv("valid.csv", label = "label"))
save("$3")
PD
}
# 2-4. Early stopping and keep_best: the validation loss falls, then rises as the model learns
# the noise; the run stops 2 validations after its best, whose parameters eval then sees.
script 30 "" a.params > a.pd
"$PDLANG" run --progress=lines a.pd > a.out 2> a.err
rc=$?
grep -q '^early stop: valid loss has not fallen for 2 validations' a.err
report $(( rc != 0 || $? != 0 )) "early stopping ends the run (rc $rc)" a.err
last=$(sed -n 's|^epoch \([0-9]*\)/30:.*|\1|p' a.err | tail -1)
best=$(sed -n 's/^keep_best: the parameters of epoch \([0-9]*\) .*/\1/p' a.err)
[ -n "$last" ] && [ -n "$best" ] && [ "$last" -lt 30 ] && [ "$best" -eq $((last - 2)) ]
report $? "it stops at epoch $last, 2 after the best, $best" a.err
bestloss=$(sed -n "s|^epoch $best/30: .*valid loss \([0-9.]*\),.*|\1|p" a.err)
evalloss=$(sed -n 's/^eval: cost = \([0-9.]*\) .*/\1/p' a.out)
[ -n "$bestloss" ] && [ "$bestloss" = "$evalloss" ]
report $? "keep_best: eval sees the best epoch's validation loss ($bestloss, eval $evalloss)" a.err

# 5-8. Resume: 2 epochs with a checkpoint, then the whole run from it.
script 2 ', checkpoint = "ck"' b.params > b.pd
"$PDLANG" run --progress=none b.pd > b.out 2>&1
grep -aq 'fc_0.w_0@BEST' ck 2> /dev/null
report $? "the checkpoint holds the best parameters (fc_0.w_0@BEST)" b.out
script 30 ', checkpoint = "ck"' c.params > c.pd
"$PDLANG" run --progress=lines c.pd > c.out 2> c.err
grep -q 'resuming from ck: epoch 3' c.err
report $? "the run resumes from the checkpoint" c.err
cmp -s a.params c.params && ! cmp -s a.params b.params
report $? "the resumed run stops at the same epoch with the same parameters, bit for bit" c.err
"$PDLANG" run --progress=lines c.pd > d.out 2> d.err
grep -q "^ck: early stopping ended the run at epoch $last; nothing to train" d.err &&
  cmp -s a.params c.params
report $? "a finished run's checkpoint trains nothing and restores the same best parameters" d.err


# 9-13. valid_every_steps = 5: 200 rows in batches of 16 are 13 steps an epoch; validation after
# the call's steps 5, 10, 15, ... (over the epochs), on a line of its own and in the log.
script 30 ', valid_every_steps = 5, log = "e.csv", checkpoint = "cke"' e.params > e.pd
"$PDLANG" run --progress=lines e.pd > e.out 2> e.err
rc=$?
vsteps=$(sed -n 's/^step \([0-9]*\) (epoch [0-9]*\/30), valid loss [0-9.]*, valid accuracy [0-9.]*$/\1/p' e.err | tr '\n' ' ')
lsteps=$(awk -F, 'NR > 1 && $1 == "step" && $8 != "" { n++ } END { print n + 0 }' e.csv)
want=""
k=5
for s in $vsteps; do want="$want$k "; k=$((k + 5)); done
[ $rc -eq 0 ] && [ -n "$vsteps" ] && [ "$vsteps" = "$want" ] &&
  [ "$lsteps" -eq "$(echo $vsteps | wc -w)" ] && ! grep -q '^epoch.*valid loss' e.err
report $? "validation after steps $vsteps(each on a line, $lsteps log rows, none on the epoch lines)" e.err
vbest=$(sed -n 's/^keep_best: the parameters of step \([0-9]*\) .*/\1/p' e.err)
vlast=$(echo $vsteps | awk '{ print $NF }')
grep -q "^early stop: valid loss has not fallen for 2 validations (best [0-9.]* at step $vbest)" e.err &&
  [ -n "$vbest" ] && [ "$vlast" -eq $((vbest + 10)) ]
report $? "early stopping counts validations: the last at step $vlast, 2 after the best, $vbest" e.err
bestloss=$(sed -n "s|^step $vbest (epoch [0-9]*/30), valid loss \([0-9.]*\),.*|\1|p" e.err)
evalloss=$(sed -n 's/^eval: cost = \([0-9.]*\) .*/\1/p' e.out)
[ -n "$bestloss" ] && [ "$bestloss" = "$evalloss" ]
report $? "keep_best: eval sees the best step's validation loss ($bestloss, eval $evalloss)" e.err
# Resume: 1 epoch (validations at steps 5 and 10) with a checkpoint, then the whole run from it.
script 1 ', valid_every_steps = 5, checkpoint = "ck2"' f.params > f.pd
"$PDLANG" run --progress=none f.pd > f.out 2>&1
cp ck2 ck2.epoch1
script 30 ', valid_every_steps = 5, checkpoint = "ck2"' g.params > g.pd
"$PDLANG" run --progress=lines g.pd > g.out 2> g.err
grep -q 'resuming from ck2: epoch 2' g.err && [ "$(grep -c '^step [0-9]* (epoch' g.err)" -ge 1 ] &&
  ! grep -q '^step [0-9]* (epoch 1/30)' g.err
report $? "the run resumes from the checkpoint and validates the steps after it" g.err
# The checkpoints hold the last step's parameters, the optimizer's state, the best copies and
# the early-stopping record: the resumed run's ends equal to the uninterrupted run's.
cmp -s e.params g.params && cmp -s cke ck2 && ! cmp -s cke ck2.epoch1
report $? "the resumed run stops at the same step with the same parameters and checkpoint, bit for bit" g.err
