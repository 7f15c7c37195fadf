#!/bin/sh
# exec_sequences.sh -- saved sequence models through `pdlang exec` (issue 28): the rows of a
# batch of sequences with --feed and each sequence's length with --lengths. A for loop's last
# h = tanh(0.5 x + 0.25 h) over x = [1, 2, 3] and [-1, 0.5] is 0.935597 and 0.133666 (the
# recurrence by hand, as tests/api/test_api checks it); an embedding + stdlib lstm classifier
# gives one row of 3 scores a sequence; a sequence input without --lengths, lengths that are not
# integers or do not add up to the rows, and --lengths for a plain input are clear errors. save
# writes a sequence input padded with its lengths beside it (vm/passes/paddle_export.h): the loop
# model given by its path prefix, fed padded [2, 3, 1] and x_lengths, gives the same h; a model
# PaddlePaddle cannot run (a sequence_softmax) is saved for pdlang only, with a note, and runs.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
echo "1..8"
dir=${TMPDIR:-/tmp}/pd_exec_seq.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
printf 'x = data("x", [-1, 1], lod_level = 1)\nh = var(0)\nfor (t in x) {\n    h = tanh(t * 0.5 + h * 0.25)\n}\nsave("m.pdmodel", h)\n' > s.pd
printf 'import "layers"\nx = data("x", [-1, 1], int64, lod_level = 1)\ne = embedding(x, 16, 8)\nhs, h, c = lstm(e, 6)\ny = fc(h, 3)\nsave("l.pdmodel", y)\n' > l.pd
printf 'x = data("x", [-1, 1])\ny = x * 2\nsave("p.pdmodel", y)\n' > p.pd
for f in s.pd l.pd p.pd; do "$PDLANG" run "$f" > /dev/null 2>&1 || { echo "Bail out! cannot save $f's model"; exit 0; }; done
npy() { # $1 descr, $2 shape, $3 padding, $4 the data as octal escapes
  printf '\223NUMPY\001\000v\000'
  printf "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" "$1" "$2"
  printf '%*s\n' "$3" ''
  printf "$4"; }
npy '<f4' '(5, 1)' 58 '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\277\000\000\000\077' > x.npy
npy '<i8' '(2,)' 60 '\003\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000' > len.npy
npy '<i8' '(2,)' 60 '\003\000\000\000\000\000\000\000\003\000\000\000\000\000\000\000' > badlen.npy
npy '<i8' '(5, 1)' 58 '\001\0\0\0\0\0\0\0\002\0\0\0\0\0\0\0\003\0\0\0\0\0\0\0\004\0\0\0\0\0\0\0\005\0\0\0\0\0\0\0' > ids.npy
out=$("$PDLANG" exec m.pdmodel --feed x=x.npy --lengths x=len.npy 2>&1)
vals=$(echo "$out" | tr -d '[],' | awk 'NR > 1 { printf "%s ", $1 }')
if echo "$vals" | awk '{ exit !(($1 - 0.935597)^2 < 1e-10 && ($2 - 0.133666)^2 < 1e-10) }'; then
  echo "ok 1 - the loop's last h of each sequence: $vals"
else echo "not ok 1 - exec of the loop model"; echo "$out" | sed 's/^/# /'; fi
out=$("$PDLANG" exec l.pdmodel --feed x=ids.npy --lengths x=len.npy 2>&1)
if [ $? -eq 0 ] && echo "$out" | grep -q 'Tensor(shape=\[2, 3\], dtype=float32)'; then
  echo "ok 2 - an lstm classifier: one row of scores a sequence"
else echo "not ok 2 - exec of the lstm model"; echo "$out" | sed 's/^/# /'; fi
check() { # $1 what, $2 expected message, then the exec arguments
  what=$1 want=$2; shift 2
  out=$("$PDLANG" exec "$@" 2>&1)
  rc=$?
  n=$((n + 1))
  if [ $rc -ne 0 ] && echo "$out" | grep -qF -e "$want"; then echo "ok $n - $what"
  else echo "not ok $n - $what (rc $rc)"; echo "$out" | sed 's/^/# /'; fi
}
n=2
check "a sequence input without --lengths" "input x is a batch of sequences: give each sequence's length with --lengths x=LENGTHS.npy" m.pdmodel --feed x=x.npy
check "lengths that are not integers" "--lengths x: x.npy holds float32 [5, 1]; it takes a 1-D int32 or int64 array of one or more lengths" m.pdmodel --feed x=x.npy --lengths x=x.npy
check "lengths past the rows" "--lengths x: sequence 1 has length 3, but the 5 rows of the values hold only 2 more" m.pdmodel --feed x=x.npy --lengths x=badlen.npy
check "--lengths for a plain input" "--lengths x: that input is not a batch of sequences (lod_level 1)" p.pdmodel --feed x=x.npy --lengths x=len.npy
npy '<f4' '(2, 3, 1)' 55 '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\277\000\000\000\077\000\000\000\000' > xp.npy
out=$("$PDLANG" exec m --feed x=xp.npy --feed x_lengths=len.npy 2>&1)
vals=$(echo "$out" | tr -d '[],' | awk 'NR > 1 { printf "%s ", $1 }')
if echo "$vals" | awk '{ exit !(($1 - 0.935597)^2 < 1e-10 && ($2 - 0.133666)^2 < 1e-10) }'; then
  echo "ok 7 - the padded batch and its lengths, the model by its path prefix: $vals"
else echo "not ok 7 - exec of the loop model on the padded batch"; echo "$out" | sed 's/^/# /'; fi
printf 'import "layers"\nx = data("x", [-1, 1], lod_level = 1)\nhs, h, c = lstm(x, 3)\ny = sequence_max(sequence_softmax(fc(hs, 1)) * hs)\nsave("mx.pdmodel", y)\n' > mx.pd
note=$("$PDLANG" run mx.pd 2>&1)
out=$("$PDLANG" exec mx.pdmodel --feed x=x.npy --lengths x=len.npy 2>&1)
if echo "$note" | grep -qF "note: mx.pdmodel is a model for pdlang only, not PaddlePaddle: mx.pd:4: op sequence_softmax" &&
   echo "$out" | grep -q 'Tensor(shape=\[2, 3\], dtype=float32)'; then
  echo "ok 8 - a sequence_softmax model: saved for pdlang only, with a note, and run on rows and lengths"
else echo "not ok 8 - a sequence_softmax model"; echo "$note $out" | sed 's/^/# /'; fi
