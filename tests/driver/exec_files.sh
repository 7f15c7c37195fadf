#!/bin/sh
# exec_files.sh -- every file given to `pdlang exec` is checked, in one rule and one message form
# (issue 44): a feed of another dtype is cast, with a note, when every value converts to the
# input's dtype exactly (int32 for an int64 input, int64 for a float32 one; float64 rounds to
# float32; float16 too), and refused otherwise naming the value; a file of another shape, or
# with a value that does not convert, gets "input x is ..., but FILE holds ...; it takes ..."
# listing what the input takes; --lengths of rank 2 is refused (it
# was flattened and used); a folder holding a PIR model (NAME.json) beside other JSON runs it,
# and one holding two names both. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
top_srcdir=$(cd "$top_srcdir" && pwd)
dir=${TMPDIR:-/tmp}/pd_exec_files.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..12"
printf 'x = data("x", [-1, 2], int64)\ny = x * 2\nsave("i64.pdmodel", y)\n' > a.pd
printf 'x = data("x", [-1, 2], int32)\ny = x * 2\nsave("i32.pdmodel", y)\n' > b.pd
printf 'x = data("x", [-1, 2])\ny = x * 2\nsave("f32.pdmodel", y)\n' > c.pd
printf 'x = data("x", [-1, 1], lod_level = 1)\nh = var(0)\nfor (t in x) {\n    h = tanh(t * 0.5 + h * 0.25)\n}\nsave("s.pdmodel", h)\n' > s.pd
for f in a.pd b.pd c.pd s.pd; do
  "$PDLANG" run "$f" > /dev/null 2>&1 || { echo "Bail out! cannot save $f's model"; exit 0; }
done
npy() { # $1 descr, $2 shape, $3 padding, $4 the data as octal escapes
  printf '\223NUMPY\001\000v\000'
  printf "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" "$1" "$2"
  printf '%*s\n' "$3" ''
  printf "$4"; }
npy '<i4' '(1, 2)' 58 '\003\000\000\000\375\377\377\377' > i32.npy
npy '<i8' '(1, 2)' 58 '\003\000\000\000\000\000\000\000\000\000\000\000\001\000\000\000' > big.npy
npy '<f2' '(1, 2)' 58 '\000\074\000\100' > half.npy
npy '<f4' '(1, 3)' 58 '\000\000\200\077\000\000\000\100\000\000\100\100' > three.npy
npy '<f8' '(1, 2)' 58 '\232\231\231\231\231\231\271\077\000\000\000\000\000\000\000\100' > f64.npy
npy '<f4' '(5, 1)' 58 '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\277\000\000\000\077' > rows.npy
npy '<i8' '(2,)' 60 '\003\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000' > len.npy
npy '<i8' '(2, 1)' 58 '\003\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000' > len2d.npy
n=0
# $1 what, $2 0: must run / 1: must fail, $3 text its output must hold, then the arguments
check() {
  what=$1 fail=$2 want=$3; shift 3
  out=$("$PDLANG" exec "$@" 2>&1)
  rc=$?
  n=$((n + 1))
  if [ "$rc" -eq "$fail" ] && echo "$out" | grep -qF -e "$want"; then
    echo "ok $n - $what"
  else
    echo "not ok $n - $what (rc $rc)"; echo "$out" | sed 's/^/# /'
  fi
}
check "int32 for an int64 input: cast, with a note" 0 \
  "note: i32.npy holds int32; cast to int64, the dtype of input x (every value exact)" \
  i64.pdmodel --feed x=i32.npy
check "... and its values" 0 "[[ 6, -6]]" i64.pdmodel --feed x=i32.npy
check "int64 for a float32 input whose values float32 holds: cast" 0 \
  "big.npy holds int64; cast to float32" f32.pdmodel --feed x=big.npy
check "float64 for a float32 input: rounded, with a note" 0 \
  "f64.npy holds float64; cast to float32, the dtype of input x (values round to float32)" \
  f32.pdmodel --feed x=f64.npy
check "an int64 value that int32 cannot hold: refused, naming it" 1 \
  "pdlang exec: input x is int32 [-1, 2], but big.npy holds int64 [1, 2]: its value 4294967296 (element 1) does not convert to int32 exactly; it takes int32 [-1, 2], or float32, float64, float16, int64, uint8, int8, bool whose values convert to int32 exactly" \
  i32.pdmodel --feed x=big.npy
check "float16 for a float32 input: cast, with a note" 0 \
  "note: half.npy holds float16; cast to float32, the dtype of input x (every value exact)" \
  f32.pdmodel --feed x=half.npy
check "... and its values (float16 1 and 2, doubled by the model)" 0 "[[2, 4]]" f32.pdmodel --feed x=half.npy
check "another shape: the same form" 1 \
  "pdlang exec: input x is float32 [-1, 2], but three.npy holds float32 [1, 3]; it takes float32 [-1, 2]" \
  f32.pdmodel --feed x=three.npy
check "--lengths of rank 2: refused" 1 \
  "pdlang exec: --lengths x: len2d.npy holds int64 [2, 1]; it takes a 1-D int32 or int64 array of one or more lengths" \
  s.pdmodel --feed x=rows.npy --lengths x=len2d.npy
check "--lengths of rank 1: runs" 0 "0.935597" s.pdmodel --feed x=rows.npy --lengths x=len.npy
mkdir pir
cp "$top_srcdir/tests/interop/pir/mlp/model.json" "$top_srcdir/tests/interop/pir/mlp/model.pdiparams" pir/
cp "$top_srcdir/tests/interop/pir/mlp/in_x.npy" .
printf '{"note": "not a model"}\n' > pir/config.json
check "a folder holding NAME.json (PIR) and other JSON: the PIR model runs" 0 "Tensor(shape=" \
  pir --feed x=in_x.npy
cp pir/model.json pir/other.json
check "a folder holding two PIR models: both named" 1 \
  "pir: a folder, but it holds no __model__ (a Fluid model folder holds __model__ and its parameters); it holds model.json, other.json: give the model file's path" \
  pir --feed x=in_x.npy
