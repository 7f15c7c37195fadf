#!/bin/sh
# decompile_layers.sh -- the golden test of the layers `pdlang decompile` recognises (TAP):
# decompile_layers_mod.pd saves a model made of the stdlib's layers, decompile_attn_mod.pd two
# of attention (the stdlib's, and look-alikes that no call makes), and PaddlePaddle's LeNet and
# CNN with batch norm (tests/interop) are read as saved; decompile_layers.out holds the five
# scripts decompile writes, calls of fc, conv, batch_norm, max_pool / avg_pool,
# multi_head_attention, causal_mask, builtins and operators where the ops are what those
# compile to (a product that no fc makes, the look-alikes' ops: op() lines). Each script runs
# and saves a model whose outputs on the same inputs are the original's, byte for byte.
# PD_REGEN=1 rewrites decompile_layers.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddclayers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/decompile_layers_mod.pd" "$dir/decompile_attn_mod.pd" "$tmp/"
cat > "$tmp/gen.pd" <<'GEN'
x = reshape(cast(var(range(128)), float32) * 0.05 - 3.2, [2, 1, 8, 8])
save("gen.pdmodel", x)
GEN
cat > "$tmp/gen_attn.pd" <<'GEN'
x = reshape(cast(var(range(64)), float32) * 0.03 - 1.0, [2, 4, 8])
kv = reshape(cast(var(range(48)), float32) * 0.05 - 1.1, [2, 4, 6])
keep = reshape(var(range(8)), [2, 1, 1, 4]) < 6
m = cast(reshape(var(range(8)), [2, 4]) < 7, float32)
ids = cast(reshape(var(range(32)), [2, 1, 4, 4]) > 5, int64)
save("gen_attn.pdmodel", x, kv, keep, m, ids)
GEN
echo "1..5"
(cd "$tmp" && "$PDLANG" run --progress=none decompile_layers_mod.pd &&
   "$PDLANG" run --progress=none decompile_attn_mod.pd &&
   "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in &&
   "$PDLANG" run --progress=none gen_attn.pd && "$PDLANG" exec gen_attn.pdmodel --out ina) \
  > "$tmp/setup.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - the models and their inputs saved"
else echo "not ok 1 - the models and their inputs saved (exit $rc)"; sed 's/^/# /' "$tmp/setup.log"; fi
# the scripts (the interop models by their paths in the source tree, as the golden names them)
: > "$tmp/out"
# (a model's feeds: NAME=FILE, joined by commas)
for m in own:model.pdmodel:x=in/x.npy lenet:tests/interop/lenet/model.pdmodel \
         cnn_bn:tests/interop/cnn_bn/model.pdmodel \
         attn:attn.pdmodel:x=ina/x.npy,kv=ina/kv.npy,keep=ina/keep.npy,m=ina/m.npy,ids=ina/ids.npy \
         alike:alike.pdmodel:x=ina/x.npy; do
  name=${m%%:*}; rest=${m#*:}; model=${rest%%:*}; feed=${rest#*:}
  mine=false  # saved by the script here, in $tmp
  case $name in own | attn | alike) mine=true ;; *) feed=img=$top_srcdir/tests/interop/$name/in_img.npy ;; esac
  feeds=$(echo "$feed" | sed 's/^/--feed /; s/,/ --feed /g')
  mkdir -p "$tmp/$name"
  if $mine; then
    (cd "$tmp" && "$PDLANG" decompile "$model" --save-as "$name/re.pdmodel" > "$name/m.pd")
  else
    (cd "$top_srcdir" && "$PDLANG" decompile "$model" --save-as re.pdmodel) > "$tmp/$name/m.pd"
  fi 2>> "$tmp/err"
  { echo "== $name"; cat "$tmp/$name/m.pd"; } >> "$tmp/out"
  $mine || model=$top_srcdir/$model
  run=$tmp/$name  # where the script runs: its paths are relative to where it was decompiled
  $mine && run=$tmp
  (cd "$run" && sed "s|load(\"tests/|load(\"$top_srcdir/tests/|" "$tmp/$name/m.pd" > run.pd &&
     "$PDLANG" run --progress=none run.pd) >> "$tmp/err" 2>&1 || echo "$name: run failed" >> "$tmp/err"
  re=$tmp/$name/re.pdmodel
  # shellcheck disable=SC2086
  (cd "$tmp" && "$PDLANG" exec "$model" $feeds --out "$name/a" &&
     "$PDLANG" exec "$re" $feeds --out "$name/b") > /dev/null 2>> "$tmp/err" ||
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
cat "$tmp/own/m.pd" "$tmp/lenet/m.pd" "$tmp/cnn_bn/m.pd" > "$tmp/cnn.pd"
if [ "$(grep -c '= \(fc\|conv\|batch_norm\|max_pool\|avg_pool\)(' "$tmp/cnn.pd")" -ge 14 ] &&
   ! grep -q 'op("\(conv2d\|batch_norm\|pool2d\|relu\|softmax\)"' "$tmp/cnn.pd" &&
   [ "$(grep -c 'op("mul"' "$tmp/cnn.pd")" = 1 ] &&
   grep -q 'op("mul", .*x_num_col_dims = 2' "$tmp/cnn.pd"; then
  echo "ok 4 - the layers are calls, none of their ops an op() line; linear's product is one"
else
  echo "not ok 4 - the layers are calls, none of their ops an op() line; linear's product is one"
fi
# attn.pdmodel: 5 attentions, each with its mask as the call took it (a causal_mask(4) too), no
# op() line of their ops (the feed-forward network's two products are); alike.pdmodel: op() lines
a=$tmp/attn/m.pd
if [ "$(grep -c '= multi_head_attention(' "$a")" = 5 ] && grep -q 'mask = keep,' "$a" &&
   grep -q 'mask = m, dropout = 0.1,' "$a" && grep -q 'mask = ids, dropout = 0.1,' "$a" &&
   grep -q '= causal_mask(4)  # ops' "$a" && grep -q 'names = \["q.w", "q.b", "k.w"' "$a" &&
   ! grep -q 'op("\(transpose2\|reshape2\|matmul_v2\|scale\|cast\|assign_value\)"\|softmax(' "$a" &&
   [ "$(grep -c 'op("mul"' "$a")" = 2 ] && ! grep -q 'multi_head_attention' "$tmp/alike/m.pd" &&
   [ "$(grep -c 'op("transpose2"' "$tmp/alike/m.pd")" = 8 ]; then
  echo "ok 5 - each attention and causal_mask is a call, none of their ops an op() line; the look-alikes' are"
else
  echo "not ok 5 - each attention and causal_mask is a call, none of their ops an op() line; the look-alikes' are"
fi
