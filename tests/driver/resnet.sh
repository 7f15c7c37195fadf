#!/bin/sh
# resnet.sh -- examples/resnet.pd in a short form: one epoch over Fashion-MNIST's 10,000 test
# images instead of three over the 60,000 training ones (about 12 s here), then eval in test
# mode (batch norm's running statistics): the residual network with batch norm has learned
# (accuracy above 0.6, where chance is 0.1; it reaches about 0.78), and the saved model gives
# the same class for an image through `pdlang exec` as eval's accuracy implies it can. Needs
# the Debian package dataset-fashion-mnist.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
echo "1..3"
if [ ! -r /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
  for i in 1 2 3; do echo "ok $i # SKIP no Fashion-MNIST (dataset-fashion-mnist)"; done
  exit 0
fi
dir=${TMPDIR:-/tmp}/pd_resnet.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
sed -e 's/epochs = 3,/epochs = 1,/' -e 's/fashion_mnist("train")/fashion_mnist("test")/' \
  -e 's#save("resnet.pdmodel"#save("'"$dir"'/resnet.pdmodel"#' \
  "$top_srcdir/examples/resnet.pd" > "$dir/short.pd"
if ! grep -q 'epochs = 1,' "$dir/short.pd" || ! grep -q "$dir/resnet.pdmodel" "$dir/short.pd"; then
  echo "not ok 1 - examples/resnet.pd has no 'epochs = 3,' or save(\"resnet.pdmodel\" to rewrite"
  exit 0
fi
out=$("$PDLANG" run --progress=none "$dir/short.pd" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - examples/resnet.pd runs (1 epoch on 10,000 images)"
else echo "not ok 1 - examples/resnet.pd exits $rc"; echo "$out" | sed 's/^/# /' | head -20; fi
acc=$(echo "$out" | sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\) (10000 samples.*/\1/p')
if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a > 0.6) }'; then
  echo "ok 2 - accuracy $acc > 0.6"
else
  echo "not ok 2 - accuracy '$acc', want > 0.6"; echo "$out" | sed 's/^/# /'
fi
# The saved model classifies one image on its own: in training mode batch norm refuses a batch
# of one row, so ten finite logits out of a one-image batch show that it normalises with the
# running statistics (an all-black image: float32 zeros).
{ printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 28, 28), }"
  printf '%*s\n' 50 ''
  head -c 3136 /dev/zero; } > "$dir/black.npy"
"$PDLANG" exec "$dir/resnet.pdmodel" --feed images="$dir/black.npy" > "$dir/e.out" 2> "$dir/e.err"
rc=$?
n=$(grep '^\[' "$dir/e.out" | tr -d '[],' | awk '{ for (i = 1; i <= NF; i++) if ($i + 0 == $i && $i != "nan" && $i != "inf" && $i != "-inf") n++ } END { print n + 0 }')
if [ $rc -eq 0 ] && [ "$n" -eq 10 ]; then
  echo "ok 3 - pdlang exec classifies a batch of one image (10 finite logits)"
else
  echo "not ok 3 - exec: rc $rc, $n finite numbers"; sed 's/^/# /' "$dir/e.out" "$dir/e.err"
fi
