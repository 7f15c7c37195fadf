#!/bin/sh
# roundtrip.sh -- the other direction of PaddlePaddle interop: models that `save(path, target)`
# writes (convolutions, pooling, fc, gelu, layer_norm, batch_norm, embedding, reductions,
# softmax; a scalar if, a while loop; two inputs and two outputs; recurrent models: the stdlib
# lstm layer over an embedding, a gru layer both ways (a forward and a reverse gru), a `for` loop
# with two memories run in reverse, whose sequence inputs are saved padded with NAME_lengths and
# whose loops become rnn and while ops, vm/passes/paddle_export.h) load in PaddlePaddle
# (paddle.static.load_inference_model with FLAGS_enable_pir_api=0, tests/interop/paddle_run.py)
# and give pdlang's outputs (`pdlang exec`, compared by test_interop --compare: 1e-5 relative),
# under the script's names (`save(path, y, m)` fetches y and m; `names = [...]` renames).
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
# The fetch targets each model must have, in order (the script's names).
want_lstm="scores steps" want_gru_bidi="y fs bs" want_for_rnn="y hs as" want_mixed="y m"
for m in cnn mixed scalar_if loop lstm gru_bidi for_rnn; do
  n=$((n + 1))
  if "$PDLANG" run "$tmp/$m.pd" > "$tmp/$m.log" 2>&1 && [ -f "$tmp/$m.pdmodel" ]; then
    echo "ok $n - $m: pdlang saves the model"
  else
    echo "not ok $n - $m: pdlang saves the model"
    sed 's/^/# /' "$tmp/$m.log"
    continue
  fi
  n=$((n + 1))
  if [ -n "$skip" ]; then
    echo "ok $n # SKIP $m: PaddlePaddle loads it and agrees: $skip"
    continue
  fi
  mkdir "$tmp/$m.paddle" "$tmp/$m.pdlang"
  if ! "$py" "$top_srcdir/tests/interop/paddle_run.py" "$tmp/$m" "$tmp/$m.paddle" \
      > "$tmp/$m.log" 2>&1; then
    echo "not ok $n - $m: PaddlePaddle loads and runs it"
    grep -v -i "warn" "$tmp/$m.log" | tail -n 5 | sed 's/^/# /'
    continue
  fi
  feeds=""
  while read -r f; do
    feeds="$feeds --feed $f=$tmp/$m.paddle/in_$f.npy"
  done < "$tmp/$m.paddle/feeds.txt"
  # shellcheck disable=SC2086
  if ! "$PDLANG" exec "$tmp/$m.pdmodel" $feeds --out "$tmp/$m.pdlang" > "$tmp/$m.log" 2>&1; then
    echo "not ok $n - $m: pdlang exec runs it on PaddlePaddle's inputs"
    sed 's/^/# /' "$tmp/$m.log"
    continue
  fi
  good=1
  while read -r o; do
    "$compare" --compare "$tmp/$m.pdlang/$o.npy" "$tmp/$m.paddle/out_$o.npy" > "$tmp/$m.cmp" 2>&1 ||
      { good=0; sed 's/^/# /' "$tmp/$m.cmp"; }
  done < "$tmp/$m.paddle/fetches.txt"
  outs=$(tr '\n' ' ' < "$tmp/$m.paddle/fetches.txt")
  want=$(eval "echo \${want_$m:-}")
  if [ -n "$want" ] && [ "$outs" != "$want " ]; then
    good=0
    echo "# the fetch targets are '$outs', not '$want'"
  fi
  if [ "$good" = 1 ] && [ -s "$tmp/$m.paddle/fetches.txt" ]; then
    echo "ok $n - $m: PaddlePaddle loads it and its outputs ($outs) agree with pdlang's"
  else
    echo "not ok $n - $m: PaddlePaddle loads it and its outputs agree with pdlang's"
  fi
done
echo "1..$n"
exit 0
