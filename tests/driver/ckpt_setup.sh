#!/bin/sh
# ckpt_setup.sh -- a checkpoint resumes only into the training setup that wrote it (issue 26):
# the same script resumes (more epochs are the same setup); another optimizer, an extra
# parameter, another program with the same parameters, another batch size, drop_last (which
# can change the steps of an epoch) are refused at the checkpoint argument, saying what
# differs, and leave the checkpoint as it was. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_setup.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..7"
printf 'x1,x2,t\n1,2,1.5\n3,4,0.5\n5,6,1.5\n7,8,0.5\n' > r.csv
script() { # $1: the cost's expression, $2: epochs, $3: optimizer, $4: batch, $5: extra line
  cat <<PD
x = data("x", [-1, 2])
t = data("t", [-1, 1])
w = param([2, 1], name = "w")
$5
cost = mean($1)
train(cost, reader = csv("r.csv", label = "t"), batch = $4, epochs = $2, optimizer = $3, shuffle = false, checkpoint = "c.ckpt")
PD
}
sq='square(x @ w - t)'
script "$sq" 1 'sgd(0.01)' 2 '' > a.pd
"$PDLANG" run --progress=none a.pd > /dev/null 2> a.err || { echo "# a.pd failed"; sed 's/^/# /' a.err; }
cp c.ckpt c.orig
script "$sq" 2 'sgd(0.01)' 2 '' > b.pd
"$PDLANG" run b.pd > b.out 2> b.err
rc=$?
if [ $rc -eq 0 ] && cat b.out b.err | grep -q "resuming from c.ckpt: epoch 2"; then echo "ok 1 - the same setup resumes"
else echo "not ok 1 - resume (rc $rc)"; sed 's/^/# /' b.out b.err; fi
cp c.orig c.ckpt
refused() { # $1: test number, $2: what, $3: the script, $4: a text the message must hold
  "$PDLANG" run --progress=none "$3" > r.out 2> r.err
  rc=$?
  col=$(awk 'NR == 6 { print index($0, "checkpoint =") }' "$3")
  if [ $rc -eq 1 ] && head -n 1 r.err | grep -q "^$3:6:$col: error: checkpoint: c.ckpt: written by another training setup:.*$4" &&
     cmp -s c.ckpt c.orig
  then echo "ok $1 - $2 is refused: $(head -n 1 r.err | sed 's/.*setup: //')"
  else echo "not ok $1 - $2 (rc $rc)"; sed 's/^/# /' r.err; fi
}
script "$sq" 2 'adam(0.01)' 2 '' > c.pd
refused 2 "another optimizer" c.pd "the optimizer is sgd(lr=0.01) in the checkpoint but adam(lr=0.01, beta1=0.9, beta2=0.999, epsilon=1e-08) now"
script "square(x @ w + b - t)" 2 'sgd(0.01)' 2 'b = param([1], name = "b")' > d.pd
refused 3 "an extra parameter" d.pd "the parameter list differs"
script "abs(x @ w - t)" 2 'sgd(0.01)' 2 '' > e.pd
refused 4 "another program" e.pd "the training program differs"
script "$sq" 2 'sgd(0.01)' 4 '' > f.pd
refused 5 "another batch size" f.pd "the reader is csv(path = \"r.csv\", label = \"t\"), batch 2 in the checkpoint but .*batch 4 now"
script "$sq" 2 'sgd(0.02)' 2 '' > g.pd
refused 6 "another learning rate" g.pd "the optimizer is sgd(lr=0.01) in the checkpoint but sgd(lr=0.02) now"
script "$sq" 2 'sgd(0.01)' '2, drop_last = true' '' > h.pd
refused 7 "drop_last" h.pd "the reader is csv(path = \"r.csv\", label = \"t\"), batch 2 in the checkpoint but .*batch 2, drop_last now"
