#!/bin/sh
# mkseeds_ckpt.sh -- regenerates the seeds of tests/fuzz/corpus_ckpt: trains
# tests/fuzz/ckpt_model.pd (the fixed program of fuzz_ckpt.c) for two epochs in a temporary
# folder and copies the checkpoint and the parameter file it writes. Files whose names start
# with crash- (inputs the fuzzer found) are left alone.
#   tests/fuzz/mkseeds_ckpt.sh BUILD/pdlang [SRCDIR]
set -eu
pdlang=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
srcdir=${2:-$(dirname "$0")/../..}
srcdir=$(cd "$srcdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$srcdir/tests/fuzz/ckpt_model.pd" "$srcdir/tests/fuzz/ckpt_model.csv" "$tmp/"
(cd "$tmp" && "$pdlang" run ckpt_model.pd > /dev/null 2>&1)
cp "$tmp/seed.ckpt" "$srcdir/tests/fuzz/corpus_ckpt/seed.ckpt"
cp "$tmp/seed.pdiparams" "$srcdir/tests/fuzz/corpus_ckpt/seed.pdiparams"
