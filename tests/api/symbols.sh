#!/bin/sh
# symbols.sh -- the library's namespace: every external symbol that the objects of the
# convenience library define (everything libpdlang and the programs are made of, generated
# lexer, parser and protobuf code included) starts with pd_ (pd_ and a subsystem, HACKING.md),
# so that none can clash with a name of a host program. Names the toolchain makes, not the code
# (C++-mangled _Z... of the CUDA objects, __... stubs and sanitizer instrumentation), are left
# out. TAP output.
set -u
: "${top_builddir:?}"
lib=$top_builddir/.libs/libpdlang-internal.a
echo "1..1"
if ! command -v nm > /dev/null 2>&1; then
  echo "ok 1 # SKIP no nm"; exit 0
fi
if [ ! -f "$lib" ]; then
  echo "not ok 1 - $lib is missing"; exit 0
fi
bad=$(nm -g --defined-only "$lib" | awk 'NF == 3 && $3 !~ /^(pd_|_Z|__)/ { print $3 }' | sort -u)
if [ -z "$bad" ]; then
  echo "ok 1 - every external symbol of libpdlang-internal.a starts with pd_"
else
  echo "not ok 1 - external symbols without the pd_ prefix:"
  echo "$bad" | sed 's/^/# /'
fi
