#!/bin/sh
# finetune.sh -- examples/finetune.pd: the shapes model of examples/images.pd imported as a
# layer with a new head for the four corners of make_shapes: the fine-tuned model beats the
# same head on its frozen features (by 0.05 of test accuracy at least; measured: 0.99 against
# 0.79), the frozen copy's parameters do not move, the saved model runs in `pdlang exec` on
# image files; and when PDLANG_PADDLE_PYTHON names a Python with paddlepaddle, PaddlePaddle
# loads the fine-tuned model and agrees with pdlang on its inputs (1e-4). TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
: "${top_builddir:?top_builddir must name the build tree}"
echo "1..6"
dir=${TMPDIR:-/tmp}/pd_finetune.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
"$top_builddir/tests/vm/reader/make_shapes" shapes
rc=$?
if [ $rc -eq 77 ]; then
  for i in 1 2 3 4 5 6; do echo "ok $i # SKIP built without libpng or libjpeg"; done
  exit 0
fi
[ $rc -eq 0 ] && "$top_builddir/tests/vm/reader/make_shapes" corners 30 corners ||
  { echo "Bail out! make_shapes failed"; exit 1; }
cp "$top_srcdir/examples/images.pd" "$top_srcdir/examples/finetune.pd" .
"$PDLANG" run --progress=none images.pd > images.out 2>&1 ||
  { echo "Bail out! examples/images.pd failed"; sed 's/^/# /' images.out; exit 1; }
"$PDLANG" run --progress=none finetune.pd > run.out 2> run.err
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - examples/finetune.pd runs"
else echo "not ok 1 - examples/finetune.pd exits $rc"; sed 's/^/# /' run.err | head -20; fi
a0=$(sed -n 's/^eval: accuracy(y0, label) = \([0-9.]*\) (80 samples.*/\1/p' run.out)
a1=$(sed -n 's/^eval: accuracy(y1, label) = \([0-9.]*\) (80 samples.*/\1/p' run.out)
if [ -n "$a0" ] && [ -n "$a1" ] && awk -v a="$a0" -v b="$a1" 'BEGIN { exit !(b >= a + 0.05 && b > 0.9) }'
then echo "ok 2 - fine-tuned $a1 beats the frozen model's features $a0"
else echo "not ok 2 - fine-tuned '$a1', frozen '$a0'"; sed 's/^/# /' run.out; fi

# The frozen model's parameters are the file's: saved with its output before and after a head
# on it is trained, they are the same bytes.
cat > frozen.pd <<'PD'
import "layers"
x = data("images", [-1, 3, 16, 16])
label = data("label", [-1, 1], int64)
m = import_model("shapes.pdmodel", trainable = false)
y = m(x)
save("frozen_before.pdmodel", y)
h = fc(reduce_mean(m.layer("max_pool_1.pool2d.tmp_0"), [2, 3]), 4)
train(mean(softmax_with_cross_entropy(h, label)), epochs = 2, optimizer = adam(0.01),
      reader = images("corners/train", shape = [3, 16, 16], mean = 0.25, std = 0.3))
save("frozen_after.pdmodel", y)
PD
if "$PDLANG" run --progress=none frozen.pd > f.log 2>&1 && [ -s frozen_before.pdiparams ] &&
   cmp -s frozen_before.pdiparams frozen_after.pdiparams
then echo "ok 3 - training a head leaves the frozen model's parameters as they were"
else echo "not ok 3 - the frozen model's parameters moved"; sed 's/^/# /' f.log | head; fi

# The fine-tuned model runs on image files (save wrote corners.preprocess): the four corners.
ok=1
for c in down_left down_right up_left up_right; do
  "$PDLANG" exec corners.pdmodel --feed "images=corners/test/$c/001.png" --out "y1=$c.npy" > "$c.log" 2>&1 || ok=0
done
if [ $ok = 1 ] && [ -s up_left.npy ]; then echo "ok 4 - pdlang exec runs corners.pdmodel on image files"
else echo "not ok 4 - exec of corners.pdmodel"; sed 's/^/# /' down_left.log | head; fi

py=${PDLANG_PADDLE_PYTHON:-}
if [ -z "$py" ]; then
  echo "ok 5 # SKIP PaddlePaddle loads it: PDLANG_PADDLE_PYTHON is not set"
  echo "ok 6 # SKIP PaddlePaddle agrees: PDLANG_PADDLE_PYTHON is not set"
  exit 0
fi
mkdir -p paddle
if "$py" "$top_srcdir/tests/interop/paddle_run.py" "$dir/corners" paddle > paddle.log 2>&1
then echo "ok 5 - PaddlePaddle loads the fine-tuned model"
else echo "not ok 5 - PaddlePaddle loads the fine-tuned model"; tail -5 paddle.log | sed 's/^/# /'; fi
if "$PDLANG" exec corners.pdmodel --feed images=paddle/in_images.npy --out y1=mine.npy > mine.log 2>&1 &&
   "$top_builddir/tests/interop/test_interop" --compare mine.npy paddle/out_y1.npy 1e-4 > cmp.log 2>&1
then echo "ok 6 - PaddlePaddle's outputs equal pdlang's"
else echo "not ok 6 - PaddlePaddle's outputs"; cat mine.log cmp.log | sed 's/^/# /' | head; fi
