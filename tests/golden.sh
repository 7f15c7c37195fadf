#!/bin/sh
# golden.sh -- run one golden test and report it in TAP.
#   tests/golden/CMD/NAME.pd  is run as `pdlang CMD NAME.pd` from its own folder, so paths in
#   messages are just NAME.pd. NAME.out holds the expected stdout; NAME.err the expected stderr
#   (its presence means the command must fail with exit status 1; otherwise it must succeed with
#   an empty stderr). A first line `# args: ...` adds arguments after CMD.
#   PD_REGEN=1 rewrites the expected files from the actual output instead of comparing.
set -u
pd=$1
dir=$(cd "$(dirname "$pd")" && pwd)
name=$(basename "$pd" .pd)
cmd=$(basename "$dir")
: "${PDLANG:?PDLANG must name the pdlang binary}"
args=$(sed -n '1s/^# args: //p' "$dir/$name.pd")
tmp=${TMPDIR:-/tmp}/pdgold.$$
trap 'rm -f "$tmp.out" "$tmp.err"' EXIT
# shellcheck disable=SC2086
(cd "$dir" && "$PDLANG" "$cmd" $args "$name.pd") >"$tmp.out" 2>"$tmp.err"
rc=$?
echo "1..1"
if [ "${PD_REGEN:-0}" = 1 ]; then
  cp "$tmp.out" "$dir/$name.out"
  if [ -s "$tmp.err" ] || [ $rc -ne 0 ]; then cp "$tmp.err" "$dir/$name.err"; else rm -f "$dir/$name.err"; fi
  echo "ok 1 - $cmd/$name (regenerated)"
  exit 0
fi
fail=""
if [ -f "$dir/$name.err" ]; then
  [ $rc -eq 1 ] || fail="exit status $rc, want 1"
  diff -u "$dir/$name.err" "$tmp.err" >/dev/null || fail="${fail:+$fail; }stderr differs"
else
  [ $rc -eq 0 ] || fail="exit status $rc, want 0"
  [ -s "$tmp.err" ] && fail="${fail:+$fail; }unexpected stderr"
fi
want_out="$dir/$name.out"
[ -f "$want_out" ] || want_out=/dev/null
diff -u "$want_out" "$tmp.out" >/dev/null || fail="${fail:+$fail; }stdout differs"
if [ -z "$fail" ]; then
  echo "ok 1 - $cmd/$name"
else
  echo "not ok 1 - $cmd/$name: $fail"
  { diff -u "$want_out" "$tmp.out"; [ -f "$dir/$name.err" ] && diff -u "$dir/$name.err" "$tmp.err" || cat "$tmp.err"; } | sed 's/^/# /' | head -n 60
fi
