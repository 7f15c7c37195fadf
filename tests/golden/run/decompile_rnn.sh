#!/bin/sh
# decompile_rnn.sh -- the golden test of the stdlib's lstm and gru layers as `pdlang decompile`
# writes them back from the rnn ops that save makes of them for PaddlePaddle (TAP):
# decompile_rnn_mod.pd saves an lstm, a forward and a reverse lstm over one input (one
# bidirectional rnn op) and two stacked grus, the first reverse; decompile_rnn.out holds the
# scripts decompile writes: lstm( / gru( calls over the input as a sequence (data(...,
# lod_level = 1)), no op("rnn"). Each script runs and saves a model whose outputs on the same
# inputs are the original's, byte for byte. PD_REGEN=1 rewrites decompile_rnn.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddcrnn.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/decompile_rnn_mod.pd" "$tmp/"
cat > "$tmp/gen.pd" <<'GEN'
x2 = var([[0.5, 1.0], [-2.0, 0.25], [3.0, 0.1], [0.2, 0.3], [-1.0, 2.5], [0.7, -0.4]])
lens = var([3, 1, 2], int64)
save("gen.pdmodel", x2, lens)
GEN
echo "1..4"
(cd "$tmp" && "$PDLANG" run --progress=none decompile_rnn_mod.pd &&
   "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in) \
  > "$tmp/setup.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - the models and their inputs saved"
else echo "not ok 1 - the models and their inputs saved (exit $rc)"; sed 's/^/# /' "$tmp/setup.log"; fi
: > "$tmp/out"
: > "$tmp/err"
for name in lstm bidi gru2; do
  w=$tmp/$name
  mkdir -p "$w"
  feeds="--feed x=$tmp/in/x2.npy --lengths x=$tmp/in/lens.npy"
  (cd "$tmp" && "$PDLANG" decompile $name.pdmodel --save-as re.pdmodel) > "$w/m.pd" 2>> "$tmp/err"
  { echo "== $name"; cat "$w/m.pd"; } >> "$tmp/out"
  (cd "$w" && sed "s|load(\"|load(\"$tmp/|" m.pd > run.pd && "$PDLANG" run --progress=none run.pd) \
    > "$w/run.log" 2>&1 || { echo "$name: run failed"; cat "$w/run.log"; } >> "$tmp/err"
  # shellcheck disable=SC2086
  (cd "$w" && "$PDLANG" exec "$tmp/$name.pdmodel" $feeds --out a > a.log && \
     "$PDLANG" exec re.pdmodel $feeds --out b > b.log) 2>> "$tmp/err" ||
    echo "$name: exec failed" >> "$tmp/err"
  [ -s "$w/a.log" ] && cmp -s "$w/a.log" "$w/b.log" || echo "$name: the outputs differ" >> "$tmp/err"
  for f in "$w"/a/*.npy; do
    cmp -s "$f" "$w/b/$(basename "$f")" || echo "$name: $(basename "$f") differs" >> "$tmp/err"
  done
done
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/out" "$dir/decompile_rnn.out"
if [ ! -s "$tmp/err" ]; then echo "ok 2 - each script runs; its model's outputs are the original's, byte for byte"
else echo "not ok 2 - each script runs; its model's outputs are the original's"; sed 's/^/# /' "$tmp/err"; fi
if diff -u "$dir/decompile_rnn.out" "$tmp/out" > "$tmp/diff"; then
  echo "ok 3 - the scripts decompile writes"
else
  echo "not ok 3 - the scripts decompile writes"; sed 's/^/# /' "$tmp/diff"
fi
if [ "$(grep -c '= lstm(x, [0-9]*\(, reverse = true\)\{0,1\}, name = "[a-z_0-9]*")  # ops [0-9]*-[0-9]*' "$tmp/out")" = 3 ] &&
   [ "$(grep -c '= gru([a-z_0-9]*, [0-9]*\(, reverse = true\)\{0,1\}, name = "[a-z_0-9]*")  # ops [0-9]*-[0-9]*' "$tmp/out")" = 2 ] &&
   [ "$(grep -c '^x = data("x", \[-1, 2\], lod_level = 1)$' "$tmp/out")" = 3 ] &&
   ! grep -q 'op("\(rnn\|transpose2\|slice\)"\|x_lengths' "$tmp/out"; then
  echo "ok 4 - 3 lstm calls (one reverse) and 2 gru calls (one reverse) over sequences, no op() of rnn, transpose2 or slice"
else
  echo "not ok 4 - 3 lstm calls (one reverse) and 2 gru calls (one reverse) over sequences, no op() of rnn, transpose2 or slice"
fi
