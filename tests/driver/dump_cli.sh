#!/bin/sh
# dump_cli.sh -- golden tests of `pdlang dump` (TAP). The .pdmodel fixtures in tests/golden/dump
# are written by tests/vm/ir/mkmodel (nested, foreign, and the parent_cycle bad case as cycle):
# NAME.out is the expected listing, NAME.dot the expected --dot output, NAME.err the expected
# stderr of a failing run (exit status 1). The fixtures double as a format check: a fresh write
# of the nested model must equal the committed bytes. PD_REGEN=1 rewrites the expected files.
# Then .pd scripts: the seed examples still list as their copies in tests/golden/dump (whose
# listings tests/golden.sh checks), a script that does not compile gets exactly the diagnostics
# of `pdlang check`, and the options --dot, --startup and --prune on scripts.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}" "${top_builddir:?}"
gold=$top_srcdir/tests/golden/dump
mkmodel=$top_builddir/tests/vm/ir/mkmodel
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
usage "a missing .pd script: exit 1" 1 "cannot open" dump missing.pd

# The seed examples list as their golden copies (same text, so only the file name differs).
ex=$top_srcdir/examples
for name in ifelse rnn train; do
  desc="examples/$name.pd lists as tests/golden/dump/${name}_listing.out"
  if cmp -s "$ex/$name.pd" "$gold/${name}_listing.pd" &&
     (cd "$ex" && "$PDLANG" dump "$name.pd") 2>"$tmp/err" |
       sed "s/ @ $name\.pd:/ @ ${name}_listing.pd:/" >"$tmp/out" &&
     [ ! -s "$tmp/err" ] && cmp -s "$tmp/out" "$gold/${name}_listing.out"; then
    report ok "$desc"
  else
    echo "the copy differs from the example, or its listing does (regenerate it):" >"$tmp/why"
    diff -u "$gold/${name}_listing.pd" "$ex/$name.pd" >>"$tmp/why"
    diff -u "$gold/${name}_listing.out" "$tmp/out" >>"$tmp/why"
    cat "$tmp/err" >>"$tmp/why"
    report fail "$desc" "$tmp/why"
  fi
done

# A script that does not compile: the diagnostics of `pdlang check`, byte for byte, exit 1.
check=$top_srcdir/tests/golden/check
for pd in "$check"/*.pd; do
  name=$(basename "$pd" .pd)
  [ -f "$check/$name.err" ] || continue
  (cd "$check" && "$PDLANG" dump "$name.pd") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  (cd "$check" && "$PDLANG" check "$name.pd") >/dev/null 2>"$tmp/check.err"
  if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && cmp -s "$tmp/err" "$tmp/check.err"; then
    report ok "dump $name.pd: the errors of pdlang check, exit 1"
  else
    { echo "exit status $rc"; diff -u "$tmp/check.err" "$tmp/err"; } >"$tmp/why"
    report fail "dump $name.pd: the errors of pdlang check, exit 1" "$tmp/why"
  fi
done

# Options on scripts and saved programs.
(cd "$gold" && "$PDLANG" dump --dot ifelse_listing.pd) >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ] && head -n 1 "$tmp/out" | grep -q '^digraph' &&
   grep -q 'subgraph cluster_b2 ' "$tmp/out"; then
  report ok "dump --dot of a script: a digraph with a cluster per block"
else
  report fail "dump --dot of a script: a digraph with a cluster per block" "$tmp/err"
fi
usage "--startup of a saved program: exit 1" 1 "error: --startup needs a .pd script" \
  dump --startup nested.pdmodel
usage "--prune of a var that is not there: exit 1" 1 \
  "rnn_prune.pd: error: prune target 'nope' is not a var of the program" \
  dump --prune o1,nope rnn_prune.pd
usage "--prune of a sub-block's var: exit 1" 1 \
  "nested.pdmodel: error: prune target 'd' is not a var of the global block (it is local to block 1)" \
  dump --prune d nested.pdmodel
usage "--prune without names: exit 2" 2 "--prune needs var names" dump nested.pdmodel --prune
usage "--prune with an empty name: exit 2" 2 "--prune wants var names separated by commas" \
  dump --prune=o1,,o2 nested.pdmodel
(cd "$gold" && "$PDLANG" dump --prune=fetch nested.pdmodel) >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && [ ! -s "$tmp/err" ] && grep -q '^  op 7: fetch' "$tmp/out" &&
   ! grep -q 'conditional_block_grad' "$tmp/out"; then
  report ok "dump --prune=fetch nested.pdmodel: keeps the fetch, drops the gradient op"
else
  report fail "dump --prune=fetch nested.pdmodel: keeps the fetch, drops the gradient op" "$tmp/out"
fi
echo "1..$n"
exit 0
