#!/bin/sh
# predict.sh -- predict(y, reader = R, out = FILE) writes y for every sample of the reader, in its
# order, whatever the batch: a CSV file (a header, then "sample,values..."; a sequence output a
# line per step, "sample,step,values..."), a .npy [N, ...] (a sequence output its steps and
# FILE.lengths.npy, int64 [N]); progress on stderr; a y that is not a row per sample at run
# time is refused naming its shape. The files are compared byte for byte with what is worked out
# here by hand. TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_predict.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
echo "1..7"
printf 'a,t\n1,0\n2,1\n3,0\n4,1\n5,0\n' > data.csv
printf 'abc\nhello\nxy\n' > words.txt
cat > p.pd <<'PD'
x = data("x", [-1, 1])
y = concat([x * 2.0, x + 0.25], axis = 1)
r = csv("data.csv", label = "t")
predict(y, reader = r, out = "p.csv", batch = 2)
predict(cast(x * 3.0, int64), reader = r, out = "p.npy", batch = 2)
PD
cat > s.pd <<'PD'
w = data("w", [-1, 1], int64, lod_level = 1)
predict(w * 1, reader = lines("words.txt"), out = "s.npy", batch = 2)
predict(w + 1, reader = lines("words.txt"), out = "s.csv")
PD
cat > bad.pd <<'PD'
x = data("x", [-1, 2])
y = reshape(x, [-1, 1])
predict(y, reader = npy("two.npy"), out = "bad.csv", batch = 4)
PD
# the values of a .npy file (its header's length at bytes 8-9), as od -t $2 prints them
npyvals() {
  hl=$(od -A n -t u2 -j 8 -N 2 "$1" | tr -d ' ')
  od -A n -t "$2" -j $((10 + hl)) "$1" | tr -s ' \n' ' '
}
npyshape() { dd if="$1" bs=1 skip=10 count=80 2>/dev/null | sed -n "s/.*'shape': (\([^)]*\)).*/\1/p"; }
n=0
t() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi; }

"$PDLANG" run --progress=lines p.pd > p.out 2> p.err
t $? "a script with predict to CSV and .npy runs"
printf 'sample,y_0,y_1\n0,2,1.25\n1,4,2.25\n2,6,3.25\n3,8,4.25\n4,10,5.25\n' > want.csv
cmp -s want.csv p.csv; r=$?
t $r "p.csv: a row per sample in the reader's order (batches of 2, 2, 1), columns y_0, y_1"
[ $r = 0 ] || sed 's/^/# /' p.csv p.out p.err
got=$(dd if=p.npy bs=1 skip=10 count=22 2>/dev/null)
shape=$(npyshape p.npy)
vals=$(npyvals p.npy d8)
[ "$got" = "{'descr': '<i8', 'fort" ] && [ "$shape" = "5, 1," ] && [ "$vals" = " 3 6 9 12 15 " ]
t $? "p.npy: int64 [5, 1] holding 3 6 9 12 15 (got '$got', ($shape), values '$vals')"
grep -q '^predict: batch 3/3, 5 samples$' p.err && grep -q '^predict: y, float32 \[2\] per sample, 5 samples to p.csv' p.out
t $? "progress lines on stderr, a summary line on stdout"

"$PDLANG" run --progress=none s.pd > s.out 2> s.err
lens=$(npyvals s.lengths.npy d8)
steps=$(npyvals s.npy d8)
shape=$(npyshape s.npy)
[ "$lens" = " 3 5 2 " ] && [ "$steps" = " 97 98 99 104 101 108 108 111 120 121 " ] &&
  [ "$shape" = "10, 1," ] && [ "$(npyshape s.lengths.npy)" = "3," ]
t $? "sequences to .npy: the steps [10, 1] and s.lengths.npy 3 5 2 (got '$shape', '$steps', '$lens')"
printf 'sample,step,value\n0,0,98\n0,1,99\n0,2,100\n1,0,105\n1,1,102\n1,2,109\n1,3,109\n1,4,112\n2,0,121\n2,1,122\n' > want_s.csv
cmp -s want_s.csv s.csv
t $? "sequences to CSV: a line per step, sample and step first (a target written w + 1: 'value')"

# two.npy: float32 [3, 2]
{ printf '\223NUMPY\001\000v\000'; printf "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }"
  printf '%*s\n' 58 ''; printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100\000\000\240\100\000\000\300\100'; } > two.npy
"$PDLANG" run --progress=none bad.pd > bad.out 2> bad.err
rc=$?
[ $rc = 1 ] && grep -qF "bad.pd:3:9: error: predict: 'y' is [6, 1] for a batch of 3 samples" bad.err &&
  [ ! -e bad.csv ]
t $? "a y with rows that are not samples is refused at run time, naming its shape (rc $rc)"
[ $rc = 1 ] && grep -qF "bad.pd:3:9" bad.err || sed 's/^/# /' bad.err
