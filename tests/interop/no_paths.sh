#!/bin/sh
# no_paths.sh -- the committed model files (tests/interop/, the fuzz corpora, examples/) name no
# folder of the machine that saved them: PaddlePaddle records the Python stack that built each
# op in its op_callstack attribute (the script's path, the venv's site-packages), which
# tools/paddle_strip.py removes when tools/paddle_models.py and tools/paddle_zoo.py save. One
# TAP line per folder, listing the files that name /work/, /tmp/, /home/, /root/, /opt/,
# /usr/local/ or /Users/ folders.
set -u
top=${top_srcdir:-.}
pattern='(/work|/tmp|/home|/root|/opt|/usr/local|/Users)/[A-Za-z0-9_.-]'
n=0
for dir in tests/interop tests/fuzz/corpus_load tests/fuzz/corpus_pir tests/fuzz/corpus_ckpt \
           tests/fuzz/corpus_prep examples; do
  n=$((n + 1))
  if test ! -d "$top/$dir"; then
    echo "not ok $n - $dir: no such folder"
    continue
  fi
  # Every file but the scripts and notes that may name a folder in their text.
  hits=$(find "$top/$dir" -type f ! -name '*.py' ! -name '*.sh' ! -name '*.md' ! -name '*.c' \
           ! -name '*.h' ! -name '*.mk' ! -name 'README*' -print0 |
         xargs -0 grep -laE "$pattern" 2>/dev/null)
  if test -z "$hits"; then
    echo "ok $n - $dir: no file names a machine's folder"
  else
    echo "not ok $n - $dir: files that name a machine's folder:"
    echo "$hits" | sed "s|^$top/|#   |"
  fi
done
echo "1..$n"
