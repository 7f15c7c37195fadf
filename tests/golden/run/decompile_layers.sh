#!/bin/sh
# decompile_layers.sh -- the golden test of the layers `pdlang decompile` recognises (TAP):
# decompile_layers_mod.pd saves a model made of the stdlib's layers, and PaddlePaddle's LeNet
# and CNN with batch norm (tests/interop) are read as saved; decompile_layers.out holds the three
# scripts decompile writes, calls of fc, conv, batch_norm, max_pool / avg_pool, builtins and
# operators where the ops are what those compile to (a product that no fc makes: op() lines).
# Each script runs and saves a model whose outputs on the same input are the original's, byte
# for byte. PD_REGEN=1 rewrites decompile_layers.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddclayers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/decompile_layers_mod.pd" "$tmp/"
cat > "$tmp/gen.pd" <<'GEN'
x = reshape(cast(var(range(128)), float32) * 0.05 - 3.2, [2, 1, 8, 8])
save("gen.pdmodel", x)
GEN
echo "1..4"
(cd "$tmp" && "$PDLANG" run --progress=none decompile_layers_mod.pd &&
   "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in) \
  > "$tmp/setup.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - the model and its input saved"
else echo "not ok 1 - the model and its input saved (exit $rc)"; sed 's/^/# /' "$tmp/setup.log"; fi
# the scripts (the interop models by their paths in the source tree, as the golden names them)
: > "$tmp/out"
for m in own:model.pdmodel:x=in/x.npy lenet:tests/interop/lenet/model.pdmodel \
         cnn_bn:tests/interop/cnn_bn/model.pdmodel; do
  name=${m%%:*}; rest=${m#*:}; model=${rest%%:*}; feed=${rest#*:}
  [ "$name" = own ] || feed=img=$top_srcdir/tests/interop/$name/in_img.npy
  mkdir -p "$tmp/$name"
  if [ "$name" = own ]; then
    (cd "$tmp" && "$PDLANG" decompile "$model" --save-as "$name/re.pdmodel" > "$name/m.pd")
  else
    (cd "$top_srcdir" && "$PDLANG" decompile "$model" --save-as re.pdmodel) > "$tmp/$name/m.pd"
  fi 2>> "$tmp/err"
  { echo "== $name"; cat "$tmp/$name/m.pd"; } >> "$tmp/out"
  [ "$name" = own ] || model=$top_srcdir/$model
  run=$tmp/$name  # where the script runs: its paths are relative to where it was decompiled
  [ "$name" = own ] && run=$tmp
  (cd "$run" && sed "s|load(\"tests/|load(\"$top_srcdir/tests/|" "$tmp/$name/m.pd" > run.pd &&
     "$PDLANG" run --progress=none run.pd) >> "$tmp/err" 2>&1 || echo "$name: run failed" >> "$tmp/err"
  re=$tmp/$name/re.pdmodel
  (cd "$tmp" && "$PDLANG" exec "$model" --feed "$feed" --out "$name/a" &&
     "$PDLANG" exec "$re" --feed "$feed" --out "$name/b") > /dev/null 2>> "$tmp/err" ||
    echo "$name: exec failed" >> "$tmp/err"
  for f in "$tmp/$name"/a/*.npy; do   # b's outputs are named as the script's identifiers
    g=$(basename "$f" .npy | tr -c 'A-Za-z0-9_\n' '_')
    cmp -s "$f" "$tmp/$name/b/$g.npy" || echo "$name: $(basename "$f") differs" >> "$tmp/err"
  done
done
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/out" "$dir/decompile_layers.out"
if [ ! -s "$tmp/err" ]; then echo "ok 2 - each script runs; its model's outputs are the original's, byte for byte"
else echo "not ok 2 - each script runs; its model's outputs are the original's"; sed 's/^/# /' "$tmp/err"; fi
if diff -u "$dir/decompile_layers.out" "$tmp/out" > "$tmp/diff"; then
  echo "ok 3 - the scripts decompile writes"
else
  echo "not ok 3 - the scripts decompile writes"; sed 's/^/# /' "$tmp/diff"
fi
if [ "$(grep -c '= \(fc\|conv\|batch_norm\|max_pool\|avg_pool\)(' "$tmp/out")" -ge 14 ] &&
   ! grep -q 'op("\(conv2d\|batch_norm\|pool2d\|relu\|softmax\)"' "$tmp/out" &&
   [ "$(grep -c 'op("mul"' "$tmp/out")" = 1 ] &&
   grep -q 'op("mul", .*x_num_col_dims = 2' "$tmp/out"; then
  echo "ok 4 - the layers are calls, none of their ops an op() line; linear's product is one"
else
  echo "not ok 4 - the layers are calls, none of their ops an op() line; linear's product is one"
fi
