"""torch_rnn.py -- one training step of an Elman RNN (embedding 32, tanh cell of `hidden`, a
linear layer to 256 classes, softmax cross entropy, Adam) on 32 sequences of 50 characters, in
PyTorch: the cell written as a Python loop, and torch.nn.RNN. Prints "loop MS" and "nnrnn MS"
(milliseconds per step, median of the repeats), or "PyTorch not installed".
Usage: torch_rnn.py --hidden H --threads T [--steps N]"""
import sys
import time


def main():
    a = sys.argv[1:]
    hidden = int(a[a.index("--hidden") + 1]) if "--hidden" in a else 32
    threads = int(a[a.index("--threads") + 1]) if "--threads" in a else 1
    steps = int(a[a.index("--steps") + 1]) if "--steps" in a else 30
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    B, T, E, V = 32, 50, 32, 256
    x = torch.randint(0, V, (B, T))
    y = torch.randint(0, V, (B, T))
    print("# torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))

    def run(step_fn, params):
        opt = torch.optim.Adam(params, lr=0.001)
        times = []
        for i in range(steps + 3):
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = step_fn()
            loss.backward()
            opt.step()
            if i >= 3:
                times.append(time.perf_counter() - t0)
        times.sort()
        return times[len(times) // 2] * 1e3

    emb = torch.nn.Embedding(V, E)
    wx = torch.nn.Linear(E, hidden)
    wh = torch.nn.Linear(hidden, hidden, bias=False)
    out = torch.nn.Linear(hidden, V)

    def loop_step():
        e = emb(x)
        h = torch.zeros(B, hidden)
        hs = []
        for t in range(T):
            h = torch.tanh(wx(e[:, t]) + wh(h))
            hs.append(h)
        logits = out(torch.stack(hs, 1))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))

    params = list(emb.parameters()) + list(wx.parameters()) + list(wh.parameters()) + \
        list(out.parameters())
    print("loop %.4f" % run(loop_step, params))
    rnn = torch.nn.RNN(E, hidden, batch_first=True)

    def nn_step():
        hs, _ = rnn(emb(x))
        logits = out(hs)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))

    params = list(emb.parameters()) + list(rnn.parameters()) + list(out.parameters())
    print("nnrnn %.4f" % run(nn_step, params))


main()
