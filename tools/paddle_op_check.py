#!/usr/bin/env python3
"""paddle_op_check.py -- run single ops in PaddlePaddle and in pdlang and compare the outputs.

    /work/venv-paddle/bin/python tools/paddle_op_check.py PDLANG [WORKDIR]

For each case below, a one-op program is written with Paddle's legacy static API
(FLAGS_enable_pir_api=0), saved with save_inference_model and run by Paddle on random inputs;
`PDLANG exec` runs the saved model on the same inputs, and every output is compared: floats bit
for bit (the differences are printed when they are not equal), integers exactly. The cases are
the ops of issue 38's PaddleOCR and model-zoo work whose kernels reproduce Paddle 3.3.1's CPU
arithmetic: bicubic_interp_v2, linear_interp_v2, bilinear_interp_v2, nearest_interp_v2,
grid_sampler, top_k_v2, arg_min and one_hot_v2. Exit status 1 when any case differs.
"""
import os
import subprocess
import sys
import tempfile

os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402

paddle.enable_static()
RS = np.random.RandomState(3)


def one_op(op_type, inputs, attrs, outputs):
    """A builder of the program: op_type reading the feeds named in inputs (slot -> names),
    writing outputs (slot -> dtype)."""
    def build(block, feeds):
        outs = {}
        for slot, dtype in outputs.items():
            outs[slot] = [block.create_var(name="%s_%s" % (op_type, slot.lower()), dtype=dtype)]
        block.append_op(type=op_type, outputs=outs, attrs=attrs,
                        inputs={s: [feeds[n] for n in names] for s, names in inputs.items()})
        return [v[0] for v in outs.values()]
    return build


def cases():
    x4 = RS.uniform(-1, 1, (2, 3, 5, 7)).astype("float32")
    x3 = RS.uniform(-1, 1, (2, 3, 9)).astype("float32")
    f32 = {"Out": "float32"}
    for ac in (True, False):
        for am in (0, 1):
            for method in ("bicubic", "bilinear"):
                yield ("%s ac=%d am=%d" % (method, ac, am),
                       one_op(method + "_interp_v2", {"X": ["x"]},
                              dict(interp_method=method, out_h=11, out_w=6, align_corners=ac,
                                   align_mode=am), f32), {"x": x4})
            yield ("linear ac=%d am=%d" % (ac, am),
                   one_op("linear_interp_v2", {"X": ["x"]},
                          dict(interp_method="linear", out_w=17, align_corners=ac, align_mode=am),
                          f32), {"x": x3})
    yield ("bicubic scale NHWC",
           one_op("bicubic_interp_v2", {"X": ["x"]},
                  dict(interp_method="bicubic", scale=[1.7, 0.6], align_corners=False,
                       data_layout="NHWC"), f32),
           {"x": RS.uniform(-1, 1, (2, 6, 8, 3)).astype("float32")})
    yield ("bicubic float64",
           one_op("bicubic_interp_v2", {"X": ["x"]},
                  dict(interp_method="bicubic", out_h=9, out_w=13, align_corners=False),
                  {"Out": "float64"}), {"x": RS.uniform(-1, 1, (1, 2, 5, 7))})
    yield ("linear scale NWC",
           one_op("linear_interp_v2", {"X": ["x"]},
                  dict(interp_method="linear", scale=[2.3], align_corners=False, align_mode=0,
                       data_layout="NHWC"), f32),
           {"x": RS.uniform(-1, 1, (2, 7, 3)).astype("float32")})
    yield ("nearest", one_op("nearest_interp_v2", {"X": ["x"]},
                             dict(interp_method="nearest", out_h=9, out_w=4, align_corners=False),
                             f32), {"x": x4})
    x = RS.uniform(-1, 1, (2, 3, 6, 7)).astype("float32")
    g = RS.uniform(-1.5, 1.5, (2, 4, 5, 2)).astype("float32")
    for mode in ("bilinear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (True, False):
                yield ("grid_sampler %s %s ac=%d" % (mode, pad, ac),
                       one_op("grid_sampler", {"X": ["x"], "Grid": ["g"]},
                              dict(mode=mode, padding_mode=pad, align_corners=ac),
                              {"Output": "float32"}), {"x": x, "g": g})
    yield ("grid_sampler float64",
           one_op("grid_sampler", {"X": ["x"], "Grid": ["g"]},
                  dict(mode="bilinear", padding_mode="reflection", align_corners=False),
                  {"Output": "float64"}), {"x": x.astype("f8"), "g": g.astype("f8")})
    xt = RS.permutation(60).reshape(3, 4, 5).astype("float32") / 7 - 3
    topk = {"Out": "float32", "Indices": "int64"}
    for k, axis, largest in ((2, 1, True), (2, 0, False), (3, -1, True)):
        yield ("top_k_v2 k=%d axis=%d largest=%d" % (k, axis, largest),
               one_op("top_k_v2", {"X": ["x"]},
                      dict(k=k, axis=axis, largest=largest, sorted=True), topk), {"x": xt})
    yield ("arg_min axis 1", one_op("arg_min", {"X": ["x"]},
                                    dict(axis=1, keepdims=False, flatten=False, dtype=3),
                                    {"Out": "int64"}), {"x": xt})
    yield ("one_hot_v2", one_op("one_hot_v2", {"X": ["x"]},
                                dict(depth=6, dtype=5, allow_out_of_range=False), f32),
           {"x": RS.randint(0, 6, (3, 4)).astype("int64")})


def check(pdlang, work, name, build, feeds):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        data = {k: paddle.static.data(k, v.shape, str(v.dtype)) for k, v in feeds.items()}
        outs = build(main.global_block(), data)
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    d = tempfile.mkdtemp(dir=work)
    prefix = os.path.join(d, "m")
    paddle.static.save_inference_model(prefix, list(data.values()), outs, exe, program=main)
    prog, feed_names, fetch = paddle.static.load_inference_model(prefix, exe)
    want = exe.run(prog, feed=feeds, fetch_list=fetch)
    cmd = [pdlang, "exec", prefix, "--out", os.path.join(d, "out")]
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
        cmd += ["--feed", "%s=%s" % (k, os.path.join(d, k + ".npy"))]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode:
        print("FAIL %s: pdlang exec: %s" % (name, run.stderr.strip()))
        return False
    good = True
    for t, w in zip(fetch, want):
        got = np.load(os.path.join(d, "out", t.name + ".npy"))
        if got.dtype != w.dtype or got.size != w.size:
            print("FAIL %s %s: %s %s, Paddle %s %s" % (name, t.name, got.dtype, got.shape,
                                                       w.dtype, w.shape))
            good = False
        elif not np.array_equal(got.reshape(w.shape), w):
            print("FAIL %s %s: max difference %g" % (name, t.name,
                                                     np.abs(got.reshape(w.shape) - w).max()))
            good = False
    if good:
        print("ok   %s" % name)
    return good


def main(argv):
    if not argv:
        sys.exit(__doc__)
    work = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="pd-opcheck.")
    os.makedirs(work, exist_ok=True)
    results = [check(argv[0], work, *c) for c in cases()]
    print("%d of %d cases agree bit for bit" % (sum(results), len(results)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
