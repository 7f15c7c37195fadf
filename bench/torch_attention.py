"""torch_attention.py -- one training step of a transformer encoder layer (d 128, 4 heads,
feed-forward 512, dropout 0.1, post-norm, relu) on 32 windows of 64 bytes: an embedding of the
256 byte values to 128, torch.nn.TransformerEncoderLayer (batch_first), a linear layer to 256
classes, softmax cross entropy over every position, Adam -- the model bench_attention.sh runs
in pdlang. Prints "step MS" (milliseconds per step, median of the repeats), or "PyTorch not
installed".
Usage: torch_attention.py --threads T [--steps N] [--device cpu|cuda]"""
import sys
import time


def main():
    a = sys.argv[1:]
    threads = int(a[a.index("--threads") + 1]) if "--threads" in a else 1
    steps = int(a[a.index("--steps") + 1]) if "--steps" in a else 30
    device = a[a.index("--device") + 1] if "--device" in a else "cpu"
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, T, D, H, FF, V = 32, 64, 128, 4, 512, 256
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B, T))
    if device != "cpu" and not torch.cuda.is_available():
        print("PyTorch sees no GPU")
        return
    x, y = x.to(device), y.to(device)
    print("# torch %s, %d threads, %s" % (torch.__version__, torch.get_num_threads(), device))
    emb = torch.nn.Embedding(V, D)
    layer = torch.nn.TransformerEncoderLayer(D, H, dim_feedforward=FF, dropout=0.1,
                                             activation="relu", batch_first=True)
    out = torch.nn.Linear(D, V)
    emb, layer, out = emb.to(device), layer.to(device), out.to(device)
    params = list(emb.parameters()) + list(layer.parameters()) + list(out.parameters())
    opt = torch.optim.Adam(params, lr=0.001)
    layer.train()
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = out(layer(emb(x)))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    times.sort()
    print("step %.4f" % (times[len(times) // 2] * 1e3))


main()
