#!/bin/sh
# summary.sh -- the REPL's :summary (pdlang summary is a golden test, tests/golden/summary):
# the session's layers with their parameter counts (fc(x, 16) on 8 inputs: 8 * 16 + 16 = 144,
# then fc(h, 3): 16 * 3 + 3 = 51), and :summary with an argument refused. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
echo "1..2"
out=$(printf 'import "layers"\nx = data("x", [-1, 8])\nh = fc(x, 16)\ny = fc(h, 3)\n:summary\n' |
  "$PDLANG" 2>&1)
if echo "$out" | grep -q '^<stdin>:3 *fc(x, 16) *\[-1, 16\] *144$' &&
   echo "$out" | grep -q '^<stdin>:4 *fc(h, 3) *\[-1, 3\] *51$' &&
   echo "$out" | grep -q '^Total params: 195$'; then
  echo "ok 1 - :summary lists the session's layers and their 144 + 51 parameters"
else echo "not ok 1 - :summary"; echo "$out" | sed 's/^/# /'; fi
out=$(printf ':summary all\n' | "$PDLANG" 2>&1)
if echo "$out" | grep -q ':summary takes no argument'; then
  echo "ok 2 - :summary takes no argument"
else echo "not ok 2 - :summary with an argument"; echo "$out" | sed 's/^/# /'; fi
