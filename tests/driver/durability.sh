#!/bin/sh
# durability.sh -- what save and plot write survives a kill -9 and a full disk (issue 44). A
# model saved with its .categories and .preprocess (an images reader and a categorical CSV in
# the run) is saved again by a run with other parameters, categories and preprocessing, killed
# at spread-out moments: each time the files are the old set or the new one (`pdlang exec` runs
# it), or, in the moment between the renames, new side files beside the old model, with the new
# parameters, which the model refuses (never an old file beside a new model); and the next
# save removes the temporaries the killed one left. `pdlang plot` killed likewise leaves the old
# picture or a whole new one. On a full disk (a small tmpfs, when this runs as root and may
# mount one; skipped otherwise) the save and the plot fail with a message, the old files stay
# byte for byte, and no temporary is left. Skips without libpng. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_builddir:?top_builddir must name the build tree}"
dir=${TMPDIR:-/tmp}/pd_durability.$$
mnt=$dir/full
mkdir -p "$dir" && trap 'umount "$mnt" 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$top_builddir/tests/vm/reader/make_shapes" shapes > /dev/null
rc=$?
if [ $rc -eq 77 ]; then echo "1..0 # SKIP built without libpng or libjpeg"; exit 0; fi
[ $rc -eq 0 ] || { echo "Bail out! make_shapes failed ($rc)"; exit 1; }
echo "1..8"
n=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }

# Two runs that save m.pdmodel: other seeds (parameters), CSV values (categories) and mean/std
# (preprocessing); run B saves 30 times over, so that kills land in its saves.
printf 'size,colour,kind\n' > a.csv
for i in 0 1 2 3 4 5 6 7; do echo "0.$i,$(echo red green blue | cut -d' ' -f$((i % 3 + 1))),k$((i % 2))"; done >> a.csv
sed 's/blue/violet/' a.csv > b.csv
script() { # $1: seed, $2: csv, $3: mean, $4: saves, $5: the model's path
  cat <<PD
import "layers"
x = data("images", [-1, 3, 16, 16])
label = data("label", [-1, 1], int64)
y = fc(reshape(x, [-1, 768]), 3, act = relu)
y = fc(y, 3)
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = images("shapes/train", shape = [3, 16, 16], mean = $3, std = 0.3),
      batch = 32, epochs = 1, optimizer = sgd(0.01), seed = $1)
f = data("features", [-1, 4])
kind = data("kind", [-1, 1], int64)
z = fc(f, 2)
loss = mean(softmax_with_cross_entropy(z, kind))
train(loss, reader = csv("$2", label = "kind", categorical = ["colour", "kind"]), batch = 4,
      epochs = 1, optimizer = sgd(0.1), seed = $1)
for (i in range($4)) {
  save("$5", y)
}
PD
}
script 1 a.csv 0.25 1 m.pdmodel > a.pd
script 2 b.csv 0.5 30 m.pdmodel > b.pd
files="m.pdmodel m.pdiparams m.categories m.preprocess"
"$PDLANG" run --progress=none b.pd > b.out 2>&1 || sed 's/^/# /' b.out
for f in $files; do cp "$f" "new.${f#m.}"; done
t0=$(date +%s%N)
"$PDLANG" run --progress=none a.pd > a.out 2>&1 || sed 's/^/# /' a.out
span=$((($(date +%s%N) - t0) / 1000000 * 3))   # B's run, about (ms): A's and B's 29 more saves
for f in $files; do cp "$f" "old.${f#m.}"; done
cmp -s old.pdiparams new.pdiparams || cmp -s old.categories new.categories ||
  cmp -s old.preprocess new.preprocess
t $((! $?)) "the two runs save different parameters, categories and preprocessing"

# One file of the set: old, new, or something else.
which() { # $1: the suffix
  if cmp -s "m.$1" "old.$1"; then echo old; elif cmp -s "m.$1" "new.$1"; then echo new; else echo other; fi
}
bad=0 mixed=0 kills=0 temps=0
for k in $(seq 1 20); do
  for f in $files; do cp "old.${f#m.}" "$f"; done
  "$PDLANG" run --progress=none b.pd > /dev/null 2>&1 &
  pid=$!
  ms=$((span * k / 21))
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  kill -9 $pid 2>/dev/null && kills=$((kills + 1))
  wait $pid 2>/dev/null
  set -- "$(which pdmodel)" "$(which pdiparams)" "$(which categories)" "$(which preprocess)"
  case "$*" in
    "old old old old"|"new new new new") ;;
    # Between the renames (side files, then parameters, then the model):
    "old old new old"|"old old new new"|"old new new new") mixed=$((mixed + 1)) ;;
    *) bad=$((bad + 1)); echo "# kill $k after $ms ms: model, parameters, categories, preprocess: $*" ;;
  esac
  # The model runs with its parameters; an old model beside new parameters is refused.
  "$PDLANG" exec m.pdmodel --feed images=shapes/test/cross/000.png > e.out 2>&1
  rc=$?
  if [ "$1" = "$2" ] && [ $rc -ne 0 ]; then
    bad=$((bad + 1)); echo "# kill $k: the model does not run:"; sed 's/^/#   /' e.out
  elif [ "$1" != "$2" ] && { [ $rc -eq 0 ] || ! grep -q "not the parameter file saved with this model" e.out; }; then
    bad=$((bad + 1)); echo "# kill $k: a $1 model beside $2 parameters is not refused:"; sed 's/^/#   /' e.out
  fi
  ls m.*.tmp.* > /dev/null 2>&1 && temps=$((temps + 1))
done
t $bad "kill -9 during 20 saves ($kills killed, $mixed between renames): the old set or the new one, which runs (between the renames new side files beside the old model, whose new parameters it refuses)"
"$PDLANG" run --progress=none a.pd > /dev/null 2>&1
left=$(ls m.*.tmp.* 2>/dev/null)
t $([ -z "$left" ]; echo $?) "the next save removes what the killed saves left ($temps times some)"

# plot: a log of 2000 rows, drawn over an old picture, killed at spread-out moments.
awk 'BEGIN { print "kind,epoch,step,loss"; for (i = 1; i <= 2000; i++) printf "step,%d,%d,%.4f\n", 1 + int(i / 200), i, 1 / (1 + i / 100) }' > log.csv
printf 'kind,epoch,step,loss\nstep,1,1,0.5\nepoch,1,1,0.5\n' > tiny.csv
if "$PDLANG" plot tiny.csv -o old.png > p.out 2>&1; then
  "$PDLANG" plot log.csv -o new.png > /dev/null 2>&1
  t0=$(date +%s%N)
  "$PDLANG" plot log.csv -o c.png > /dev/null 2>&1
  span=$((($(date +%s%N) - t0) / 1000000))
  bad=0
  for k in 1 2 3 4 5 6 7 8; do
    cp old.png c.png
    "$PDLANG" plot log.csv -o c.png > /dev/null 2>&1 &
    pid=$!
    ms=$((span * k / 9))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    cmp -s c.png old.png || cmp -s c.png new.png || { bad=$((bad + 1)); echo "# plot killed after $ms ms: c.png is neither"; }
  done
  "$PDLANG" plot tiny.csv -o c.png > /dev/null 2>&1
  left=$(ls c.png.tmp.* 2>/dev/null)
  t $((bad + $([ -z "$left" ]; echo $?))) "kill -9 during plot: the old picture or the whole new one; the next plot removes the temporaries"
else
  skip "plot: $(head -n 1 p.out)"
fi

# A full disk: a tmpfs holding the old files with less room than another copy needs.
if [ "$(id -u)" = 0 ] && mkdir -p "$mnt" && mount -t tmpfs -o size=300k tmpfs "$mnt" 2>/dev/null; then
  for f in $files; do cp "old.${f#m.}" "$mnt/$f"; done
  cp old.png "$mnt/c.png" 2>/dev/null
  # Fill the rest but 8 KiB.
  dd if=/dev/zero of="$mnt/fill" bs=1k count=10000 2> /dev/null
  rm -f "$mnt/fill"
  avail=$(df -k "$mnt" | awk 'NR == 2 { print $4 }')
  dd if=/dev/zero of="$mnt/fill" bs=1k count=$((avail - 8)) 2> /dev/null
  script 2 b.csv 0.5 1 "$mnt/m.pdmodel" > full.pd
  "$PDLANG" run --progress=none full.pd > full.out 2>&1
  rc=$?
  same=0
  for f in $files; do cmp -s "$mnt/$f" "old.${f#m.}" || same=1; done
  left=$(ls "$mnt" | grep '\.tmp\.')
  if [ $rc -ne 0 ] && grep -q "No space left" full.out && [ $same = 0 ] && [ -z "$left" ]; then
    t 0 "save on a full disk: an error ($(grep -o "cannot write[^:]*: No space left on device" full.out | head -n 1)), the old set intact, no temporary"
  else
    t 1 "save on a full disk: exit $rc, old set intact: $same (0 = yes), temporaries: $left"
    sed 's/^/# /' full.out
  fi
  if [ -f "$mnt/c.png" ]; then
    "$PDLANG" plot log.csv -o "$mnt/c.png" > full.out 2>&1
    rc=$?
    left=$(ls "$mnt" | grep '\.tmp\.')
    cmp -s "$mnt/c.png" old.png && [ $rc -ne 0 ] && grep -q "No space left" full.out && [ -z "$left" ]
    t $? "plot on a full disk: an error, the old picture intact, no temporary"
  else
    skip "plot on a full disk: no cairo"
  fi
  # Room again: the same save succeeds and writes the new set.
  rm -f "$mnt/fill"
  "$PDLANG" run --progress=none full.pd > full.out 2>&1
  rc=$?
  "$PDLANG" exec "$mnt/m.pdmodel" --feed images=shapes/test/cross/000.png > e.out 2>&1
  t $((rc + $?)) "with room again the save succeeds and its model runs"
  cmp -s "$mnt/m.categories" new.categories && cmp -s "$mnt/m.preprocess" new.preprocess
  t $? "  with its new categories and preprocessing"
  umount "$mnt"
else
  for k in 1 2 3 4; do skip "full disk: cannot mount a tmpfs (needs root)"; done
fi
