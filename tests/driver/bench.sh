#!/bin/sh
# bench.sh -- `pdlang bench` (issue 40): a saved model timed on .npy inputs prints the load and
# first run, the median / p90 / p99 latency over --runs runs after --warmup, the throughput, the
# peak resident memory and the load-time passes (a batch norm folded); --batch repeats the
# feed's rows; --seconds runs for a time; --profile adds the per-op table; --no-optimize runs the
# model as loaded, and its hottest ops name a Paddle model's layers by their outputs (the model
# has no source locations); bad arguments are usage errors (exit 2), a feed the model lacks an
# error (exit 1). The numbers themselves are not checked: they are timings. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
dir=${TMPDIR:-/tmp}/pd_bench.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..8"
printf 'import "layers"\nx = data("x", [-1, 2])\ny = softmax(fc(batch_norm(fc(x, 4)), 3))\nsave("m.pdmodel", y)\n' > m.pd
"$PDLANG" run m.pd > /dev/null 2>&1 || { echo "Bail out! cannot save the model"; exit 0; }
d="{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"
{ printf '\223NUMPY\001\000\166\000%s' "$d"; printf '%*s\n' $((117 - ${#d})) ''
  printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\277'; } > x.npy
out=$("$PDLANG" bench m.pdmodel --feed x=x.npy --runs 7 --warmup 2 2>&1)
if echo "$out" | grep -q '^model: m.pdmodel (batch 2, ' &&
   echo "$out" | grep -q '^load-time passes: 1 batch norm folded' &&
   echo "$out" | grep -q '^load and first run: [0-9.]* ms$' &&
   echo "$out" | grep -q '^latency over 7 runs (after 2 warm-up): median [0-9.]* ms, p90 [0-9.]* ms, p99 [0-9.]* ms' &&
   echo "$out" | grep -q '^throughput: [0-9.]* samples/s' &&
   echo "$out" | grep -q '^peak resident memory: [0-9.]* MiB$'; then
  echo "ok 1 - bench prints load, latency percentiles, throughput, memory and the passes"
else echo "not ok 1 - bench's report"; echo "$out" | sed 's/^/# /'; fi
out=$("$PDLANG" bench m --feed x=x.npy --runs 3 --batch 16 --threads 1 2>&1)
if echo "$out" | grep -q '^model: m.pdmodel (batch 16, threads 1, cpu)'; then
  echo "ok 2 - --batch repeats the rows (2 to 16), --threads sizes the pool, a path prefix"
else echo "not ok 2 - --batch / --threads"; echo "$out" | sed 's/^/# /'; fi
out=$("$PDLANG" bench m.pdmodel --feed x=x.npy --seconds 0.05 --warmup 0 2>&1)
if echo "$out" | grep -q '^latency over [0-9]* runs (after 0 warm-up)'; then
  echo "ok 3 - --seconds runs for a time"
else echo "not ok 3 - --seconds"; echo "$out" | sed 's/^/# /'; fi
out=$("$PDLANG" bench m.pdmodel --feed x=x.npy --runs 2 --profile --no-optimize 2>&1)
if echo "$out" | grep -q 'not optimised' && echo "$out" | grep -q '^batch_norm ' &&
   ! echo "$out" | grep -q '^load-time passes'; then
  echo "ok 4 - --profile's op table; --no-optimize keeps the batch norm"
else echo "not ok 4 - --profile / --no-optimize"; echo "$out" | sed 's/^/# /'; fi
for bad in "--runs 0" "--batch x" "--seconds -1" "--frobnicate"; do
  # shellcheck disable=SC2086
  "$PDLANG" bench m.pdmodel --feed x=x.npy $bad > bad.out 2>&1
  rc=$?
  [ $rc -eq 2 ] || break
done
if [ $rc -eq 2 ] && grep -q "pdlang bench" bad.out; then
  echo "ok 5 - bad options are usage errors (exit 2)"
else echo "not ok 5 - bad option '$bad' exits $rc"; sed 's/^/# /' bad.out; fi
out=$("$PDLANG" bench m.pdmodel --feed z=x.npy 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "pdlang bench: --feed z: the model has no input of that name"; then
  echo "ok 6 - a feed the model lacks: exit 1, named"
else echo "not ok 6 - unknown feed (exit $rc)"; echo "$out" | sed 's/^/# /'; fi
out=$("$PDLANG" bench nothere.pdmodel --feed x=x.npy 2>&1); rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "nothere"; then
  echo "ok 7 - a missing model: exit 1, named"
else echo "not ok 7 - missing model (exit $rc)"; echo "$out" | sed 's/^/# /'; fi
lenet=$top_srcdir/tests/interop/lenet
out=$("$PDLANG" bench "$lenet/model" --feed "img=$lenet/in_img.npy" --runs 2 --profile 2>&1)
if echo "$out" | grep -q '^hottest ops of the model (self time; an op without a source location named by its output):' &&
   echo "$out" | grep -Eq '^  conv2d_1.tmp_2 +fused_conv2d +2 ' &&
   echo "$out" | grep -Eq '^  fc_0.tmp_2 +relu +2 '; then
  echo "ok 8 - a Paddle model's hottest ops are named by their outputs"
else echo "not ok 8 - a model's hottest ops"; echo "$out" | sed 's/^/# /'; fi
