#!/bin/sh
# decompile_for.sh -- the golden test of `for` loops over sequences as `pdlang decompile` writes
# them (TAP): decompile_for_mod.pd saves a model with two for loops (recurrent ops: two memories,
# emitted outputs, reverse), and a loop over sequences of sequences with a loop inside it is
# saved too; decompile_for.out holds the scripts decompile writes, with `for (t in x) { ... }`
# statements and no op("recurrent"). Each script runs and saves a model whose outputs on the
# same inputs are the original's, byte for byte (the nested loops, which exec cannot feed: the
# same ops in each block). decompile_rnn_mod.pd saves the stdlib's lstm and gru layers, which
# save writes as rnn ops: an lstm, a forward and a reverse lstm over one input (one bidirectional
# rnn op), two stacked grus, the first reverse; their scripts call lstm( / gru( over the input as
# a sequence, no op("rnn"). PD_REGEN=1 rewrites decompile_for.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddcfor.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/decompile_for_mod.pd" "$dir/decompile_rnn_mod.pd" "$tmp/"
cat > "$tmp/nested.pd" <<'NESTED'
x = data("x", [-1, 1], lod_level = 2)
total = var(0)
for (s in x) {
    for (w in s) {
        total = total + w * 0.5
    }
}
save("nested.pdmodel", total)
NESTED
cat > "$tmp/gen.pd" <<'GEN'
x2 = var([[0.5, 1.0], [-2.0, 0.25], [3.0, 0.1], [0.2, 0.3], [-1.0, 2.5]])
lens = var([3, 2], int64)
save("gen.pdmodel", x2, lens)
GEN
echo "1..5"
(cd "$tmp" && "$PDLANG" run --progress=none decompile_for_mod.pd &&
   "$PDLANG" run --progress=none nested.pd &&
   "$PDLANG" run --progress=none decompile_rnn_mod.pd &&
   "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in) \
  > "$tmp/setup.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - the models and their inputs saved"
else echo "not ok 1 - the models and their inputs saved (exit $rc)"; sed 's/^/# /' "$tmp/setup.log"; fi
: > "$tmp/out"
: > "$tmp/err"
for name in model nested lstm bidi gru2; do
  w=$tmp/$name
  mkdir -p "$w"
  feeds="--feed x=$tmp/in/x2.npy --lengths x=$tmp/in/lens.npy"
  (cd "$tmp" && "$PDLANG" decompile $name.pdmodel --save-as re.pdmodel) > "$w/m.pd" 2>> "$tmp/err"
  { echo "== $name"; cat "$w/m.pd"; } >> "$tmp/out"
  (cd "$w" && sed "s|load(\"|load(\"$tmp/|" m.pd > run.pd && "$PDLANG" run --progress=none run.pd) \
    > "$w/run.log" 2>&1 || { echo "$name: run failed"; cat "$w/run.log"; } >> "$tmp/err"
  if [ $name = nested ]; then
    "$PDLANG" dump "$tmp/nested.pdmodel" | grep '^\(block\|  op\) [0-9]*' | sed 's/ @ .*//' > "$w/a.ops"
    "$PDLANG" dump "$w/re.pdmodel" | grep '^\(block\|  op\) [0-9]*' | sed 's/ @ .*//' > "$w/b.ops"
    [ -s "$w/a.ops" ] && cmp -s "$w/a.ops" "$w/b.ops" || echo "$name: the ops differ" >> "$tmp/err"
    continue
  fi
  # shellcheck disable=SC2086
  (cd "$w" && "$PDLANG" exec "$tmp/$name.pdmodel" $feeds --out a > a.log && \
     "$PDLANG" exec re.pdmodel $feeds --out b > b.log) 2>> "$tmp/err" ||
    echo "$name: exec failed" >> "$tmp/err"
  [ -s "$w/a.log" ] && cmp -s "$w/a.log" "$w/b.log" || echo "$name: the outputs differ" >> "$tmp/err"
  for f in "$w"/a/*.npy; do
    cmp -s "$f" "$w/b/$(basename "$f")" || echo "$name: $(basename "$f") differs" >> "$tmp/err"
  done
done
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/out" "$dir/decompile_for.out"
if [ ! -s "$tmp/err" ]; then echo "ok 2 - each script runs; its model's outputs are the original's, byte for byte"
else echo "not ok 2 - each script runs; its model's outputs are the original's"; sed 's/^/# /' "$tmp/err"; fi
if diff -u "$dir/decompile_for.out" "$tmp/out" > "$tmp/diff"; then
  echo "ok 3 - the scripts decompile writes"
else
  echo "not ok 3 - the scripts decompile writes"; sed 's/^/# /' "$tmp/diff"
fi
if [ "$(grep -c '^ *for ([A-Za-z_0-9]* in [A-Za-z_0-9]*\(, reverse = true\)\{0,1\}) {  # op [0-9]*\( of block [0-9]*\)\{0,1\} (recurrent)$' "$tmp/out")" = 4 ] &&
   ! grep -q 'op("\(recurrent\|sequence_pool\)"' "$tmp/out"; then
  echo "ok 4 - 4 for statements (one reverse, one inside another), no op() of recurrent or its last steps"
else
  echo "not ok 4 - 4 for statements (one reverse, one inside another), no op() of recurrent or its last steps"
fi
sed -n '/^== lstm$/,$p' "$tmp/out" > "$tmp/rnn"
if [ "$(grep -c '= lstm(x, [0-9]*\(, reverse = true\)\{0,1\}, name = "[a-z_0-9]*")  # ops [0-9]*-[0-9]*' "$tmp/rnn")" = 3 ] &&
   [ "$(grep -c '= gru([a-z_0-9]*, [0-9]*\(, reverse = true\)\{0,1\}, name = "[a-z_0-9]*")  # ops [0-9]*-[0-9]*' "$tmp/rnn")" = 2 ] &&
   [ "$(grep -c '^x = data("x", \[-1, 2\], lod_level = 1)$' "$tmp/rnn")" = 3 ] &&
   ! grep -q 'op("\(rnn\|transpose2\|slice\)"\|x_lengths' "$tmp/rnn"; then
  echo "ok 5 - 3 lstm calls (one reverse) and 2 gru calls (one reverse) over sequences, no op() of rnn, transpose2 or slice"
else
  echo "not ok 5 - 3 lstm calls (one reverse) and 2 gru calls (one reverse) over sequences, no op() of rnn, transpose2 or slice"
fi
