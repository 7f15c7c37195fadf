#!/bin/sh
# stale_temps.sh -- temporaries NAME.tmp.PID that killed writers left behind (issue 26) are
# removed by the next save of NAME when PID no longer exists: a parameter file, an inference
# pair and a checkpoint; those of a live process, and other names, are kept. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_temps.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..4"
# A PID that exists no more: a finished child's (and one above any pid_max, never alive).
dead=$(sh -c 'echo $$')
never=2147483646
live=$$
for f in p.params m.pdmodel m.pdiparams c.ckpt; do
  : > "$f.tmp.$dead"; : > "$f.tmp.$never"; : > "$f.tmp.$live"
done
: > other.params.tmp.$dead
: > p.params.tmp.x$dead
printf 'x1,x2,t\n1,2,1.5\n3,4,0.5\n' > r.csv
cat > s.pd <<'PD'
x = data("x", [-1, 2])
t = data("t", [-1, 1])
w = param([2, 1], name = "w")
y = x @ w
cost = mean(square(y - t))
train(cost, reader = csv("r.csv", label = "t"), batch = 2, epochs = 1, checkpoint = "c.ckpt")
save("p.params")
save("m.pdmodel", y)
PD
"$PDLANG" run --progress=none s.pd > s.out 2> s.err || { echo "# s.pd failed"; sed 's/^/# /' s.err; }
gone=yes
for f in p.params m.pdmodel m.pdiparams c.ckpt; do
  for p in $dead $never; do [ -e "$f.tmp.$p" ] && gone="no ($f.tmp.$p)"; done
done
if [ "$gone" = yes ]; then echo "ok 1 - the dead writers' temporaries are removed"
else echo "not ok 1 - left: $gone"; fi
kept=yes
for f in p.params m.pdmodel m.pdiparams c.ckpt; do [ -e "$f.tmp.$live" ] || kept="no ($f.tmp.$live)"; done
if [ "$kept" = yes ]; then echo "ok 2 - a live process's are kept"; else echo "not ok 2 - removed: $kept"; fi
if [ -e other.params.tmp.$dead ] && [ -e p.params.tmp.x$dead ]; then echo "ok 3 - other names are kept"
else echo "not ok 3 - another name's temporary was removed"; fi
if [ -s p.params ] && [ -s m.pdmodel ] && [ -s m.pdiparams ] && [ -s c.ckpt ]; then echo "ok 4 - and the files are written"
else echo "not ok 4 - files missing"; ls | sed 's/^/# /'; fi
