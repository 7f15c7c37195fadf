#!/bin/sh
# char_rnn.sh -- examples/char_rnn.pd in a short form (1 + 1 epochs instead of 10 + 20): it runs
# to the end and writes its line by sampling (temperature 0.5) after "The ": 73 characters, every
# one a character of the text it learned from (the model gives the others almost no
# probability); the same --seed writes the same line, another seed another line. It needs
# /usr/share/common-licenses/GPL-3. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
gpl=/usr/share/common-licenses/GPL-3
echo "1..4"
if [ ! -r "$gpl" ]; then
  for i in 1 2 3 4; do echo "ok $i # SKIP no $gpl"; done
  exit 0
fi
dir=${TMPDIR:-/tmp}/pd_char_rnn.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
sed 's/epochs = 10,/epochs = 1,/; s/epochs = 20,/epochs = 1,/' "$top_srcdir/examples/char_rnn.pd" \
  > "$dir/short.pd"
if [ "$(grep -c 'epochs = 1,' "$dir/short.pd")" -ne 2 ] || ! grep -q 'sample(logits' "$dir/short.pd"
then
  echo "not ok 1 - examples/char_rnn.pd has no 'epochs = 10,' / 'epochs = 20,' to shorten, or no sample"
  exit 0
fi
"$PDLANG" run --progress=none --seed 1 "$dir/short.pd" > "$dir/out1" 2> "$dir/err1"
rc=$?
if [ $rc -eq 0 ]; then echo "ok 1 - examples/char_rnn.pd runs (1 + 1 epochs)"
else echo "not ok 1 - examples/char_rnn.pd exits $rc"; sed 's/^/# /' "$dir/err1" | head -20; fi
line=$(tail -n 1 "$dir/out1")
# The bytes of the line that the text does not hold (LC_ALL=C: byte by byte).
missing=$(printf '%s' "$line" | LC_ALL=C awk -v gpl="$gpl" '
  BEGIN { while ((getline l < gpl) > 0) for (i = 1; i <= length(l); i++) seen[substr(l, i, 1)] = 1 }
  { for (i = 1; i <= length($0); i++) { ch = substr($0, i, 1); if (!(ch in seen)) printf "%s", ch } }')
if [ "$(printf '%s' "$line" | LC_ALL=C wc -c)" -eq 73 ] && [ "$(printf %.4s "$line")" = "The " ] &&
   [ -z "$missing" ]; then
  echo "ok 2 - a line of 73 characters after 'The ', all of them characters of the text"
else
  echo "not ok 2 - the written line is '$line' (characters not in the text: '$missing')"
fi
"$PDLANG" run --progress=none --seed 1 "$dir/short.pd" > "$dir/out2" 2>&1
if [ "$(tail -n 1 "$dir/out2")" = "$line" ]; then echo "ok 3 - --seed 1 again: the same line"
else echo "not ok 3 - --seed 1 again wrote '$(tail -n 1 "$dir/out2")', not '$line'"; fi
"$PDLANG" run --progress=none --seed 2 "$dir/short.pd" > "$dir/out3" 2>&1
if [ "$(tail -n 1 "$dir/out3")" != "$line" ]; then echo "ok 4 - --seed 2: another line"
else echo "not ok 4 - --seed 2 wrote the same line as --seed 1"; fi
