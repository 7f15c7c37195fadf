#!/bin/sh
# install_prefix.sh -- the installed pdlang finds the installed standard library. `make install`
# of the program and the stdlib into a temporary DESTDIR (only those: see install.sh), a marker
# added to the installed stdlib/layers.pd, then the installed program runs a script that imports
# "layers" and calls the marker: it must find the stdlib beside itself (PREFIX/bin ->
# PREFIX/share/pdlang/stdlib) at run time, not the folder compiled in for the configured prefix
# nor the build tree's. TAP output.
set -u
: "${top_builddir:?}" "${PD_BINDIR:?}" "${PD_STDLIBDIR:?}"
dir=${TMPDIR:-/tmp}/pd_install_prefix.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
dest=$dir/dest
echo "1..3"

# The test runs inside `make check`: the sub-make must not think it shares a jobserver.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${PD_MAKE:-make} -C "$top_builddir" \
     install-binPROGRAMS install-dist_stdlibDATA DESTDIR="$dest" > "$dir/install.log" 2>&1 &&
   [ -x "$dest$PD_BINDIR/pdlang" ] && [ -f "$dest$PD_STDLIBDIR/layers.pd" ]; then
  echo "ok 1 - make install DESTDIR=... (the pdlang program and the stdlib)"
else
  echo "not ok 1 - make install failed"; sed 's/^/# /' "$dir/install.log"
  echo "Bail out! nothing installed"; exit 1
fi

printf '\ndef installed_marker() {\n  return 7\n}\n' >> "$dest$PD_STDLIBDIR/layers.pd"
printf 'import "layers"\nprint(installed_marker())\n' > "$dir/marker.pd"
out=$(cd "$dir" && env -u PDLANG_PATH "$dest$PD_BINDIR/pdlang" run marker.pd 2>&1)
if [ "$out" = "7" ]; then
  echo "ok 2 - the installed pdlang imports the installed stdlib"
else
  echo "not ok 2 - the installed pdlang did not use the installed stdlib:"; echo "$out" | sed 's/^/# /'
fi

# The same program under another name on PATH (dladdr then gives a bare name).
out=$(cd "$dir" && PATH="$dest$PD_BINDIR:$PATH" env -u PDLANG_PATH pdlang run marker.pd 2>&1)
if [ "$out" = "7" ]; then
  echo "ok 3 - also when run through PATH"
else
  echo "not ok 3 - through PATH:"; echo "$out" | sed 's/^/# /'
fi
