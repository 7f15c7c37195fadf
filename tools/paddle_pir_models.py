#!/usr/bin/env python3
"""paddle_pir_models.py -- regenerate the PIR (PaddlePaddle 3 JSON) test models of
tests/interop/pir/.

Run with a Python that has paddlepaddle 3.3 installed, e.g.
    /work/venv-paddle/bin/python tools/paddle_pir_models.py [OUTDIR [NAME...]]
(OUTDIR defaults to tests/interop/pir). Each model NAME gets a folder OUTDIR/NAME holding what
PaddlePaddle 3's default (PIR) mode saves with save_inference_model: model.json +
model.pdiparams, the inputs in_<feed name>.npy, and PaddlePaddle's outputs out_<fetch name>.npy
(one per fetch target, in order, as fetch_names.txt lists them: fetch_name_0, ...). The seeds
are fixed, so the files change only with PaddlePaddle.
"""
import os
import sys

import numpy as np
import paddle

paddle.enable_static()


def mlp():
    x = paddle.static.data("x", [None, 4], "float32")
    h = paddle.nn.functional.relu(paddle.static.nn.fc(x, 8))
    y = paddle.nn.functional.softmax(paddle.static.nn.fc(h, 3))
    return [x], [y], [np.random.rand(2, 4).astype("float32")]


def lenet():
    x = paddle.static.data("img", [None, 1, 12, 12], "float32")
    c = paddle.nn.functional.relu(paddle.nn.Conv2D(1, 4, 3)(x))
    p = paddle.nn.functional.max_pool2d(c, 2, 2)
    c = paddle.nn.functional.relu(paddle.nn.Conv2D(4, 6, 3, padding=1)(p))
    p = paddle.nn.functional.avg_pool2d(c, 2, 2)
    f = paddle.flatten(p, 1)
    y = paddle.nn.functional.softmax(paddle.static.nn.fc(f, 5))
    return [x], [y], [np.random.rand(2, 1, 12, 12).astype("float32")]


def cnn_bn():
    x = paddle.static.data("img", [None, 3, 8, 8], "float32")
    c = paddle.nn.Conv2D(3, 4, 3, padding=1)(x)
    bn = paddle.nn.BatchNorm2D(4)
    bn.eval()
    b = paddle.nn.functional.relu(bn(c))
    d = paddle.nn.functional.dropout(b, 0.3, training=False)
    r = paddle.reshape(d, [-1, 4, 64])
    t = paddle.transpose(r, [0, 2, 1])
    f = paddle.flatten(t, 1)
    y = paddle.scale(paddle.static.nn.fc(f, 3), 2.0, 1.0)
    return [x], [y], [np.random.rand(2, 3, 8, 8).astype("float32")]


def cond(threshold):
    def make():
        x = paddle.static.data("x", [None, 4], "float32")
        s = paddle.sum(x)
        y = paddle.static.nn.cond(s > paddle.full([], threshold), lambda: x * 2.0,
                                  lambda: paddle.nn.functional.relu(x - 1.0))
        return [x], [y], [np.random.rand(2, 4).astype("float32")]
    return make


def while_loop():
    x = paddle.static.data("x", [2, 4], "float32")
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], 3, "int64")
    _, y, z = paddle.static.nn.while_loop(
        lambda i, x, z: i < n, lambda i, x, z: [i + 1, x * 2.0 + 1.0, x - z], [i, x, x * 0.5])
    return [x], [y, z], [np.random.rand(2, 4).astype("float32")]


def transformer():
    x = paddle.static.data("x", [None, 5, 8], "float32")
    layer = paddle.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1)
    layer.eval()
    return [x], [layer(x)], [np.random.rand(2, 5, 8).astype("float32")]


def lstm():
    x = paddle.static.data("x", [None, 5, 4], "float32")
    y, (h, _) = paddle.nn.LSTM(4, 6)(x)
    return [x], [y, h], [np.random.rand(2, 5, 4).astype("float32")]


def gru_bidi():
    x = paddle.static.data("x", [None, 5, 4], "float32")
    y, _ = paddle.nn.GRU(4, 6, direction="bidirect")(x)
    return [x], [y], [np.random.rand(2, 5, 4).astype("float32")]


def lstm2_bidi_lengths():
    """Two layers, both directions, each sequence's length given (padded steps past it)."""
    x = paddle.static.data("x", [None, 5, 4], "float32")
    lens = paddle.static.data("lens", [None], "int64")
    y, (h, c) = paddle.nn.LSTM(4, 6, num_layers=2, direction="bidirect")(x, sequence_length=lens)
    xv = np.random.rand(3, 5, 4).astype("float32")
    lv = np.array([5, 2, 4], "int64")
    for i, n in enumerate(lv):
        xv[i, n:] = 0
    return [x, lens], [y, h, c], [xv, lv]


def gru2_lengths():
    x = paddle.static.data("x", [None, 5, 4], "float32")
    lens = paddle.static.data("lens", [None], "int64")
    y, h = paddle.nn.GRU(4, 6, num_layers=2)(x, sequence_length=lens)
    xv = np.random.rand(3, 5, 4).astype("float32")
    lv = np.array([3, 5, 1], "int64")
    for i, n in enumerate(lv):
        xv[i, n:] = 0
    return [x, lens], [y, h], [xv, lv]


class JitNet(paddle.nn.Layer):
    """Saved by paddle.jit.save (dygraph to static), not save_inference_model."""

    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(3, 4, 3)
        self.bn = paddle.nn.BatchNorm2D(4)
        self.fc = paddle.nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        y = paddle.nn.functional.relu(self.bn(self.conv(x)))
        return paddle.nn.functional.softmax(self.fc(paddle.flatten(y, 1)))


def save_jit(d):
    paddle.disable_static()
    paddle.seed(1)
    np.random.seed(1)
    net = JitNet()
    net.eval()
    x = np.random.rand(2, 3, 8, 8).astype("float32")
    out = net(paddle.to_tensor(x)).numpy()
    spec = [paddle.static.InputSpec([None, 3, 8, 8], "float32", "x")]
    paddle.jit.save(net, os.path.join(d, "model"), input_spec=spec)
    paddle.enable_static()
    np.save(os.path.join(d, "in_x.npy"), x)
    with open(os.path.join(d, "fetch_names.txt"), "w") as f:
        f.write("fetch_name_0\n")
    np.save(os.path.join(d, "out_fetch_name_0.npy"), out)


def misc():
    ids = paddle.static.data("ids", [None, 6], "int64")
    e = paddle.nn.Embedding(20, 8)(ids)
    a = paddle.nn.functional.leaky_relu(paddle.mean(e, axis=1), 0.1)
    s = paddle.squeeze(paddle.unsqueeze(a, [1]), [1])
    c = paddle.concat([paddle.tanh(s), paddle.nn.functional.sigmoid(s)], axis=1)
    y = paddle.cast(paddle.cast(paddle.nn.functional.gelu(c), "float64"), "float32")
    return [ids], [y], [np.random.randint(0, 20, (2, 6)).astype("int64")]


MODELS = {"mlp": mlp, "lenet": lenet, "cnn_bn": cnn_bn, "cond": cond(2.0),
          "cond_false": cond(100.0), "while_loop": while_loop,
          "transformer": transformer, "lstm": lstm, "gru_bidi": gru_bidi,
          "lstm2_bidi_lengths": lstm2_bidi_lengths, "gru2_lengths": gru2_lengths,
          "misc": misc}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/interop/pir"
    names = sys.argv[2:] or list(MODELS) + ["jit_cnn"]
    for name in names:
        if name == "jit_cnn":
            save_jit(os.path.join(outdir, name))
            continue
        paddle.seed(1)
        np.random.seed(1)
        main_p, start = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_p, start):
            feeds, fetches, inputs = MODELS[name]()
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(start)
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        paddle.static.save_inference_model(os.path.join(d, "model"), feeds, fetches, exe,
                                           program=main_p)
        outs = exe.run(main_p, feed={f.name: v for f, v in zip(feeds, inputs)},
                       fetch_list=fetches)
        for f, v in zip(feeds, inputs):
            np.save(os.path.join(d, "in_%s.npy" % f.name), v)
        # PIR names the fetch targets fetch_name_0, fetch_name_1, ... (the fetch ops' "name")
        names = ["fetch_name_%d" % i for i in range(len(outs))]
        with open(os.path.join(d, "fetch_names.txt"), "w") as f:
            f.write("".join(n + "\n" for n in names))
        for n, v in zip(names, outs):
            np.save(os.path.join(d, "out_%s.npy" % n), np.asarray(v))


if __name__ == "__main__":
    main()
