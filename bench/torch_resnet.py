#!/usr/bin/env python3
"""torch_resnet.py -- examples/resnet.pd in PyTorch, for comparing results and time on the same
data, epochs and hyper-parameters: Fashion-MNIST from the Debian package dataset-fashion-mnist
(pixels / 255, as pdlang's reader), the same residual network (3x3 stem 16, one residual block
each of 16, 32 and 64 channels, the last two with stride 2 and a 1x1 projection shortcut, batch
norm after every convolution, global average pooling, dropout 0.2, linear 10), batch 64, shuffled
every epoch, Adam at 0.002 with a cosine decay over the run's steps, Fluid's batch-norm momentum
(PyTorch's momentum = 1 - Fluid's 0.9) and epsilon 1e-5.

    python3 bench/torch_resnet.py [--epochs 3] [--threads 2]

Prints the loss and time per epoch and the test accuracy, in the form pdlang prints them.
Prints "PyTorch not installed" when `import torch` fails (installing it: bench/README)."""
import argparse
import gzip
import math
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("PyTorch not installed")
    sys.exit(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import Block, conv_bn  # noqa: E402 (the one definition of the blocks)

DATA = "/usr/share/datasets/fashion-mnist"


def idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(split):
    x = idx(f"{DATA}/{split}-images-idx3-ubyte.gz", 16).astype(np.float32) / 255.0
    y = idx(f"{DATA}/{split}-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return torch.from_numpy(x.reshape(-1, 1, 28, 28).copy()), torch.from_numpy(y.copy())


def model():  # bench_train's res64 network (torch_train.py) with the example's dropout
    return nn.Sequential(conv_bn(1, 16, 3), Block(16, 16), Block(16, 32, 2), Block(32, 64, 2),
                         nn.AvgPool2d(7), nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    x, y = load("train")
    xt, yt = load("t10k")
    net = model()
    opt = torch.optim.Adam(net.parameters(), lr=0.002)
    steps = max(1, a.epochs * math.ceil(len(x) / a.batch))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    t_all = time.perf_counter()
    for epoch in range(a.epochs):
        net.train()
        t0, total, n = time.perf_counter(), 0.0, 0
        perm = torch.randperm(len(x))
        for i in range(0, len(x), a.batch):
            idx_b = perm[i:i + a.batch]
            loss = F.cross_entropy(net(x[idx_b]), y[idx_b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx_b)
            n += len(idx_b)
        dt = time.perf_counter() - t0
        print(f"epoch {epoch + 1}/{a.epochs}: loss {total / n:.4f}, {n} samples in {dt:.1f} s "
              f"({n / dt:.0f} samples/s)", flush=True)
    net.eval()
    with torch.no_grad():
        correct = sum((net(xt[i:i + 1000]).argmax(1) == yt[i:i + 1000]).sum().item()
                      for i in range(0, len(xt), 1000))
    print(f"eval: accuracy = {correct / len(xt):.4f} ({len(xt)} samples); "
          f"{time.perf_counter() - t_all:.0f} s in all")


if __name__ == "__main__":
    main()
