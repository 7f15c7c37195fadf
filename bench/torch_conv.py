"""torch_conv.py -- conv2d forward time in PyTorch on the shapes bench/bench_exec measures, for
its ratio column. Prints "N C H OC K PAD MS" lines (milliseconds per call, best of the repeats),
or "PyTorch not installed". Usage: torch_conv.py --threads T [--seconds S] N,C,H,OC,K,PAD ..."""
import sys
import time


def main():
    args = sys.argv[1:]
    threads, seconds, shapes = 1, 0.5, []
    i = 0
    while i < len(args):
        if args[i] == "--threads":
            threads = int(args[i + 1])
            i += 2
        elif args[i] == "--seconds":
            seconds = float(args[i + 1])
            i += 2
        else:
            shapes.append([int(v) for v in args[i].split(",")])
            i += 1
    try:
        import torch
    except ImportError:
        print("PyTorch not installed")
        return
    torch.set_num_threads(threads)
    print("# torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
    with torch.no_grad():
        for n, c, h, oc, k, pad in shapes:
            x = torch.randn(n, c, h, h)
            w = torch.randn(oc, c, k, k)
            torch.nn.functional.conv2d(x, w, padding=pad)  # warm-up
            best = float("inf")
            t_end = time.perf_counter() + seconds
            while time.perf_counter() < t_end:
                t0 = time.perf_counter()
                torch.nn.functional.conv2d(x, w, padding=pad)
                best = min(best, time.perf_counter() - t0)
            print("%d %d %d %d %d %d %.6f" % (n, c, h, oc, k, pad, best * 1e3))


main()
