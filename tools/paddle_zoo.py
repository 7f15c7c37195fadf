#!/usr/bin/env python3
"""paddle_zoo.py -- regenerate the model-family tests of tests/interop/zoo/.

The field's architectures (PaddleClas, PaddleSeg, PaddleDetection, PaddleNLP, PaddleOCR) built
from the packages that hold them, exported the way their tools export (paddle.jit.to_static +
paddle.jit.save) by PaddlePaddle 3.3 in legacy ProgramDesc mode (FLAGS_enable_pir_api=0), and run
by Paddle to give the reference outputs. Run with a Python that has paddlepaddle and the model
packages installed, outside the source tree:

    python3 -m venv /opt/pdvenv && /opt/pdvenv/bin/pip install paddlepaddle==3.3.1 \\
        scikit-learn opencv-python-headless pyyaml six colorlog scipy tqdm shapely pyclipper
    /opt/pdvenv/bin/pip install --no-deps paddleclas paddleseg paddledet paddlenlp
    /opt/pdvenv/bin/python tools/paddle_zoo.py [--list] [OUTDIR [NAME...]]

OUTDIR defaults to tests/interop/zoo. Each model NAME gets OUTDIR/NAME holding:
  inference.pdmodel   the program exactly as Paddle saved it;
  weights.txt         how to make its parameters (below), one line "NAME SCALE OFFSET" each;
  in_FEED.npy         the inputs;  fetch_names.txt, out_FETCH.npy: Paddle's outputs;
  source.txt          where the architecture comes from (package, version, class, arguments).
The parameters are not stored: the full-width architectures would take hundreds of MB. They are
made from weights.txt by a generator both sides implement (tests/interop/test_interop.c
writes inference.pdiparams from it): element i of parameter P is
    OFFSET + SCALE * (2 u - 1),  u = (splitmix64(fnv1a64(P) + i) >> 40) / 2^24
computed in double and rounded to float32. Paddle's outputs are computed with those values (set
into the loaded program's scope), so the test needs nothing else. SCALE keeps activations of
order one (1/sqrt(fan-in) for weights); a batch norm's variance is drawn from [0.5, 1.5].
"""
import json
import os
import sys

os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.base.framework import Variable  # noqa: E402

SITE = os.path.dirname(os.path.dirname(paddle.__file__))
MASK = (1 << 64) - 1


# ---------------------------------------------------------------- the weight generator

def fnv1a64(s):
    h = 0xCBF29CE484222325
    for c in s.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK
    return h


def splitmix64(x):
    """splitmix64's output function over an array of uint64 states."""
    z = (x + np.uint64(0x9E3779B97F4A7C15))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def weights(name, shape, scale, offset):
    n = int(np.prod(shape, dtype=np.int64))
    with np.errstate(over="ignore"):
        z = splitmix64(np.uint64(fnv1a64(name)) + np.arange(n, dtype=np.uint64))
    u = (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return (np.float64(offset) + np.float64(scale) * (2.0 * u - 1.0)).astype(np.float32).reshape(
        shape)


def recipe(name, shape):
    """(scale, offset) of a parameter, from its name and shape."""
    if len(shape) <= 1:
        if name.endswith(".w_2") or name.endswith("_variance") or name.endswith(".var"):
            return 0.5, 1.0  # a batch norm's running variance
        if name.endswith(".w_0") or name.endswith("_scale"):
            return 0.25, 1.0  # a norm's scale
        return 0.2, 0.0
    fan_in = shape[0] if len(shape) == 2 else int(np.prod(shape[1:]))
    return float(np.float32(np.sqrt(3.0 / max(fan_in, 1)))), 0.0


# ---------------------------------------------------------------- legacy-mode patches

def _legacy_binary(op_type, reverse=False):
    """x OP y appended as the Fluid op op_type (Paddle 3.3's own functions refuse a legacy
    Variable: "must be Value, but got Variable")."""
    def f(x, y, name=None):
        if not isinstance(x, Variable) and not isinstance(y, Variable):
            return NotImplemented
        block = paddle.static.default_main_program().current_block()
        ref = x if isinstance(x, Variable) else y
        if not isinstance(y, Variable):
            y = paddle.full([1], float(y), dtype=ref.dtype)
        if not isinstance(x, Variable):
            x = paddle.full([1], float(x), dtype=ref.dtype)
        if reverse:
            x, y = y, x
        out = block.create_var(name=paddle.utils.unique_name.generate(op_type), dtype=ref.dtype)
        block.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                        attrs={"axis": -1})
        return out
    return f


def _legacy_unary(op_type):
    def f(x, name=None):
        block = paddle.static.default_main_program().current_block()
        out = block.create_var(name=paddle.utils.unique_name.generate(op_type), dtype=x.dtype)
        block.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]})
        return out
    return f


def patch_legacy():
    for op, fn in (("elementwise_mul", "multiply"), ("elementwise_add", "add"),
                   ("elementwise_sub", "subtract"), ("elementwise_div", "divide")):
        setattr(paddle, fn, _legacy_binary(op))
        setattr(paddle.tensor, fn, getattr(paddle, fn))
    for dunder, op in (("mul", "elementwise_mul"), ("add", "elementwise_add"),
                       ("sub", "elementwise_sub"), ("truediv", "elementwise_div")):
        setattr(Variable, "__%s__" % dunder, _legacy_binary(op))
        setattr(Variable, "__r%s__" % dunder, _legacy_binary(op, reverse=True))
    for fn in ("sigmoid", "tanh", "relu", "exp"):
        setattr(paddle, fn, _legacy_unary(fn))
        setattr(paddle.nn.functional, fn, getattr(paddle, fn))


# ---------------------------------------------------------------- the families

def _ppcls():
    sys.path.insert(0, os.path.join(SITE, "paddleclas"))
    from ppcls.utils import logger
    logger.init_logger()
    import ppcls.arch.backbone as bb
    return bb


def image(c=3, h=64, w=64):
    return [paddle.static.InputSpec([None, c, h, w], "float32", "x")], {
        "x": np.random.RandomState(7).uniform(-1, 1, (2, c, h, w)).astype("float32")}


def cls(arch, **kw):
    def make():
        bb = _ppcls()
        m = getattr(bb, arch)(class_num=10, **kw)
        return m, image()
    return make


FAMILIES = {
    # name: (builder, where the architecture comes from)
    "mobilenet_v1": (cls("MobileNetV1"), "paddleclas ppcls MobileNetV1"),
    "mobilenet_v2": (cls("MobileNetV2"), "paddleclas ppcls MobileNetV2"),
    "mobilenet_v3": (cls("MobileNetV3_large_x1_0"), "paddleclas ppcls MobileNetV3_large_x1_0"),
    "pp_lcnet": (cls("PPLCNet_x1_0"), "paddleclas ppcls PPLCNet_x1_0"),
    "resnet50_vd": (cls("ResNet50_vd"), "paddleclas ppcls ResNet50_vd"),
    "pp_hgnet": (cls("PPHGNet_tiny"), "paddleclas ppcls PPHGNet_tiny"),
}


# ---------------------------------------------------------------- export and reference

def export(name, outdir):
    build, source = FAMILIES[name]
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
    os.remove(prefix + ".pdiparams.info")
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
        lines = []
        for v in sorted(prog.list_vars(), key=lambda v: v.name):
            if not v.persistable or v.name in ("feed", "fetch"):
                continue
            shape = [int(s) for s in v.shape]
            scale, offset = recipe(v.name, shape)
            scope.find_var(v.name).get_tensor().set(weights(v.name, shape, scale, offset),
                                                    paddle.CPUPlace())
            lines.append("%s %.9g %.9g\n" % (v.name, scale, offset))
        outs = exe.run(prog, feed={n: feeds[n] for n in feed_names}, fetch_list=fetch_targets)
    os.remove(prefix + ".pdiparams")
    with open(os.path.join(d, "weights.txt"), "w") as f:
        f.writelines(lines)
    for n in feed_names:
        np.save(os.path.join(d, "in_%s.npy" % n), feeds[n])
    with open(os.path.join(d, "fetch_names.txt"), "w") as f:
        for t, v in zip(fetch_targets, outs):
            np.save(os.path.join(d, "out_%s.npy" % t.name.replace("/", "_")), np.asarray(v))
            f.write(t.name + "\n")
    with open(os.path.join(d, "source.txt"), "w") as f:
        f.write("%s; PaddlePaddle %s; exported by tools/paddle_zoo.py\n" % (source,
                                                                            paddle.__version__))
    ops = sorted({op.type for b in prog.blocks for op in b.ops} - {"feed", "fetch"})
    print("%-14s %d params, outputs %s, ops %s" % (name, len(lines), json.dumps(
        [list(np.asarray(o).shape) for o in outs]), " ".join(ops)))


def main(argv):
    if argv[:1] == ["--list"]:
        print("\n".join(FAMILIES))
        return
    outdir = argv[0] if argv else os.path.join(os.path.dirname(__file__), "..", "tests",
                                               "interop", "zoo")
    names = argv[1:] or list(FAMILIES)
    patch_legacy()
    for n in names:
        export(n, outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
