#!/usr/bin/env python3
"""torch_train.py -- the PyTorch half of bench/bench_train: trains the same models on the same
.npy data with the same batch sizes and epochs, and prints one line per model,
"KEY MEDIAN BEST" (samples/s: the median and the best of the measured epochs, after one
warm-up epoch).

bench_train runs it; by hand:
    python3 bench/torch_train.py --data DIR --epochs 5 --threads 2 [--only mlp64|...|res64]
where DIR holds x12800.npy/y12800.npy, x3200.npy/y3200.npy and x1280.npy/y1280.npy
(bench_train writes them).
Prints "PyTorch not installed" when `import torch` fails. Installing it: see bench/README."""
import argparse
import statistics
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

MODELS = {  # key: (kind, batch, samples per epoch), as in bench_train.c
    "mlp64": ("mlp", 64, 12800),
    "mlp256": ("mlp", 256, 12800),
    "cnn64": ("cnn", 64, 3200),
    "res64": ("res", 64, 1280),
    "mlp1024": ("mlp1024", 256, 12800),
    "mlp1024bf16": ("mlp1024", 256, 12800),  # under torch.autocast("cpu", torch.bfloat16)
    "cnn64bf16": ("cnn", 64, 3200),
}


def conv_bn(cin, cout, size, stride=1, act=True):
    layers = [nn.Conv2d(cin, cout, size, stride=stride, padding=1 if size == 3 else 0, bias=False),
              nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)]
    return nn.Sequential(*layers, nn.ReLU()) if act else nn.Sequential(*layers)


class Block(nn.Module):  # examples/resnet.pd's res_block
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.f = nn.Sequential(conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, act=False))
        self.s = conv_bn(cin, cout, 1, stride, act=False) if stride != 1 or cin != cout else None

    def forward(self, x):
        return F.relu(self.f(x) + (self.s(x) if self.s is not None else x))


def make(kind):
    if kind == "res":
        return nn.Sequential(conv_bn(1, 16, 3), Block(16, 16), Block(16, 32, 2), Block(32, 64, 2),
                             nn.AvgPool2d(7), nn.Flatten(), nn.Linear(64, 10))
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    if kind == "mlp1024":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                             nn.Linear(1024, 10))
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def bench(key, data, epochs):
    kind, batch, n = MODELS[key]
    x = torch.from_numpy(np.load(f"{data}/x{n}.npy"))
    y = torch.from_numpy(np.load(f"{data}/y{n}.npy"))
    if kind in ("cnn", "res"):
        x = x.view(-1, 1, 28, 28)
    torch.manual_seed(1)
    model = make(kind)
    opt = torch.optim.Adam(model.parameters(), lr=0.001)
    rates = []
    for epoch in range(epochs + 1):
        t0 = time.perf_counter()
        perm = torch.randperm(n)
        for i in range(0, n, batch):  # shuffled minibatches, the last one short, as pdlang's
            idx = perm[i:i + batch]
            xb, yb = x[idx], y[idx]
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=key.endswith("bf16")):
                logits = model(xb)
            loss = F.cross_entropy(logits.float(), yb)
            loss.backward()
            opt.step()
            loss.item()  # pdlang fetches the loss every step
        if epoch > 0:
            rates.append(n / (time.perf_counter() - t0))
    return statistics.median(rates), max(rates)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    for key in MODELS:
        if a.only and not key.startswith(a.only):
            continue
        med, best = bench(key, a.data, a.epochs)
        print(f"{key} {med:.0f} {best:.0f}", flush=True)


if __name__ == "__main__":
    main()
