#!/bin/sh
# bench_attention.sh -- one training step of a transformer encoder layer (d 128, 4 heads,
# feed-forward 512, dropout 0.1, post-norm, relu: stdlib's transformer_encoder_layer) on batches
# of 32 windows of 64 bytes of the GNU GPL (an embedding of the bytes to 128 before it, a linear
# layer to 256 classes and softmax cross entropy over every position after it, Adam), through
# `pdlang run`, next to the same model with torch.nn.TransformerEncoderLayer
# (bench/torch_attention.py) when PyTorch is installed. Prints milliseconds per step and the
# ratio. Not a test.
# Usage: bench/bench_attention.sh [PDLANG] ; PDLANG_BENCH_PYTHON names the Python that has torch,
# PDLANG_BENCH_DEVICE=gpu runs both on the GPU.
set -u
pdlang=${1:-./pdlang}
here=$(cd "$(dirname "$0")" && pwd)
py=${PDLANG_BENCH_PYTHON:-python3}
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || { echo "bench_attention: $text is missing"; exit 1; }
tmp=${TMPDIR:-/tmp}/pd_bench_attn.$$
mkdir -p "$tmp" && trap 'rm -rf "$tmp"' EXIT
threads=$(nproc 2>/dev/null || echo 1)
. "$here/bench_device.sh"  # PDLANG_BENCH_DEVICE=gpu: both on the GPU
cat > "$tmp/attn.pd" <<PD
import "layers"
x = data("x", [-1, 64], int64)
y = data("y", [-1, 64], int64)
e = reshape(embedding(reshape(x, [-1, 1]), 256, 128), [-1, 64, 128])
h = transformer_encoder_layer(e, 128, 4, 512, dropout = 0.1)
cost = mean(softmax_with_cross_entropy(linear(h, 256), reshape(y, [-1, 64, 1])))
train(cost, reader = text("$text", length = 64), batch = 32, epochs = 6, optimizer = adam(0.001),
      shuffle = false)
PD
# Epoch summaries: "... N samples in S s (R samples/s)"; the first epoch is warm-up, the median
# of the others is the figure. The output goes to a file (a reader of a pipe would wake at every
# line and take a core from the training).
"$pdlang" run --device "$device" --progress=lines "$tmp/attn.pd" > "$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
sps=$(sed -n 's/.*(\([0-9.]*\) samples\/s)$/\1/p' "$tmp/out" | tail -n +2 | sort -n |
      awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
pd_ms=$(awk -v s="$sps" 'BEGIN { if (s > 0) printf "%.3f", 32000 / s; else print "?" }')
line="transformer encoder layer (d 128, 4 heads, length 64, batch 32): pdlang $pd_ms ms/step"
out=$(OMP_WAIT_POLICY= "$py" "$here/torch_attention.py" --threads "$threads" --device "$tdevice" 2>&1)
ms=$(echo "$out" | sed -n 's/^step //p')
if [ -z "$ms" ]; then
  case "$out" in
    *"not installed"*) line="$line; PyTorch not installed ($py): no ratio" ;;
    *) line="$line; PyTorch did not run ($py): $(echo "$out" | tail -n 1)" ;;
  esac
else
  line="$line; torch.nn.TransformerEncoderLayer $ms ms (pdlang $(awk -v a="$ms" -v b="$pd_ms" 'BEGIN { printf "%.2f", a / b }')x as fast)"
fi
echo "$line"
