"""torch_transformer_classify.py -- examples/transformer_classify.pd in PyTorch, on the same data
and epochs: the lines of GPL-3, Apache-2.0 and MPL-2.0 (/usr/share/common-licenses) read as
pdlang's lines() reads them (split at \\n, a \\r before it dropped, blank lines skipped, the
non-blank lines numbered from 1 and every 5th held out for the test, lines shorter than 48
bytes left out, the others cut to 48), an embedding of the bytes to 32 (init normal(0, 0.1))
plus a learned position embedding [48, 32] (normal(0, 0.1)), two
torch.nn.TransformerEncoderLayer (d 32, 4 heads, feed-forward 64, dropout 0.1, relu, post-norm;
weights xavier-uniform per projection as pdlang's linear, biases 0), the mean over the
positions, a linear layer to 3; Adam 0.003 with the gradients' global norm clipped to 5 and a
cosine rate over the steps; batches of 32 in a new random order every epoch, 20 epochs.
Prints the share of GPL-3 in the test lines and the accuracy on the training and test lines.
Usage: torch_transformer_classify.py [--seed S] [--epochs E] [--threads T]"""
import math
import sys
import time

L, D, HEADS, FF = 48, 32, 4, 64
FILES = ["GPL-3", "Apache-2.0", "MPL-2.0"]


def read_lines(path, split):
    data = open(path, "rb").read()
    out, k = [], 0
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip(b" \t") == b"":
            continue
        k += 1
        if len(line) < L:
            continue
        if (k % 5 == 0) != (split == "test"):
            continue
        out.append(list(line[:L]))
    return out


def main():
    a = sys.argv[1:]
    seed = int(a[a.index("--seed") + 1]) if "--seed" in a else 0
    epochs = int(a[a.index("--epochs") + 1]) if "--epochs" in a else 20
    threads = int(a[a.index("--threads") + 1]) if "--threads" in a else 2
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    sets = {}
    for split in ("train", "test"):
        xs, ys = [], []
        for label, name in enumerate(FILES):
            rows = read_lines("/usr/share/common-licenses/" + name, split)
            xs += rows
            ys += [label] * len(rows)
        sets[split] = (torch.tensor(xs), torch.tensor(ys))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(256, D)
            self.pos = torch.nn.Parameter(torch.randn(L, D) * 0.1)
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=FF, dropout=0.1,
                                                 batch_first=True) for _ in range(2))
            self.out = torch.nn.Linear(D, 3)
            torch.nn.init.normal_(self.emb.weight, 0.0, 0.1)
            for name, p in self.named_parameters():
                if name.endswith("in_proj_weight"):
                    for part in p.data.chunk(3):
                        torch.nn.init.xavier_uniform_(part)
                elif p.dim() == 2 and "emb" not in name and name != "pos":
                    torch.nn.init.xavier_uniform_(p)
                elif name.endswith("bias"):
                    torch.nn.init.zeros_(p)

        def forward(self, x):
            h = self.emb(x) + self.pos
            for layer in self.layers:
                h = layer(h)
            return self.out(h.mean(1))

    model = Model()
    xtr, ytr = sets["train"]
    xte, yte = sets["test"]
    print("share of GPL-3 in the test lines: %.4f" % (yte == 0).float().mean().item())
    steps = epochs * math.ceil(len(ytr) / 32)
    opt = torch.optim.Adam(model.parameters(), lr=0.003)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 + math.cos(math.pi * s / steps)) / 2)
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(ytr))
        for b in range(0, len(ytr), 32):
            idx = perm[b:b + 32]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xtr[idx]), ytr[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            sched.step()
    took = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        for name, (x, y) in (("train", (xtr, ytr)), ("test", (xte, yte))):
            acc = (model(x).argmax(1) == y).float().mean().item()
            print("accuracy on the %s lines: %.4f (%d lines)" % (name, acc, len(y)))
    print("training took %.1f s (%d steps)" % (took, steps))


main()
