#!/bin/sh
# roundtrip.sh -- the other direction of PaddlePaddle interop: models that `save(path, target)`
# writes (convolutions, pooling, fc, gelu, layer_norm, batch_norm, embedding, reductions,
# softmax; the activations, element-wise maps, clip, tile, expand, argmax of `maps`; a
# transformer encoder layer with a causal mask; a scalar if, a while loop; two inputs
# and two outputs; recurrent models: the stdlib lstm layer over an embedding, a gru layer both
# ways (a forward and a reverse gru), a `for` loop with two memories run in reverse, whose
# sequence inputs are saved padded with NAME_lengths and whose loops become rnn and while ops,
# vm/passes/paddle_export.h; the poolings of sequences, as masked reductions of the padded
# steps; an if over a batch's rows, as both sides and where), each saved twice: as a ProgramDesc (m.pdmodel) and as a PIR
# program (m.json, vm/ir/pir.h). pdlang runs its own .json to the .pdmodel's outputs
# (test_interop --same, always). PaddlePaddle loads each (paddle.static.load_inference_model:
# the .pdmodel with FLAGS_enable_pir_api=0, the .json in its default mode, no flag;
# tests/interop/paddle_run.py) and gives pdlang's outputs (`pdlang exec`, compared by
# test_interop --compare: 1e-5 relative), under the script's names (`save(path, y, m)` fetches y
# and m; `names = [...]` renames).
# PaddlePaddle runs when the environment variable PDLANG_PADDLE_PYTHON names a Python that
# imports paddle (e.g. PDLANG_PADDLE_PYTHON=/path/to/venv/bin/python make check); otherwise
# only pdlang's side runs and the comparisons are skipped with the reason. TAP output.
set -u
: "${PDLANG:?}" "${top_srcdir:?}" "${top_builddir:?}"
compare=$top_builddir/tests/interop/test_interop
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pd-roundtrip.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
py=${PDLANG_PADDLE_PYTHON:-}
skip=""
if [ -z "$py" ]; then
  skip="PDLANG_PADDLE_PYTHON is not set (a Python with paddlepaddle installed)"
elif ! "$py" -c "import paddle" > /dev/null 2>&1; then
  skip="$py cannot import paddle"
fi
n=0

cat > "$tmp/cnn.pd" <<EOS
import "layers"
x = data("img", [-1, 1, 12, 12])
c = max_pool(conv(x, 4, 3, padding = 1, act = relu), 2)
h = avg_pool(conv(c, 3, 3, act = tanh), 2)
y = softmax(fc(h, 5))
save("$tmp/cnn.pdmodel", y)
EOS
cat > "$tmp/mixed.pd" <<EOS
import "layers"
x   = data("x", [-1, 8])
ids = data("ids", [-1, 1], int64)
e   = embedding(ids, 20, 8)
h   = layer_norm(fc(x, 8, act = gelu) + e)
b   = batch_norm(fc(h, 6), act = relu)
m   = reduce_mean(b, [1], keep_dim = true)
y   = softmax(elementwise_sub(b, m) * 2.0)
save("$tmp/mixed.pdmodel", y, m)
EOS
cat > "$tmp/scalar_if.pd" <<EOS
x = data("x", [-1, 4])
s = data("s", [1])
y = x
if (s > 0.0) {
    y = x * 2.0 + 1.0
} else {
    y = x * -1.0
}
save("$tmp/scalar_if.pdmodel", y)
EOS
cat > "$tmp/loop.pd" <<EOS
x = data("x", [-1, 3])
i = var(0, int64)
k = var(3, int64)
z = x
while (i < k) {
    z = z * 0.5 + 1.0
    i = i + var(1, int64)
}
save("$tmp/loop.pdmodel", z)
EOS
cat > "$tmp/lstm.pd" <<EOS
import "layers"
ids = data("ids", [-1, 1], int64, lod_level = 1)
e = embedding(ids, 20, 6)
hs, h, c = lstm(e, 5)
logits = fc(concat([h, c], 1), 3)
save("$tmp/lstm.pdmodel", logits, hs, names = ["scores", "steps"])
EOS
cat > "$tmp/gru_bidi.pd" <<EOS
import "layers"
x = data("x", [-1, 4], lod_level = 1)
fs, f = gru(x, 6)
bs, b = gru(x, 6, reverse = true)
y = softmax(fc(concat([f, b], 1), 3))
save("$tmp/gru_bidi.pdmodel", y, fs, bs)
EOS
cat > "$tmp/for_rnn.pd" <<EOS
x = data("x", [-1, 4], lod_level = 1)
W = param([4, 5])
U = param([5, 5])
V = param([5, 5])
h = zeros([5])
m = zeros([5])
for (t in x, reverse = true) {
    a = tanh(mul(t, W) + mul(h, U))
    m = sigmoid(mul(a, V) + m * 0.5)
    h = a * m
    emit hs = h, as = a
}
y = h + m
save("$tmp/for_rnn.pdmodel", y, hs, as)
EOS
cat > "$tmp/attn.pd" <<EOS
import "layers"
x = data("x", [-1, 6, 8])
h = transformer_encoder_layer(positional_embedding(x), 8, 2, 16, mask = causal_mask(6))
y = softmax(linear(reduce_mean(h, [1]), 3))
save("$tmp/attn.pdmodel", y)
EOS
cat > "$tmp/convbn.pd" <<EOS
import "layers"
x = data("img", [-1, 3, 8, 8])
c = batch_norm(conv(x, 4, 3, padding = 1), act = relu)
d = conv(c, 4, 3, stride = 2, padding = 1)
r = relu(batch_norm(d) + max_pool(c, 2))
y = softmax(fc(avg_pool(r, 2), 5))
save("$tmp/convbn.pdmodel", y)
EOS
cat > "$tmp/pools.pd" <<EOS
import "layers"
x = data("x", [-1, 4], lod_level = 1)
hs, h = gru(x, 5)
y = concat([sequence_pool(hs, "SUM"), sequence_pool(hs, "AVERAGE"), sequence_pool(hs, "SQRT"),
            sequence_max(hs), sequence_pool(x, "FIRST"), sequence_pool(x, "LAST"),
            sequence_pool(x * 2.0 + 1.0, "MAX")], 1)
save("$tmp/pools.pdmodel", y)
EOS
cat > "$tmp/rowif.pd" <<EOS
import "layers"
x = data("x", [-1, 4])
y = fc(x, 3)
if (reduce_sum(x, [1], keep_dim = true) > 0.0) {
    y = tanh(fc(x, 3)) * 2.0
} else {
    y = y - 1.0
}
save("$tmp/rowif.pdmodel", y)
EOS
cat > "$tmp/maps.pd" <<EOS
import "layers"
x = data("x", [-1, 4])
img = data("img", [-1, 4, 6, 6])
a = abs(x) + exp(x * 0.1) + log(abs(x) + 1.0) + sqrt(abs(x)) + square(x) + silu(x)
b = relu6(x * 4.0) + leaky_relu(x) + elu(x) + softplus(x) + swish(x) + hard_swish(x)
c = hard_sigmoid(x) + log_softmax(x) + log_sigmoid(x) + minimum(x, a) + maximum(b, x)
d = pow(abs(x) + 1.0, x) + clip(x, -0.5, 0.5) + tile(reduce_min(x, [1], keep_dim = true), [1, 4])
e = expand(reduce_max(x, [1], keep_dim = true), [-1, 4]) + reshape(cast(argmax(x, 1), float32), [-1, 1])
f = flatten(conv2d(img, param([4, 1, 3, 3]), paddings = [1, 1], groups = 4), 1, 3)
y = concat([a, b, c, d, e], 1)
save("$tmp/maps.pdmodel", y, f)
EOS
# The fetch targets each model must have, in order (the script's names).
want_lstm="scores steps" want_gru_bidi="y fs bs" want_for_rnn="y hs as" want_mixed="y m"
for m in cnn convbn mixed attn maps scalar_if rowif loop lstm gru_bidi for_rnn pools; do
  # the same script saving m.json: its parameters are made by the same seeds
  sed "s|$tmp/$m.pdmodel|$tmp/$m.json|" "$tmp/$m.pd" > "$tmp/${m}_json.pd"
  for ext in pdmodel json; do
    s=$m; [ "$ext" = json ] && s=${m}_json
    n=$((n + 1))
    if "$PDLANG" run "$tmp/$s.pd" > "$tmp/$s.log" 2>&1 && [ -f "$tmp/$m.$ext" ]; then
      echo "ok $n - $m: pdlang saves the model as .$ext"
    else
      echo "not ok $n - $m: pdlang saves the model as .$ext"
      sed 's/^/# /' "$tmp/$s.log"
      continue
    fi
  done
  n=$((n + 1))
  if "$compare" --same "$tmp/$m.pdmodel" "$tmp/$m.json" > "$tmp/$m.same" 2>&1; then
    echo "ok $n - $m: pdlang runs its .json to its .pdmodel's outputs"
  else
    echo "not ok $n - $m: pdlang runs its .json to its .pdmodel's outputs"
    sed 's/^/# /' "$tmp/$m.same"
  fi
  for ext in pdmodel json; do
    n=$((n + 1))
    if [ -n "$skip" ]; then
      echo "ok $n # SKIP $m.$ext: PaddlePaddle loads it and agrees: $skip"
      continue
    fi
    out=$tmp/$m.$ext.paddle
    mkdir "$out" "$tmp/$m.$ext.pdlang"
    mode=""; [ "$ext" = json ] && mode=--pir
    if ! "$py" "$top_srcdir/tests/interop/paddle_run.py" $mode "$tmp/$m" "$out" \
        > "$tmp/$m.log" 2>&1; then
      echo "not ok $n - $m.$ext: PaddlePaddle loads and runs it"
      grep -v -i "warn" "$tmp/$m.log" | tail -n 5 | sed 's/^/# /'
      continue
    fi
    feeds=""
    while read -r f; do
      feeds="$feeds --feed $f=$out/in_$f.npy"
    done < "$out/feeds.txt"
    # shellcheck disable=SC2086
    if ! "$PDLANG" exec "$tmp/$m.$ext" $feeds --out "$tmp/$m.$ext.pdlang" > "$tmp/$m.log" 2>&1
    then
      echo "not ok $n - $m.$ext: pdlang exec runs it on PaddlePaddle's inputs"
      sed 's/^/# /' "$tmp/$m.log"
      continue
    fi
    good=1
    while read -r o; do
      "$compare" --compare "$tmp/$m.$ext.pdlang/$o.npy" "$out/out_$o.npy" > "$tmp/$m.cmp" 2>&1 ||
        { good=0; sed 's/^/# /' "$tmp/$m.cmp"; }
    done < "$out/fetches.txt"
    outs=$(tr '\n' ' ' < "$out/fetches.txt")
    want=$(eval "echo \${want_$m:-}")
    if [ -n "$want" ] && [ "$outs" != "$want " ]; then
      good=0
      echo "# the fetch targets are '$outs', not '$want'"
    fi
    if [ "$good" = 1 ] && [ -s "$out/fetches.txt" ]; then
      echo "ok $n - $m.$ext: PaddlePaddle loads it and its outputs ($outs) agree with pdlang's"
    else
      echo "not ok $n - $m.$ext: PaddlePaddle loads it and its outputs agree with pdlang's"
    fi
  done
done
# What PaddlePaddle cannot run is refused by save("m.json"), every problem listed with its
# source location, and nothing is written: a softmax over each sequence (which a .pdmodel keeps,
# for pdlang alone), an if over a batch's rows whose block is not row-wise.
cat > "$tmp/seqpool.pd" <<EOS
import "layers"
x = data("x", [-1, 1], lod_level = 1)
y = fc(sequence_max(sequence_softmax(x) * x), 3)
save("$tmp/seqpool.json", y)
EOS
cat > "$tmp/rowif_mean.pd" <<EOS
x = data("x", [-1, 4])
y = x
if (reduce_sum(x, [1], keep_dim = true) > 0.0) {
    y = x - mean(x)
}
save("$tmp/rowif_mean.json", y)
EOS
want_seqpool="seqpool.pd:3:21: error: $tmp/seqpool.json: PaddlePaddle cannot run this model"
want_rowif_mean="rowif_mean.pd:4:13: error: $tmp/rowif_mean.json: PaddlePaddle cannot run this model"
for m in seqpool rowif_mean; do
  n=$((n + 1))
  want=$(eval "echo \"\$want_$m\"")
  if "$PDLANG" run "$tmp/$m.pd" > "$tmp/$m.log" 2>&1; then
    echo "not ok $n - $m: save(\"$m.json\") is refused"
  elif ! grep -qF "$want" "$tmp/$m.log"; then
    echo "not ok $n - $m: save(\"$m.json\") is refused, saying '$want'"
    sed 's/^/# /' "$tmp/$m.log"
  elif [ -e "$tmp/$m.json" ] || [ -e "$tmp/$m.pdiparams" ]; then
    echo "not ok $n - $m: a refused save writes nothing"
  else
    echo "ok $n - $m: save(\"$m.json\") is refused, saying where and why"
  fi
done
echo "1..$n"
exit 0
