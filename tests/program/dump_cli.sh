#!/bin/sh
# dump_cli.sh -- golden tests of `pdlang dump` (TAP). The fixtures in tests/golden/dump are
# written by tests/program/mkmodel (nested, foreign, and the parent_cycle bad case as cycle):
# NAME.out is the expected listing, NAME.dot the expected --dot output, NAME.err the expected
# stderr of a failing run (exit status 1). The fixtures double as a format check: a fresh write
# of the nested model must equal the committed bytes. PD_REGEN=1 rewrites the expected files.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}" "${top_builddir:?}"
gold=$top_srcdir/tests/golden/dump
mkmodel=$top_builddir/tests/program/mkmodel
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddump.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

report() { # STATUS DESCRIPTION [DETAILS-FILE]
  n=$((n + 1))
  if [ "$1" = ok ]; then
    echo "ok $n - $2"
  else
    failed=1
    echo "not ok $n - $2"
    [ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/# /' "$3" | head -n 40
  fi
}

# golden DESCRIPTION WANT-RC WANT-OUT WANT-ERR ARGS...: run pdlang in $gold, compare everything.
# WANT-OUT / WANT-ERR name files in $gold, or are "-" for "must be empty".
golden() {
  desc=$1 want_rc=$2 want_out=$3 want_err=$4
  shift 4
  (cd "$gold" && "$PDLANG" "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "${PD_REGEN:-0}" = 1 ]; then
    [ "$want_out" != - ] && cp "$tmp/out" "$gold/$want_out"
    [ "$want_err" != - ] && cp "$tmp/err" "$gold/$want_err"
  fi
  : >"$tmp/why"
  [ "$rc" -eq "$want_rc" ] || echo "exit status $rc, want $want_rc" >>"$tmp/why"
  for pair in "out:$want_out" "err:$want_err"; do
    stream=${pair%%:*} want=${pair#*:}
    if [ "$want" = - ]; then
      [ -s "$tmp/$stream" ] && { echo "unexpected std$stream:"; cat "$tmp/$stream"; } >>"$tmp/why"
    else
      diff -u "$gold/$want" "$tmp/$stream" >>"$tmp/why" || echo "std$stream differs" >>"$tmp/why"
    fi
  done
  if [ -s "$tmp/why" ]; then report fail "$desc" "$tmp/why"; else report ok "$desc"; fi
}

# usage DESCRIPTION WANT-RC PATTERN ARGS...: exit status, and PATTERN somewhere in the output.
usage() {
  desc=$1 want_rc=$2 pattern=$3
  shift 3
  (cd "$gold" && "$PDLANG" "$@") >"$tmp/out" 2>&1
  rc=$?
  if [ "$rc" -eq "$want_rc" ] && grep -q -- "$pattern" "$tmp/out"; then
    report ok "$desc"
  else
    echo "exit status $rc (want $want_rc), output:" >"$tmp/why"
    cat "$tmp/out" >>"$tmp/why"
    report fail "$desc" "$tmp/why"
  fi
}

echo "1..12"
golden "dump nested.pdmodel" 0 nested.out - dump nested.pdmodel
golden "dump --dot nested.pdmodel" 0 nested.dot - dump --dot nested.pdmodel
golden "dump foreign.pdmodel (written as PaddlePaddle writes)" 0 foreign.out - \
  dump foreign.pdmodel
golden "dump cycle.pdmodel: a parent cycle is refused" 1 - cycle.err dump cycle.pdmodel

if "$mkmodel" nested "$tmp/nested.pdmodel" && cmp -s "$tmp/nested.pdmodel" "$gold/nested.pdmodel"
then
  report ok "a fresh write of the nested model equals the committed fixture"
else
  report fail "a fresh write of the nested model equals the committed fixture"
fi
"$PDLANG" dump "$tmp/nested.pdmodel" >"$tmp/fresh.out" 2>&1
if cmp -s "$tmp/fresh.out" "$gold/nested.out"; then
  report ok "and lists the same"
else
  report fail "and lists the same"
fi

usage "no file: usage, exit 2" 2 "usage: pdlang dump" dump
usage "unknown option: exit 2" 2 "unknown option '--bogus'" dump --bogus nested.pdmodel
usage "two files: exit 2" 2 "one file at a time" dump nested.pdmodel foreign.pdmodel
usage "--help: usage on stdout, exit 0" 0 "usage: pdlang dump" dump --help
usage "a missing file: exit 1" 1 "error: cannot open 'missing.pdmodel'" dump missing.pdmodel
usage "a .pd script: not yet, exit 1" 1 \
  "x.pd: error: compiling .pd files is not available yet; dump a saved .pdmodel" dump x.pd
exit 0
