#!/bin/sh
# device.sh -- choosing where ops compute: --device and PDLANG_DEVICE are parsed with clear
# errors; a GPU asked for where none can be opened is a clear error (exit 1), not a crash. With a
# GPU (a CUDA build on a machine that has one), the scripts of tests/golden/run and the quick
# examples run there too: each must still pass its own assert_close checks, and print the same
# numbers as on the CPU within 1e-4 relative; a golden that stops with an error (one with a .err
# beside its .out) must stop with the CPU's exit status and error.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
tmp=${TMPDIR:-/tmp}/pd-device.$$
mkdir -p "$tmp" && trap 'rm -rf "$tmp"' EXIT
n=0
t() {  # t DESCRIPTION STATUS: one TAP line from the status of the check just run
  n=$((n + 1))
  if [ "$2" -eq 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" | head -20; fi
}
script="$top_srcdir/tests/golden/run/print_values.pd"

"$PDLANG" run --device tpu "$script" >/dev/null 2>"$tmp/err"
rc=$?; [ $rc -eq 2 ] && grep -q "unknown device 'tpu' (expected cpu, gpu or gpu:N)" "$tmp/err"
t "--device tpu: exit 2, names what is accepted" $?
PDLANG_DEVICE=gpu:x "$PDLANG" run "$script" >/dev/null 2>"$tmp/err"
rc=$?; [ $rc -eq 2 ] && grep -q "PDLANG_DEVICE: unknown device 'gpu:x'" "$tmp/err"
t "PDLANG_DEVICE=gpu:x: exit 2, names the variable" $?
"$PDLANG" run --device cpu "$script" >"$tmp/cpu.out" 2>"$tmp/err"
t "--device cpu runs" $?
"$PDLANG" exec --device=tpu x.pdmodel >/dev/null 2>"$tmp/err"
rc=$?; [ $rc -eq 2 ] && grep -q "pdlang exec: --device: unknown device" "$tmp/err"
t "exec --device=tpu: exit 2" $?

# Is there a GPU? Then compare; else its absence must be a clear error.
"$PDLANG" run --device gpu:64 "$script" >/dev/null 2>"$tmp/err"
rc=$?; [ $rc -eq 1 ] && grep -q "cannot compute on GPU 64: " "$tmp/err"
t "--device gpu:64: exit 1, says why" $?
"$PDLANG" run --device gpu "$script" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -ne 0 ]; then
  [ $rc -eq 1 ] && grep -q "cannot compute on GPU 0: " "$tmp/err"
  t "no GPU here: --device gpu is a clear error ($(head -c 100 "$tmp/err" | tr '\n' ' '))" $?
  echo "1..$n"
  exit 0
fi

# Numbers equal within 1e-4 relative, other words equal.
same() {
  awk 'NR == FNR { a[NR] = $0; na = NR; next }
       { b[FNR] = $0; nb = FNR }
       END {
         if (na != nb) { print "line counts differ: " na " vs " nb; exit 1 }
         for (i = 1; i <= na; i++) {
           x = a[i]; y = b[i]; gsub(/[][(),=]/, " ", x); gsub(/[][(),=]/, " ", y)
           nx = split(x, p); ny = split(y, q)
           if (nx != ny) { print "line " i " differs: " a[i] " | " b[i]; exit 1 }
           for (k = 1; k <= nx; k++) {
             if (p[k] == q[k]) continue
             if (p[k] ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ && q[k] ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) {
               d = p[k] - q[k]; if (d < 0) d = -d; m = q[k] < 0 ? -q[k] : q[k]
               if (d <= 1e-4 * (1 + m)) continue
             }
             print "line " i ": " p[k] " vs " q[k]; exit 1
           }
         }
       }' "$1" "$2"
}
for f in "$top_srcdir"/tests/golden/run/*.pd; do
  [ -f "${f%.pd}.out" ] || continue   # the .err ones are error reports
  name=$(basename "$f")
  (cd "$(dirname "$f")" && "$PDLANG" run --progress=none "$name") >"$tmp/cpu.out" 2>"$tmp/cpu.err"
  crc=$?
  (cd "$(dirname "$f")" && "$PDLANG" run --progress=none --device gpu "$name") >"$tmp/gpu.out" 2>"$tmp/err"
  rc=$?
  # A golden with a .err too stops with an error after its output: the GPU's run must stop
  # with the same exit status and the same error (less the notes of ops that ran on the CPU).
  { [ $rc -eq $crc ] || echo "exit $rc on the GPU, $crc on the CPU"; } >>"$tmp/err"
  [ $rc -eq $crc ] && same "$tmp/gpu.out" "$tmp/cpu.out" >>"$tmp/err" &&
    if [ $crc -ne 0 ]; then
      grep -v '^pdlang: note: ' "$tmp/err" >"$tmp/gpu.err"
      grep -v '^pdlang: note: ' "$tmp/cpu.err" | cmp -s - "$tmp/gpu.err" ||
        { echo "the GPU's error differs from the CPU's:"; cat "$tmp/cpu.err"; false; } >>"$tmp/err"
    fi
  t "tests/golden/run/$name on the GPU: ends as on the CPU, prints the CPU's numbers" $?
done
for ex in fit_a_line ifelse rnn char_rnn; do
  [ "$ex" = char_rnn ] && [ -z "${PDLANG_SLOW_TESTS:-}" ] && continue
  "$PDLANG" run --progress=none --device gpu "$top_srcdir/examples/$ex.pd" >/dev/null 2>"$tmp/err"
  t "examples/$ex.pd on the GPU passes its checks" $?
done
echo "1..$n"
