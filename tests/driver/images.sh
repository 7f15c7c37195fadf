#!/bin/sh
# images.sh -- examples/images.pd on the image folder tests/vm/reader/make_shapes writes (180 training
# images of 3 classes, PNG and JPEG of several sizes): it runs, names the classes, learns
# (test accuracy above 0.85, where chance is 1/3); the same --seed gives the same losses, another
# seed or no augmentation other ones; and every bad folder is an error at the reader's .pd line
# naming the file or folder: a file that is not an image, a truncated PNG, a corrupt JPEG, an
# empty folder, a class folder without images; and the compiler's checks of the arguments.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
: "${top_builddir:?top_builddir must name the build tree}"
echo "1..13"
dir=${TMPDIR:-/tmp}/pd_images.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$top_builddir/tests/vm/reader/make_shapes" shapes
rc=$?
if [ $rc -eq 77 ]; then
  for i in $(seq 1 13); do echo "ok $i # SKIP built without libpng or libjpeg"; done
  exit 0
fi
[ $rc -eq 0 ] || { echo "Bail out! make_shapes failed ($rc)"; exit 1; }
cp "$top_srcdir/examples/images.pd" .
"$PDLANG" run --progress=lines images.pd > run.out 2> run.err
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - examples/images.pd runs"
else echo "not ok 1 - examples/images.pd exits $rc"; sed 's/^/# /' run.err | head -20; fi
if grep -q '^images: shapes/train: 180 images in 3 classes: 0 cross, 1 horizontal, 2 vertical$' run.err
then echo "ok 2 - the classes are listed with their numbers"
else echo "not ok 2 - no class list"; sed 's/^/# /' run.err | head -5; fi
acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\) (60 samples.*/\1/p' run.out)
if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a > 0.85) }'; then
  echo "ok 3 - test accuracy $acc > 0.85"
else
  echo "not ok 3 - accuracy '$acc', want > 0.85"; sed 's/^/# /' run.out
fi
[ -s shapes.pdmodel ] && echo "ok 4 - the model is saved" || echo "not ok 4 - no shapes.pdmodel"

# Determinism: the losses of a seed (augmentations included) are the same run after run.
losses() { "$PDLANG" run --progress=lines --seed "$2" "$1" 2>&1 | sed -n 's/^epoch \([0-9]*\)\/12: loss \([0-9.]*\).*/\1 \2/p'; }
a=$(losses images.pd 5); b=$(losses images.pd 5); c=$(losses images.pd 6)
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "ok 5 - the same --seed gives the same losses"
else echo "not ok 5 - --seed 5 twice: '$a' / '$b'"; fi
if [ "$a" != "$c" ]; then echo "ok 6 - another seed gives other losses"
else echo "not ok 6 - seeds 5 and 6 gave the same losses"; fi
sed -e 's/crop_padding = 2,/crop_padding = 0,/' -e 's/flip = true/flip = false/' images.pd > plain.pd
d=$(losses plain.pd 5)
if [ -n "$d" ] && [ "$d" != "$a" ]; then echo "ok 7 - without crop_padding and flip the losses differ"
else echo "not ok 7 - augmentation made no difference ('$d')"; sed 's/^/# /' plain.pd; fi

# Errors at the reader's line, naming the file or folder.
bad() {  # bad N WHAT FOLDER PATTERN: a script reading FOLDER fails with PATTERN at line 5
  cat > bad.pd <<PD
import "layers"
x = data("images", [-1, 1, 8, 8])
label = data("label", [-1, 1], int64)
cost = mean(softmax_with_cross_entropy(fc(x, 2), label))
train(cost, reader = images("$3", shape = [1, 8, 8]), epochs = 1)
PD
  "$PDLANG" run --progress=none bad.pd > bad.out 2> bad.err
  rc=$?
  if [ $rc -eq 1 ] && grep -q "^bad.pd:5:29: error: images: .*$4" bad.err && grep -q '\^' bad.err
  then echo "ok $1 - $2"
  else echo "not ok $1 - $2 (rc $rc)"; sed 's/^/# /' bad.err | head -5; fi
}
mkdir -p notimg/a && cp shapes/train/cross/000.png notimg/a/ && echo hello > notimg/a/notes.txt
bad 8 "a text file in a class folder" notimg "notimg/a/notes.txt is neither a PNG nor a JPEG file"
mkdir -p trunc/a && head -c 200 shapes/train/cross/000.png > trunc/a/t.png
bad 9 "a truncated PNG" trunc "trunc/a/t.png: corrupt PNG"
mkdir -p badjpg/a && head -c 300 shapes/train/cross/002.jpg > badjpg/a/j.jpg
bad 10 "a truncated JPEG" badjpg "badjpg/a/j.jpg: corrupt JPEG"
mkdir -p empty
bad 11 "an empty folder" empty "'empty' has no class folders"
mkdir -p noimg/a noimg/b && cp shapes/train/cross/000.png noimg/a/
bad 12 "a class folder without images" noimg "the class folder 'noimg/b' has no images"

# The compiler checks the arguments before anything runs.
cat > args.pd <<'PD'
x = data("images", [-1, 1, 8, 8])
r1 = images("shapes/train", shape = [2, 8, 8])
r2 = images("shapes/train", shape = [3, 8])
r3 = images("shapes/train", shape = [3, 8, 8], std = [1, 0, 1])
r4 = images("shapes/train", shape = [1, 8, 8], crop_padding = -1)
r5 = images("shapes/train", shape = [1, 8, 8], split = "test")
PD
"$PDLANG" run --progress=none args.pd > args.out 2> args.err
n=$(grep -c '^args.pd:[2-6]:[0-9]*: error: images: ' args.err)
if [ "$n" -eq 5 ] && grep -q "args.pd:2:29: error: images: an image has 1 (grey), 3 (RGB) or 4 (RGBA) channels, not 2" args.err
then echo "ok 13 - five bad arguments, five errors at their arguments"
else echo "not ok 13 - $n errors"; sed 's/^/# /' args.err; fi
