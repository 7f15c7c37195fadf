#!/bin/sh
# install.sh -- libpdlang as a host program sees it. `make install` of the library, its header
# and pdlang.pc into a temporary DESTDIR (only those: a whole `make install` would relink the
# pdlang program that other tests are running whenever a source changed since the build;
# distcheck installs everything), then: the installed shared library exports exactly the functions that the installed pdlang.h
# declares; pdlang.h compiles on its own (C99, and C++ when there is a C++ compiler); pkg-config
# finds pdlang.pc, whose --static flags are usable; examples/embed builds against the installed library with its Makefile
# (pkg-config --cflags --libs pdlang), and classifies a made-up data set (tests/api/mkidx.pl)
# with a model that `pdlang run` trains on it and saves; and examples/embed/lines serves a saved
# sequence model (an LSTM line classifier, fed through pd_state_feed_sequences) with the same
# accuracy as `pdlang run`'s eval over the same lines. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?}" "${top_builddir:?}" "${PD_LIBDIR:?}" "${PD_INCLUDEDIR:?}" "${PD_PKGCONFIGDIR:?}"
dir=${TMPDIR:-/tmp}/pd_install.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
dest=$dir/dest
cc=${PD_CC:-cc}
echo "1..11"

# The test runs inside `make check`: the sub-make must not think it shares a jobserver.
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${PD_MAKE:-make} -C "$top_builddir" \
     install-libLTLIBRARIES install-includeHEADERS install-pkgconfigDATA DESTDIR="$dest" \
     > "$dir/install.log" 2>&1; then
  echo "ok 1 - make install DESTDIR=... (the library, pdlang.h, pdlang.pc)"
else
  echo "not ok 1 - make install failed"; sed 's/^/# /' "$dir/install.log"
  echo "Bail out! nothing installed"; exit 1
fi

libdir=$dest$PD_LIBDIR
so=$libdir/libpdlang.so
header=$dest$PD_INCLUDEDIR/pdlang.h
nm -D --defined-only "$so" 2>&1 | awk 'NF == 3 && $2 != "A" { print $3 }' | sort > "$dir/exported"
sed -n 's/^[a-z][^(]*[ *]\(pd_state_[a-z_]*\)(.*/\1/p' "$header" | sort -u > "$dir/declared"
if [ -s "$dir/declared" ] && cmp -s "$dir/exported" "$dir/declared"; then
  echo "ok 2 - the library exports exactly pdlang.h's $(wc -l < "$dir/declared") functions"
else
  echo "not ok 2 - exported symbols differ from pdlang.h's functions (< exported, > declared)"
  diff "$dir/exported" "$dir/declared" | sed 's/^/# /'
fi

printf '#include <pdlang.h>\nint main(void) { pd_state *st; return pd_state_new(&st); }\n' > "$dir/h.c"
if $cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$dest$PD_INCLUDEDIR" -fsyntax-only "$dir/h.c" \
     > "$dir/h.log" 2>&1; then
  echo "ok 3 - pdlang.h compiles alone as C99 (-pedantic -Wall -Wextra -Werror)"
else
  echo "not ok 3 - pdlang.h alone as C99"; sed 's/^/# /' "$dir/h.log"
fi
cxx=$(command -v c++ || command -v g++ || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "ok 4 # SKIP no C++ compiler"
elif cp "$dir/h.c" "$dir/h.cc" &&
     "$cxx" -std=c++11 -pedantic -Wall -Wextra -Werror -I"$dest$PD_INCLUDEDIR" -fsyntax-only \
       "$dir/h.cc" > "$dir/hxx.log" 2>&1; then
  echo "ok 4 - pdlang.h compiles as C++11"
else
  echo "not ok 4 - pdlang.h as C++"; sed 's/^/# /' "$dir/hxx.log"
fi

# pkg-config on the staged install: the sysroot puts DESTDIR in front of its paths.
PKG_CONFIG_PATH=$dest$PD_PKGCONFIGDIR PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
flags=$(pkg-config --cflags --libs pdlang 2>&1)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
if has "-I$dest$PD_INCLUDEDIR" && has "-L$libdir" && has -lpdlang; then
  echo "ok 5 - pkg-config --cflags --libs pdlang: $flags"
else
  echo "not ok 5 - pkg-config --cflags --libs pdlang gave: $flags"
fi
# --static: the libraries libpdlang itself links, each a real flag (no unsubstituted @VAR@).
sflags=$(pkg-config --static --libs pdlang 2>&1)
case "$sflags" in
  *@*|"") echo "not ok 6 - pkg-config --static --libs pdlang gave: $sflags" ;;
  *-lpdlang*-lopenblas*) echo "ok 6 - pkg-config --static --libs pdlang: $sflags" ;;
  *) echo "not ok 6 - pkg-config --static --libs pdlang lacks -lpdlang or OpenBLAS: $sflags" ;;
esac

# Build the example as a user would, with the sanitizer flags of this build (if any).
mkdir -p "$dir/embed" && cp "$top_srcdir/examples/embed/Makefile" "$top_srcdir/examples/embed/classify.c" \
  "$top_srcdir/examples/embed/lines.c" "$dir/embed/"
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL ${PD_MAKE:-make} -C "$dir/embed" CC="$cc" \
     CFLAGS="-O1 -g -Wall -Wextra -Werror ${PD_SAN_CFLAGS:-}" LDFLAGS="${PD_SAN_CFLAGS:-}" \
     > "$dir/embed.log" 2>&1; then
  echo "ok 7 - examples/embed builds against the installed library"
else
  echo "not ok 7 - examples/embed does not build"; sed 's/^/# /' "$dir/embed.log"
fi

# A model trained on made-up images, saved as examples/train.pd saves its own.
cd "$dir" || exit 1
mkdir data && perl "$top_srcdir/tests/api/mkidx.pl" data 600 200 && gzip -n data/*-ubyte
cat > train.pd <<'PD'
import "layers"
x     = data("images", [-1, 784])
label = data("label", [-1, 1], int64)
h     = fc(x, 32, act = relu)
y     = fc(h, 10)
cost  = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = fashion_mnist("train", path = "data"), batch = 32, epochs = 3,
      optimizer = adam(0.01), seed = 1)
save("fashion.pdmodel", y)
PD
if "$PDLANG" run --progress=none train.pd > train.log 2>&1 && [ -f fashion.pdiparams ]; then
  echo "ok 8 - pdlang run trains and saves fashion.pdmodel"
else
  echo "not ok 8 - training the model"; sed 's/^/# /' train.log
fi

LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ./embed/classify -n 100 -d data \
  fashion.pdmodel > classify.out 2> classify.err
rc=$?
acc=$(sed -n 's/^accuracy: \([0-9.]*\) .*/\1/p' classify.out)
lines=$(grep -c ': predicted .* true ' classify.out)
linked=$(LD_LIBRARY_PATH=$libdir ldd ./embed/classify 2>/dev/null | grep -c "$libdir/libpdlang.so")
if [ $rc -eq 0 ] && [ "$lines" -eq 100 ] && [ "$linked" -eq 1 ] && [ -n "$acc" ] &&
   awk "BEGIN { exit !($acc >= 0.9) }"; then
  echo "ok 9 - classify, linked with the installed library, predicts 100 images: accuracy $acc"
else
  echo "not ok 9 - classify (rc $rc, $lines lines, linked $linked, accuracy '$acc')"
  sed 's/^/# /' classify.out classify.err | tail -n 20
fi

# A sequence model: an LSTM classifier of made-up lines (class 0: letters a-p, class 1: k-z,
# 1 to 8 of them, so that some lines could be either: the accuracy is not 1), trained and saved by `pdlang run`, served by examples/embed/lines in batches
# of 7 (so that batches differ from eval's): the same accuracy as eval's over the same lines.
awk 'BEGIN { srand(7); for (f = 0; f < 2; f++) { file = f ? "b.txt" : "a.txt";
  for (i = 0; i < 120; i++) { n = 1 + int(rand() * 8); s = "";
    for (j = 0; j < n; j++) s = s sprintf("%c", 97 + 10 * f + int(rand() * 16));
    print s > file; if (i % 10 == 0) print "" > file } } }'
cat > seq.pd <<'PD'
import "layers"
x      = data("x", [-1, 1], int64, lod_level = 1)
label  = data("label", [-1, 1], int64)
hs, h, c = lstm(embedding(x, 256, 8), 16)
logits = fc(concat([sequence_max(hs), h], 1), 2)
cost   = mean(softmax_with_cross_entropy(logits, label))
train(cost, reader = lines(["a.txt", "b.txt"]), batch = 16, epochs = 2, optimizer = adam(0.02),
      seed = 3)
eval(accuracy(logits, label), reader = lines(["a.txt", "b.txt"]))
save("lines.pdmodel", logits)
PD
if "$PDLANG" run --progress=none seq.pd > seq.log 2>&1 && [ -f lines.pdiparams ]; then
  echo "ok 10 - pdlang run trains and saves the line classifier lines.pdmodel"
else
  echo "not ok 10 - training the line classifier"; sed 's/^/# /' seq.log
fi
want=$(sed -n 's/^eval: accuracy(logits, label) = \([0-9.]*\) (240 samples.*/\1/p' seq.log)
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ./embed/lines -b 7 lines.pdmodel \
  a.txt b.txt > lines.out 2> lines.err
rc=$?
got=$(sed -n 's/^accuracy: \([0-9.]*\) (\([0-9]*\) of 240 lines, 2 files)$/\1/p' lines.out)
n=$(grep -c ': predicted [01]  true [01]' lines.out)
if [ $rc -eq 0 ] && [ "$n" -eq 240 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
   awk "BEGIN { exit !($got >= 0.8) }"; then
  echo "ok 11 - embed/lines serves the sequence model: accuracy $got on 240 lines, as eval's $want"
else
  echo "not ok 11 - embed/lines (rc $rc, $n lines, accuracy '$got', eval's '$want')"
  sed 's/^/# /' lines.out lines.err seq.log | tail -n 20
fi
