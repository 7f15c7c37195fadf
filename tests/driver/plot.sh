#!/bin/sh
# plot.sh -- `pdlang plot LOG -o FILE.png` and train(..., plot = "curves.png") end to end: the
# PNGs are written with the size asked for (read from their IHDR chunk; tests/lang/test_plot
# decodes the pictures themselves), train's plot writes its log beside it, a log whose last line
# is still being written draws without it, and bad logs (at FILE:LINE:, a cell's column and
# value) and bad arguments are errors. Skips when pdlang was built without cairo. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_plot.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
printf 'kind,epoch,step,loss\nstep,1,1,0.5\nepoch,1,1,0.5\n' > tiny.csv
if "$PDLANG" plot tiny.csv -o tiny.png 2>&1 | grep -q "built without cairo"; then
  echo "1..0 # SKIP pdlang was built without cairo"
  exit 0
fi
echo "1..10"
i=0
report() { # $1: 0 = ok, $2: the test's name, $3: a file to show on failure
  i=$((i + 1))
  if [ "$1" -eq 0 ]; then echo "ok $i - $2"
  else echo "not ok $i - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3"; fi
}
size() { # the PNG's width x height, from its IHDR chunk
  od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%dx%d", (($1 * 256 + $2) * 256 + $3) * 256 + $4,
                                               (($5 * 256 + $6) * 256 + $7) * 256 + $8 }'
}
awk 'BEGIN { srand(5); print "f1,f2,label";
  for (i = 0; i < 96; i++) { a = rand() * 4 - 2; b = rand() * 4 - 2;
    printf "%.4f,%.4f,%d\n", a, b, (a - b > 0) } }' > points.csv
cat > a.pd <<'PD'
import "layers"
x     = data("features", [-1, 2])
label = data("label", [-1, 1], int64)
y     = fc(fc(x, 8, act = tanh), 2)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("points.csv", label = "label"), batch = 16, epochs = 4,
      optimizer = sgd(0.3), valid = csv("points.csv", label = "label"),
      metrics = [accuracy(y, label)], plot = "curves.png")
PD
"$PDLANG" run --progress=none a.pd > a.out 2> a.err
[ "$(size curves.png)" = 900x560 ] && [ "$(grep -c '^epoch,' curves.csv)" -eq 4 ]
report $? "train(..., plot = \"curves.png\"): a 900 x 560 picture (2 panels) and its log curves.csv" a.err
"$PDLANG" plot curves.csv -o again.png > p.out 2> p.err
[ $? -eq 0 ] && [ ! -s p.err ] && [ "$(size again.png)" = 900x560 ]
report $? "pdlang plot draws the same log" p.err
"$PDLANG" plot curves.csv -o small.png --width 320 --height 200 2> p.err
[ "$(size small.png)" = 320x200 ]
report $? "--width and --height" p.err
"$PDLANG" plot curves.csv -o logy.png --log-y 2> p.err
[ $? -eq 0 ] && [ "$(size logy.png)" = 900x560 ] && ! cmp -s logy.png again.png
report $? "--log-y: another picture of the same size (tests/lang/test_plot checks its axis)" p.err
printf 'epoch,loss\n1,2\n' > other.csv
"$PDLANG" plot other.csv -o x.png 2> p.err
rc=$?
[ $rc -eq 1 ] && grep -q '^other.csv:1: error: not a train log' p.err && [ ! -e x.png ]
report $? "a file that is not a train log: an error at its FILE:LINE, status 1, no picture" p.err
printf 'kind,epoch,step,loss\nstep,1,1,0.5\nstep,1,2,0.4\nstep,1,3,zero\n' > cell.csv
"$PDLANG" plot cell.csv -o x.png 2> p.err
[ $? -eq 1 ] && grep -qx 'cell.csv:4: error: a cell is not a number: column loss, value "zero"' p.err
report $? "a cell that is not a number: FILE:LINE:, its column and value" p.err
grep -v ',3,' cell.csv > part.csv && printf 'step,1,' >> part.csv
"$PDLANG" plot part.csv -o part.png 2> p.err
[ $? -eq 0 ] && [ ! -s p.err ] && [ -s part.png ]
report $? "a log whose last line is still being written draws without it" p.err
"$PDLANG" plot nothing.csv -o x.png 2> p.err
[ $? -eq 1 ] && grep -q 'nothing.csv' p.err
report $? "a missing log: an error naming it, status 1" p.err
"$PDLANG" plot curves.csv 2> p.err
[ $? -eq 2 ] && grep -q '^usage: pdlang plot' p.err
report $? "no -o: the usage, status 2" p.err
"$PDLANG" plot curves.csv -o x.png --width 5 2> p.err
[ $? -eq 2 ] && grep -q 'from 16 to 10000' p.err
report $? "a width out of range: status 2, saying so" p.err
