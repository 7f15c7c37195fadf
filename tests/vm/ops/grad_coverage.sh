#!/bin/sh
# grad_coverage.sh -- every differentiable op (marked DIFF in vm/oplist.h; `tests/vm/ops/test_opdefs
# --diff-ops` lists them) has a passing fp64 finite-difference gradient test. Runs the gradient
# tests with PD_GRADCHECK_LOG set: each records the ops whose gradient checks all passed
# (tests/vm/ops/gradcheck.h, and tests/vm/passes/test_cf_grad for the ops that own blocks); an op missing
# from the record fails here. Ops whose backward pass is not written yet are listed in NOT_YET,
# on purpose, to be seen. Runs in the build folder.
set -u
NOT_YET=""
log=${TMPDIR:-/tmp}/pd_gradcov.$$
trap 'rm -f "$log"' EXIT
: > "$log"
for t in tests/vm/ops/test_kern_math tests/vm/ops/test_kern_math_matmul tests/vm/ops/test_kern_elementwise \
         tests/vm/ops/test_kern_reduce tests/vm/ops/test_kern_loss tests/vm/ops/test_kern_tensor \
         tests/vm/ops/test_kern_nn tests/vm/ops/test_kern_index tests/vm/passes/test_cf_grad \
         tests/vm/ops/test_kern_act tests/vm/ops/test_kern_norm tests/vm/ops/test_kern_loss_elem \
         tests/vm/ops/test_kern_rnn_fused tests/vm/ops/test_kern_rnn_op tests/vm/ops/test_kern_select; do
  PD_GRADCHECK_LOG=$log ./$t > /dev/null 2>&1
done
if ! ops=$(./tests/vm/ops/test_opdefs --diff-ops) || [ -z "$ops" ]; then
  echo "1..1"
  echo "not ok 1 - tests/vm/ops/test_opdefs --diff-ops lists the differentiable ops"
  exit 0
fi
n=$(echo "$ops" | wc -w)
echo "1..$n"
i=0
for op in $ops; do
  i=$((i + 1))
  if grep -qx "$op" "$log"; then echo "ok $i - $op has a passing finite-difference gradient test"
  else
    case " $NOT_YET " in
      *" $op "*) echo "ok $i - $op # SKIP its backward pass is not written yet" ;;
      *) echo "not ok $i - $op has no passing finite-difference gradient test" ;;
    esac
  fi
done
