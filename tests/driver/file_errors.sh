#!/bin/sh
# file_errors.sh -- the file errors of save, load and train's checkpoint (issue 26) point at the
# action's line and the argument that named the file ("s.pd:4:6: error: load: ..."), for a
# missing file, garbage, another program's parameters, a wrong shape, a directory, a missing or
# read-only folder, and a damaged, truncated or empty checkpoint or one of another program's
# shapes. TAP output; the read-only cases are skipped as root (root writes anywhere).
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_ferr.$$
mkdir -p "$dir" && trap 'chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
root=no
[ "$(id -u)" = 0 ] && root=yes
printf 'x1,x2,t\n1,2,1.5\n3,4,0.5\n5,6,1.5\n7,8,0.5\n' > r.csv
# $1: the action line (line 5), $2: the text its error must point at, $3: what is tested,
# $4 (optional): the w shape. The error's first line must be s.pd:5:COL where COL is $2's column.
expect() {
  n=$((n + 1))
  cat > s.pd <<PD
x = data("x", [-1, 2])
t = data("t", [-1, 1])
w = param(${4:-[2, 1]}, name = "w")
cost = mean(square(x @ w - t))
$1
PD
  col=$(awk -v s="$2" 'NR == 5 { print index($0, s) }' s.pd)
  "$PDLANG" run --progress=none s.pd > s.out 2> s.err
  rc=$?
  first=$(head -n 1 s.err)
  case "$first" in
  "s.pd:5:$col: error: "*) if [ $rc -eq 1 ]; then echo "ok $n - $3: $first"
    else echo "not ok $n - $3: exit status $rc"; fi ;;
  *) echo "not ok $n - $3 (want s.pd:5:$col, exit status 1; got $rc)"; sed 's/^/# /' s.err ;;
  esac
}
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
train='train(cost, reader = csv("r.csv", label = "t"), batch = 2, shuffle = false'

echo "1..14"
# Files to load: parameters of this program, of another one, of another shape; garbage.
printf 'x = data("x", [-1, 2])\nw = param([2, 1], name = "w")\nsave("good.pdiparams")\n' > g.pd
printf 'v = param([2, 1], name = "v")\nu = param([3], name = "u")\nsave("other.pdiparams")\n' > o.pd
printf 'x = data("x", [-1, 3])\nw = param([3, 1], name = "w")\nsave("shape.pdiparams")\n' > h.pd
for f in g o h; do "$PDLANG" run "$f.pd" || echo "# cannot make the files of $f.pd"; done
echo 'not a parameter file at all' > garbage.pdiparams
mkdir adir ro && chmod a-w ro
expect 'load("missing.pdiparams")' '"missing' "load: a missing file"
expect 'load("garbage.pdiparams")' '"garbage' "load: garbage"
expect 'load("other.pdiparams")' '"other' "load: another program's parameters"
expect 'load("shape.pdiparams")' '"shape' "load: a wrong shape"
expect 'load("adir")' '"adir' "load: a directory"
expect 'save("adir")' '"adir' "save: a directory"
expect 'save("nodir/m.pdmodel", cost)' '"nodir' "save: a missing folder"
if [ $root = yes ]; then skip "save: a read-only folder (root writes anywhere)"
else expect 'save("ro/m.pdiparams")' '"ro/' "save: a read-only folder"; fi
# Checkpoints: a good one, then damaged (a byte flipped), truncated, empty; a directory; a
# read-only folder; one of another program's shapes.
cat > c.pd <<PD
x = data("x", [-1, 2])
t = data("t", [-1, 1])
w = param([2, 1], name = "w")
cost = mean(square(x @ w - t))
$train, epochs = 1, checkpoint = "good.ckpt")
PD
"$PDLANG" run --progress=none c.pd > /dev/null || echo "# cannot write good.ckpt"
size=$(wc -c < good.ckpt)
cp good.ckpt flip.ckpt
byte=$(od -An -tu1 -j $((size / 2)) -N1 flip.ckpt | tr -d ' ')
printf "$(printf '\\%03o' $(( (byte + 1) % 256 )))" |
  dd of=flip.ckpt bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
head -c $((size / 2)) good.ckpt > half.ckpt
: > empty.ckpt
cp good.ckpt shape.ckpt
expect "$train, epochs = 2, checkpoint = \"flip.ckpt\")" checkpoint "checkpoint: damaged"
expect "$train, epochs = 2, checkpoint = \"half.ckpt\")" checkpoint "checkpoint: truncated"
expect "$train, epochs = 2, checkpoint = \"empty.ckpt\")" checkpoint "checkpoint: empty"
expect "$train, epochs = 1, checkpoint = \"adir\")" checkpoint "checkpoint: a directory"
if [ $root = yes ]; then skip "checkpoint: a read-only folder (root writes anywhere)"
else expect "$train, epochs = 1, checkpoint = \"ro/c.ckpt\")" checkpoint "checkpoint: a read-only folder"; fi
expect "$train, epochs = 2, checkpoint = \"shape.ckpt\")" checkpoint \
  "checkpoint: another program's shapes" "[2, 2]"
