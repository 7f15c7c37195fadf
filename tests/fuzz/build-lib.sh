#!/bin/sh
# build-lib.sh -- compiles the library's C sources with clang's fuzzing and sanitizer flags into
# an archive for the libFuzzer targets that need all of pdlang (fuzz_compile, fuzz_ckpt; the
# gcc-built libpdlang-internal.la would mix sanitizer runtimes). Incremental: a source is
# recompiled when its object is missing or older than the source or any header it included
# (clang -MMD), and the archive is rewritten only when an object changed. Called by tests/fuzz/local.mk:
#   build-lib.sh ARCHIVE OBJDIR SRCDIR JOBS CC SOURCE... -- CFLAGS...
# A SOURCE is found in the build tree (generated files) or under SRCDIR; one that is not a .c file,
# or is listed again, is ignored; one written +SOURCE is compiled without the sanitizers
# (-fno-sanitize=address,undefined: a file clang's instrumentation takes too long over). Objects
# are OBJDIR/PATH_OF_SOURCE.o (slashes as _).
set -eu
archive=$1 objdir=$2 srcdir=$3 jobs=$4 cc=$5
shift 5
mkdir -p "$objdir"
list=$objdir/sources.$$
: > "$list.tmp"
: > "$list.tmp.all"
while test $# -gt 0 && test "x$1" != x--; do
  f=$1
  shift
  plain=no
  case $f in +*) f=${f#+}; plain=yes ;; esac
  case $f in *.c) ;; *) continue ;; esac
  if test -f "$f"; then src=$f; else src=$srcdir/$f; fi
  obj=$objdir/$(echo "$f" | sed 's|/|_|g; s|\.c$|.o|')
  if grep -qxF "$obj" "$list.tmp.all"; then continue; fi
  stale=no
  if test ! -f "$obj" || test "$src" -nt "$obj"; then
    stale=yes
  elif test -f "$obj.d"; then
    # The .d file: "obj: src h1 h2 \" lines; any newer prerequisite makes the object stale.
    for dep in $(sed 's/^[^:]*://; s/\\$//' "$obj.d"); do
      if test "$dep" -nt "$obj"; then stale=yes; break; fi
    done
  fi
  if test $stale = yes; then printf '%s %s %s\n' "$src" "$obj" "$plain" >> "$list.tmp"; fi
  echo "$obj" >> "$list.tmp.all"
done
test $# -gt 0 && shift  # the --: the compiler flags follow
objs=$(cat "$list.tmp.all")
rm -f "$list.tmp.all"
if test -s "$list.tmp"; then
  echo "  CLANG    $(wc -l < "$list.tmp") sources for $archive"
  rm -f "$archive"
  running=0 failed=0
  while read -r src obj plain; do
    nosan=
    if test "$plain" = yes; then nosan=-fno-sanitize=address,undefined; fi
    # shellcheck disable=SC2086
    "$cc" "$@" $nosan -MMD -MF "$obj.d" -c "$src" -o "$obj" || echo fail >> "$list.tmp.failed" &
    running=$((running + 1))
    if test $running -ge "$jobs"; then wait; running=0; fi
  done < "$list.tmp"
  wait
  if test -f "$list.tmp.failed"; then failed=1; fi
  rm -f "$list.tmp.failed"
  test $failed = 0 || { rm -f "$list.tmp"; exit 1; }
fi
rm -f "$list.tmp"
if test ! -f "$archive"; then
  # shellcheck disable=SC2086
  ar rcs "$archive.tmp" $objs
  mv "$archive.tmp" "$archive"
fi
