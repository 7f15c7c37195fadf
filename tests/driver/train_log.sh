#!/bin/sh
# train_log.sh -- train's log (log = "run.csv", --log FILE, JSON lines for .jsonl) read back:
# the header, a step row per step with log_every = 1 and an epoch row per epoch, each epoch's
# loss the mean of its steps' losses (equal batches) and the summary line's, the validation's
# values those of the summary line, the global step counting on, a resumed run appending to its
# log, and JSON lines with the same numbers. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_log.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..11"
i=0
report() { # $1: 0 = ok, $2: the test's name, $3: a file to show on failure
  i=$((i + 1))
  if [ "$1" -eq 0 ]; then echo "ok $i - $2"
  else echo "not ok $i - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
# 192 rows: 12 batches of 16 an epoch.
awk 'BEGIN { srand(5); print "f1,f2,label";
  for (i = 0; i < 192; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
    printf "%.4f,%.4f,%d\n", a, b, (a - b > 0) } }' > points.csv
script() { # $1: epochs, $2: train's other options
  cat <<PD
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 8, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("points.csv", label = "label"), batch = 16, epochs = $1,
      optimizer = sgd(0.3), seed = 3, log_every = 1, valid = csv("points.csv", label = "label"),
      metrics = [accuracy(y, label)]$2)
PD
}
script 3 ', log = "run.csv"' > a.pd
"$PDLANG" run --progress=lines a.pd > a.out 2> a.err
[ "$(head -1 run.csv)" = "kind,epoch,step,loss,lr,samples_per_s,time_s,valid_loss,valid_accuracy" ]
report $? "the CSV header names the columns" run.csv
[ "$(grep -c '^step,' run.csv)" -eq 36 ] && [ "$(grep -c '^epoch,' run.csv)" -eq 3 ] &&
  [ "$(grep -c '^best,' run.csv)" -eq 3 ] && [ "$(wc -l < run.csv)" -eq 43 ]
report $? "36 step rows, 3 epoch rows and 3 best rows (the validation loss falls each epoch)" run.csv
awk -F, '$1 == "best" { sub(/^best,/, "epoch,"); if ($0 != prev) bad = 1 } { prev = $0 }
  END { exit bad }' run.csv
report $? "a best row repeats the epoch row of the best validation so far" run.csv
awk -F, 'NR > 1 && $1 == "step" { if ($3 != ++n || $2 != int((n - 1) / 12) + 1) bad = 1 }
  NR > 1 && $1 == "epoch" { if ($3 != n || $2 != n / 12) bad = 1 } END { exit bad }' run.csv
report $? "the steps count on across epochs; an epoch row has the epoch's last step" run.csv
awk -F, 'NR > 1 && $1 == "step" { s += $4; k++ }
  NR > 1 && $1 == "epoch" { d = $4 - s / k; if (d < -1e-6 || d > 1e-6 || k != 12) bad = 1; s = 0; k = 0 }
  END { exit bad }' run.csv
report $? "each epoch's loss is the mean of its 12 steps' losses" run.csv
sed -n 's|^epoch \([0-9]\)/3: loss \([0-9.]*\), valid loss \([0-9.]*\), valid accuracy \([0-9.]*\),.*|\1 \2 \3 \4|p' \
  a.err > summary
awk -F, 'NR > 1 && $1 == "epoch" { printf "%d %.4f %.4f %.4f\n", $2, $4, $8, $9 }' run.csv > logged
[ -s summary ] && cmp -s summary logged
report $? "the epoch rows' loss and validation are the summary lines'" logged
awk -F, 'NR > 1 { if ($5 != 0.3 || !($6 > 0) || !($7 >= t)) bad = 1; t = $7 } END { exit bad }' \
  run.csv
report $? "the learning rate, samples/s and a time that never goes back" run.csv

# Resume: 2 epochs with a checkpoint, then 3 from it: the log goes on.
script 2 ', log = "b.csv", checkpoint = "ck"' > b.pd
"$PDLANG" run --progress=none b.pd > /dev/null 2>&1
script 3 ', log = "b.csv", checkpoint = "ck"' > b.pd
"$PDLANG" run --progress=none b.pd > /dev/null 2>&1
[ "$(grep -c '^kind,' b.csv)" -eq 1 ] &&
  [ "$(awk -F, '$1 == "epoch" { printf "%d", $2 }' b.csv)" = 123 ]
report $? "a resumed run appends its rows to the log (one header, epochs 1, 2, 3)" b.csv
awk -F, '$1 == "epoch" { print $2, $3, $4, $8, $9 }' run.csv > a.rows
awk -F, '$1 == "epoch" { print $2, $3, $4, $8, $9 }' b.csv > b.rows
cmp -s a.rows b.rows
report $? "its epoch rows are the uninterrupted run's" b.rows

# JSON lines through --log, for a train call without log =.
script 3 '' > c.pd
"$PDLANG" run --progress=none --log run.jsonl c.pd > /dev/null 2> c.err
sed -n 's/^{"kind": "epoch", "epoch": \([0-9]\), "step": \([0-9]*\), "loss": \([-0-9.e]*\), .*"valid_loss": \([-0-9.e]*\), "valid_accuracy": \([-0-9.e]*\)}$/\1 \2 \3 \4 \5/p' \
  run.jsonl > c.rows
[ "$(wc -l < run.jsonl)" -eq 42 ] && cmp -s a.rows c.rows
report $? "--log run.jsonl: JSON lines with the same epoch rows" run.jsonl

# Early stopping: trained on the labels flipped and validated on the true ones, the validation
# loss rises after the first epoch; with early_stop = 2 the run stops at epoch 3, and the log
# has a best row for epoch 1 and a stop row (a copy of epoch 3's row).
awk -F, 'NR == 1 { print; next } { printf "%s,%s,%d\n", $1, $2, 1 - $3 }' points.csv > flipped.csv
cat > d.pd <<'PD'
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 8, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("flipped.csv", label = "label"), batch = 16, epochs = 8,
      optimizer = sgd(0.3), seed = 3, valid = csv("points.csv", label = "label"),
      early_stop = 2, log = "stop.csv")
PD
"$PDLANG" run --progress=none d.pd > /dev/null 2> d.err
[ "$(awk -F, '$1 == "best" { printf "%d ", $2 }' stop.csv)" = "1 " ] &&
  [ "$(awk -F, '$1 == "stop" { printf "%d ", $2 }' stop.csv)" = "3 " ] &&
  [ "$(grep -c '^epoch,' stop.csv)" -eq 3 ] &&
  [ "$(grep '^stop,' stop.csv | cut -d, -f2-)" = "$(grep '^epoch,3,' stop.csv | cut -d, -f2-)" ]
report $? "early stopping: a best row at epoch 1, a stop row repeating epoch 3's" stop.csv
