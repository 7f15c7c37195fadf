#!/bin/sh
# csv_categories.sh -- csv(..., categorical = [...]): a text label becomes its class id and a text
# feature its one-hot vector; the first reader of a column fixes its categories (sorted), so a
# test file holding only some of them maps the same way; save writes them beside the model
# (NAME.categories) and load reads them back; a value the categories lack, a categorical name
# that is no column, or one that is neither the label nor a feature, is an error at the reader's
# line; a damaged categories file is refused at load.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
echo "1..10"
dir=${TMPDIR:-/tmp}/pd_csvcat.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
t() {  # t DESCRIPTION STATUS
  n=$((n + 1))
  if [ "$2" -eq 0 ]; then echo "ok $n - $1"; else echo "not ok $n - $1"; sed 's/^/# /' err | head -8; fi
}
# x is the class (0, 1, 2) plus a little; colour cycles apart from the class.
awk 'BEGIN { split("setosa versicolor virginica", sp, " "); split("red green blue", co, " ");
             print "x,colour,species";
             for (i = 0; i < 120; i++) printf "%.2f,%s,\"%s\"\n", i % 3 + (i % 7) * 0.03,
                                               co[int(i / 3) % 3 + 1], sp[i % 3 + 1] }' > train.csv
printf 'x,colour,species\n0.1,blue,setosa\n0.05,red,setosa\n' > test.csv
printf 'x,colour,species\n1.0,red,setosa\n2.0,purple,setosa\n' > bad.csv
cat > m.pd <<'PD'
import "layers"
x = data("features", [-1, 4])
label = data("label", [-1, 1], int64)
y = fc(x, 3)
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("train.csv", label = "species", categorical = ["colour", "species"]),
      batch = 16, epochs = 40, optimizer = adam(0.05))
eval(accuracy(y, label), reader = csv("test.csv", label = "species", categorical = ["colour", "species"]))
save("m.pdmodel", y)
PD
"$PDLANG" run --progress=none m.pd > out 2> err
rc=$?
[ $rc -eq 0 ] && grep -q '^eval: accuracy(y, label) = 1.0000 (2 samples' out
t "a text label and a one-hot text feature train; the test file's 2 setosa rows map to id 0" $?
printf '# pdlang categories: the values of each categorical CSV column, in id order (COLUMN<tab>VALUE)\ncolour\tblue\ncolour\tgreen\ncolour\tred\nspecies\tsetosa\nspecies\tversicolor\nspecies\tvirginica\n' > want
cmp -s want m.categories
t "save writes m.categories: each column's values in id order (sorted)" $?
cat > bad.pd <<'PD'
import "layers"
x = data("features", [-1, 4])
label = data("label", [-1, 1], int64)
y = fc(x, 3)
load("m.pdmodel")
eval(accuracy(y, label), reader = csv("bad.csv", label = "species", categorical = ["colour", "species"]))
PD
"$PDLANG" run --progress=none bad.pd > out 2> err
rc=$?
[ $rc -eq 1 ] && grep -q "^bad.pd:6:39: error: bad.csv:3: column 'colour': 'purple' is not one of the categories the column's first reader found: 'blue', 'green', 'red'$" err
t "after load, a value the saved categories lack is an error naming file, line and column" $?
sed 's/bad.csv/test.csv/' bad.pd > ok.pd
"$PDLANG" run --progress=none ok.pd > out 2> err
rc=$?
[ $rc -eq 0 ] && grep -q '^eval: accuracy(y, label) = 1.0000 (2 samples' out
t "load reads the categories back: the same ids, the same accuracy" $?
printf '# x\ncolour\tred\ncolour\tblue\n' > m.categories
"$PDLANG" run --progress=none ok.pd > out 2> err
rc=$?
[ $rc -eq 1 ] && grep -q "m.categories:3: the values of column 'colour' are not in increasing order" err
t "a categories file out of order is refused at load" $?
printf '# x\ncolour red\n' > m.categories
"$PDLANG" run --progress=none ok.pd > out 2> err
rc=$?
[ $rc -eq 1 ] && grep -q "m.categories:2: not a categories line (COLUMN, a tab, VALUE)" err
t "a line without a tab is refused at load" $?
sed 's/categorical = \["colour", "species"\])/categorical = ["color", "species"])/' m.pd | sed '/^eval/d; /^save/d' > nocol.pd
"$PDLANG" run --progress=none nocol.pd > out 2> err
rc=$?
[ $rc -eq 1 ] && grep -q "train.csv: no column named 'color'; the header has 'x', 'colour', 'species'" err
t "a categorical name that is no column lists the header" $?
sed 's/label = "species", categorical = \["colour", "species"\])/label = "species", features = ["x"], categorical = ["colour", "species"])/' m.pd |
  sed '/^eval/d; /^save/d' > notfeat.pd
"$PDLANG" run --progress=none notfeat.pd > out 2> err
rc=$?
[ $rc -eq 1 ] && grep -q "column 'colour' is listed as categorical but is neither the label nor a feature" err
t "a categorical column that is neither the label nor a feature is an error" $?
sed 's/categorical = \["colour", "species"\])/categorical = "colour")/' m.pd > notlist.pd
"$PDLANG" check notlist.pd > out 2> err
rc=$?
[ $rc -ne 0 ] && grep -q "csv: 'categorical' must be a list of strings, not a string" err
t "categorical that is not a list is a compile-time error" $?
# Values with a tab, a newline and a backslash (quoted cells) survive the categories file.
printf 'x,kind\n0.5,"a\tb"\n1.5,"c\nd"\n2.5,"e\\\\f"\n0.7,"a\tb"\n' > odd.csv
cat > odd.pd <<'PD'
import "layers"
x = data("features", [-1, 1])
label = data("label", [-1, 1], int64)
y = fc(x, 3)
train(mean(softmax_with_cross_entropy(y, label)), reader = csv("odd.csv", label = "kind",
      categorical = ["kind"]), batch = 4, epochs = 1)
save("odd.pdmodel", y)
PD
sed 's/^train(.*/load("odd.pdmodel")/; s/^      categorical.*//; s/^save.*/eval(accuracy(y, label), reader = csv("odd.csv", label = "kind", categorical = ["kind"]))/' odd.pd > odd2.pd
"$PDLANG" run --progress=none odd.pd > out 2> err && "$PDLANG" run --progress=none odd2.pd > out 2>> err
rc=$?
[ $rc -eq 0 ] && grep -q '^eval: accuracy(y, label) = .* (4 samples' out &&
  grep -qF 'kind	a\tb' odd.categories && grep -qF 'kind	c\nd' odd.categories &&
  grep -qF 'kind	e\\\\f' odd.categories
t "a tab, a newline and a backslash in a category are escaped in the file and read back" $?
