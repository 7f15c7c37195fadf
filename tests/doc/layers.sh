#!/bin/sh
# layers.sh -- HACKING.md's layers against the sources: base <- kernels <- vm <- train <- lang <-
# api, driver. A file of a layer includes headers of its own layer and the ones below it only
# (`#include "LAYER/..."`); config.h and system headers are not layers.
: "${top_srcdir:=.}"
rank() {
  case $1 in
  base) echo 0 ;; kernels) echo 1 ;; vm) echo 2 ;; train) echo 3 ;; lang) echo 4 ;;
  api | driver) echo 5 ;; *) echo -1 ;;
  esac
}
echo "1..6"
n=0
for layer in base kernels vm train lang api; do
  n=$((n + 1))
  mine=$(rank $layer)
  bad=""
  for f in $(cd "$top_srcdir" && find $layer -name '*.[ch]' -o -name '*.cu' -o -name '*.y' \
             -o -name '*.re' | sort); do
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\)\/.*/\1/p' \
                 "$top_srcdir/$f" | sort -u); do
      r=$(rank "$inc")
      if [ "$r" -gt "$mine" ]; then bad="$bad $f:$inc"; fi
    done
  done
  if [ -z "$bad" ]; then echo "ok $n - $layer/ includes no header of a layer above it"
  else echo "not ok $n - $layer/ includes headers of a layer above it:$bad"; fi
done
