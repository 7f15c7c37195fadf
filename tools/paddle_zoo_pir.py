#!/usr/bin/env python3
"""paddle_zoo_pir.py -- the model families of tools/paddle_zoo.py as PaddlePaddle 3.3 exports
them in its default mode: a PIR program in JSON (paddle.jit.to_static + paddle.jit.save without
FLAGS_enable_pir_api=0), for tests/interop/zoo_pir/. The same architectures, inputs and
parameter recipe (weights.txt: see tools/paddle_zoo.py) as the legacy exports; Paddle's outputs
are computed by its PIR executor from the loaded JSON with the recipe's parameters set.

    /opt/pdvenv/bin/python tools/paddle_zoo_pir.py [--list] [OUTDIR [NAME...]]

OUTDIR defaults to tests/interop/zoo_pir; NAME defaults to every family PIR mode exports (the
detection families' exports fail in Paddle 3.3's PIR mode: to_static refuses their
post-processing). Each NAME gets OUTDIR/NAME holding inference.json, weights.txt,
fetch_names.txt, out_FETCH.npy and source.txt; the inputs are the legacy export's
(tests/interop/zoo/NAME/in_FEED.npy: the tool checks that they are the same).
"""
import os
import sys

os.environ["FLAGS_enable_pir_api"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.static.pir_io import get_pir_parameters  # noqa: E402

import paddle_zoo as zoo  # noqa: E402

FAMILIES = ["mobilenet_v1", "mobilenet_v2", "mobilenet_v3", "pp_lcnet", "resnet50_vd",
            "pp_hgnet", "pp_liteseg", "unet", "ernie3_tiny", "db_det", "crnn_rec", "ppocrv3_rec",
            "ppocrv4_rec", "svtr_rec", "text_cls"]


def export(name, outdir):
    build, source = zoo.FAMILIES[name]
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    paddle.disable_static()
    paddle.seed(1)
    model, (spec, feeds) = build()
    model.eval()
    static = paddle.jit.to_static(model, input_spec=spec, full_graph=True)
    prefix = os.path.join(d, "inference")
    paddle.jit.save(static, prefix)
    for ext in (".pdiparams.info",):
        if os.path.exists(prefix + ext):
            os.remove(prefix + ext)
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
        params, _ = get_pir_parameters(prog)
        lines = []
        for v in sorted(params, key=lambda v: v.name):
            shape = [int(s) for s in v.shape]
            scale, offset = zoo.recipe(v.name, shape)
            scope.find_var(v.name).get_tensor().set(zoo.weights(v.name, shape, scale, offset),
                                                    paddle.CPUPlace())
            lines.append("%s %.9g %.9g\n" % (v.name, scale, offset))
        outs = exe.run(prog, feed={n: feeds[n] for n in feed_names}, fetch_list=fetch_targets,
                       return_numpy=False)
        outs = [np.array(o) for o in outs]
        fetch_names = [op.attrs()["name"] for op in prog.global_block().ops
                       if op.name() == "pd_op.fetch"]
    os.remove(prefix + ".pdiparams")
    with open(os.path.join(d, "weights.txt"), "w") as f:
        f.writelines(lines)
    legacy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "interop",
                          "zoo", name)
    for n in feed_names:
        if not np.array_equal(np.load(os.path.join(legacy, "in_%s.npy" % n)), feeds[n]):
            sys.exit("%s: input %s is not the legacy export's in %s" % (name, n, legacy))
    with open(os.path.join(d, "fetch_names.txt"), "w") as f:
        for t, v in zip(fetch_names, outs):
            np.save(os.path.join(d, "out_%s.npy" % t), v)
            f.write(t + "\n")
    with open(os.path.join(d, "source.txt"), "w") as f:
        f.write("%s; PaddlePaddle %s, default (PIR) mode; exported by tools/paddle_zoo_pir.py\n"
                % (source, paddle.__version__))
    print("%-14s %d params, outputs %s" % (name, len(lines), [list(o.shape) for o in outs]))


def main(argv):
    if argv[:1] == ["--list"]:
        print("\n".join(FAMILIES))
        return
    outdir = argv[0] if argv else os.path.join(os.path.dirname(__file__), "..", "tests",
                                               "interop", "zoo_pir")
    for n in argv[1:] or FAMILIES:
        export(n, outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
