# mpi_nets.sh -- the models of the data-parallel benchmarks (bench/bench_mpi.sh,
# bench/bench_overlap.sh), sourced: `net MODEL BATCH [EPOCHS]` writes the script that trains
# MODEL on the 10,000 Fashion-MNIST test images with Adam: mlp (examples/train.pd's 784-256-10),
# cnn (conv 8@5x5 - pool - conv 16@5x5 - pool - fc 128 - fc 10), lenet (examples/cnn.pd's
# conv 20@5x5 - pool - conv 50@5x5 - pool - fc 500 - fc 10).
net() {
  echo 'import "layers"'
  case $1 in
    mlp)
      echo 'x = data("images", [-1, 784])'
      echo 'h = fc(x, 256, act = relu)' ;;
    cnn)
      echo 'x = data("images", [-1, 1, 28, 28])'
      echo 'h = fc(max_pool(conv(max_pool(conv(x, 8, 5, padding = 2, act = relu), 2), 16, 5, act = relu), 2), 128, act = relu)' ;;
    lenet)
      echo 'x = data("images", [-1, 1, 28, 28])'
      echo 'c1 = max_pool(conv(x, 20, 5, padding = 2, act = relu), 2)'
      echo 'h = fc(max_pool(conv(c1, 50, 5, act = relu), 2), 500, act = relu)' ;;
  esac
  echo 'label = data("label", [-1, 1], int64)'
  echo 'y = fc(h, 10)'
  echo 'cost = mean(softmax_with_cross_entropy(y, label))'
  echo "train(cost, reader = fashion_mnist(\"test\"), batch = $2, epochs = ${3:-1}, optimizer = adam(0.001))"
}
