#!/bin/sh
# amp_fp16.sh -- fp16 mixed precision with dynamic loss scaling end to end (train(..., amp =
# "fp16"), vm/passes/amp.h): dump --train shows the float16 products, the scaled cost, the
# unscaling and scale-update ops and the updates in their guarded block; a small model learns
# to fp32's accuracy; a run that starts from a scale that overflows and grows it every 5 steps
# (so the scale and its counts change all along) checkpointed and resumed ends bit for bit
# where the uninterrupted run does; a script's var named like the pass's is refused at the
# train call. (tests/driver/amp.sh: the MLP of issue 42 in fp16 against fp32.) TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_amp16.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..7"
awk 'BEGIN { srand(11); print "f1,f2,f3,label";
  for (i = 0; i < 600; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2; c = rand() * 2 - 1;
    r = a * a + b * b; if (r < 1.3 || r > 1.7) printf "%.4f,%.4f,%.4f,%d\n", a, b, c, (r > 1.5) } }' > ring.csv
script() { # $1: epochs, $2: train's extra options, $3: params file
  cat <<PD
import "layers"
x     = data("features", [-1, 3])
label = data("label", [-1, 1], int64)
h     = fc(x, 64, act = relu)
y     = fc(h, 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("ring.csv", label = "label"), batch = 32, epochs = $1,
      optimizer = momentum(0.05)$2)
eval(accuracy(y, label), reader = csv("ring.csv", label = "label"))
save("$3")
PD
}
script 20 ', seed = 5, amp = "fp16"' a.params > a.pd
"$PDLANG" dump --train a.pd > dump.out 2>&1
marked=$(grep -c 'attr mkldnn_data_type: STRING "float16"' dump.out)
ops=$(grep -c '^  op [0-9]*: fc\(_grad\)\? ' dump.out)
if [ "$marked" -eq 4 ] && [ "$ops" -eq 4 ]; then
  echo "ok 1 - dump --train: the 2 fc ops and their 2 gradients marked float16"
else echo "not ok 1 - dump --train marks $marked of $ops fc ops"; fi
# block 0: the cost times loss_scaling_0, check_finite_and_unscale, update_loss_scaling, the
# guard; block 1: the four momentum updates.
b0=$(sed -n '/^block 0/,/^block 1/p' dump.out)
b1=$(sed -n '/^block 1 (parent 0)/,$p' dump.out)
if echo "$b0" | grep -q 'in  Y: \[loss_scaling_0\]' &&
   [ "$(echo "$b0" | grep -c ': check_finite_and_unscale \|: update_loss_scaling \|: conditional_block ')" -eq 3 ] &&
   [ "$(echo "$b1" | grep -c ': momentum ')" -eq 4 ] && [ "$(echo "$b0" | grep -c ': momentum ')" -eq 0 ]; then
  echo "ok 2 - dump --train: the scaled cost, the loss-scaling ops, the updates in the guarded block"
else echo "not ok 2 - the loss-scaling program"; sed 's/^/# /' dump.out | grep -v attr | head -40; fi

script 20 ', seed = 5' f.params > f.pd
"$PDLANG" run --progress=none a.pd > a.out 2> a.err
rc=$?
"$PDLANG" run --progress=none f.pd > f.out 2>&1
acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' a.out)
accf=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' f.out)
if [ $rc -eq 0 ] && [ -n "$acc" ] && awk "BEGIN { exit !($acc >= 0.95) }"; then
  echo "ok 3 - a ring learnt in fp16 (accuracy $acc)"
else echo "not ok 3 - training (rc $rc, accuracy '$acc')"; sed 's/^/# /' a.err a.out; fi
if [ -n "$acc" ] && [ -n "$accf" ] && awk "BEGIN { d = $acc - $accf; exit !(d >= -0.005) }"; then
  echo "ok 4 - fp16's accuracy within 0.5 point of fp32's ($acc against $accf)"
else echo "not ok 4 - fp16 '$acc' against fp32 '$accf'"; fi

# A scale of 2^40 overflows at first and backs off by half every bad step; then it grows every
# 5 good steps until it overflows again: checkpointed after 8 of 20 epochs, resumed.
dyn=', seed = 7, amp = "fp16", loss_scale = 1099511627776, incr_every_n_steps = 5, decr_every_n_nan_or_inf = 1, decr_ratio = 0.5'
script 20 "$dyn" u.params > u.pd
"$PDLANG" run --progress=none u.pd > u.out 2>&1
script 8 "$dyn, checkpoint = \"ck\"" b.params > b.pd
"$PDLANG" run --progress=none b.pd > /dev/null 2>&1
script 20 "$dyn, checkpoint = \"ck\"" c.params > c.pd
"$PDLANG" run --progress=lines c.pd > c.out 2> c.err
held=0
for v in loss_scaling_0 num_good_steps_0 num_bad_steps_0; do grep -q -a "$v" ck && held=$((held + 1)); done
if grep -q 'resuming from ck: epoch 9' c.err && [ -s u.params ] && cmp -s u.params c.params &&
   [ $held -eq 3 ]; then
  echo "ok 5 - the checkpoint holds the scale and its counts; the resumed run ends with the uninterrupted one's parameters, bit for bit"
else echo "not ok 5 - resume differs ($held of the scaling vars in the checkpoint)"; sed 's/^/# /' c.err | tail -3; fi
uacc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' u.out)
if [ -n "$uacc" ] && awk "BEGIN { exit !($uacc >= 0.95) }"; then
  echo "ok 6 - and it learns through the overflows (accuracy $uacc)"
else echo "not ok 6 - with overflows: accuracy '$uacc'"; sed 's/^/# /' u.out; fi

# The pass's names are its own.
sed 's/^cost  = /loss_scaling_0 = /; s/^train(cost,/train(loss_scaling_0,/' a.pd > n.pd
"$PDLANG" run --progress=none n.pd > /dev/null 2> n.err
rc=$?
if [ $rc -eq 1 ] && grep -q "^n.pd:7:1: error: .*adds a var 'loss_scaling_0', and the program already has one" n.err; then
  echo "ok 7 - a script var named loss_scaling_0 is refused at the train call"
else echo "not ok 7 - a var named loss_scaling_0 (rc $rc)"; sed 's/^/# /' n.err; fi
