"""torch_util.py -- what bench/'s PyTorch versions of the examples share: their command-line
options, PyTorch itself (or the line "PyTorch not installed", which the bench scripts look for),
and the lines of the three licenses as pdlang's lines() reader gives them."""
import sys

LICENSES = ["GPL-3", "Apache-2.0", "MPL-2.0"]


def int_opt(name, default):
    """The integer after `name` on the command line, else default."""
    a = sys.argv[1:]
    return int(a[a.index(name) + 1]) if name in a else default


def torch_or_none(threads, seed):
    """torch, set to `threads` threads and seeded; None (having said so) without it."""
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    return torch


def read_lines(path, split, min_length=1, max_length=None):
    """The lines of one file as lines(path, min_length, max_length, split) reads them: split at
    \\n, a \\r before it dropped, blank lines (spaces and tabs only) skipped, the others numbered
    from 1 and every 5th held out for the test split, then lines shorter than min_length left
    out and the rest cut to max_length; each a list of byte values."""
    out, k = [], 0
    for line in open(path, "rb").read().split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip(b" \t") == b"":
            continue
        k += 1
        if (k % 5 == 0) != (split == "test") or len(line) < min_length:
            continue
        out.append(list(line[:max_length] if max_length else line))
    return out


def license_lines(split, min_length=1, max_length=None):
    """(rows, labels): the lines of the three licenses, labelled 0, 1, 2 in LICENSES' order."""
    xs, ys = [], []
    for label, name in enumerate(LICENSES):
        rows = read_lines("/usr/share/common-licenses/" + name, split, min_length, max_length)
        xs += rows
        ys += [label] * len(rows)
    return xs, ys


def example_options():
    """The license examples' command line: (torch, epochs), torch set to --threads (default 2)
    threads and seeded with --seed (0), epochs --epochs (20); None (having said so) without
    PyTorch."""
    torch = torch_or_none(int_opt("--threads", 2), int_opt("--seed", 0))
    return None if torch is None else (torch, int_opt("--epochs", 20))


def license_splits(tensors, min_length=1, max_length=None):
    """The train and the test split of license_lines as tensors(rows, labels) makes them."""
    return [tensors(*license_lines(split, min_length, max_length)) for split in ("train", "test")]


def fit_and_report(torch, model, train, test, epochs, lr, batch=32, clip=5.0):
    """Train `model` on train = (inputs, labels) (inputs: a tuple of tensors indexed by sample)
    as the examples' train(...) does: cross entropy, Adam at lr with the gradients' global norm
    clipped to clip and a cosine rate over the steps, batches of `batch` in a new random order
    every epoch; then print the share of label 0 in the test labels, the accuracy on train and
    test = (inputs, labels), and the training time."""
    import math
    import time
    (xtr, ytr), (xte, yte) = train, test
    print("share of GPL-3 in the test lines: %.4f" % (yte == 0).float().mean().item())
    steps = epochs * math.ceil(len(ytr) / batch)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (1 + math.cos(math.pi * s / steps)) / 2)
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(ytr))
        for b in range(0, len(ytr), batch):
            idx = perm[b:b + batch]
            opt.zero_grad()
            logits = model(*[t[idx] for t in xtr])
            torch.nn.functional.cross_entropy(logits, ytr[idx]).backward()
            torch.nn.utils.clip_grad_norm_(params, clip)
            opt.step()
            sched.step()
    took = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        for name, (x, y) in (("train", (xtr, ytr)), ("test", (xte, yte))):
            acc = (model(*x).argmax(1) == y).float().mean().item()
            print("accuracy on the %s lines: %.4f (%d lines)" % (name, acc, len(y)))
    print("training took %.1f s (%d steps)" % (took, steps))
