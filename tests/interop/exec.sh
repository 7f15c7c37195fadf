#!/bin/sh
# exec.sh -- `pdlang exec` on PaddlePaddle's saved models of tests/interop/ (test_interop.c checks
# the same models through the C library): outputs written with --out DIR and --out NAME=FILE agree
# with PaddlePaddle's (test_interop --compare: 1e-5 relative), feeds by name only, a float64 input
# cast with a note, a float16 one too; MODEL given as a path prefix NAME (NAME.pdmodel) or a
# folder holding one *.pdmodel, as PaddlePaddle takes it (two are an error; NAME.json
# alone: PaddlePaddle 3's PIR program, lowered to Fluid's ops);
# and the errors on damaged and foreign files: a truncated PIR JSON, one with unknown ops, a
# truncated __model__, a missing parameter file, one of the wrong shape, one of the wrong dtype,
# a model whose attributes pdlang refuses (every problem listed); the model families of
# tests/interop/zoo. TAP output.
set -u
: "${PDLANG:?}" "${top_srcdir:?}" "${top_builddir:?}"
models=$top_srcdir/tests/interop
compare=$top_builddir/tests/interop/test_interop
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pd-interop.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
check() {  # check DESCRIPTION COMMAND...: ok when COMMAND succeeds
  n=$((n + 1))
  d=$1
  shift
  if "$@" > "$tmp/check.log" 2>&1; then
    echo "ok $n - $d"
  else
    echo "not ok $n - $d"
    sed 's/^/# /' "$tmp/check.log"
    fails=$((fails + 1))
  fi
}
# refuses DESCRIPTION TEXT COMMAND...: COMMAND fails (exit 1) and says TEXT on stderr
refuses() {
  n=$((n + 1))
  d=$1
  want=$2
  shift 2
  "$@" > "$tmp/out.log" 2> "$tmp/err.log"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$tmp/err.log"; then
    echo "ok $n - $d"
  else
    echo "not ok $n - $d (exit $rc; want \"$want\")"
    sed 's/^/# /' "$tmp/err.log"
    fails=$((fails + 1))
  fi
}

mlp=$models/mlp
out=fc_1.tmp_1
check "--out DIR writes every output as DIR/NAME.npy" \
  "$PDLANG" exec "$mlp/fluid_dir" --feed "x=$mlp/in_x.npy" --out "$tmp/outdir"
check "... with PaddlePaddle's values" \
  "$compare" --compare "$tmp/outdir/$out.npy" "$mlp/out_$out.npy"
check "--out NAME=FILE.npy writes that output" \
  "$PDLANG" exec "$mlp/model.pdmodel" --feed "x=$mlp/in_x.npy" --out "$out=$tmp/one.npy"
check "... with PaddlePaddle's values" "$compare" --compare "$tmp/one.npy" "$mlp/out_$out.npy"
check "the printed output is named by its fetch target" \
  sh -c "'$PDLANG' exec '$mlp/fluid_combined' --feed 'x=$mlp/in_x.npy' |
         grep -q '^$out: Tensor(shape=\[3, 4\], dtype=float32)'"
refuses "an unknown feed name is an error, listing the inputs" \
  "pdlang exec: --feed ids: the model has no input of that name" \
  "$PDLANG" exec "$mlp/model.pdmodel" --feed "ids=$mlp/in_x.npy"
refuses "an unknown --out name is an error, listing the outputs" \
  "the model's outputs: $out" \
  "$PDLANG" exec "$mlp/model.pdmodel" --feed "x=$mlp/in_x.npy" --out "y=$tmp/y.npy"
old=$models/mlp_old_attrs
check "--out DIR: a '/' in an output's name (PaddlePaddle 2.x's) becomes '_'" \
  "$PDLANG" exec "$old/model.pdmodel" --feed "x=$old/in_x.npy" --out "$tmp/olddir"
check "... with PaddlePaddle's values" "$compare" --compare \
  "$tmp/olddir/save_infer_model_scale_0.tmp_0.npy" "$old/out_save_infer_model_scale_0.tmp_0.npy"
# x_float64.npy: the input as float64; cast to float32 with a note, the same outputs.
check "a float64 input is cast, with a note naming both dtypes" \
  sh -c "'$PDLANG' exec '$mlp/model.pdmodel' --feed 'x=$mlp/x_float64.npy' --out '$tmp/o64' 2>&1 |
         grep -q 'holds float64; cast to float32, the dtype of input x'"
check "... with PaddlePaddle's values" "$compare" --compare "$tmp/o64/$out.npy" "$mlp/out_$out.npy"
check "a float16 input is cast, with a note naming both dtypes" \
  sh -c "'$PDLANG' exec '$mlp/model.pdmodel' --feed 'x=$mlp/x_float16.npy' 2>&1 |
         grep -q 'holds float16; cast to float32, the dtype of input x (every value exact)'"

# MODEL as PaddlePaddle takes it: a path prefix, a folder holding one *.pdmodel.
check "a path prefix NAME finds NAME.pdmodel" \
  "$PDLANG" exec "$mlp/model" --feed "x=$mlp/in_x.npy" --out "$tmp/prefix"
check "... with PaddlePaddle's values" \
  "$compare" --compare "$tmp/prefix/$out.npy" "$mlp/out_$out.npy"
mkdir "$tmp/one"
cp "$mlp/model.pdmodel" "$mlp/model.pdiparams" "$tmp/one/"
check "a folder holding one *.pdmodel finds it" \
  "$PDLANG" exec "$tmp/one" --feed "x=$mlp/in_x.npy" --out "$tmp/onedir"
check "... with PaddlePaddle's values" \
  "$compare" --compare "$tmp/onedir/$out.npy" "$mlp/out_$out.npy"
cp "$models/lenet/model.pdmodel" "$tmp/one/lenet.pdmodel"
refuses "a folder holding two *.pdmodel: which to run" "holds 2 models" \
  "$PDLANG" exec "$tmp/one" --feed "x=$mlp/in_x.npy"
pir=$models/pir/mlp
check "a PIR program (PaddlePaddle 3's NAME.json) runs, found from a path prefix" \
  "$PDLANG" exec "$pir/model" --feed "x=$pir/in_x.npy" --out "fetch_name_0=$tmp/pir1.npy"
check "... with PaddlePaddle's values" "$compare" --compare "$tmp/pir1.npy" "$pir/out_fetch_name_0.npy"
mkdir "$tmp/pirdir"
cp "$pir/model.json" "$pir/model.pdiparams" "$tmp/pirdir/"
check "... also from a folder holding only a NAME.json" \
  "$PDLANG" exec "$tmp/pirdir" --feed "x=$pir/in_x.npy" --out "fetch_name_0=$tmp/pir2.npy"
check "... with PaddlePaddle's values" "$compare" --compare "$tmp/pir2.npy" "$pir/out_fetch_name_0.npy"

check "pdlang dump of a Fluid model folder lists its __model__" \
  sh -c "'$PDLANG' dump '$mlp/fluid_dir' | grep -q 'op .*: matmul_v2'"
# Damaged and foreign files.
check "a PIR JSON named directly runs" \
  "$PDLANG" exec "$pir/model.json" --feed "x=$pir/in_x.npy" --out "fetch_name_0=$tmp/pir3.npy"
check "... also as NAME.pdmodel missing beside NAME.json" \
  "$PDLANG" exec "$pir/model.pdmodel" --feed "x=$pir/in_x.npy" --out "fetch_name_0=$tmp/pir4.npy"
check "pdlang dump of a PIR JSON lists it lowered to Fluid's ops" \
  sh -c "'$PDLANG' dump '$pir/model.json' | grep -q 'op .*: matmul_v2'"
head -c 700 "$pir/model.json" > "$tmp/pirdir/model.json"
refuses "a truncated PIR JSON: the byte offset" "damaged JSON at byte 700" \
  "$PDLANG" exec "$tmp/pirdir" --feed "x=$pir/in_x.npy"
sed 's/"1.relu"/"1.frobnicate"/; s/"1.softmax"/"1.softmaxx"/' "$pir/model.json" \
  > "$tmp/pirdir/model.json"
refuses "a PIR JSON with ops pdlang lacks: each listed" "op 7 (pd_op.frobnicate)" \
  "$PDLANG" exec "$tmp/pirdir" --feed "x=$pir/in_x.npy"
mkdir "$tmp/trunc"
cp "$mlp/fluid_dir"/* "$tmp/trunc/"
head -c 100 "$mlp/fluid_dir/__model__" > "$tmp/trunc/__model__"
refuses "a truncated __model__" "__model__" "$PDLANG" exec "$tmp/trunc" --feed "x=$mlp/in_x.npy"
mkdir "$tmp/missing"
cp "$mlp/fluid_dir"/* "$tmp/missing/"
rm "$tmp/missing/fc_1.w_0"
refuses "a missing parameter file names the parameter" "no file for parameter 'fc_1.w_0'" \
  "$PDLANG" exec "$tmp/missing" --feed "x=$mlp/in_x.npy"
mkdir "$tmp/shape"
cp "$mlp/fluid_dir"/* "$tmp/shape/"
cp "$mlp/fluid_dir/fc_1.b_0" "$tmp/shape/fc_0.b_0"
refuses "a parameter file of the wrong shape" "fc_0.b_0" \
  "$PDLANG" exec "$tmp/shape" --feed "x=$mlp/in_x.npy"
mkdir "$tmp/dtype"
cp "$mlp/fluid_dir"/* "$tmp/dtype/"
# Byte 21 of a tensor stream is its TensorDesc's data_type: FP32 (5) made INT32 (2), same size.
printf '\002' | dd of="$tmp/dtype/fc_1.b_0" bs=1 seek=21 conv=notrunc 2> /dev/null
refuses "a parameter file of the wrong dtype" "int32" \
  "$PDLANG" exec "$tmp/dtype" --feed "x=$mlp/in_x.npy"
refuses "refused attributes: every problem listed, with block and op index" \
  "pdlang cannot run this program (4 problems):" \
  "$PDLANG" exec "$models/refused/model.pdmodel" --feed "img=$mlp/in_x.npy"
for want in "block 0 op 1 (conv2d): attribute fuse_activation is 'relu'" \
  "block 0 op 1 (conv2d): attribute fuse_relu is 1" \
  "block 0 op 2 (elementwise_add): unknown attribute fancy_mode" \
  "block 0 op 4 (elementwise_add): unknown attribute fancy_mode"; do
  refuses "... $want" "$want" \
    "$PDLANG" exec "$models/refused/model.pdmodel" --feed "img=$mlp/in_x.npy"
done
# The model families (tests/interop/zoo, tools/paddle_zoo.py): a classifier, a detector with its
# NMS (integer counts), a segmenter, a transformer on int64 ids and a text recogniser with an
# LSTM, through `pdlang exec` with every input by name and every output compared (1e-4: tens of
# layers in float32).
for m in mobilenet_v3 yolov3 pp_liteseg ernie3_tiny crnn_rec; do
  zoo=$models/zoo/$m
  check "$m: its parameters made (test_interop --zoo-params)" \
    "$compare" --zoo-params "$m" "$tmp/zoo-$m"
  feeds=
  for f in "$zoo"/in_*.npy; do
    name=${f##*/in_}
    feeds="$feeds --feed ${name%.npy}=$f"
  done
  # shellcheck disable=SC2086 # feeds is a list of words without spaces
  check "$m: pdlang exec runs it" "$PDLANG" exec "$tmp/zoo-$m/inference.pdmodel" $feeds \
    --out "$tmp/zoo-$m/out"
  while read -r out; do
    file=$(printf '%s' "$out" | tr / _)
    check "$m: $out is PaddlePaddle's" \
      "$compare" --compare "$tmp/zoo-$m/out/$file.npy" "$zoo/out_$file.npy" 1e-4
  done < "$zoo/fetch_names.txt"
done

echo "1..$n"
exit 0
