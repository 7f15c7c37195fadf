#!/bin/sh
# save_names.sh -- the golden test of the fetch targets' names in a saved model (TAP):
# save_names_mod.pd saves two models, and `pdlang exec` of each on x = [[1, 2]] prints every
# output under its fetch target's name, as save_names.out holds. The models are written in a
# temporary folder. PD_REGEN=1 rewrites save_names.out.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}"
dir=$top_srcdir/tests/golden/run
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdnames.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$dir/save_names_mod.pd" "$tmp/"
# x.npy: float32 [1, 2] = [[1, 2]]
{ printf '\223NUMPY\001\000v\000'
  printf "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }"
  printf '%*s\n' 58 ''
  printf '\000\000\200\077\000\000\000\100'; } > "$tmp/x.npy"
echo "1..2"
(cd "$tmp" && "$PDLANG" run save_names_mod.pd && for m in auto named; do
  echo "== $m"; "$PDLANG" exec "$m" --feed x=x.npy; done) > "$tmp/out" 2> "$tmp/err"
rc=$?
[ "${PD_REGEN:-0}" = 1 ] && cp "$tmp/out" "$dir/save_names.out"
if [ $rc -eq 0 ] && [ ! -s "$tmp/err" ]; then echo "ok 1 - the models save and run"
else echo "not ok 1 - the models save and run (exit $rc)"; sed 's/^/# /' "$tmp/err"; fi
if diff -u "$dir/save_names.out" "$tmp/out" > "$tmp/diff"; then
  echo "ok 2 - the outputs under the script's names"
else
  echo "not ok 2 - the outputs under the script's names"; sed 's/^/# /' "$tmp/diff"
fi
