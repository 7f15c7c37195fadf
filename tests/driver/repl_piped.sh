#!/bin/sh
# piped.sh -- the REPL without a terminal: `pdlang` and `pdlang repl` reading stdin run it like a
# script (no prompts, the first error stops with status 1 and the diagnostic); with -i they
# behave as at a prompt (values of bare expressions, errors that add nothing), which also checks
# the session's commands (:vars, :program, :dot, :save, :load, :reset, :batch) and that parameters keep
# their values from one statement to the next. Speaks TAP.
set -u
: "${PDLANG:?PDLANG must name the pdlang binary}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pdrepl.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
n=0

# check DESCRIPTION WANT-STATUS: judge the last run ($rc, out, err) against want.out and, when
# it exists, want.err (else stderr must be empty). Sanitizer reports always fail.
check() {
  n=$((n + 1))
  why=""
  [ "$rc" -eq "$2" ] || why="exit status $rc, want $2"
  if grep -q 'Sanitizer\|runtime error:' err; then why="${why:+$why; }sanitizer report"; fi
  cmp -s want.out out || why="${why:+$why; }stdout differs"
  if [ -f want.err ]; then cmp -s want.err err || why="${why:+$why; }stderr differs"
  elif [ -s err ]; then why="${why:+$why; }unexpected stderr"; fi
  if [ -z "$why" ]; then echo "ok $n - $1"
  else
    echo "not ok $n - $1: $why"
    { diff -u want.out out; [ -f want.err ] && diff -u want.err err || cat err; } |
      sed 's/^/# /' | head -40
  fi
  rm -f want.out want.err
}

echo "1..19"

echo 'print(1 + 2)' | "$PDLANG" > out 2> err; rc=$?
echo 3 > want.out
check "echo 'print(1 + 2)' | pdlang prints 3" 0

cat > script.pd <<'EOF'
# a comment, then a blank line

x = minibatch([10, 20, 30])
if (x > 15) {
    o = x * 2
} else {
    o = x
}
print(o)
1 + 2
EOF
"$PDLANG" < script.pd > out 2> err; rc=$?
printf 'Tensor(shape=[3, 1], dtype=float32)\n[[10],\n [40],\n [60]]\n' > want.out
check "pdlang < script.pd runs it like a script (a bare expression prints nothing)" 0

cat > bad.pd <<'EOF'
x = var(2)
print(x)

y = x + zz
print(y)
EOF
"$PDLANG" repl < bad.pd > out 2> err; rc=$?
printf 'Tensor(shape=[1], dtype=float32)\n[2]\n' > want.out
cat > want.err <<'EOF'
<stdin>:4:9: error: 'zz' is not defined
    4 | y = x + zz
      |         ^
EOF
check "an error stops a piped script: status 1, the diagnostic at the input's line" 1

printf 'x = var(1)\nif (x > 0) {\n    print(x)\n' | "$PDLANG" > out 2> err; rc=$?
: > want.out
cat > want.err <<'EOF'
<stdin>:3:13: error: unexpected end of input: expected '}' to close the 'if' block opened at 2:12
    3 |     print(x)
      |             ^
EOF
check "input ending inside a block is a syntax error" 1

printf 'print(1)\nprint(2 +)\nprint(3)\n' | "$PDLANG" > out 2> err; rc=$?
echo 1 > want.out
cat > want.err <<'EOF'
<stdin>:2:10: error: unexpected ')', expecting an expression
    2 | print(2 +)
      |          ^
EOF
check "a syntax error stops a piped script" 1

# -i: values of bare expressions; errors go on; failed statements add nothing. Lines keep the
# numbers they were typed at, bare expressions and failed statements included: numbers only
# grow, and an error after a statement that was dropped does not reuse its number.
cat > session.pd <<'EOF'
import "layers"
x = minibatch([[1.0, 2.0]])
h = fc(x, 2)
h
h
y = h + nope
y
print(7)
n = 3
n * 2
"text"
relu
EOF
"$PDLANG" repl -i < session.pd > out 2> err; rc=$?
# h twice, the same value both times: the parameters were initialised once.
{ sed -n '1,2p' out; sed -n '1,2p' out; echo 7; echo 6; echo '"text"'; echo 'function relu'; } \
  > want.out
cat > want.err <<'EOF'
<stdin>:6:9: error: 'nope' is not defined
    6 | y = h + nope
      |         ^
<stdin>:7:1: error: 'y' is not defined
    7 | y
      | ^
EOF
check "-i: bare expressions print values; parameters keep their values; errors add nothing" 0

cat > session.pd <<'EOF'
import "layers"
x = minibatch([[1.0, 2.0]])
y = fc(x, 3); assert_close(y, [0, 0, 0])
y = fc(x, 5)
print(len(y.shape), y.shape[1])
EOF
"$PDLANG" repl -i < session.pd > out 2> err; rc=$?
printf '2\n5\n' > want.out
grep -q 'assert_close failed' err && [ "$(grep -c error: err)" -eq 1 ] && : > err
check "-i: a run-time error drops the statement and the parameters it made" 0

cat > session.pd <<'EOF'
x = minibatch([[1.0], [3.0]])
n = 4
def twice(v) { return v * 2 }
if (x > 2) {
    o = x
} else {
    o = x * 0
}
:vars
EOF
"$PDLANG" repl -i < session.pd > out 2> err; rc=$?
cat > want.out <<'EOF'
  x      [2, 1] float32  block 0
  n      int = 4
  twice  function twice
  o      [2, 1] float32  block 0 (var o.tmp_0)
EOF
check ":vars: names, shapes, dtypes, blocks and compile-time values" 0

cat > lib.pd <<'EOF'
import "layers"
z = fc(minibatch([[1.0, 2.0, 3.0]]), 4)
EOF
cat > bad_lib.pd <<'EOF'
w = 1
q = undefined_thing
EOF
cat > session.pd <<'EOF'
:load lib.pd
print(z.shape)
:load bad_lib.pd
w
:save model.pdmodel
:dot model.dot
:program
EOF
"$PDLANG" repl -i < session.pd > out 2> err; rc=$?
ok=1
grep -q '^\[1, 4\]$' out || ok=0
grep -q '^wrote model.pdmodel and model.pdiparams (2 parameters)$' out && [ -s model.pdmodel ] && [ -s model.pdiparams ] || ok=0
grep -q '^wrote model.dot$' out && grep -q '^digraph' model.dot || ok=0
grep -q '^program: 1 block' out &&
  grep -q 'var fc_0.w_0: LOD_TENSOR float32 \[3, 4\] persistable' out || ok=0
grep -q "'undefined_thing' is not defined" err && grep -q "'w' is not defined" err || ok=0
"$PDLANG" dump model.pdmodel > dump.out 2>&1 && grep -q 'fc_0.w_0' dump.out || ok=0
n=$((n + 1))
if [ $ok -eq 1 ] && [ $rc -eq 0 ]; then echo "ok $n - :load (all or nothing), :save, :dot, :program"
else echo "not ok $n - :load, :save, :dot, :program (rc $rc)"; sed 's/^/# /' out err | head -40; fi

printf 'a = 1\n:reset\na\n:nope\n:vars all extra\n:quit\nprint(9)\n' |
  "$PDLANG" repl -i > out 2> err; rc=$?
: > want.out
cat > want.err <<'EOF'
<stdin>:3:1: error: 'a' is not defined
    3 | a
      | ^
pdlang: unknown command ':nope' (:help lists them)
pdlang: :vars takes no argument or 'all', not 'all extra'
EOF
check ":reset forgets everything; unknown commands are errors; :quit stops reading" 0

printf 'label = 1\nquit\nexit()\nprint(lable)\nprint(label)\n' | "$PDLANG" repl -i > out 2> err; rc=$?
printf '1\n' > want.out
cat > want.err <<'EOF'
pdlang: 'quit' is not a command here: type :quit (or Ctrl-D) to leave
pdlang: 'exit()' is not a command here: type :quit (or Ctrl-D) to leave
<stdin>:4:7: error: 'lable' is not defined (did you mean 'label'?)
    4 | print(lable)
      |       ^
EOF
check "quit and exit() say how to leave; a misspelt name gets a 'did you mean'" 0

# A statement is computed when typed (when it needs no data): one that fails at run time is
# dropped like one that fails to compile, and i keeps its value; one over data is kept.
printf 'i = var(1, int64)\nz = var(0, int64)\nwhile (i < 3) {\n  i = i / z\n}\nprint(i)\n' > rt.pd
printf 'x = data("x", [-1, 2])\ny = x * 2\nprint(y.shape)\n' >> rt.pd
"$PDLANG" repl -i < rt.pd > out 2> err; rc=$?
printf 'Tensor(shape=[1], dtype=int64)\n[1]\n[-1, 2]\n' > want.out
cat > want.err <<'EOF'
<stdin>:4:9: error: elementwise_div: integer division by zero: element 0 of Y (var 'z') [1] is 0
    4 |   i = i / z
      |         ^
EOF
check "-i: a statement that fails at run time is dropped; one over data is kept" 0

# Orphan parameters: fc(x, 3)'s, once h is bound again, are marked by :vars; :gc drops the
# statement (its line stays blank: numbers stay) and their values; the layers after it are
# numbered anew and keep their values (g prints the same).
printf 'import "layers"\nx = minibatch([[1.0, 2.0]])\nh = fc(x, 3)\nh = fc(x, 5)\ng = fc(h, 2)\n' > gc.pd
printf 'print(g)\n:vars\n:gc\n:vars\nprint(g)\n:gc\nprint(nope)\n' >> gc.pd
"$PDLANG" repl -i < gc.pd > out 2> err; rc=$?
cat > want.err <<'EOF'
<stdin>:12:7: error: 'nope' is not defined
   12 | print(nope)
      |       ^
EOF
ok=1
[ "$(grep -c 'orphan (:gc frees it)$' out)" -eq 2 ] &&
  grep -q '^  fc_0.w_0  \[2, 3\] float32  block 0, orphan (:gc frees it)$' out &&
  grep -q '^dropped 1 statement; freed 2 parameters: fc_0.w_0, fc_0.b_0$' out &&
  grep -q '^  fc_0.w_0  \[2, 5\] float32  block 0$' out &&
  [ "$(sed -n '/^dropped/,$p' out | grep -c '^  fc_2')" -eq 0 ] &&
  [ "$(sed -n 2p out)" = "$(sed -n '/^dropped/,$p' out | grep -A1 '^Tensor' | sed -n 2p)" ] &&
  grep -q '^no orphan parameters$' out || ok=0
# A layer whose result was read before its name was bound again is no orphan.
printf 'import "layers"\nx = minibatch([[1.0, 2.0]])\nk = fc(x, 4)\nm = k + 1\nk = fc(x, 4)\n:gc\n' |
  "$PDLANG" repl -i > out.read 2>&1 && [ "$(cat out.read)" = "no orphan parameters" ] || ok=0
: > want.out
[ $ok -eq 1 ] && : > out
check ":vars marks orphan parameters; :gc frees them and keeps the others' values" 0

# Numbers only grow: a statement dropped at run time and a block over three lines keep theirs.
printf 'x = var(1, int64)\nz = var(0, int64)\nprint(x / z)\nq = x * 2\n' > grow.pd
printf 'def f(v) {\n    return v\n}\nprint(nope)\nprint(f(q))\n' >> grow.pd
"$PDLANG" repl -i < grow.pd > out 2> err; rc=$?
printf 'Tensor(shape=[1], dtype=int64)\n[2]\n' > want.out
cat > want.err <<'EOF'
<stdin>:3:9: error: elementwise_div: integer division by zero: element 0 of Y (var 'z') [1] is 0
    3 | print(x / z)
      |         ^
<stdin>:8:7: error: 'nope' is not defined
    8 | print(nope)
      |       ^
EOF
check "-i: line numbers only grow (after a run-time error, across a block)" 0

printf 'def twice(x, k = 2) {\n    return x * k\n}\n# Adds one.\ndef inc(x) {\n    return x + 1\n}\n:help inc\n:help fc\n:help relu\n:help nope\n' |
  "$PDLANG" repl -i > out 2> err; rc=$?
cat > want.out <<'EOF'
def inc(x)
def fc(x, size, act = none, name = none, bias_name = none)
  A fully connected layer: x is flattened to [batch, prod(x.shape[1:])]. `name` names the
  weight, `bias_name` the bias (a saved model's names: what `pdlang decompile` writes).
  (import "layers")
relu(X)
  Fluid's op 'relu'; returns its output 'Out'. Inputs in order, then attributes by keyword
EOF
echo "pdlang: no function or layer named 'nope' (:help lists the commands)" > want.err
check ":help NAME: a def of the session, a stdlib layer (with its comment), a builtin op" 0

# :batch READER [N]: the first N samples of a reader feed the session's data vars (by position
# here, as train would: x takes "features"), so that expressions over them show values; a
# statement made later sees them too; :batch alone lists them, :batch off forgets them (the
# error again, with its note); a reader that does not open is an error at its argument.
printf 'a,t\n1,10\n2,20\n3,30\n' > small.csv
printf 'x = data("x", [-1, 1])\nt = data("label", [-1, 1])\nx + t\nr = csv("small.csv", label = "t")\n:batch r 2\nx + t\ny = x * 10\nmean(y)\n:batch\n:batch off\nx\nx + 1\n:batch csv("nope.csv")\n:batch r 0\n' |
  "$PDLANG" repl -i > out 2> err; rc=$?
cat > want.out <<'EOF'
elementwise_add.tmp_0: [-1, 1] float32
2 samples of r: x float32 [2, 1], label float32 [2, 1]
Tensor(shape=[2, 1], dtype=float32)
[[11],
 [22]]
Tensor(shape=[1], dtype=float32)
[15]
x float32 [2, 1], label float32 [2, 1]
x: [-1, 1] float32 (data: a reader feeds it)
scale.tmp_1: [-1, 1] float32
EOF
cat > want.err <<'EOF'
<stdin>:3:1: error: an expression at the prompt computes without data, but this needs 'x', which a reader feeds; use eval(..., reader = ...) to compute over a data set
    3 | x + t
      | ^
note: :batch READER binds the first samples of a reader to the data vars, so that expressions over them show values
<stdin>:12:1: error: an expression at the prompt computes without data, but this needs 'x', which a reader feeds; use eval(..., reader = ...) to compute over a data set
   12 | x + 1
      | ^
note: :batch READER binds the first samples of a reader to the data vars, so that expressions over them show values
<stdin>:13:12: error: cannot open 'nope.csv': No such file or directory
   13 |        csv("nope.csv")
      |            ^
pdlang: :batch: the number of samples must be from 1 to 1000000, not 0
EOF
check ":batch READER N binds a batch to the data vars; :batch lists, :batch off forgets" 0

printf 'x = 3\n' > first.pd
printf 'x * 2\n' | "$PDLANG" -i first.pd > out 2> err; rc=$?
printf '6\n' > want.out
check "pdlang -i FILE.pd runs the file, then takes statements as at a prompt" 0

printf 'print(1)\n' > first.pd
printf 'print(2)\n' | "$PDLANG" repl first.pd > out 2> err; rc=$?
printf '1\n2\n' > want.out
check "pdlang repl FILE.pd runs the file first" 0

"$PDLANG" repl --bogus > out 2> err < /dev/null; rc=$?
: > want.out
grep -q '^usage: pdlang repl' err && : > err
check "a usage error: status 2" 2
