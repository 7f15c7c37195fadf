#!/bin/sh
# autogen.sh -- bootstrap a git checkout: generate configure and Makefile.in (not committed).
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
# The TAP test driver ships with automake; copy it in (automake does not add it by itself).
for d in /usr/share/automake-*; do
  if [ -f "$d/tap-driver.sh" ]; then cp -f "$d/tap-driver.sh" build-aux/; break; fi
done
test -f build-aux/tap-driver.sh || { echo "autogen.sh: automake's tap-driver.sh not found" >&2; exit 1; }
