#!/bin/sh
# stress.sh -- `pdlang parse` at the edges: a big generated script, 10000 nested blocks, 100000
# '(', a file of NUL bytes, bytes of every value, standard input, and command-line mistakes. Each
# must end with the documented exit status and message: never a signal, a hang or a sanitizer
# report. Speaks TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdstress.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0

# check DESCRIPTION WANT-STATUS STDERR-PATTERN [ERRORS]: judge the last run ($rc, $tmp/err). The
# pattern is a fixed string that stderr must contain ('' for an empty stderr); ERRORS, if given,
# is the exact number of "error:" lines.
check() {
  n=$((n + 1))
  why=""
  [ "$rc" -eq "$2" ] || why="exit status $rc, want $2"
  if grep -q 'Sanitizer\|runtime error:' "$tmp/err"; then why="${why:+$why; }sanitizer report"; fi
  if [ -z "$3" ]; then
    [ -s "$tmp/err" ] && why="${why:+$why; }unexpected stderr"
  elif ! grep -qF -- "$3" "$tmp/err"; then
    why="${why:+$why; }stderr lacks '$3'"
  fi
  if [ $# -ge 4 ]; then
    errors=$(grep -c 'error:' "$tmp/err")
    [ "$errors" -eq "$4" ] || why="${why:+$why; }$errors errors, want $4"
  fi
  if [ -z "$why" ]; then
    echo "ok $n - $1"
  else
    echo "not ok $n - $1: $why"
    head -c 2000 "$tmp/err" | sed 's/^/# /'
  fi
}

parse() {  # parse ARGS...: run pdlang parse, its output dropped
  "$PDLANG" parse "$@" >/dev/null 2>"$tmp/err"
  rc=$?
}

# A 12 MB script: 40000 rounds of 7 statements (the design's examples, renamed per round).
awk 'BEGIN {
  for (i = 0; i < 40000; i++) {
    printf "x%d = data(\"images\", [-1, 784])          # fed by the reader; -1 = batch\n", i
    printf "h%d = fc(x%d, 256, act = relu)              # parameters fc_%d.w_0, fc_%d.b_0\n", i, i, i, i
    printf "y%d = fc(h%d, 10); cost%d = mean(softmax_with_cross_entropy(y%d, label))\n", i, i, i, i
    printf "if (h%d > 15) {\n    let d = h%d + y\n    o1 = softmax(d)\n} else {\n    o1 = fc(z, 1)\n}\n", i, i
    printf "for (t in seq%d) {\n    h = sigmoid(t * W + h * U)\n    emit o = h\n}\n", i
  }
}' >"$tmp/big.pd"
"$PDLANG" parse "$tmp/big.pd" 2>"$tmp/err" >"$tmp/big.out"
rc=$?
check "a 12 MB script parses" 0 ""
n=$((n + 1))
assigns=$(grep -c '^  assign' "$tmp/big.out")
if [ "$assigns" -eq 160000 ]; then echo "ok $n - ... into 160000 top-level assignments"
else echo "not ok $n - $assigns top-level assignments, want 160000"; fi
rm -f "$tmp/big.out"

awk 'BEGIN { for (i = 0; i < 10000; i++) print "if (x) {"; for (i = 0; i < 10000; i++) print "}" }' \
  >"$tmp/nest.pd"
parse "$tmp/nest.pd"
check "10000 nested blocks: a clean error" 1 "nest.pd:257:8: error: blocks nested too deeply (limit 256)" 1

awk 'BEGIN { printf "x = "; for (i = 0; i < 100000; i++) printf "("; print "1" }' >"$tmp/parens.pd"
parse "$tmp/parens.pd"
check "100000 '(': a clean error" 1 "parens.pd:1:261: error: parentheses nested too deeply (limit 256)" 1

awk 'BEGIN { printf "x = 1"; for (i = 0; i < 100000; i++) printf " + 1"; print "" }' >"$tmp/chain.pd"
parse "$tmp/chain.pd"
check "a 100000-term sum: too deep for the tree, one error" 1 "expression nested too deeply (limit 1000 levels)" 1

head -c 1000000 /dev/zero >"$tmp/nul.pd"
parse "$tmp/nul.pd"
check "a file of NUL bytes: one error" 1 "nul.pd:1:1: error: unexpected NUL byte (is this a binary file?)" 1

# Every byte value, in a fixed pseudo-random order (a linear congruential generator).
LC_ALL=C awk 'BEGIN { s = 12345; for (i = 0; i < 300000; i++) { s = (s * 1103515245 + 12345) % 2147483648; c = int(s / 65536) % 256; if (c == 0) c = 10; printf "%c", c } }' \
  >"$tmp/garbage.pd"
parse "$tmp/garbage.pd"
check "random bytes: errors up to the limit" 1 "garbage.pd: too many errors (20), stopping" 20

printf '' >"$tmp/empty.pd"
parse "$tmp/empty.pd"
check "an empty file is an empty program" 0 ""

printf 'x = 1\nprint(x)' | { "$PDLANG" parse - >"$tmp/out" 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc=$(cat "$tmp/rc")
check "'-' reads standard input" 0 ""
n=$((n + 1))
if [ "$(head -1 "$tmp/out")" = "program @1:1" ] && [ "$(grep -c 'assign\|expr' "$tmp/out")" -eq 2 ]; then
  echo "ok $n - ... and prints its tree"
else
  echo "not ok $n - standard input's tree"; sed 's/^/# /' "$tmp/out"
fi

printf 'x = (\n' | { "$PDLANG" parse - >/dev/null 2>"$tmp/err"; echo $? >"$tmp/rc"; }
rc=$(cat "$tmp/rc")
check "errors in standard input name <stdin>" 1 "<stdin>:1:6: error: unexpected end of input" 1

parse "$tmp/no-such-file.pd"
check "a missing file" 1 "pdlang: cannot open"
parse
check "no file: a usage error" 2 "no input file"
parse --frobnicate "$tmp/empty.pd"
check "an unknown option: a usage error" 2 "unknown option '--frobnicate'"
parse --max-errors 0 "$tmp/empty.pd"
check "--max-errors needs a positive number" 2 "--max-errors takes a positive number"
parse --ast --max-errors 2 "$tmp/garbage.pd"
check "--max-errors 2" 1 "too many errors (2), stopping" 2
"$PDLANG" parse --help >"$tmp/out" 2>"$tmp/err"
rc=$?
check "--help" 0 ""

echo "1..$n"
