#!/bin/sh
# batch_norm.sh -- batch_norm end to end (stdlib's batch_norm layer): train updates the
# running statistics (away from their initial 0 and 1), which eval, the saved parameters and
# the saved inference model carry: `pdlang exec` classifies a batch of ONE row (batch statistics
# could not: one row has no variance), and a checkpointed run resumed after 2 epochs ends with
# exactly the parameters and running statistics of an uninterrupted 4-epoch run. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_bn.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..6"
# Two classes split by x1 + x2 = 0, the features shifted and scaled (batch_norm centres them).
# The points come from a generator written out (Park and Miller's, exact in doubles): awk's own
# rand() differs between awk builds, and one that kept 16 k + 1 points left a last batch of one
# row, which batch_norm cannot train on.
awk 'function r() { s = (s * 16807) % 2147483647; return s / 2147483647 }
  BEGIN { s = 11; print "f1,f2,label";
  for (i = 0; i < 400; i++) { a = r() * 4 - 2; b = r() * 4 - 2;
    if (a + b > 0.2 || a + b < -0.2) printf "%.4f,%.4f,%d\n", 3 * a + 5, 0.5 * b - 2, (a + b > 0) } }' > points.csv
script() { # $1: epochs, $2: train's options, $3: params file
  cat <<PD
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(batch_norm(x, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("points.csv", label = "label"), batch = 16, epochs = $1,
      optimizer = adam(0.05), seed = 5$2)
eval(accuracy(y, label), reader = csv("points.csv", label = "label"))
print(get_variable("batch_norm_0.w_1"), get_variable("batch_norm_0.w_2"))
save("$3")
save("model.pdmodel", y)
PD
}
script 4 "" a.params > a.pd
"$PDLANG" run --progress=none a.pd > a.out 2> a.err
rc=$?
acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' a.out)
if [ $rc -eq 0 ] && awk "BEGIN { exit !($acc >= 0.9) }"; then echo "ok 1 - trains through batch_norm to accuracy $acc"
else echo "not ok 1 - training (rc $rc, accuracy '$acc')"; sed 's/^/# /' a.err a.out; fi

# The running mean of x1 = 3a + 5 (a uniform in [-2, 2]) tends to 5, of x2 = 0.5b - 2 to -2;
# their variances to 9 * 4/3 = 12 and 0.25 * 4/3 = 1/3 (after 4 epochs of 20 steps at
# momentum 0.9 the initial 0 and 1 weigh 0.9^80 < 0.001).
stats=$(tr -d '[],' < a.out | awk 'NF == 2 && $1 ~ /^-?[0-9.]+$/ { print $1, $2 }' | tr '\n' ' ')
if echo "$stats" | awk '{ exit !($1 > 4.5 && $1 < 5.5 && $2 > -2.5 && $2 < -1.5 &&
                              $3 > 10 && $3 < 14 && $4 > 0.25 && $4 < 0.42) }'; then
  echo "ok 2 - train updates the running statistics ($stats)"
else echo "not ok 2 - running statistics '$stats'"; sed 's/^/# /' a.out; fi

# One point at a time through the inference model: (2, 2) -> (11, -1) is class 1,
# (-2, -2) -> (-1, -3) class 0.
npy1() { # $1 $2: the two float32 features, as octal escapes
  printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }"
  printf '%*s\n' 58 ''
  printf "$1$2"; }
npy1 '\000\000\060\101' '\000\000\200\277' > p1.npy   # 11, -1
npy1 '\000\000\200\277' '\000\000\100\300' > p0.npy   # -1, -3
"$PDLANG" exec model.pdmodel --feed features=p1.npy > e1.out 2> e1.err
rc1=$?
"$PDLANG" exec model.pdmodel --feed features=p0.npy > e0.out 2> e0.err
rc0=$?
c1=$(tr -d '[],' < e1.out | awk 'NF == 2 { print ($2 > $1) ? 1 : 0 }')
c0=$(tr -d '[],' < e0.out | awk 'NF == 2 { print ($2 > $1) ? 1 : 0 }')
if [ $rc1 -eq 0 ] && [ $rc0 -eq 0 ] && [ "$c1" = 1 ] && [ "$c0" = 0 ]; then
  echo "ok 3 - pdlang exec classifies one row at a time with the running statistics"
else echo "not ok 3 - exec (rc $rc1 $rc0, classes '$c1' '$c0')"; sed 's/^/# /' e1.out e1.err e0.out e0.err; fi

# The same seed gives the same parameters and statistics, bit for bit.
cp a.params a1.params
"$PDLANG" run --progress=none a.pd > /dev/null 2>&1
if cmp -s a.params a1.params; then echo "ok 4 - the same seed gives the same parameters and statistics"
else echo "not ok 4 - runs with the same seed differ"; fi

# Interrupted after 2 epochs (by running 2), then resumed to 4 from the checkpoint.
script 2 ', checkpoint = "ck"' b.params > b.pd
"$PDLANG" run --progress=none b.pd > b.out 2>&1
script 4 ', checkpoint = "ck"' c.params > c.pd
"$PDLANG" run --progress=lines c.pd > c.out 2> c.err
if grep -q 'resuming from ck: epoch 3' c.err; then echo "ok 5 - training resumes from the checkpoint"
else echo "not ok 5 - no resume"; sed 's/^/# /' c.err; fi
if cmp -s a.params c.params && ! cmp -s a.params b.params; then
  echo "ok 6 - the resumed run ends with the uninterrupted run's parameters and running statistics, bit for bit"
else echo "not ok 6 - resumed parameters differ"; fi
