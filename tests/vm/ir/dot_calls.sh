#!/bin/sh
# dot_calls.sh -- `pdlang dump --dot` groups the ops of each `def` call (a layer call) into a
# cluster labelled with the function and the line of the call, nested as the calls nest, for a
# script and for the model it saves (the calls travel in op_callstack); a long program is laid
# out in columns side by side (their first ops on one rank, edges between columns not ranking
# their ends) rather than one strip. The output parses with Graphviz's dot when it is
# installed. TAP output.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
dir=${TMPDIR:-/tmp}/pd_dot_calls.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
n=0
result() { # $1: 0 for ok, $2: description, $3: file to show on failure
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $n - $2"
  else echo "not ok $n - $2"; [ -n "${3:-}" ] && sed 's/^/# /' "$3" | head -20; fi
}
has_dot=0
command -v dot > /dev/null 2>&1 && has_dot=1
parses() { # $1: a .dot file
  if [ $has_dot -eq 1 ]; then dot -Tsvg "$1" > "$1.svg" 2> "$1.err" && [ -s "$1.svg" ]
  else return 0; fi
}
echo "1..9"

cat > t.pd <<'PD'
import "layers"
def block(x) {
    return fc(relu(x), 4)
}
x = data("x", [-1, 4])
h = block(x)
h = block(h)
y = fc(h, 2)
save("t.pdmodel", y)
PD
"$PDLANG" dump --dot t.pd > t.dot 2> t.err
result $? "dump --dot of a script with calls" t.err
# Five calls: block (line 6) with its fc (line 3), block (line 7) with its fc, fc (line 8).
labels=$(grep -o 'label="[a-z_]* ([^"]*)"' t.dot | tr '\n' '|')
want='label="block (t.pd:6)"|label="fc (t.pd:3)"|label="block (t.pd:7)"|label="fc (t.pd:3)"|'
want="${want}label=\"fc (t.pd:8)\"|"
[ "$(grep -c 'subgraph cluster_b0_c' t.dot)" -eq 5 ] && [ "$labels" = "$want" ]
result $? "one cluster per call, labelled with the function and the call's line" t.dot
# block's fc is nested in block's cluster: its label is indented one level deeper.
ind() { grep "$1" t.dot | head -n 1 | sed 's/[^ ].*//' | wc -c; }
[ "$(ind 'label="fc (t.pd:3)"')" -eq $(($(ind 'label="block (t.pd:6)"') + 2)) ] &&
  [ "$(ind 'label="fc (t.pd:8)"')" -eq "$(ind 'label="block (t.pd:6)"')" ]
result $? "a call made inside a function is a cluster inside the function's" t.dot
# The relu written in block's body is in block's cluster, not in its fc's.
awk '/label="block \(t.pd:6\)"/ {on = 1} on && /label="fc/ {exit} on && /label="relu/ {found = 1}
     END {exit !found}' t.dot
result $? "an op written in the function's body is in the function's cluster" t.dot
parses t.dot
rc=$?
skipped=$([ $has_dot -eq 1 ] || echo ': skipped, no graphviz')
result $rc "the digraph parses (dot -Tsvg$skipped)" t.dot.err

"$PDLANG" run t.pd > r.out 2>&1 && "$PDLANG" dump --dot t.pdmodel > m.dot 2> m.err &&
  [ "$(grep -c 'subgraph cluster_b0_c' m.dot)" -eq 5 ] && grep -q 'label="block (t.pd:7)"' m.dot
result $? "the saved model keeps the calls: the same clusters" m.dot

# A long program: 30 calls of a three-op function, then its cost.
{ echo 'def step(x) {'; echo '    return tanh(x * 2 + 1)'; echo '}'
  echo 'h = var([1.0, 2.0])'
  i=0; while [ $i -lt 30 ]; do echo 'h = step(h)'; i=$((i + 1)); done; echo 'print(h)'; } > long.pd
"$PDLANG" dump --dot long.pd > long.dot 2> long.err
ranks=$(grep -c 'rank=same' long.dot)
firsts=$(grep 'rank=same' long.dot | grep -o 'b0_o[0-9]*' | wc -l)
[ "$ranks" -eq 1 ] && [ "$firsts" -ge 2 ] && grep -q 'newrank=true' long.dot &&
  grep -q 'constraint=false' long.dot
result $? "a long program: columns whose first ops share a rank ($firsts columns)" long.dot
# Columns end between calls: op 0 makes h, then call k has ops 3k+1 .. 3k+3.
ok=0
for o in $(grep 'rank=same' long.dot | grep -o 'b0_o[0-9]*' | tail -n +2); do
  [ $(( ${o#b0_o} % 3 )) -eq 1 ] || ok=1
done
result $ok "a column starts with the first op of a call" long.dot
parses long.dot && [ "$(wc -l < t.dot)" -lt "$(wc -l < long.dot)" ]
result $? "the long digraph parses" long.dot.err
