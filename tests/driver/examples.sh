#!/bin/sh
# examples.sh -- the quick examples run to the end: fit_a_line.pd (its assert_close calls check
# the fit against NIST's certified values), ifelse.pd and rnn.pd (the seeds' control flow), and
# sequence_classify.pd (lines(...) sequences, a few seconds; it needs /usr/share/common-licenses).
# train.pd and cnn.pd take minutes and are the README's main job, not part of `make check`.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
echo "1..4"
n=0
for ex in fit_a_line ifelse rnn sequence_classify; do
  n=$((n + 1))
  if [ "$ex" = sequence_classify ] && [ ! -r /usr/share/common-licenses/MPL-2.0 ]; then
    echo "ok $n - examples/$ex.pd # SKIP no /usr/share/common-licenses"; continue
  fi
  out=$("$PDLANG" run --progress=none "$top_srcdir/examples/$ex.pd" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then echo "ok $n - examples/$ex.pd runs"
  else echo "not ok $n - examples/$ex.pd exits $rc"; echo "$out" | sed 's/^/# /' | head -20; fi
done
