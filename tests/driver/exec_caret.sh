#!/bin/sh
# exec_caret.sh -- a run-time error of `pdlang exec` shows the source line and a caret when the
# .pd file the op's location names is beside the model (run from another folder too), and the
# location alone when it is not there (issue 26: exec's errors had no caret).
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
echo "1..3"
dir=${TMPDIR:-/tmp}/pd_exec_caret.$$
mkdir -p "$dir/m" "$dir/elsewhere" && trap 'rm -rf "$dir"' EXIT
cd "$dir/m" || exit 1
printf 'x = data("x", [-1, 2])\nids = cast(x, dtype = int64)\nw = param([3, 2])\ny = lookup_table(w, reshape(ids, shape = [-1, 1]))\nsave("m.pdmodel", y)\n' > s.pd
"$PDLANG" run s.pd > /dev/null 2>&1 || { echo "Bail out! cannot save the model"; exit 0; }
# A float32 [1, 2] .npy holding 7 and 1 (id 7 of a 3-row table).
{ printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }"
  printf '%*s\n' 58 ''
  printf '\000\000\340\100\000\000\200\077'; } > bad.npy
want='s.pd:4:5: error: lookup_table: id 7 (Ids element 0) is out of range for a table of 3 rows (W [3, 2])
    4 | y = lookup_table(w, reshape(ids, shape = [-1, 1]))
      |     ^'
out=$("$PDLANG" exec m.pdmodel --feed x=bad.npy 2>&1)
if [ "$out" = "$want" ]; then echo "ok 1 - the line and the caret, beside the model"
else echo "not ok 1 - exec's error in the model's folder"; echo "$out" | sed 's/^/# /'; fi
cd "$dir/elsewhere" || exit 1
out=$("$PDLANG" exec ../m/m.pdmodel --feed x=../m/bad.npy 2>&1)
if [ "$out" = "$want" ]; then echo "ok 2 - the line and the caret, run from another folder"
else echo "not ok 2 - exec's error from another folder"; echo "$out" | sed 's/^/# /'; fi
rm ../m/s.pd
out=$("$PDLANG" exec ../m/m.pdmodel --feed x=../m/bad.npy 2>&1)
if [ "$out" = "$(echo "$want" | head -n 1)" ]; then echo "ok 3 - without the script: the location alone"
else echo "not ok 3 - exec's error without the script"; echo "$out" | sed 's/^/# /'; fi
