#!/bin/sh
# doc_examples.sh -- the examples of the documentation run as they are written, so that the
# reference cannot drift from the code. Every fenced block marked ```pd in doc/language.md (and
# README.md, if it has any) is a whole script: it is run as `pdlang run --progress=none
# example.pd` in a fresh temporary folder that holds a copy of examples/data as data/, and must
# exit with status 0 and print nothing on stderr. When the next block (blank lines between
# allowed) is marked ```output, stdout must be exactly its text; when it is marked ```error,
# the script must instead exit with status 1 and print exactly that text on stderr. The one
# thing not compared is the time in eval's summary, "(N samples, T s)", and in predict's,
# "(T s)", which is read as 0.0 s.
# TAP: one test per example, named after its file and line.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pddoc.XXXXXX") || { echo "1..0 # SKIP no temporary folder"; exit 0; }
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT PIPE TERM

# Cut each document into numbered files: N.pd (the script), N.out / N.err (what it must print),
# and a list of "N file line" (the line of the ```pd fence).
n=0
for doc in doc/language.md README.md; do
  [ -f "$top_srcdir/$doc" ] || continue
  # shellcheck disable=SC2016
  ${AWK:-awk} -v dir="$tmp" -v doc="$doc" -v n="$n" '
    function fence(s) { return s ~ /^```[ \t]*$/ }
    state == "" && /^```pd[ \t]*$/ { n++; state = "pd"; file = dir "/" n ".pd"; printf "" > file
                                     print n, doc, NR >> (dir "/list"); next }
    state == "" && pending && /^```output[ \t]*$/ { state = "out"; file = dir "/" n ".out"; printf "" > file; next }
    state == "" && pending && /^```error[ \t]*$/ { state = "err"; file = dir "/" n ".err"; printf "" > file; next }
    state != "" && fence($0) { close(file); pending = state == "pd"; state = ""; next }
    state != "" { print > file; next }
    /^[ \t]*$/ { next }
    { pending = 0 }
    END { print n > (dir "/count") }
  ' "$top_srcdir/$doc" || exit 99
  n=$(cat "$tmp/count")
done
if [ "$n" -eq 0 ]; then
  echo "1..1"
  echo "not ok 1 - doc/language.md has no \`\`\`pd examples"
  exit 0
fi
echo "1..$n"

# eval's summary ends with the time it took: not part of the comparison.
untime() { sed -e 's/^\(eval: .* samples, \)[0-9][0-9.]* s)$/\10.0 s)/' \
  -e 's/^\(predict: .* (\)[0-9][0-9.]* s)$/\10.0 s)/' "$1"; }

while read -r i doc line; do
  run="$tmp/run$i"
  mkdir "$run" && cp -R "$top_srcdir/examples/data" "$run/data" && cp "$tmp/$i.pd" "$run/example.pd" &&
    chmod -R u+w "$run" || exit 99   # the source tree may be read-only (make distcheck)
  (cd "$run" && "$PDLANG" run --progress=none example.pd) >"$run/stdout" 2>"$run/stderr"
  rc=$?
  fail=""
  if [ -f "$tmp/$i.err" ]; then
    [ $rc -eq 1 ] || fail="exit status $rc, want 1"
    cmp -s "$tmp/$i.err" "$run/stderr" || fail="${fail:+$fail; }stderr differs"
  else
    [ $rc -eq 0 ] || fail="exit status $rc, want 0"
    [ -s "$run/stderr" ] && fail="${fail:+$fail; }unexpected stderr"
  fi
  if [ -f "$tmp/$i.out" ]; then
    untime "$run/stdout" >"$run/stdout.cmp"
    cmp -s "$tmp/$i.out" "$run/stdout.cmp" || fail="${fail:+$fail; }stdout differs"
  fi
  if [ -z "$fail" ]; then
    echo "ok $i - $doc:$line"
  else
    echo "not ok $i - $doc:$line: $fail"
    {
      [ -f "$tmp/$i.out" ] && diff -u "$tmp/$i.out" "$run/stdout.cmp"
      if [ -f "$tmp/$i.err" ]; then diff -u "$tmp/$i.err" "$run/stderr"; else cat "$run/stderr"; fi
    } | sed 's/^/# /' | head -n 60
  fi
done <"$tmp/list"
