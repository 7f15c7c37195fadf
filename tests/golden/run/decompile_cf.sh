#!/bin/sh
# decompile_cf.sh -- the golden test of control flow as `pdlang decompile` writes it (TAP):
# decompile_cf_mod.pd saves a model with pdlang's if / else (on one element, over rows) and nested
# whiles, and PaddlePaddle's
# static.nn.cond (a conditional_block pair and select_input, in both formats) and while_loop
# (tests/interop) are read as saved; decompile_cf.out holds the scripts decompile writes, with
# `if (c) { ... } else { ... }` and `while (c) { ... }` statements and no op() with a body.
# Each script runs and saves a model whose outputs on the same inputs are the original's, byte
# for byte (an output that is also an input, while_loop's x, is the loop's var in the script,
# fetched under its name: the one output is compared). PD_REGEN=1 rewrites decompile_cf.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddccf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/decompile_cf_mod.pd" "$tmp/"
cat > "$tmp/gen.pd" <<'GEN'
x4 = var([[0.5, 1.0, -2.0, 0.25], [3.0, 0.1, 0.2, 0.3], [-1.0, 2.5, 0.5, 1.5]])
x5 = var([[5.5, 6.0, 7.0, 8.25], [9.0, 5.1, 5.2, 5.3]])
save("gen.pdmodel", x4, x5)
GEN
echo "1..4"
(cd "$tmp" && "$PDLANG" run --progress=none decompile_cf_mod.pd &&
   "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in) \
  > "$tmp/setup.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - the model and its inputs saved"
else echo "not ok 1 - the model and its inputs saved (exit $rc)"; sed 's/^/# /' "$tmp/setup.log"; fi
: > "$tmp/out"
: > "$tmp/err"
for name in own own5 cond while_loop pir/cond pir/while_loop; do
  w=$tmp/$(echo "$name" | tr / _)
  mkdir -p "$w"
  case $name in
  own|own5) model=$tmp/model.pdmodel; feeds="--feed x=$tmp/in/x4.npy"
            [ $name = own5 ] && feeds="--feed x=$tmp/in/x5.npy";;
  *) model=tests/interop/$name/model.pdmodel
     [ -f "$top_srcdir/$model" ] || model=tests/interop/$name/model.json
     feeds=""
     for f in "$top_srcdir/tests/interop/$name"/in_*.npy; do
       f_name=$(basename "$f" .npy); feeds="$feeds --feed ${f_name#in_}=$f"
     done;;
  esac
  if [ $name != own5 ]; then  # own5: the same script on other inputs
    if [ $name = own ]; then
      (cd "$tmp" && "$PDLANG" decompile model.pdmodel --save-as re.pdmodel) > "$w/m.pd"
    else
      (cd "$top_srcdir" && "$PDLANG" decompile "$model" --save-as re.pdmodel) > "$w/m.pd"
    fi 2>> "$tmp/err"
    { echo "== $name"; cat "$w/m.pd"; } >> "$tmp/out"
    # (the note that the own model is for pdlang only is no failure)
    (cd "$w" && sed "s|load(\"|load(\"$tmp/|" m.pd > run.pd && "$PDLANG" run --progress=none run.pd) \
      > "$w/run.log" 2>&1 || { echo "$name: run failed"; cat "$w/run.log"; } >> "$tmp/err"
  else
    cp "$tmp/own/re.pdmodel" "$w/"
  fi
  [ $name = own ] || [ $name = own5 ] || model=$top_srcdir/$model
  # shellcheck disable=SC2086
  (cd "$w" && "$PDLANG" exec "$model" $feeds --out a > a.log && \
     "$PDLANG" exec re.pdmodel $feeds --out b > b.log) 2>> "$tmp/err" ||
    echo "$name: exec failed" >> "$tmp/err"
  # the outputs in their order (the script's may have other names: a loop's var)
  sed -n 's/^\([^ ]*\): Tensor(.*/\1/p' "$w/a.log" > "$w/a.names"
  sed -n 's/^\([^ ]*\): Tensor(.*/\1/p' "$w/b.log" > "$w/b.names"
  [ -s "$w/a.names" ] && [ "$(wc -l < "$w/a.names")" = "$(wc -l < "$w/b.names")" ] ||
    echo "$name: the outputs $(cat "$w/a.names") and $(cat "$w/b.names")" >> "$tmp/err"
  paste -d ' ' "$w/a.names" "$w/b.names" | sed 's|/|_|g; s|^\.|_|; s| \.| _|' |
  while read -r x y; do
    cmp -s "$w/a/$x.npy" "$w/b/$y.npy" || echo "$name: $x and $y differ" >> "$tmp/err"
  done
done
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/out" "$dir/decompile_cf.out"
if [ ! -s "$tmp/err" ]; then echo "ok 2 - each script runs; its model's outputs are the original's, byte for byte"
else echo "not ok 2 - each script runs; its model's outputs are the original's"; sed 's/^/# /' "$tmp/err"; fi
if diff -u "$dir/decompile_cf.out" "$tmp/out" > "$tmp/diff"; then
  echo "ok 3 - the scripts decompile writes"
else
  echo "not ok 3 - the scripts decompile writes"; sed 's/^/# /' "$tmp/diff"
fi
if [ "$(grep -c '^ *if ([A-Za-z_0-9]*) {  # op [0-9]*\( of block [0-9]*\)\{0,1\} (conditional_block)$' "$tmp/out")" = 5 ] &&
   [ "$(grep -c '^ *while ([A-Za-z_0-9]*) {  # op [0-9]*\( of block [0-9]*\)\{0,1\} (while)$' "$tmp/out")" = 4 ] &&
   [ "$(grep -c '} else {  # op' "$tmp/out")" = 5 ] &&
   ! grep -q 'op("\(while\|conditional_block\|select_input\|logical_not\|split_lod_tensor\|merge_lod_tensor\)"' "$tmp/out"; then
  echo "ok 4 - 5 ifs with an else and 4 whiles, no block op(), select_input, split or merge left"
else
  echo "not ok 4 - 5 ifs with an else and 4 whiles, no block op(), select_input, split or merge left"
fi
