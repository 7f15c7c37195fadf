#!/bin/sh
# bench_rnn.sh -- one training step of an Elman RNN (embedding 32, tanh cell of hidden 32 and
# 256, a linear layer to 256 classes, softmax cross entropy, Adam) on batches of 32 sequences of
# 50 characters (the GNU GPL text), through `pdlang run`, next to the same model in PyTorch
# (bench/torch_rnn.py: the cell as a Python loop, and torch.nn.RNN) when it is installed.
# Prints milliseconds per step and the ratios. Not a test.
# Usage: bench/bench_rnn.sh [PDLANG] ; PDLANG_BENCH_PYTHON names the Python that has torch.
set -u
pdlang=${1:-./pdlang}
here=$(cd "$(dirname "$0")" && pwd)
py=${PDLANG_BENCH_PYTHON:-python3}
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || { echo "bench_rnn: $text is missing"; exit 1; }
tmp=${TMPDIR:-/tmp}/pd_bench_rnn.$$
mkdir -p "$tmp" && trap 'rm -rf "$tmp"' EXIT
threads=$(nproc 2>/dev/null || echo 1)
# pdlang first, for both sizes, then PyTorch: pdlang runs made after a PyTorch run measured up
# to 25% slower (hidden 256: 15.1-15.9 ms a step, against 12.3-12.8 with no PyTorch run before).
for hidden in 32 256; do
  epochs=$([ "$hidden" = 32 ] && echo 40 || echo 12)  # about a second of training each
  cat > "$tmp/rnn.pd" <<PD
x = data("x", [-1, 1], int64, lod_level = 1)
y = data("y", [-1, 1], int64, lod_level = 1)
emb = param([256, 32], name = "emb")
Wx = param([32, $hidden], name = "Wx")
bx = param([$hidden], name = "bx", init = 0.0)
Wh = param([$hidden, $hidden], name = "Wh")
Wo = param([$hidden, 256], name = "Wo")
bo = param([256], name = "bo", init = 0.0)
h = zeros([$hidden])
for (t in lookup_table(emb, x)) {
    h = tanh(mul(t, Wx) + bx + mul(h, Wh))
    emit hs = h
}
cost = mean(softmax_with_cross_entropy(mul(hs, Wo) + bo, y))
train(cost, reader = text("$text", length = 50), batch = 32, epochs = $epochs, optimizer = adam(0.001),
      shuffle = false)
PD
  # Epoch summaries: "... N samples in S s (R samples/s)"; the first epoch is warm-up, the
  # median of the others is the figure. The output goes to a file: a reader of a pipe would
  # wake at every line and take a core from the training.
  "$pdlang" run --progress=lines "$tmp/rnn.pd" > "$tmp/out" 2>&1
  sps=$(sed -n 's/.*(\([0-9.]*\) samples\/s)$/\1/p' "$tmp/out" | tail -n +2 | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  pd_ms=$(awk -v s="$sps" 'BEGIN { if (s > 0) printf "%.3f", 32000 / s; else print "?" }')
  eval "pd_ms_$hidden=\$pd_ms"
done
for hidden in 32 256; do
  eval "pd_ms=\$pd_ms_$hidden"
  line="hidden $hidden: pdlang $pd_ms ms/step"
  out=$(OMP_WAIT_POLICY= "$py" "$here/torch_rnn.py" --hidden "$hidden" --threads "$threads" 2>&1)
  loop=$(echo "$out" | sed -n 's/^loop //p'); nn=$(echo "$out" | sed -n 's/^nnrnn //p')
  if [ -z "$loop" ] || [ -z "$nn" ]; then
    case "$out" in
      *"not installed"*) line="$line; PyTorch not installed ($py)" ;;
      *) line="$line; PyTorch did not run ($py): $(echo "$out" | tail -n 1)" ;;
    esac
  else
    line="$line; PyTorch Python loop $loop ms (pdlang $(awk -v a="$loop" -v b="$pd_ms" 'BEGIN { printf "%.2f", a / b }')x as fast), torch.nn.RNN $nn ms ($(awk -v a="$nn" -v b="$pd_ms" 'BEGIN { printf "%.2f", a / b }')x)"
  fi
  echo "$line"
done
