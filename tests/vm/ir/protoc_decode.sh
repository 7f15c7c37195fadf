#!/bin/sh
# protoc_decode.sh -- files that pdlang writes decode with Google's protoc against
# vm/ir/framework.proto as paddle.framework.proto.ProgramDesc, the message PaddlePaddle's own
# tools read (TAP). Skipped when protoc is not installed (Debian package protobuf-compiler).
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
if ! command -v protoc >/dev/null 2>&1; then
  echo "1..0 # SKIP protoc is not installed"
  exit 0
fi
mkmodel=$top_builddir/tests/vm/ir/mkmodel
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdprotoc.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0

decode() { # MODEL: write it with mkmodel, decode it with protoc into $tmp/MODEL.txt
  "$mkmodel" "$1" "$tmp/$1.pdmodel" &&
    protoc --proto_path="$top_srcdir/vm/ir" --decode=paddle.framework.proto.ProgramDesc \
      framework.proto <"$tmp/$1.pdmodel" >"$tmp/$1.txt" 2>"$tmp/$1.err"
}

# A compiled script: pdlang compile writes it (needs $PDLANG).
compile() { # NAME: examples/NAME.pd, compiled and decoded into $tmp/NAME.txt
  "${PDLANG:?}" compile "$top_srcdir/examples/$1.pd" -o "$tmp/$1.pdmodel" 2>"$tmp/$1.err" &&
    protoc --proto_path="$top_srcdir/vm/ir" --decode=paddle.framework.proto.ProgramDesc \
      framework.proto <"$tmp/$1.pdmodel" >"$tmp/$1.txt" 2>>"$tmp/$1.err"
}

# has MODEL COUNT TEXT DESCRIPTION: TEXT (a whole line, leading blanks ignored) occurs COUNT times.
has() {
  n=$((n + 1))
  got=$(sed 's/^ *//' "$tmp/$1.txt" | grep -c -x -F -- "$3")
  if [ "$got" -eq "$2" ]; then
    echo "ok $n - $1: $4"
  else
    echo "not ok $n - $1: $4 ('$3' $got times, want $2)"
  fi
}

echo "1..26"
n=$((n + 1))
if decode nested; then echo "ok $n - protoc decodes the nested model"; else
  echo "not ok $n - protoc decodes the nested model"; sed 's/^/# /' "$tmp/nested.err"; fi
has nested 5 "blocks {" "five BlockDescs"
has nested 1 "idx: 4" "block 4"
has nested 1 "parent_idx: 1" "one block (3) under block 1"
has nested 1 "parent_idx: -1" "block 0 has no parent"
has nested 1 "forward_block_idx: 1" "the gradient block's forward block"
has nested 2 'type: "conditional_block"' "two conditional_block ops"
has nested 4 "type: BLOCK" "four BLOCK attributes"
has nested 1 "block_idx: 3" "the while op's sub_block"
has nested 1 "lod_level: 1" "the LoD var"
has nested 1 'strings: "nested.pd:1:5"' "the source location in op_callstack"
has nested 3 "data_type: INT64" "three INT64 tensors (words, i, n)"
n=$((n + 1))
if decode attrs; then echo "ok $n - protoc decodes the attrs model"; else
  echo "not ok $n - protoc decodes the attrs model"; sed 's/^/# /' "$tmp/attrs.err"; fi
has attrs 1 "type: FLOAT64S" "a FLOAT64S attribute"
has attrs 1 "float64s: -2.5e-300" "with its values"
has attrs 1 "l: 9223372036854775807" "LONG in l"
has attrs 1 "blocks_idx: 2" "BLOCKS in blocks_idx"
has attrs 1 "version: 2004000" "the program version"
n=$((n + 1))
if decode kinds; then echo "ok $n - protoc decodes the kinds model"; else
  echo "not ok $n - protoc decodes the kinds model"; sed 's/^/# /' "$tmp/kinds.err"; fi
has kinds 1 "type: SELECTED_ROWS" "SELECTED_ROWS"
has kinds 1 'name: "pdlang.shape_unknown"' "the unknown-shape marker"
n=$((n + 1))
if compile ifelse; then echo "ok $n - protoc decodes examples/ifelse.pd compiled"; else
  echo "not ok $n - protoc decodes examples/ifelse.pd compiled"; sed 's/^/# /' "$tmp/ifelse.err"; fi
has ifelse 3 "blocks {" "three BlockDescs"
has ifelse 2 "parent_idx: 0" "the true and false blocks, children of block 0"
has ifelse 2 'type: "conditional_block"' "two conditional_block ops"
has ifelse 2 "type: BLOCK" "each with a BLOCK attribute"
