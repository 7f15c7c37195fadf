"""torch_gated.py -- one training step of bench/bench_gated.sh's model in PyTorch: embedding 32,
torch.nn.LSTM or torch.nn.GRU of hidden 256, a linear layer to 256 classes, softmax cross
entropy, Adam, on 32 sequences of 50 characters. Prints "nn MS" (milliseconds per step, the
median of the repeats), or "PyTorch not installed".
Usage: torch_gated.py --cell lstm|gru --threads T [--steps N] [--device cpu|cuda]"""
import sys
import time


def main():
    a = sys.argv[1:]
    cell = a[a.index("--cell") + 1] if "--cell" in a else "lstm"
    threads = int(a[a.index("--threads") + 1]) if "--threads" in a else 1
    steps = int(a[a.index("--steps") + 1]) if "--steps" in a else 20
    device = a[a.index("--device") + 1] if "--device" in a else "cpu"
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, T, E, V, H = 32, 50, 32, 256, 256
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B, T))
    if device != "cpu" and not torch.cuda.is_available():
        print("PyTorch sees no GPU")
        return
    x, y = x.to(device), y.to(device)
    print("# torch %s, %d threads, %s" % (torch.__version__, torch.get_num_threads(), device))
    emb = torch.nn.Embedding(V, E)
    rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(E, H, batch_first=True)
    out = torch.nn.Linear(H, V)
    emb, rnn, out = emb.to(device), rnn.to(device), out.to(device)
    params = list(emb.parameters()) + list(rnn.parameters()) + list(out.parameters())
    opt = torch.optim.Adam(params, lr=0.001)
    times = []
    for i in range(steps + 3):
        t0 = time.perf_counter()
        opt.zero_grad()
        hs, _ = rnn(emb(x))
        loss = torch.nn.functional.cross_entropy(out(hs).reshape(-1, V), y.reshape(-1))
        loss.backward()
        opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    times.sort()
    print("nn %.4f" % (times[len(times) // 2] * 1e3))


main()
