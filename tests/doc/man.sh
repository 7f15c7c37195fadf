#!/bin/sh
# man.sh -- the manual page doc/pdlang.1 against the program: it renders without a warning
# (groff -ww; skipped without groff), it has a section for every command that `pdlang --help`
# lists and mentions every option that `pdlang CMD --help` shows, and it describes every
# PDLANG_* environment variable that the sources read.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
man=$top_srcdir/doc/pdlang.1
echo "1..4"

if ! command -v groff >/dev/null 2>&1; then
  echo "ok 1 # SKIP groff is not installed"
else
  warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
  if [ -z "$warnings" ]; then echo "ok 1 - doc/pdlang.1 renders without warnings"
  else echo "not ok 1 - doc/pdlang.1 renders with warnings"; echo "$warnings" | sed 's/^/# /' | head -20; fi
fi

# The commands: the lines after "commands:" in `pdlang --help`, up to the blank line.
cmds=$("$PDLANG" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p' | tr '\n' ' ')
missing=""
for c in $cmds; do
  grep -q "^\.SS \"pdlang ${c}[ \"]" "$man" || missing="$missing $c"
done
if [ -n "$cmds" ] && [ -z "$missing" ]; then echo "ok 2 - a section for each command: $cmds"
else echo "not ok 2 - commands without a section in doc/pdlang.1:${missing:- (none listed by pdlang --help)}"; fi

# The options of each command's usage text, as the page writes them (\- for each -).
missing=""
for c in $cmds; do
  opts=$("$PDLANG" "$c" --help | grep -oE '(^|[][ (,|])--?[a-z][a-z-]*' | sed 's/^[][ (,|]//' | sort -u)
  for o in $opts; do
    esc=$(printf '%s' "$o" | sed 's/-/\\-/g')
    grep -qF -- "$esc" "$man" || missing="$missing $c:$o"
  done
done
if [ -z "$missing" ]; then echo "ok 3 - every option of 'pdlang CMD --help' is in doc/pdlang.1"
else echo "not ok 3 - options missing from doc/pdlang.1:$missing"; fi

# The PDLANG_* variables that the program and the library read.
vars=$(cd "$top_srcdir" && grep -rhoE '"PDLANG_[A-Z_]+"' base kernels vm train lang api driver include \
         2>/dev/null | tr -d '"' | sort -u | tr '\n' ' ')
missing=""
for v in $vars; do
  grep -q "^\.B $v\$" "$man" || missing="$missing $v"
done
if [ -n "$vars" ] && [ -z "$missing" ]; then echo "ok 4 - ENVIRONMENT describes $vars"
else echo "not ok 4 - variables missing from doc/pdlang.1's ENVIRONMENT:${missing:- (none found in the sources)}"; fi
