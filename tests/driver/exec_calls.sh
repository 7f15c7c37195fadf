#!/bin/sh
# exec_calls.sh -- a saved model keeps the calls each op was written inside (op_callstack), so
# that `pdlang exec` shows a run-time error inside a `def` at its line and then each call,
# innermost first, with source lines where the .pd file is beside the model, and the locations
# alone where it is not. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_exec_calls.$$
mkdir -p "$dir/away" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..3"
cat > m.pd <<'PD'
def ratio(a, b) {
    return a / b
}
def twice(a, b) {
    return ratio(a, b) * 2
}
a = data("a", [-1, 2], int64)
b = data("b", [-1, 2], int64)
q = twice(a, b)
save("m.pdmodel", q)
PD
"$PDLANG" run m.pd || echo "# cannot save the model"
npy() { # a (1, 2) int64 array of the two values given as octal escapes of their low bytes
  printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }"
  printf '%*s\n' 58 ''
  printf "\\$1\\0\\0\\0\\0\\0\\0\\0\\$2\\0\\0\\0\\0\\0\\0\\0"
}
npy 007 010 > a.npy
npy 002 000 > b.npy
cat > want.err <<'ERR'
m.pd:2:14: error: elementwise_div: integer division by zero: element 1 of Y (var 'b') [1, 2] is 0
    2 |     return a / b
      |              ^
m.pd:5:12: note: 'ratio' called from here
    5 |     return ratio(a, b) * 2
      |            ^
m.pd:9:5: note: 'twice' called from here
    9 | q = twice(a, b)
      |     ^
ERR
"$PDLANG" exec m.pdmodel --feed a=a.npy --feed b=b.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 1 ] && diff -u want.err e.err > e.diff
then echo "ok 1 - exec shows the line inside the def, then each call"
else echo "not ok 1 - exec of a failing def (rc $rc)"; sed 's/^/# /' e.diff e.err; fi

# From another folder: the .pd beside the model is found.
mkdir -p sub && cp m.pdmodel m.pdiparams sub/ && cd away || exit 1
"$PDLANG" exec ../sub/m.pdmodel --feed a=../a.npy --feed b=../b.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 1 ] && [ ! -e ../sub/m.pd ] &&
   grep -q "^m.pd:5:12: note: 'ratio' called from here$" e.err &&
   grep -q "^m.pd:9:5: note: 'twice' called from here$" e.err && ! grep -q '|' e.err
then echo "ok 2 - without the source, the locations alone"
else echo "not ok 2 - exec without the source (rc $rc)"; sed 's/^/# /' e.err; fi
cp ../m.pd ../sub/
"$PDLANG" exec ../sub/m.pdmodel --feed a=../a.npy --feed b=../b.npy > e.out 2> e.err
rc=$?
if [ $rc -eq 1 ] && diff -u ../want.err e.err > e.diff
then echo "ok 3 - with the source beside the model, its lines"
else
  echo "not ok 3 - exec with the source beside the model (rc $rc)"; sed 's/^/# /' e.diff e.err
fi
