#!/bin/sh
# profile.sh -- `pdlang run --profile` (and PDLANG_PROFILE=1): the script's own output is
# unchanged, and stderr has the table per op type and the hottest ops of the source, with the
# call counts the programs imply (times vary, counts do not): examples/rnn.pd runs its loop
# over sequences of 3 and 2 elements (3 steps of 2 elementwise_mul, 1 sigmoid); in a small
# training script through a loop and an if, each minibatch runs the loop, its gradient, the
# if's merge and its gradient, and the cost's gradient once. A run that fails reports its error
# first, then the profile of what ran.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
tmp=${TMPDIR:-/tmp}/pd_profile.$$
mkdir -p "$tmp" && trap 'rm -rf "$tmp"' EXIT
echo "1..9"
n=0
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
  n=$((n + 1))
  d=$1
  shift
  if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; sed 's/^/# /' "$tmp/err" | head -40; fi
}
# calls TYPE: the calls column of TYPE's row in the per-type table
calls() { awk -v t="$1" '/^hottest/ { exit } $1 == t { print $2 }' "$tmp/err"; }

"$PDLANG" run "$top_srcdir/examples/rnn.pd" >"$tmp/plain" 2>&1
"$PDLANG" run --profile "$top_srcdir/examples/rnn.pd" >"$tmp/out" 2>"$tmp/err"
check "rnn.pd: the same stdout with --profile" cmp -s "$tmp/plain" "$tmp/out"
check "rnn.pd: the table's header" \
  grep -q '^op type  *calls  *total ms  *self ms  *self  *self us/op$' "$tmp/err"
check "rnn.pd: recurrent 1, elementwise_mul 6, sigmoid 3 calls" \
  test "$(calls recurrent) $(calls elementwise_mul) $(calls sigmoid)" = "1 6 3"
check "rnn.pd: the hottest ops name their place (t * W at 7:11, 3 calls)" \
  grep -q 'rnn\.pd:7:11  *elementwise_mul  *3 ' "$tmp/err"

printf 'abcdefghijklmnopqrstuvwxyz0123456789\n' >"$tmp/text"
cat >"$tmp/train.pd" <<PD
x = data("x", [-1, 1], int64, lod_level = 1)
emb = param([256, 4], name = "emb")
W = param([4, 4], name = "W")
h = zeros([4])
for (t in lookup_table(emb, x)) {
    h = tanh(mul(t, W) + h)
}
if (reduce_sum(h, dim = [1], keep_dim = true) > 0) {
    z = h * 2.0
} else {
    z = h * -1.0
}
cost = mean(square(z))
train(cost, reader = text("$tmp/text", length = 4), batch = 2, epochs = 1, optimizer = sgd(0.1),
      shuffle = false)
PD
PDLANG_PROFILE=1 "$PDLANG" run --progress=none "$tmp/train.pd" >"$tmp/out" 2>"$tmp/err"
check "train.pd: PDLANG_PROFILE=1 profiles" grep -q '^profile: ' "$tmp/err"
steps=$(calls mean_grad)
check "train.pd: recurrent and recurrent_grad once per minibatch (${steps:-no} mean_grad calls)" \
  test "${steps:-0}" -gt 0 -a "$(calls recurrent) $(calls recurrent_grad)" = "$steps $steps"
check "train.pd: merge_lod_tensor and its gradient once per minibatch" \
  test "$(calls merge_lod_tensor) $(calls merge_lod_tensor_grad)" = "${steps:-0} ${steps:-0}"
PDLANG_PROFILE=0 "$PDLANG" run --progress=none "$tmp/train.pd" >"$tmp/out" 2>"$tmp/err"
check "PDLANG_PROFILE=0: no profile" sh -c "! grep -q '^profile: ' '$tmp/err'"
(cd "$top_srcdir/tests/golden/run" && "$PDLANG" run --profile label_out_of_range.pd) \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a failing run: exit 1, the error first, then the profile" \
  sh -c "[ $rc -eq 1 ] && head -n 1 '$tmp/err' | grep -q 'error: softmax_with_cross_entropy' &&
         grep -q '^profile: ' '$tmp/err'"
