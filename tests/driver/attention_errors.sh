#!/bin/sh
# attention_errors.sh -- bad arguments of multi_head_attention and transformer_encoder_layer
# (stdlib/layers.pd) stop `pdlang check` with exit status 1 and an error at the caller's line
# and column (then a note inside the layer; only the first line is compared): heads not dividing
# the features, k and v of different lengths, an input of the wrong rank, x not [batch, length,
# d_model], and a positional_embedding of an input of rank 2. A mask that does not broadcast is
# an op's error inside the layer: its line in <stdlib>/layers.pd first, then the call as a note.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_attnerr.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
echo "1..6"
# $1: the call (line 5 of the script), $2: the expected first line of stderr.
expect() {
  n=$((n + 1))
  cat > s.pd <<PD
import "layers"
x = data("x", [-1, 5, 6])
k = data("k", [-1, 4, 6])
v = data("v", [-1, 3, 6])
y = $1
PD
  "$PDLANG" check s.pd > s.out 2> s.err
  rc=$?
  first=$(head -n 1 s.err)
  # An error inside the standard library: its line there (which moves as layers.pd changes).
  case $2 in "<stdlib>/layers.pd:N:N"*) first=$(echo "$first" | sed 's/^\(<stdlib>\/layers.pd:\)[0-9]*:[0-9]*/\1N:N/') ;; esac
  if [ $rc -eq 1 ] && [ "$first" = "$2" ]; then
    echo "ok $n - $1"
  else
    echo "not ok $n - $1: exit $rc, want 1 and '$2'"
    sed 's/^/# /' s.err
  fi
}
expect 'multi_head_attention(x, x, x, 4)' \
  "s.pd:5:5: error: multi_head_attention: heads = 4 does not divide q's 6 features"
expect 'multi_head_attention(x, k, v, 2)' \
  's.pd:5:5: error: multi_head_attention: k and v must have the same length, got [-1, 4, 6] and [-1, 3, 6]'
expect 'multi_head_attention(x[0], x, x, 2)' \
  's.pd:5:5: error: multi_head_attention needs q, k and v of rank 3 ([batch, length, features]), got [5, 6], [-1, 5, 6] and [-1, 5, 6]'
expect 'transformer_encoder_layer(x, 8, 2, 16)' \
  's.pd:5:5: error: transformer_encoder_layer needs x of shape [batch, length, 8] (d_model), got [-1, 5, 6]'
expect 'multi_head_attention(x, k, k, 2, mask = data("m", [-1, 1, 1, 5]))' \
  '<stdlib>/layers.pd:N:N: error: elementwise_add: cannot broadcast [-1, 2, 5, 4] and [-1, 1, 1, 5] (axis -1)'
expect 'positional_embedding(x[0])' \
  's.pd:5:5: error: positional_embedding needs x of shape [batch, length, features] with a known length, got [5, 6]'
