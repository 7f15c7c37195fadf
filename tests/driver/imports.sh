#!/bin/sh
# imports.sh -- import's limits and file errors (issue 26): a chain of 101 nested imports is one
# clean error at the import that crosses the limit, naming the chain's first and last files (a
# chain of thousands overflowed the compiler's stack), a chain of 100 compiles, and a module
# name that names a directory says so (it said "cannot find module").
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
echo "1..3"
dir=${TMPDIR:-/tmp}/pd_imports.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
chain() { # $1: how many modules m0 .. m$1-1, each importing the next; main.pd imports m0
  rm -f m*.pd
  i=0
  while [ "$i" -lt "$1" ]; do
    if [ "$i" -lt $(($1 - 1)) ]; then printf 'import "m%d"\n' $((i + 1)) > "m$i.pd"
    else printf 'let z = 1\n' > "m$i.pd"; fi
    i=$((i + 1))
  done
  printf 'import "m0"\nprint(z)\n' > main.pd
}
chain 100
out=$("$PDLANG" run main.pd 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = 1 ]; then echo "ok 1 - 100 nested imports compile and run"
else echo "not ok 1 - 100 nested imports: rc $rc"; echo "$out" | sed 's/^/# /' | head; fi
chain 101
out=$("$PDLANG" check main.pd 2>&1)
rc=$?
want="m99.pd:1:1: error: imports nested more than 100 deep (m0.pd -> m1.pd -> m2.pd -> ... -> m98.pd -> m99.pd): import the modules from fewer levels"
if [ $rc -eq 1 ] && echo "$out" | grep -qF "$want"; then
  echo "ok 2 - 101 nested imports: an error at the 101st import"
else echo "not ok 2 - 101 nested imports: rc $rc"; echo "$out" | sed 's/^/# /' | head; fi
mkdir sub.pd
printf 'import "sub"\n' > d.pd
out=$("$PDLANG" check d.pd 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -qF "d.pd:1:1: error: cannot import 'sub': 'sub.pd' is a directory, not a module"; then
  echo "ok 3 - importing a directory says so"
else echo "not ok 3 - import of a directory: rc $rc"; echo "$out" | sed 's/^/# /' | head; fi
