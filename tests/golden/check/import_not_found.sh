#!/bin/sh
# import_not_found.sh -- the golden test of a missing import (TAP). `pdlang check
# missing_import_mod.pd` must fail with the diagnostics in import_not_found.err. The message lists
# the directories that were searched, which depend on where pdlang was built and is installed, so
# they are checked here and then replaced: $PDLANG_PATH's entries first (set to two made-up ones),
# then the stdlib directories, the script's own folder (.) last. PD_REGEN=1 rewrites
# import_not_found.err.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/check
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdimport.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
(cd "$dir" && PDLANG_PATH=/no/such/dir:/no/such/other "$PDLANG" check missing_import_mod.pd) \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
# "(looked in /no/such/dir, /no/such/other, STDLIB..., .)" -> "(looked in $PDLANG_PATH, ..., .)"
sed 's|(looked in /no/such/dir, /no/such/other, [^()]*, \.)$|(looked in $PDLANG_PATH, the stdlib, .)|' \
  "$tmp/err" >"$tmp/err.norm"
echo "1..3"
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/err.norm" "$dir/import_not_found.err"
if [ $rc -eq 1 ]; then echo "ok 1 - exit status 1"; else echo "not ok 1 - exit status $rc, want 1"; fi
if grep -q "/stdlib, \.)\$" "$tmp/err" && diff -u "$dir/import_not_found.err" "$tmp/err.norm" >"$tmp/diff"
then
  echo "ok 2 - the diagnostics, the import path in order"
else
  echo "not ok 2 - the diagnostics, the import path in order"
  sed 's/^/# /' "$tmp/err" "$tmp/diff" | head -n 40
fi
if [ -s "$tmp/out" ]; then echo "not ok 3 - nothing on stdout"; else echo "ok 3 - nothing on stdout"; fi
exit 0
