#!/usr/bin/env python3
"""paddle_run.py -- the PaddlePaddle side of tests/interop/roundtrip.sh: load a model pdlang
saved with paddle.static.load_inference_model: PREFIX.pdmodel + PREFIX.pdiparams in legacy
ProgramDesc mode (FLAGS_enable_pir_api=0), or, with --pir, PREFIX.json + PREFIX.pdiparams in
PaddlePaddle 3's default mode (no flag); feed it inputs made from its feed vars' shapes
(-1 dims become 3; floats uniform in [-1, 1), integers in [0, 20); the lengths NAME_lengths
of a sequence input NAME, padded [N, T = 5, ...], in [1, T], with NAME's rows past each length
zero), and write them and
PaddlePaddle's outputs to OUTDIR as in_NAME.npy and out_NAME.npy, and the feed and fetch names
to OUTDIR/feeds.txt and OUTDIR/fetches.txt.

    PYTHON tests/interop/paddle_run.py [--pir] PREFIX OUTDIR
"""
import os
import sys

PIR = "--pir" in sys.argv[1:]
if not PIR:
    os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402


def fetch_names(prog):
    """The names of a PIR program's pd_op.fetch ops, in order."""
    return [op.attrs()["name"] for op in prog.global_block().ops if op.name() == "pd_op.fetch"]


def main():
    prefix, outdir = [a for a in sys.argv[1:] if a != "--pir"][:2]
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    prog, feeds, fetches = paddle.static.load_inference_model(prefix, exe)
    rng = np.random.RandomState(24)
    block = prog.global_block()
    if PIR:  # the inputs' shapes and dtypes are their pd_op.data ops'
        data = {op.attrs()["name"]: op.result(0) for op in block.ops
                if op.name() == "pd_op.data"}
    feed = {}
    for name in feeds:
        v = data[name] if PIR else block.var(name)
        vshape = list(v.shape)
        shape = [3 if d < 0 else d for d in vshape]
        if name + "_lengths" in feeds and vshape[1] < 0:
            shape[1] = 5  # the padded time steps of a sequence input
        dtype = paddle.framework.dtype_to_str(v.dtype) if hasattr(
            paddle.framework, "dtype_to_str") else str(v.dtype).split(".")[-1]
        if "int" in dtype:
            feed[name] = rng.randint(0, 20, shape).astype(dtype)
        else:
            feed[name] = rng.uniform(-1, 1, shape).astype(dtype)
    for name in feeds:
        seq = name[:-len("_lengths")] if name.endswith("_lengths") else None
        if seq in feed and "int" in str(feed[name].dtype):
            x = feed[seq]
            n, t = x.shape[0], x.shape[1]
            lens = rng.randint(1, t + 1, n).astype(feed[name].dtype)
            lens[0] = t  # one sequence of the whole padded length
            for i in range(n):
                x[i, lens[i]:] = 0
            feed[name] = lens
    for name in feeds:
        np.save(os.path.join(outdir, "in_%s.npy" % name), feed[name])
    outs = exe.run(prog, feed=feed, fetch_list=fetches)
    names = fetch_names(prog) if PIR else [t.name for t in fetches]
    for t, o in zip(names, outs):
        np.save(os.path.join(outdir, "out_%s.npy" % t), np.asarray(o))
    with open(os.path.join(outdir, "feeds.txt"), "w") as f:
        f.write("".join(n + "\n" for n in feeds))
    with open(os.path.join(outdir, "fetches.txt"), "w") as f:
        f.write("".join(t + "\n" for t in names))


if __name__ == "__main__":
    main()
