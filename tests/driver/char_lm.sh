#!/bin/sh
# char_lm.sh -- examples/char_lm.pd in a short form: the same script with 2 epochs instead of 20
# runs to the end (training the two fused LSTM layers, then the greedy writing loop), and the
# model has learned: the loss per character after training is below 3.6 nats, where the
# untrained model's is ln 256 = 5.55 (it reaches about 3.2 after 2 epochs), and the perplexity
# printed beside it is e^loss. It needs /usr/share/common-licenses/GPL-3.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
echo "1..3"
if [ ! -r /usr/share/common-licenses/GPL-3 ]; then
  for i in 1 2 3; do echo "ok $i # SKIP no /usr/share/common-licenses/GPL-3"; done
  exit 0
fi
dir=${TMPDIR:-/tmp}/pd_char_lm.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
sed 's/epochs = 20,/epochs = 2,/' "$top_srcdir/examples/char_lm.pd" > "$dir/short.pd"
if ! grep -q 'epochs = 2,' "$dir/short.pd"; then
  echo "not ok 1 - examples/char_lm.pd has no 'epochs = 20,' to shorten"; exit 0
fi
out=$("$PDLANG" run --progress=none "$dir/short.pd" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - examples/char_lm.pd runs (2 epochs)"
else echo "not ok 1 - examples/char_lm.pd exits $rc"; echo "$out" | sed 's/^/# /' | head -20; fi
last=$(echo "$out" | sed -n 's/^eval: cost = \([0-9.]*\), exp(cost) = \([0-9.]*\) (1098 samples.*/\1 \2/p' |
       tail -n 1)
loss=${last% *}
ppl=${last#* }
if [ -n "$last" ] && awk -v l="$loss" -v p="$ppl" \
     'BEGIN { d = exp(l) - p; exit !(l < 3.6 && d < 0.01 * p && -d < 0.01 * p) }'; then
  echo "ok 2 - loss per character after training $loss < 3.6, perplexity $ppl = e^loss"
else
  echo "not ok 2 - loss and perplexity after training '$last', want < 3.6 and e^loss"
  echo "$out" | sed 's/^/# /'
fi
line=$(echo "$out" | tail -n 1)
if [ "${#line}" -eq 73 ] && [ "$(printf %.1s "$line")" = T ]; then
  echo "ok 3 - a line of 73 characters written from 'T'"
else
  echo "not ok 3 - the written line is '$line'"
fi
