#!/bin/sh
# for_unroll.sh -- a compile-time for over actions unrolls: a script that stages its training
# in `for (e in range(3)) { train(...); eval(...); print(...) }` prints what the same script
# with the three passes written out prints (the epoch lines' times aside), and ends with the same
# parameters, bit for bit; with --progress=lines the epoch lines of each stage are there. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_for_unroll.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..4"
i=0
report() { # $1: 0 = ok, $2: the test's name, $3: a file to show on failure
  i=$((i + 1))
  if [ "$1" -eq 0 ]; then echo "ok $i - $2"
  else echo "not ok $i - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
awk 'BEGIN { srand(5); print "f1,f2,label";
  for (i = 0; i < 64; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
    printf "%.4f,%.4f,%d\n", a, b, (a - b + rand() - 0.5 > 0) } }' > points.csv
head='import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 8, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
acc   = accuracy(y, label)
pts   = csv("points.csv", label = "label")
opt   = adam(0.05)'
stage() { # $1: the stage (a number, or the loop variable e), $2: the indent
  cat <<PD
$2print("stage " + str($1))
$2train(cost, reader = pts, batch = 16, epochs = 2, optimizer = opt, seed = 1 + $1)
$2eval(cost, acc, reader = pts)
$2save("params_" + str($1))
PD
}
{ echo "$head"; echo "for (e in range(3)) {"; stage e "    "; echo "}"; } > loop.pd
{ echo "$head"; for e in 0 1 2; do stage $e ""; done; } > flat.pd
mkdir loop flat && cp points.csv loop.pd loop && cp points.csv flat.pd flat
(cd loop && "$PDLANG" run --progress=lines loop.pd > out 2> err)
report $? "the unrolled loop runs" loop/err
(cd flat && "$PDLANG" run --progress=lines flat.pd > out 2> err)
report $? "the explicit calls run" flat/err
# The epoch lines' times and rates differ from run to run.
untimed() { sed "s/, [0-9]* samples in .*//; s/ samples, [0-9.]* s)/ samples)/" "$1"; }
untimed loop/out > loop.out; untimed flat/out > flat.out
untimed loop/err > loop.err; untimed flat/err > flat.err
cat loop.out loop.err > loop.all; cat flat.out flat.err > flat.all
diff flat.all loop.all > diff.txt && [ "$(grep -c "^.stage" loop.all)" -eq 3 ] &&
  [ "$(grep -c '^eval' loop.all)" -eq 3 ] && [ "$(grep -c '^epoch 2/2' loop.all)" -eq 3 ]
report $? "the loop prints what the three explicit stages print (3 stages, 3 evals, 3 x 2 epochs)" \
  diff.txt
same=0
for e in 0 1 2; do
  cmp -s "loop/params_$e" "flat/params_$e" || same=1
done
[ -s loop/params_2 ] || same=1
report $same "each stage saved the same parameters, bit for bit"
