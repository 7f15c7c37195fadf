#!/bin/sh
# decompile.sh -- `pdlang decompile`: each model PaddlePaddle 3.3 saved under tests/interop/ (the
# .pdmodel ones and the PIR .json ones: MLPs, LeNet, CNNs with batch norm and dropout, an
# embedding bag, the TransformerEncoderLayer, LSTM and GRU layers through Paddle's rnn op,
# both directions, Fluid 1.x's lstm, lstmp and gru ops and a sequence_conv text CNN on sequences, and
# control flow: static.nn.cond's conditional_block pair with select_input and while_loop's while,
# in both formats) becomes a .pd script that `pdlang run` compiles, loads and saves again; the
# saved model's outputs on the model's inputs equal the original's bit for bit; the script
# names the ops' indices, and writes each block op with its block as a body. So do the models
# pdlang itself saves with control flow (an if over rows and over one element, a while loop, a for
# loop over sequences, which save writes as a while), and for loops that stay recurrent ops (for
# statements again). And the field's architectures
# (tests/interop/zoo, zoo_pir) round-trip too (PIR's CRNN's LSTM keeps a uint8 dropout state of
# rank 0 among its parameters: param(..., dtype = uint8, trainable = false)). Fluid's model folders
# (a file per parameter, or __params__) decompile to a script that loads the folder. Where
# the ops are what a layer or builtin compiles to, the script calls it (their lines say
# `# ops i-j`; tests/golden/run/decompile_layers.sh shows such scripts). TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_srcdir:?top_srcdir must name the source tree}"
: "${top_builddir:?top_builddir must name the build tree}"
compare=$top_builddir/tests/interop/test_interop
dir=${TMPDIR:-/tmp}/pd_decompile.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
i=$top_srcdir/tests/interop
n=0
# Whether the outputs that exec wrote to $1/a and $1/b (its stdout in $1/a.log, $1/b.log) are the
# same, paired in their order: the script fetches a var that a loop carries under the loop's
# var's name (while_loop's x, an input the loop writes in place, is assign.tmp_0 there).
same_outputs() {
  sed -n 's/^\([^ ]*\): Tensor(.*/\1/p' "$1/a.log" > "$1/a.names"
  sed -n 's/^\([^ ]*\): Tensor(.*/\1/p' "$1/b.log" > "$1/b.names"
  if ! [ -s "$1/a.names" ] || [ "$(wc -l < "$1/a.names")" != "$(wc -l < "$1/b.names")" ]; then
    echo "# the outputs: $(cat "$1/a.names") and $(cat "$1/b.names")"
    return 1
  fi
  # exec's file names: '/' becomes '_', and a '.' that starts the name
  paste -d ' ' "$1/a.names" "$1/b.names" | sed 's|/|_|g; s|^\.|_|; s| \.| _|' > "$1/pairs"
  while read -r x y; do
    "$compare" --compare "$1/a/$x.npy" "$1/b/$y.npy" 0 > "$1/cmp.log" 2>&1 ||
      { sed 's/^/# /' "$1/cmp.log" | head -5; return 1; }
  done < "$1/pairs"
}
for m in mlp mlp_old_attrs lenet cnn_bn embedding_bag transformer lstm1 gru1 lstm2_bidi gru2_bidi \
         fluid_lstm fluid_lstmp fluid_gru seqconv_textcnn pir/mlp pir/lenet pir/cnn_bn pir/jit_cnn pir/misc \
         pir/transformer cond cond_false while_loop pir/cond pir/cond_false pir/while_loop; do
  n=$((n + 1))
  d=$i/$m
  model=$(ls "$d"/model.pdmodel "$d"/model.json 2>/dev/null | head -1)
  w=$dir/$(echo "$m" | tr / _)
  mkdir -p "$w"
  if ! (cd "$w" && "$PDLANG" decompile "$model" -o m.pd --save-as re.pdmodel > dc.log 2>&1 &&
        "$PDLANG" run --progress=none m.pd > run.log 2>&1); then
    echo "not ok $n - $m: decompiled, run"
    cat "$w/dc.log" "$w/run.log" 2>/dev/null | sed 's/^/# /' | head -10
    continue
  fi
  feeds=""
  for f in "$d"/in_*.npy; do
    name=$(basename "$f" .npy)
    feeds="$feeds --feed ${name#in_}=$f"
  done
  for f in "$d"/lens_*.npy; do  # a sequence input's lengths
    [ -f "$f" ] || continue
    name=$(basename "$f" .npy)
    feeds="$feeds --lengths ${name#lens_}=$f"
  done
  # shellcheck disable=SC2086
  "$PDLANG" exec "$w/re.pdmodel" $feeds --out "$w/a" > "$w/a.log" 2>&1
  # shellcheck disable=SC2086
  "$PDLANG" exec "$model" $feeds --out "$w/b" > "$w/b.log" 2>&1
  good=1
  same_outputs "$w" || good=0
  ops=$(grep -c '  # op [0-9]*\( of block [0-9]*\)\{0,1\}$' "$w/m.pd")
  bodies=$(grep -c '{  # op [0-9]*' "$w/m.pd")   # op(...) {, if (...) {, } else {, while (...) {
  want=$(($("$PDLANG" dump "$model" | grep -c '^block [0-9]') - 1))   # the blocks under block 0
  if [ $good = 1 ] && [ "$ops" -gt 0 ] && [ "$bodies" = "$want" ]; then
    echo "ok $n - $m: decompiled to $ops op() lines ($bodies with a body), run, saved: its outputs equal the original's"
  else
    echo "not ok $n - $m: the decompiled model's outputs ($bodies bodies for $want blocks)"
  fi
  case $m in  # static.nn.cond and while_loop: the language's if / else and while
  *cond*|*while_loop)
    n=$((n + 1))
    if grep -q '^\(if\|while\) ([A-Za-z_0-9]*) {  # op [0-9]* (\(conditional_block\|while\))$' "$w/m.pd" &&
       ! grep -q 'op("\(while\|conditional_block\|select_input\)"' "$w/m.pd"; then
      echo "ok $n - $m: its control flow is an if / while statement"
    else
      echo "not ok $n - $m: its control flow is an if / while statement"; sed 's/^/# /' "$w/m.pd" | grep -v param
    fi;;
  esac
done

# Fluid's folder layout, one file per parameter (fluid_dir) or all in __params__
# (fluid_combined): the script loads the folder, load("DIR"), which reads either.
for m in mlp/fluid_dir mlp/fluid_combined embedding_bag/fluid_dir embedding_bag/fluid_combined; do
  n=$((n + 1))
  d=$i/$m
  w=$dir/$(echo "$m" | tr / _)
  mkdir -p "$w"
  feeds=""
  for f in "$d"/../in_*.npy; do
    name=$(basename "$f" .npy)
    feeds="$feeds --feed ${name#in_}=$f"
  done
  # shellcheck disable=SC2086
  if ! (cd "$w" && "$PDLANG" decompile "$d" -o m.pd --save-as re.pdmodel > dc.log 2>&1 &&
        "$PDLANG" run --progress=none m.pd > run.log 2>&1 &&
        "$PDLANG" exec "$d" $feeds --out b > b.log 2>&1 &&
        "$PDLANG" exec re.pdmodel $feeds --out a > a.log 2>&1); then
    echo "not ok $n - $m: decompiled, run, executed"
    cat "$w"/*.log 2>/dev/null | sed 's/^/# /' | head -10
    continue
  fi
  good=1
  for f in "$w"/b/*.npy; do
    g=$(basename "$f" .npy | tr -c 'A-Za-z0-9_\n' '_')
    "$compare" --compare "$w/a/$g.npy" "$f" 0 > "$w/cmp.log" 2>&1 ||
      { good=0; sed 's/^/# /' "$w/cmp.log" | head -5; }
  done
  if [ $good = 1 ] && grep -q "^load(\"$d\")\$" "$w/m.pd"; then
    echo "ok $n - $m: loads the folder, its outputs equal the original's"
  else
    echo "not ok $n - $m: load(folder) and the decompiled model's outputs"; grep '^load' "$w/m.pd"
  fi
done
n=$((n + 1))   # a folder that lacks a parameter's file: load's error names it, at its line
mkdir -p "$dir/missing" && cp "$i/mlp/fluid_dir"/* "$dir/missing/" && rm "$dir/missing/fc_1.w_0"
if (cd "$dir/missing" && "$PDLANG" decompile . -o m.pd &&
    ! "$PDLANG" run --progress=none m.pd > run.out 2> run.err) &&
   grep -q "^m.pd:[0-9]*:6: error: load: .*no file for parameter 'fc_1.w_0'" "$dir/missing/run.err"; then
  echo "ok $n - load(folder) without a parameter's file: an error at its line naming it"
else
  echo "not ok $n - load(folder) without a parameter's file: the error"
  sed 's/^/# /' "$dir/missing/run.err" 2>/dev/null | head -5
fi

# Models pdlang saves with control flow, on inputs that a model of constants writes.
cat > "$dir/gen.pd" <<'EOF'
x4 = var([[0.5, 1.0, -2.0, 0.25], [3.0, 0.1, 0.2, 0.3], [-1.0, 2.5, 0.5, 1.5]])
x2 = var([[0.5, 1.0], [-2.0, 0.25], [3.0, 0.1], [0.2, 0.3], [-1.0, 2.5]])
lens = var([3, 2], int64)
save("gen.pdmodel", x4, x2, lens)
EOF
cat > "$dir/rows_if.pd" <<'EOF'
import "layers"
x = data("x", [-1, 4])
if (reduce_sum(x, [1], keep_dim = true) > 1.0) {  # per row
    y = fc(x, 3)
} else {
    y = x[:, 0:3] * 2
}
save("model.pdmodel", y)
EOF
cat > "$dir/scalar_if.pd" <<'EOF'
x = data("x", [-1, 4])
if (mean(x) > 0.5) {                               # one element
    y = x * 2
} else {
    y = relu(x - 1)
}
save("model.pdmodel", y)
EOF
cat > "$dir/while.pd" <<'EOF'
x = data("x", [-1, 4])
i = var(0)
while (i < 3) {
    i = i + 1
    x = x * 0.5 + i
}
save("model.pdmodel", x, i)
EOF
cat > "$dir/for_seq.pd" <<'EOF'
x = data("x", [-1, 2], lod_level = 1)
W = param([2, 3], init = 0.3)
U = param([3, 3], init = 0.1)
h = zeros([3])
for (t in x) {                                     # saved as a while over the padded steps
    h = tanh(mul(t, W) + mul(h, U))
    emit hs = h
}
save("model.pdmodel", h, hs)
EOF
n=$((n + 1))
if (cd "$dir" && "$PDLANG" run --progress=none gen.pd && "$PDLANG" exec gen.pdmodel --out in) \
     > "$dir/gen.log" 2>&1; then
  echo "ok $n - the inputs of pdlang's models"
else
  echo "not ok $n - the inputs of pdlang's models"; sed 's/^/# /' "$dir/gen.log" | head -5
fi
for m in rows_if scalar_if while for_seq; do
  n=$((n + 1))
  w=$dir/own_$m
  mkdir -p "$w"
  feeds="--feed x=$dir/in/x4.npy"
  [ $m = for_seq ] && feeds="--feed x=$dir/in/x2.npy --lengths x=$dir/in/lens.npy"
  # shellcheck disable=SC2086
  if ! (cd "$w" && "$PDLANG" run --progress=none "$dir/$m.pd" > save.log 2>&1 &&
        "$PDLANG" decompile model.pdmodel -o m.pd --save-as re.pdmodel > dc.log 2>&1 &&
        "$PDLANG" run --progress=none m.pd > run.log 2>&1 &&
        "$PDLANG" exec model.pdmodel $feeds --out a > a.log 2>&1 &&
        "$PDLANG" exec re.pdmodel $feeds --out b > b.log 2>&1); then
    echo "not ok $n - pdlang's $m: saved, decompiled, run, executed"
    cat "$w"/*.log 2>/dev/null | sed 's/^/# /' | head -10
    continue
  fi
  good=1
  same_outputs "$w" || good=0
  bodies=$(grep -c '{  # op [0-9]*' "$w/m.pd")
  # the ifs (over rows, with the split and merge ops; over one element) and the whiles as
  # statements
  stmts=$(grep -c '^ *\(if\|while\) ([A-Za-z_0-9]*) {  # op [0-9]* (' "$w/m.pd")
  grep -q 'op("\(while\|conditional_block\|split_lod_tensor\|merge_lod_tensor\)"' "$w/m.pd" &&
    stmts=0
  if [ $good = 1 ] && [ "$bodies" -gt 0 ] && [ "$stmts" -gt 0 ]; then
    echo "ok $n - pdlang's $m: decompiled with $bodies block(s), $stmts written as statements, its outputs equal the original's"
  else
    echo "not ok $n - pdlang's $m: the decompiled model's outputs ($stmts statements)"
    sed 's/^/# /' "$w/m.pd" | grep -v param
  fi
done

# The field's architectures (tests/interop/zoo, and zoo_pir as PaddlePaddle 3 exports them by
# default), their parameters made from weights.txt by test_interop, on their inputs.
for m in $(cd "$i/zoo" && ls) $(cd "$i/zoo_pir" && ls | sed 's|^|pir/|'); do
  n=$((n + 1))
  w=$dir/zoo_$(echo "$m" | tr / _)
  name=${m#pir/}
  prog=inference.pdmodel
  [ "$m" != "$name" ] && prog=inference.json
  feeds=""
  for f in "$i/zoo/$name"/in_*.npy; do
    f_name=$(basename "$f" .npy)
    feeds="$feeds --feed ${f_name#in_}=$f"
  done
  # shellcheck disable=SC2086
  if ! ("$compare" --zoo-params "$m" "$w" > "$dir/zoo.log" 2>&1 && cd "$w" &&
        "$PDLANG" decompile "$prog" -o m.pd --save-as re.pdmodel > dc.log 2>&1 &&
        "$PDLANG" run --progress=none m.pd > run.log 2>&1 &&
        "$PDLANG" exec "$prog" $feeds --out b > b.log 2>&1 &&
        "$PDLANG" exec re.pdmodel $feeds --out a > a.log 2>&1); then
    echo "not ok $n - zoo $m: decompiled, run, executed"
    cat "$dir/zoo.log" "$w"/*.log 2>/dev/null | sed 's/^/# /' | head -10
    continue
  fi
  good=1
  for f in "$w"/b/*.npy; do
    g=$(basename "$f" .npy | tr -c 'A-Za-z0-9_\n' '_')
    "$compare" --compare "$w/a/$g.npy" "$f" 0 > "$w/cmp.log" 2>&1 ||
      { good=0; sed 's/^/# /' "$w/cmp.log" | head -5; }
  done
  if [ $good = 1 ]; then
    echo "ok $n - zoo $m: decompiled to $(grep -c '  # op [0-9]*$' "$w/m.pd") op() lines, its outputs equal the original's"
  else
    echo "not ok $n - zoo $m: the decompiled model's outputs"
  fi
  rm -rf "$w"
done

# A for loop that save cannot write as a while (here one over sequences of sequences, a loop
# inside it) stays a recurrent op, which decompile writes back as for statements; the script
# saves the same ops again.
n=$((n + 1))
cat > "$dir/rec.pd" <<'EOF'
x = data("x", [-1, 1], lod_level = 2)
total = var(0)
for (s in x) {
    for (w in s) {
        total = total + w
    }
}
save("rec.pdmodel", total)
EOF
if ! (cd "$dir" && "$PDLANG" run --progress=none rec.pd) > "$dir/rec.log" 2>&1; then
  echo "not ok $n - a recurrent op: its model saved"; sed 's/^/# /' "$dir/rec.log" | head -5
elif ! (cd "$dir" && "$PDLANG" decompile rec.pdmodel -o rec_m.pd --save-as rec_re.pdmodel &&
          "$PDLANG" run --progress=none rec_m.pd) > "$dir/rec.log" 2>&1; then
  echo "not ok $n - recurrent ops: decompiled, run"; sed 's/^/# /' "$dir/rec.log" | head -5
elif [ "$(grep -c '^ *for (.*) {  # op [0-9]*\( of block [0-9]*\)\{0,1\} (recurrent)$' "$dir/rec_m.pd")" = 2 ] &&
     [ "$("$PDLANG" dump "$dir/rec.pdmodel" | grep '^  op' | sed 's/ @ .*//')" = \
       "$("$PDLANG" dump "$dir/rec_re.pdmodel" | grep '^  op' | sed 's/ @ .*//')" ]; then
  echo "ok $n - recurrent ops: two for statements, saved again as the same ops"
else
  echo "not ok $n - recurrent ops: two for statements, the same ops"; sed 's/^/# /' "$dir/rec_m.pd"
fi
n=$((n + 1))
if "$PDLANG" decompile "$dir/none.pdmodel" > /dev/null 2> "$dir/none.err" ||
   ! grep -q 'none.pdmodel' "$dir/none.err"; then
  echo "not ok $n - a missing model: an error naming it"; sed 's/^/# /' "$dir/none.err"
else
  echo "ok $n - a missing model: an error naming it"
fi
echo "1..$n"
