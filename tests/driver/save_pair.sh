#!/bin/sh
# save_pair.sh -- save(path, target) writes its .pdmodel/.pdiparams pair consistently (issue 26):
# the model records the identity of its parameter file, so that `pdlang exec` and load() refuse
# a parameter file of another save (same shapes, other values) instead of running with it; a
# save whose model cannot be written leaves no new parameter file and no temporary. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_pair.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..6"
save() { # $1: w's value, $2: the model's path
  printf 'x = data("x", [-1, 2])\nw = param([2, 1], init = %s, name = "w")\ny = x @ w\nsave("%s", y)\n' "$1" "$2"
}
save 0.5 m.pdmodel > m.pd
save 0.25 n.pdmodel > n.pd
"$PDLANG" run m.pd && "$PDLANG" run n.pd || echo "# cannot save the models"
# Two points (1, 1) and (-1, -1): y = x @ w is 2w and -2w.
{ printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }"
  printf '%*s\n' 58 ''   # the header pads to 128 bytes
  printf '\000\000\200\077\000\000\200\077\000\000\200\277\000\000\200\277'; } > pts.npy
"$PDLANG" exec m.pdmodel --feed x=pts.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 0 ] && [ "$(tr -d ' \n' < e.out)" = "y:Tensor(shape=[2,1],dtype=float32)[[1],[-1]]" ]; then echo "ok 1 - exec runs the pair save wrote"
else echo "not ok 1 - exec of a good pair (rc $rc)"; sed 's/^/# /' e.out e.err; fi

# n's parameters beside m's program: the same size and shapes, other values.
cp n.pdiparams m.pdiparams
"$PDLANG" exec m.pdmodel --feed x=pts.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 1 ] && grep -q "m.pdiparams: error: not the parameter file saved with this model" e.err
then echo "ok 2 - exec refuses another save's parameter file"
else echo "not ok 2 - exec of a mismatched pair (rc $rc)"; sed 's/^/# /' e.out e.err; fi
"$PDLANG" exec m.pdmodel --params n.pdiparams --feed x=pts.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 1 ] && grep -q "n.pdiparams: error: not the parameter file saved with this model" e.err
then echo "ok 3 - and so does --params"
else echo "not ok 3 - exec --params of another save (rc $rc)"; sed 's/^/# /' e.out e.err; fi

printf 'x = data("x", [-1, 2])\nw = param([2, 1], name = "w")\ny = x @ w\nload("m.pdmodel")\n' > l.pd
"$PDLANG" run l.pd > l.out 2> l.err
rc=$?
if [ $rc -eq 1 ] && grep -q "^l.pd:4:6: error: load: m.pdiparams: not the parameter file saved with this model" l.err
then echo "ok 4 - load() refuses it at its line"
else echo "not ok 4 - load of a mismatched pair (rc $rc)"; sed 's/^/# /' l.out l.err; fi

# A save whose .pdmodel cannot be written (it is a directory) writes no .pdiparams either.
mkdir d.pdmodel
save 0.5 d.pdmodel > d.pd
"$PDLANG" run d.pd > d.out 2> d.err
rc=$?
if [ $rc -eq 1 ] && [ ! -e d.pdiparams ]; then echo "ok 5 - a failed save leaves no parameter file"
else echo "not ok 5 - failed save (rc $rc)"; ls | sed 's/^/# /'; sed 's/^/# /' d.err; fi
left=$(ls | grep '\.tmp\.' || true)
if [ -z "$left" ]; then echo "ok 6 - and no temporary"
else echo "not ok 6 - temporaries left: $left"; fi
