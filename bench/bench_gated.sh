#!/bin/sh
# bench_gated.sh -- one training step of an LSTM and of a GRU language model (embedding 32, the
# stdlib lstm / gru layer of hidden 256, a linear layer to 256 classes, softmax cross entropy,
# Adam) on batches of 32 sequences of 50 characters (the GNU GPL text), through `pdlang run` (the
# loops fused into fused_lstm / fused_gru by train's passes), next to the same model with
# torch.nn.LSTM / torch.nn.GRU (bench/torch_gated.py) when PyTorch is installed, measured in the
# same run. Prints milliseconds per step and the ratios. Not a test.
# Usage: bench/bench_gated.sh [PDLANG] ; PDLANG_BENCH_PYTHON names the Python that has torch,
# PDLANG_BENCH_DEVICE=gpu runs both on the GPU.
set -u
pdlang=${1:-./pdlang}
here=$(cd "$(dirname "$0")" && pwd)
py=${PDLANG_BENCH_PYTHON:-python3}
text=/usr/share/common-licenses/GPL-3
[ -r "$text" ] || { echo "bench_gated: $text is missing"; exit 1; }
tmp=${TMPDIR:-/tmp}/pd_bench_gated.$$
mkdir -p "$tmp" && trap 'rm -rf "$tmp"' EXIT
threads=$(nproc 2>/dev/null || echo 1)
. "$here/bench_device.sh"  # PDLANG_BENCH_DEVICE=gpu: both on the GPU
epochs=${PDLANG_BENCH_EPOCHS:-4}
# pdlang first, then PyTorch (bench_rnn.sh: pdlang runs after a PyTorch run measured slower).
for cell in lstm gru; do
  case $cell in
    lstm) call="hs, h, c = lstm(lookup_table(emb, x), 256, name = \"L\")" ;;
    gru) call="hs, h = gru(lookup_table(emb, x), 256, name = \"G\")" ;;
  esac
  cat > "$tmp/$cell.pd" <<PD
import "layers"
x = data("x", [-1, 1], int64, lod_level = 1)
y = data("y", [-1, 1], int64, lod_level = 1)
emb = param([256, 32], name = "emb")
$call
Wo = param([256, 256], name = "Wo")
bo = param([256], name = "bo", init = 0.0)
cost = mean(softmax_with_cross_entropy(mul(hs, Wo) + bo, y))
train(cost, reader = text("$text", length = 50), batch = 32, epochs = $epochs,
      optimizer = adam(0.001), shuffle = false)
PD
  # The first epoch is warm-up; the median of the others' samples/s is the figure.
  "$pdlang" run --device "$device" --progress=lines "$tmp/$cell.pd" > "$tmp/out" 2>&1
  sps=$(sed -n 's/.*(\([0-9.]*\) samples\/s)$/\1/p' "$tmp/out" | tail -n +2 | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  pd_ms=$(awk -v s="$sps" 'BEGIN { if (s > 0) printf "%.3f", 32000 / s; else print "?" }')
  [ "$pd_ms" = "?" ] && { echo "bench_gated: pdlang $cell did not run:"; tail -n 5 "$tmp/out"; }
  eval "pd_ms_$cell=\$pd_ms"
done
for cell in lstm gru; do
  eval "pd_ms=\$pd_ms_$cell"
  line="$cell hidden 256: pdlang $pd_ms ms/step"
  out=$(OMP_WAIT_POLICY= "$py" "$here/torch_gated.py" --cell "$cell" --threads "$threads" --device "$tdevice" 2>&1)
  t=$(echo "$out" | sed -n 's/^nn //p')
  if [ -z "$t" ]; then
    case "$out" in
      *"not installed"*) line="$line; PyTorch not installed ($py): no ratio" ;;
      *) line="$line; PyTorch did not run ($py): $(echo "$out" | tail -n 1)" ;;
    esac
  else
    line="$line; torch.nn.$(echo $cell | tr a-z A-Z) $t ms (pdlang $(awk -v a="$t" -v b="$pd_ms" 'BEGIN { printf "%.2f", a / b }')x as fast; goal 1.5x)"
  fi
  echo "$line"
done
