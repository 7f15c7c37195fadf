#!/bin/sh
# examples.sh -- the quick examples run to the end: fit_a_line.pd (its assert_close calls check
# the fit against NIST's certified values), ifelse.pd and rnn.pd (the seeds' control flow).
# train.pd and cnn.pd take minutes and are the README's main job, not part of `make check`.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
echo "1..3"
n=0
for ex in fit_a_line ifelse rnn; do
  n=$((n + 1))
  out=$("$PDLANG" run --progress=none "$top_srcdir/examples/$ex.pd" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then echo "ok $n - examples/$ex.pd runs"
  else echo "not ok $n - examples/$ex.pd exits $rc"; echo "$out" | sed 's/^/# /' | head -20; fi
done
