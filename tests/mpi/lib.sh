# lib.sh -- what the data-parallel tests (tests/mpi/*.sh) share: a scratch folder, `mpi N ARGS`
# (the configured mpirun with the flags a test machine needs: root, more ranks than cores), the
# skip of a build without MPI, the scripts and data of the three models, and `same_as_one`, the
# comparison of a 2-rank job with one process. Sourced.
: "${PDLANG:?PDLANG must name the pdlang binary}"
: "${top_builddir:?top_builddir must name the build folder}"
dir=${TMPDIR:-/tmp}/pd_mpi.$$
mkdir -p "$dir" && trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
CLOSE="$top_builddir/tests/mpi/ckpt_close"
# In a sanitizer build, LeakSanitizer is off here: at exit Open MPI's ranks hold allocations of
# its dlopen'ed components, whose frames cannot be told apart from pdlang's once MPI_Finalize has
# unloaded them (suppressions by module did not match). AddressSanitizer and UBSan still check
# every run; the same code paths run leak-checked in every single-process test.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export ASAN_OPTIONS

need_mpi() { # $1: the plan's name, for the skip line
  if [ -z "${MPIRUN:-}" ]; then
    echo "1..0 # SKIP $1: pdlang was built without MPI (configure --with-mpi)"
    exit 0
  fi
}

# mpi N ARGS...: N ranks of ARGS. OMPI_MCA_* keep Open MPI to this host's loopback and shared
# memory, without its warnings about the test machine. A job that outlives 10 minutes is killed
# (exit 124): a hung mpirun fails its test instead of stopping the suite.
mpi() {
  n=$1
  shift
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp \
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 \
    timeout -k 10 600 "$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none -np "$n" "$@"
}

# Data: 96 rows of 4 features and a class (mlp.csv), 48 images of 6 x 6 (cnn.csv), two text
# files of 12 lines each of 5 to 27 characters (a.txt, b.txt). Generated, the same every time.
make_data() {
  awk 'BEGIN { print "a,b,c,d,y"; s = 7
    for (i = 0; i < 96; i++) { r = ""; t = 0
      for (k = 0; k < 4; k++) { s = (s * 1103515245 + 12345) % 2147483648; v = s / 2147483648 - 0.5
        r = r sprintf("%.4f,", v); t += v * (k + 1) }
      print r (t > 0 ? 1 : 0) } }' > mlp.csv
  awk 'BEGIN { h = "p0"; for (k = 1; k < 36; k++) h = h ",p" k; print h ",y"; s = 11
    for (i = 0; i < 48; i++) { r = ""; c = i % 3
      for (k = 0; k < 36; k++) { s = (s * 1103515245 + 12345) % 2147483648
        v = s / 2147483648 + (k % 6 == c * 2 ? 1 : 0); r = r sprintf("%.4f,", v) }
      print r c } }' > cnn.csv
  awk 'BEGIN { s = 5; for (i = 0; i < 24; i++) { s = (s * 1103515245 + 12345) % 2147483648
      n = 5 + s % 23; l = ""; for (k = 0; k < n; k++) l = l substr(i < 12 ? "abcdefgh " : "stuvwxyz.", 1 + (k * 7 + i) % 9, 1)
      print l > (i < 12 ? "a.txt" : "b.txt") } }'
}

# model NAME BATCH SHUFFLE CKPT [EPOCHS]: the script of model NAME (mlp, cnn, rnn) on stdout.
model() {
  ep=${5:-3}
  case $1 in
    mlp) cat <<PD
import "layers"
x = data("features", [-1, 4])
label = data("label", [-1, 1], int64)
h = fc(x, 16, act = tanh)
y = fc(h, 2)
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("mlp.csv"), batch = $2, epochs = $ep, optimizer = adam(0.01),
      shuffle = $3, seed = 3, checkpoint = "$4")
eval(accuracy(y, label), cost, reader = csv("mlp.csv"))
PD
    ;;
    cnn) cat <<PD
import "layers"
x = data("features", [-1, 1, 6, 6])
label = data("label", [-1, 1], int64)
c = max_pool(conv(x, 4, 3, padding = 1, act = relu), 2)
y = fc(c, 3)
cost = mean(softmax_with_cross_entropy(y, label))
train(cost, reader = csv("cnn.csv"), batch = $2, epochs = $ep, optimizer = momentum(0.05),
      shuffle = $3, seed = 3, checkpoint = "$4")
eval(accuracy(y, label), reader = csv("cnn.csv"))
PD
    ;;
    rnn) cat <<PD
import "layers"
x = data("x", [-1, 1], int64, lod_level = 1)
label = data("label", [-1, 1], int64)
emb = param([256, 8], name = "emb", init = normal(0.0, 0.1))
Wx = param([8, 12], name = "Wx")
Wh = param([12, 12], name = "Wh")
h = zeros([12])
for (t in lookup_table(emb, x)) {
    h = tanh(mul(t, Wx) + mul(h, Wh))
    emit hs = h
}
f = sequence_max(hs)
length = sequence_sum(cast(x, float32) * 0 + 1)
if (length < 15) {
    logits = fc(f, 2)
} else {
    logits = fc(f, 2)
}
cost = mean(softmax_with_cross_entropy(logits, label))
train(cost, reader = lines(["a.txt", "b.txt"]), batch = $2, epochs = $ep, optimizer = adam(0.01),
      shuffle = $3, seed = 3, checkpoint = "$4")
eval(accuracy(logits, label), reader = lines(["a.txt", "b.txt"]))
PD
    ;;
  esac
}

# same_as_one MODEL B SHUFFLE TOL [RUN ARGS...]: MODEL trained by 1 process of batch 2B
# (one.ckpt) and by 2 ranks of batch B (two.ckpt), `pdlang run ARGS` each; success when both
# ran and their checkpoints agree within TOL (tests/mpi/ckpt_close's line in close.out). The
# runs' outputs are one.out, one.err, two.out, two.err.
same_as_one() {
  sm=$1 sb=$2 ss=$3 st=$4
  shift 4
  model "$sm" $((2 * sb)) "$ss" one.ckpt > one.pd
  model "$sm" "$sb" "$ss" two.ckpt > two.pd
  rm -f one.ckpt two.ckpt close.out
  "$PDLANG" run "$@" one.pd > one.out 2> one.err || return 1
  mpi 2 "$PDLANG" run "$@" two.pd > two.out 2> two.err || return 1
  "$CLOSE" one.ckpt two.ckpt "$st" > close.out
}
