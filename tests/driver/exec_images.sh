#!/bin/sh
# exec_images.sh -- preprocessing travels with a model: save writes MODEL.preprocess beside a
# model whose input an images(...) reader fed (the input, the shape, mean and std), and
# `pdlang exec MODEL --feed images=A.png[,B.png...]` turns image files into that input as the
# reader did: its output for an image is predict's for the same image, byte for byte; several
# files are a batch; an input declared flat ([-1, C * H * W]) takes them reshaped; a model
# saved without an images reader, and a missing file, are errors saying so. Skips without
# libpng or libjpeg. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_builddir:?top_builddir must name the build tree}"
dir=${TMPDIR:-/tmp}/pd_exec_images.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$top_builddir/tests/vm/reader/make_shapes" shapes
rc=$?
if [ $rc -eq 77 ]; then echo "1..0 # SKIP built without libpng or libjpeg"; exit 0; fi
[ $rc -eq 0 ] || { echo "Bail out! make_shapes failed ($rc)"; exit 1; }
echo "1..7"
n=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }
mkdir -p one/cross && cp shapes/test/cross/000.png one/cross/
cat > m.pd <<'PD'
import "layers"
x     = data("images", [-1, 3, 16, 16])
label = data("label", [-1, 1], int64)
y     = fc(max_pool(conv(x, 8, 3, padding = 1, act = relu), 2), 3)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = images("shapes/train", shape = [3, 16, 16], mean = 0.25, std = 0.3),
      batch = 16, epochs = 1, optimizer = adam(0.01), seed = 1)
save("shapes.pdmodel", y)
predict(y, reader = images("one", shape = [3, 16, 16], mean = 0.25, std = 0.3), out = "p.npy",
        batch = 1)
PD
"$PDLANG" run --progress=none m.pd > m.out 2> m.err
printf '%s\n' "input images" "shape 3 16 16" "mean 0.25 0.25 0.25" "std 0.3 0.3 0.3" > want
grep -v '^#' shapes.preprocess | cmp -s - want
t $? "save writes shapes.preprocess: the input, the reader's shape, mean and std"
"$PDLANG" exec shapes.pdmodel --feed images=one/cross/000.png --out y=e.npy > e.out 2> e.err
[ $? = 0 ] && cmp -s p.npy e.npy
t $? "exec --feed images=FILE.png: the output predict gives for the image, byte for byte"
"$PDLANG" exec shapes.pdmodel --feed images=one/cross/000.png,shapes/test/vertical/000.png,one/cross/000.png > b.out 2> b.err
grep -q '^y: Tensor(shape=\[3, 3\], dtype=float32)$' b.out &&
  [ "$(sed -n 2p b.out | tr -d '[], ')" = "$(sed -n 4p b.out | tr -d '[], ')" ]
t $? "files separated by commas are a batch, in order" 
sed -e 's/data("images", \[-1, 3, 16, 16\])/data("images", [-1, 768])/' \
    -e 's/max_pool(conv(x, 8, 3, padding = 1, act = relu), 2)/x/' \
    -e 's/shapes.pdmodel/flat.pdmodel/' -e 's/"p.npy"/"pf.npy"/' m.pd > flat.pd
"$PDLANG" run --progress=none flat.pd > f.out 2> f.err &&
  "$PDLANG" exec flat.pdmodel --feed images=one/cross/000.png --out y=ef.npy > /dev/null 2>&1 &&
  cmp -s pf.npy ef.npy
t $? "an input declared [-1, 768] takes the image reshaped"
printf 'x = data("x", [-1, 768])\ny = x * 2\nsave("plain.pdmodel", y)\n' > plain.pd
"$PDLANG" run plain.pd > /dev/null 2>&1
"$PDLANG" exec plain.pdmodel --feed x=one/cross/000.png > pl.out 2> pl.err
[ $? = 1 ] && grep -q "^pdlang exec: --feed x=one/cross/000.png: an image file, but the model has no image preprocessing for input x" pl.err
t $? "a model saved without an images reader: an image file is refused, saying why" 
"$PDLANG" exec shapes.pdmodel --feed images=nope.png > no.out 2> no.err
[ $? = 1 ] && grep -q "nope.png" no.err
t $? "a missing image file: an error naming it"
[ ! -e plain.preprocess ] && [ -e flat.preprocess ]
t $? "only a model an images reader fed gets a .preprocess"
