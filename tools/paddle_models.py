#!/usr/bin/env python3
"""paddle_models.py -- regenerate the PaddlePaddle test models of tests/interop/.

Run with a Python that has paddlepaddle installed (outside the source tree), e.g.
    /tmp/paddlevenv/bin/python tools/paddle_models.py [OUTDIR [NAME...]]
(OUTDIR defaults to tests/interop; NAMEs pick some of the models).

Each model NAME gets a folder OUTDIR/NAME holding what PaddlePaddle's legacy (ProgramDesc) mode
saves (FLAGS_enable_pir_api=0): model.pdmodel + model.pdiparams (save_inference_model), the
inputs in_<feed name>.npy (and lens_<feed name>.npy, the sequence lengths of an input with a
LoD) and PaddlePaddle's outputs out_<fetch name>.npy (one per fetch target,
in order, as the file fetch_names.txt lists them, a '/' in the name written '_'; mlp also has
x_float64.npy and x_float16.npy). The model `refused` carries attributes pdlang refuses, to test
its errors. Some models are also written in Fluid's older layouts: fluid_dir/ (__model__ and one
file per persistable var, named after it) and fluid_combined/ (__model__ + __params__). Those
files are made from the saved pair by following Fluid's formats (the program bytes unchanged;
the parameter file split into its LoDTensor streams, which save_inference_model writes in sorted
name order).

PaddlePaddle 3.x in legacy mode refuses some of its own Python functions on a legacy Variable
("must be Value, but got Variable"); where that happens the script appends the legacy op
directly (block.append_op). The seeds are fixed, so the values change only with PaddlePaddle.
Each op's op_callstack (the Python stack that built it: this machine's folders) is removed from
the saved programs (tools/paddle_strip.py).
fluid_lstmp is Fluid's lstmp op, which PaddlePaddle 3 no longer registers: its program is edited
into shape through framework.proto and its outputs computed in numpy (see fluid_lstmp below).
"""
import os
import shutil
import struct
import sys

os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import paddle  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddle_strip  # noqa: E402

paddle.enable_static()


def legacy_op(type_, inputs, out_dtype="float32", attrs=None, out_slot="Out", shape=None):
    """Append the Fluid op type_ directly; returns its output var."""
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate(type_ + ".out"),
                           dtype=out_dtype, shape=shape)
    block.append_op(type=type_, inputs=inputs, outputs={out_slot: [out]}, attrs=attrs or {})
    return out


# cond's Python code calls paddle.logical_not, which 3.x refuses on a legacy Variable.
paddle.logical_not = lambda x, out=None, name=None: legacy_op("logical_not", {"X": [x]}, "bool")



def _matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return legacy_op("matmul_v2", {"X": [x], "Y": [y]},
                     attrs={"trans_x": transpose_x, "trans_y": transpose_y})


# nn.MultiHeadAttention calls paddle.tensor.matmul, refused the same way.
paddle.matmul = sys.modules["paddle.tensor"].matmul = _matmul


def read_varint(b, pos):
    shift = v = 0
    while True:
        c = b[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, pos


DTYPE_SIZE = {0: 1, 1: 2, 2: 4, 3: 8, 4: 2, 5: 4, 6: 8, 20: 1, 21: 1, 22: 2}


def split_streams(data):
    """Fluid's LoDTensor streams of a combined parameter file, as a list of byte strings."""
    out, pos = [], 0
    while pos < len(data):
        start = pos
        pos += 4  # LoDTensor version
        (lod_levels,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        for _ in range(lod_levels):
            (n,) = struct.unpack_from("<Q", data, pos)
            pos += 8 + n
        pos += 4  # Tensor version
        (desc_len,) = struct.unpack_from("<i", data, pos)
        pos += 4
        desc, pos = data[pos:pos + desc_len], pos + desc_len
        dtype, dims, p = 0, [], 0
        while p < len(desc):
            key, p = read_varint(desc, p)
            if key == (1 << 3):
                dtype, p = read_varint(desc, p)
            elif key == (2 << 3):
                d, p = read_varint(desc, p)
                dims.append(d)
            elif key == (2 << 3) | 2:
                n, p = read_varint(desc, p)
                end = p + n
                while p < end:
                    d, p = read_varint(desc, p)
                    dims.append(d)
            else:
                raise ValueError("unexpected TensorDesc field %d" % key)
        pos += int(np.prod(dims, dtype=np.int64)) * DTYPE_SIZE[dtype]
        out.append(data[start:pos])
    return out


def save(name, outdir, feeds, fetches, inputs, fluid=False, exe=None):
    d = os.path.join(outdir, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    prefix = os.path.join(d, "model")
    paddle.static.save_inference_model(prefix, feeds, fetches, exe)
    paddle_strip.strip(prefix + ".pdmodel")  # op_callstack names this machine's folders
    prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
    # An input given as (values, lengths) is a batch of sequences (a LoDTensor of one level);
    # its lengths go to lens_NAME.npy.
    feed = {}
    for n, v in zip(feed_names, inputs):
        if isinstance(v, tuple):
            v, lens = v
            np.save(os.path.join(d, "lens_%s.npy" % n), np.asarray(lens, "int64"))
            feed[n] = paddle.base.create_lod_tensor(v, [list(lens)], paddle.CPUPlace())
        else:
            feed[n] = v
        np.save(os.path.join(d, "in_%s.npy" % n), v)
    # PaddlePaddle 3.3 drops gru's intermediate outputs from the saved program and then crashes
    # in its shape function: the gru models' outputs come from the program as built.
    if any(op.type == "gru" for op in prog.global_block().ops):
        outs = exe.run(paddle.static.default_main_program(), feed=feed, fetch_list=fetches,
                       return_numpy=False)
        outs = [np.array(o) for o in outs]
    else:
        outs = exe.run(prog, feed=feed, fetch_list=fetch_targets)
    with open(os.path.join(d, "fetch_names.txt"), "w") as f:
        for t, v in zip(fetch_targets, outs):
            np.save(os.path.join(d, "out_%s.npy" % t.name.replace("/", "_")), np.asarray(v))
            f.write(t.name + "\n")
    if name == "mlp":  # the input as float64 and float16, for `pdlang exec`'s cast and refusal
        np.save(os.path.join(d, "x_float64.npy"), inputs[0].astype("float64"))
        np.save(os.path.join(d, "x_float16.npy"), inputs[0].astype("float16"))
    if fluid:
        model = open(prefix + ".pdmodel", "rb").read()
        params = open(prefix + ".pdiparams", "rb").read() if os.path.exists(
            prefix + ".pdiparams") else b""
        names = sorted(v.name for v in prog.list_vars()
                       if v.persistable
                       and v.type == paddle.framework.core.VarDesc.VarType.LOD_TENSOR
                       and v.name not in ("feed", "fetch"))
        streams = split_streams(params)
        assert len(streams) == len(names), (len(streams), names)
        fd = os.path.join(d, "fluid_dir")
        fc = os.path.join(d, "fluid_combined")
        os.makedirs(fd)
        os.makedirs(fc)
        for sub in (fd, fc):
            open(os.path.join(sub, "__model__"), "wb").write(model)
        open(os.path.join(fc, "__params__"), "wb").write(params)
        for n, s in zip(names, streams):
            open(os.path.join(fd, n), "wb").write(s)
    print("%-14s feeds %s fetches %s ops %s" % (name, feed_names, [t.name for t in fetch_targets],
          sorted({op.type for b in prog.blocks for op in b.ops})))


def build(name, fn, outdir, fluid=False):
    main, startup = paddle.static.Program(), paddle.static.Program()
    paddle.seed(24)
    np.random.seed(24)
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        feeds, fetches, inputs = fn()
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        save(name, outdir, feeds, fetches, inputs, fluid, exe)


def rnd(*shape):
    return np.random.uniform(-1, 1, shape).astype("float32")


def mlp():
    x = paddle.static.data("x", [-1, 8], "float32")
    h = paddle.static.nn.fc(x, 16, activation="relu")
    w = paddle.static.create_parameter([16, 6], "float32", name="w_proj")
    m = legacy_op("matmul_v2", {"X": [h], "Y": [w]}, attrs={"trans_x": False, "trans_y": False})
    y = paddle.static.nn.fc(m, 4)
    return [x], [y], [rnd(3, 8)]


def mlp_old_attrs():
    """The MLP with the attributes other Fluid versions put on its ops, at values that keep the
    math (what pdlang drops on loading: vm/ops/compat.c)."""
    feeds, fetches, inputs = mlp()
    # PaddlePaddle 2.x's save_inference_model ended each output with scale(1.0) into a var
    # named like this one.
    block = paddle.static.default_main_program().global_block()
    out = block.create_var(name="save_infer_model/scale_0.tmp_0", dtype="float32")
    block.append_op(type="scale", inputs={"X": [fetches[0]]}, outputs={"Out": [out]},
                    attrs={"scale": 1.0, "bias": 0.0, "bias_after_scale": True})
    fetches = [out]
    for op in paddle.static.default_main_program().global_block().ops:
        op._set_attr("x_data_format", "")
        op._set_attr("y_data_format", "")
        op._set_attr("use_quantizer", False)
        op._set_attr("Scale_x", 1.0)
        op._set_attr("Scale_y", 1.0)
        op._set_attr("Scale_out", 1.0)
        op._set_attr("force_fp32_output", False)
        op._set_attr("mkldnn_data_type", "float32")
        op._set_attr("use_mkldnn", False)
        if op.type == "elementwise_add":
            op._set_attr("act", "")
    return feeds, fetches, inputs


def lenet():
    x = paddle.static.data("img", [-1, 1, 28, 28], "float32")
    c1 = paddle.static.nn.conv2d(x, 6, 5, padding=2, act="relu")
    p1 = paddle.nn.functional.max_pool2d(c1, 2, 2)
    c2 = paddle.static.nn.conv2d(p1, 16, 5, act="relu")
    p2 = paddle.nn.functional.avg_pool2d(c2, 2, 2)
    f1 = paddle.static.nn.fc(p2, 32, activation="relu")
    y = paddle.static.nn.fc(f1, 10, activation="softmax")
    return [x], [y], [rnd(2, 1, 28, 28)]


def cnn_bn():
    x = paddle.static.data("img", [-1, 3, 12, 12], "float32")
    c = paddle.static.nn.conv2d(x, 8, 3, padding=1)
    b = paddle.static.nn.batch_norm(c, act="relu", is_test=True)
    d = paddle.nn.functional.dropout(b, 0.3, training=False)
    p = paddle.nn.functional.max_pool2d(d, 2, 2)
    y = paddle.static.nn.fc(p, 5)
    return [x], [y], [rnd(2, 3, 12, 12)]


def cond(s_value):
    return lambda: cond_model(s_value)


def cond_model(s_value):
    x = paddle.static.data("x", [-1, 4], "float32")
    s = paddle.static.data("s", [1], "float32")
    zero = paddle.full([1], 0.0, "float32")
    pred = legacy_op("greater_than", {"X": [s], "Y": [zero]}, "bool", {"axis": -1})
    y = paddle.static.nn.cond(pred, lambda: paddle.scale(x, 2.0, 1.0),
                              lambda: paddle.scale(x, -1.0, 0.5))
    return [x, s], [y], [rnd(3, 4), np.array([s_value], "float32")]


def while_loop():
    x = paddle.static.data("x", [-1, 4], "float32")
    i = paddle.full([1], 0, "int64")
    n = paddle.full([1], 3, "int64")

    def body(i, acc):
        return [paddle.increment(i), paddle.scale(acc, 0.5, 1.0)]

    _, acc = paddle.static.nn.while_loop(lambda i, acc: paddle.less_than(i, n), body, [i, x])
    return [x], [acc], [rnd(2, 4)]


def embedding_bag():
    ids = paddle.static.data("ids", [-1, 5], "int64")
    emb = paddle.static.nn.embedding(ids, [20, 6])
    bag = paddle.mean(emb, axis=1)
    y = paddle.static.nn.fc(bag, 3)
    return [ids], [y], [np.random.randint(0, 20, (4, 5)).astype("int64")]


def rnn(cell, layers, direction):
    def fn():
        x = paddle.static.data("x", [-1, 6, 4], "float32")
        lens = paddle.static.data("lens", [-1], "int64")
        net = getattr(paddle.nn, cell)(4, 5, num_layers=layers, direction=direction)
        y, _ = net(x, sequence_length=lens)
        return [x, lens], [y], [rnd(3, 6, 4), np.array([6, 3, 5], "int64")]
    return fn


def seq_ids(vocab, lens):
    """Word ids [rows] of sequences of the given lengths, and the lengths."""
    return (np.random.randint(0, vocab, (sum(lens),)).astype("int64"), lens)


def seq_embed(vocab, dim):
    """A Fluid 1.x text model's input: ids with one LoD level, embedded ([rows, dim])."""
    ids = paddle.static.data("ids", [-1], "int64", lod_level=1)
    return ids, paddle.static.nn.embedding(ids, [vocab, dim])


def uniform_param(shape, name, scale=0.5):
    init = paddle.nn.initializer.Uniform(-scale, scale)
    return paddle.static.create_parameter(shape, "float32", name=name,
                                          attr=paddle.ParamAttr(name=name, initializer=init))


def seq_pool(x, pooltype):
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate("seqpool.out"),
                           dtype="float32")
    idx = block.create_var(name=paddle.utils.unique_name.generate("seqpool.idx"), dtype="int32")
    block.append_op(type="sequence_pool", inputs={"X": [x]},
                    outputs={"Out": [out], "MaxIndex": [idx]},
                    attrs={"pooltype": pooltype, "is_test": True, "pad_value": 0.0})
    return out


def concat(xs):
    return legacy_op("concat", {"X": xs}, attrs={"axis": 1})


def seqconv_textcnn():
    """Fluid 1.x's text CNN: sequence_conv over the embedded words (zero padding, and trainable
    padding rows before and after), a bias and tanh, max pooling over each sentence, fc."""
    ids, emb = seq_embed(30, 6)
    pooled = []
    for k, (length, start, trainable) in enumerate([(3, -1, False), (4, -2, True)]):
        filt = uniform_param([length * 6, 5], "conv%d.w" % k)
        ins = {"X": [emb], "Filter": [filt]}
        if trainable:
            pad = (max(0, -start) + max(0, start + length - 1))
            ins["PaddingData"] = [uniform_param([pad, 6], "conv%d.pad" % k)]
        c = legacy_op("sequence_conv", ins, attrs={
            "contextLength": length, "contextStart": start, "contextStride": 1,
            "paddingTrainable": trainable})
        b = uniform_param([5], "conv%d.b" % k)
        c = legacy_op("tanh", {"X": [legacy_op("elementwise_add", {"X": [c], "Y": [b]},
                                               attrs={"axis": 1})]})
        pooled.append(seq_pool(c, "MAX"))
    y = paddle.static.nn.fc(concat(pooled), 3)
    return [ids], [y], [seq_ids(30, [5, 1, 3, 2])]


def fluid_rnn(type_, x, hidden, outs, attrs, peep=False):
    """Fluid's lstm or gru op on x [rows, gates * hidden]; returns its Hidden."""
    block = paddle.static.default_main_program().current_block()
    gates = 4 if type_ == "lstm" else 3
    k = paddle.utils.unique_name.generate(type_)
    w = uniform_param([hidden, gates * hidden], k + ".w")
    b = uniform_param([1, (7 if peep else gates) * hidden], k + ".b")
    o = {n: [block.create_var(name=k + "." + n, dtype="float32")] for n in outs}
    attrs = dict(attrs, is_test=True)
    block.append_op(type=type_, inputs={"Input": [x], "Weight": [w], "Bias": [b]}, outputs=o,
                    attrs=attrs)
    return o["Hidden"][0]


def fluid_lstm():
    """dynamic_lstm as Fluid 1.x wrote it: fc to the 4 gates, lstm (peepholes; and reversed
    without), the last step of each sentence."""
    ids, emb = seq_embed(30, 6)
    outs = ["Hidden", "Cell", "BatchGate", "BatchCellPreAct"]
    fwd = fluid_rnn("lstm", paddle.static.nn.fc(emb, 16), 4, outs, {
        "use_peepholes": True, "is_reverse": False, "gate_activation": "sigmoid",
        "cell_activation": "tanh", "candidate_activation": "tanh"}, peep=True)
    bwd = fluid_rnn("lstm", paddle.static.nn.fc(emb, 16), 4, outs, {
        "use_peepholes": False, "is_reverse": True, "gate_activation": "sigmoid",
        "cell_activation": "tanh", "candidate_activation": "tanh"})
    y = concat([seq_pool(fwd, "LAST"), seq_pool(bwd, "FIRST")])
    return [ids], [y], [seq_ids(30, [4, 1, 6, 3])]


def fluid_gru():
    """dynamic_gru: fc to the 3 gates, gru (and reversed in origin_mode), max over the rows."""
    ids, emb = seq_embed(30, 6)
    outs = ["Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden"]
    fwd = fluid_rnn("gru", paddle.static.nn.fc(emb, 12), 4, outs, {
        "activation": "tanh", "gate_activation": "sigmoid", "is_reverse": False,
        "origin_mode": False})
    bwd = fluid_rnn("gru", paddle.static.nn.fc(emb, 12), 4, outs, {
        "activation": "tanh", "gate_activation": "sigmoid", "is_reverse": True,
        "origin_mode": True})
    y = concat([seq_pool(fwd, "MAX"), seq_pool(bwd, "AVERAGE")])
    return [ids], [y], [seq_ids(30, [4, 1, 6, 3])]


def transformer():
    x = paddle.static.data("x", [-1, 5, 8], "float32")
    layer = paddle.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    layer.eval()
    y = layer(x)
    return [x], [y], [rnd(2, 5, 8)]


def fluid_ops(type_, inputs, attrs, outs, dtype="float32"):
    """Append the Fluid op type_ with a new var in each of the output slots outs (the first
    returned)."""
    block = paddle.static.default_main_program().current_block()
    vs = {o: [block.create_var(name=paddle.utils.unique_name.generate(type_ + "." + o),
                               dtype=dtype)] for o in outs}
    block.append_op(type=type_, inputs=inputs, outputs=vs, attrs=attrs)
    return vs[outs[0]][0]


def fluid_fc(x, size, name, act=None):
    """Fluid 1.x's layers.fc of a [B, S, D] input: mul (x_num_col_dims 2), elementwise_add of
    the bias at axis 2, then act."""
    w = uniform_param([x.shape[-1], size], name + ".w_0", scale=(3.0 / x.shape[-1]) ** 0.5)
    b = uniform_param([size], name + ".b_0", scale=0.1)
    m = legacy_op("mul", {"X": [x], "Y": [w]}, attrs={"x_num_col_dims": 2, "y_num_col_dims": 1},
                  shape=list(x.shape[:-1]) + [size])
    y = legacy_op("elementwise_add", {"X": [m], "Y": [b]}, attrs={"axis": 2},
                  shape=list(x.shape[:-1]) + [size])
    return legacy_op(act, {"X": [y]}, shape=y.shape) if act else y


def fluid_layer_norm(x, name):
    return fluid_ops("layer_norm", {"X": [x], "Scale": [uniform_param([x.shape[-1]], name + ".s",
                                                                       scale=1.0)],
                                    "Bias": [uniform_param([x.shape[-1]], name + ".b")]},
                     {"begin_norm_axis": 2, "epsilon": 1e-5}, ["Y", "Mean", "Variance"])


def fluid_bert():
    """Fluid 1.x's BERT / ERNIE 1.0 encoder as the LARK and ERNIE repositories' Fluid code builds
    it (d_model 16, 2 heads, one layer): word and position embeddings (lookup_table of ids
    [B, S, 1]) summed and layer-normed; the attention bias from the input mask (Fluid's matmul
    of the mask by itself transposed, scale 10000 with bias -1 before it, stacked per head); q,
    k, v by fc (mul + bias add), split into heads (reshape2, transpose2), the scores Fluid's
    matmul with transpose_Y and alpha d_key^-0.5, plus the bias, softmax, dropout (inference),
    matmul by v, heads joined; the output fc, residual and layer norm; the feed-forward fcs
    (gelu); the first token pooled (slice, fc, tanh). Fetches the sequence and the pooled
    output."""
    S, D, H = 6, 16, 2
    dk = D // H
    src = paddle.static.data("src_ids", [-1, S, 1], "int64")
    pos = paddle.static.data("pos_ids", [-1, S, 1], "int64")
    mask = paddle.static.data("input_mask", [-1, S, 1], "float32")
    emb = None
    for ids, vocab, name in ((src, 30, "word_embedding"), (pos, S, "pos_embedding")):
        e = legacy_op("lookup_table", {"Ids": [ids], "W": [uniform_param([vocab, D], name)]},
                      attrs={"padding_idx": -1, "is_sparse": False}, shape=[-1, S, D])
        emb = e if emb is None else legacy_op("elementwise_add", {"X": [emb], "Y": [e]},
                                              attrs={"axis": -1}, shape=[-1, S, D])
    x = fluid_layer_norm(emb, "pre_encoder_layer_norm")
    bias = legacy_op("matmul", {"X": [mask], "Y": [mask]},
                     attrs={"transpose_X": False, "transpose_Y": True, "alpha": 1.0})
    bias = legacy_op("scale", {"X": [bias]}, attrs={"scale": 10000.0, "bias": -1.0,
                                                    "bias_after_scale": False})
    bias = fluid_ops("stack", {"X": [bias] * H}, {"axis": 1}, ["Y"])

    def heads(t):
        r = fluid_ops("reshape2", {"X": [t]}, {"shape": [0, 0, H, dk]}, ["Out", "XShape"])
        return fluid_ops("transpose2", {"X": [r]}, {"axis": [0, 2, 1, 3]}, ["Out", "XShape"])
    q, k, v = (heads(fluid_fc(x, D, "encoder_layer_0_multi_head_att_%s_fc" % n))
               for n in ("query", "key", "value"))
    scores = legacy_op("matmul", {"X": [q], "Y": [k]},
                       attrs={"transpose_X": False, "transpose_Y": True, "alpha": dk ** -0.5})
    scores = legacy_op("elementwise_add", {"X": [scores], "Y": [bias]}, attrs={"axis": -1})
    w = legacy_op("softmax", {"X": [scores]}, attrs={"axis": -1})
    w = fluid_ops("dropout", {"X": [w]}, {"dropout_prob": 0.1, "is_test": True,
                                          "dropout_implementation": "upscale_in_train"},
                  ["Out", "Mask"])
    ctx = legacy_op("matmul", {"X": [w], "Y": [v]},
                    attrs={"transpose_X": False, "transpose_Y": False, "alpha": 1.0})
    ctx = fluid_ops("transpose2", {"X": [ctx]}, {"axis": [0, 2, 1, 3]}, ["Out", "XShape"])
    ctx = fluid_ops("reshape2", {"X": [ctx]}, {"shape": [0, 0, D]}, ["Out", "XShape"])
    ctx.desc.set_shape([-1, S, D])
    out = fluid_fc(ctx, D, "encoder_layer_0_multi_head_att_output_fc")
    x = fluid_layer_norm(legacy_op("elementwise_add", {"X": [out], "Y": [x]}, attrs={"axis": -1},
                                   shape=[-1, S, D]), "encoder_layer_0_post_att_layer_norm")
    x.desc.set_shape([-1, S, D])
    f = fluid_fc(fluid_fc(x, 32, "encoder_layer_0_ffn_fc_0", "gelu"), D,
                 "encoder_layer_0_ffn_fc_1")
    x = fluid_layer_norm(legacy_op("elementwise_add", {"X": [f], "Y": [x]}, attrs={"axis": -1},
                                   shape=[-1, S, D]), "encoder_layer_0_post_ffn_layer_norm")
    x.desc.set_shape([-1, S, D])
    first = fluid_ops("slice", {"Input": [x]}, {"axes": [1], "starts": [0], "ends": [1],
                                                 "decrease_axis": []}, ["Out"])
    first = fluid_ops("reshape2", {"X": [first]}, {"shape": [-1, 1, D]}, ["Out", "XShape"])
    first.desc.set_shape([-1, 1, D])
    pooled = fluid_fc(first, D, "pooled_fc", "tanh")
    rs = np.random.RandomState(5)
    n = 3
    lens = [6, 4, 2]
    ids = rs.randint(1, 30, (n, S, 1)).astype("int64")
    msk = np.array([[[1.0] if s < l else [0.0] for s in range(S)] for l in lens], "float32")
    posv = np.tile(np.arange(S, dtype="int64")[None, :, None], (n, 1, 1))
    return [src, pos, mask], [x, pooled], [ids, posv, msk]


def refused(outdir):
    """A conv net whose ops carry what pdlang refuses (a fused ReLU in conv2d, an attribute no
    version of the op has) beside what it drops (oneDNN hints): only the model is saved."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    paddle.seed(24)
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        x = paddle.static.data("img", [-1, 1, 6, 6], "float32")
        c = paddle.static.nn.conv2d(x, 2, 3)
        y = paddle.static.nn.fc(c, 3)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        for op in main.global_block().ops:
            if op.type == "conv2d":
                op._set_attr("fuse_relu", True)
                op._set_attr("fuse_activation", "relu")
                op._set_attr("use_mkldnn", True)
            if op.type == "elementwise_add":
                op._set_attr("fancy_mode", 3)
                op._set_attr("Scale_x", 0.5)
        d = os.path.join(outdir, "refused")
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        paddle.static.save_inference_model(os.path.join(d, "model"), [x], [y], exe)
        paddle_strip.strip(os.path.join(d, "model.pdmodel"))
    print("refused        saved")


# ---- fluid_lstmp: Fluid's lstmp op, which PaddlePaddle 3.x no longer registers. The program is
# built with a scale op in each lstmp's place, saved, and then edited as Fluid's framework.proto
# (framework_pb2): each stand-in becomes an lstmp op with its parameters (their LoDTensor streams
# added to the combined parameter file in sorted name order, as save_inference_model writes it).
# The outputs come from numpy: PaddlePaddle computes the embedding and the fc layers (fetched
# from the program as built), numpy the lstmp recurrences from the op's definition (Paddle's
# lstmp_op.h), the poolings and the concat.

def tensor_stream(a):
    """One Fluid LoDTensor stream (no LoD) of the float32 array a."""
    pb = paddle.base.proto.framework_pb2
    desc = pb.VarType.TensorDesc(data_type=pb.VarType.FP32, dims=list(a.shape))
    d = desc.SerializeToString()
    return (struct.pack("<IQI", 0, 0, 0) + struct.pack("<i", len(d)) + d
            + np.ascontiguousarray(a, "float32").tobytes())


def np_act(name, v):
    return {"sigmoid": lambda t: 1 / (1 + np.exp(-t)), "tanh": np.tanh,
            "relu": lambda t: np.maximum(t, 0), "identity": lambda t: t}[name](v)


def np_lstmp(x, lens, w, pw, b, a):
    """lstmp on x [rows, 4D] (sequences of lens rows), in float64: c~, i, f, o; peepholes from
    Bias[4D:7D]; the cell clipped to cell_clip, the projection r = act(h ProjWeight) (Paddle's
    kernel applies cell_activation unless proj_activation is identity) clipped to proj_clip."""
    x, w, pw, b = (np.asarray(t, "float64") for t in (x, w, pw, b))
    D, P = pw.shape
    b = b.reshape(-1)
    act_g, act_c, act_n = a["gate_activation"], a["cell_activation"], a["candidate_activation"]
    act_p = "identity" if a["proj_activation"] == "identity" else act_c
    peep = a["use_peepholes"]
    cclip, pclip = a.get("cell_clip", 0.0), a.get("proj_clip", 0.0)
    out = np.zeros((x.shape[0], P))
    start = 0
    for n in lens:
        r, c = np.zeros(P), np.zeros(D)
        steps = range(start + n - 1, start - 1, -1) if a["is_reverse"] else range(start, start + n)
        for t in steps:
            g = x[t] + b[:4 * D] + r @ w
            cand = np_act(act_n, g[:D])
            i = np_act(act_g, g[D:2 * D] + (b[4 * D:5 * D] * c if peep else 0))
            f = np_act(act_g, g[2 * D:3 * D] + (b[5 * D:6 * D] * c if peep else 0))
            c = f * c + i * cand
            if cclip > 0:
                c = np.clip(c, -cclip, cclip)
            o = np_act(act_g, g[3 * D:] + (b[6 * D:] * c if peep else 0))
            h = o * np_act(act_c, c)
            r = np_act(act_p, h @ pw)
            if pclip > 0:
                r = np.clip(r, -pclip, pclip)
            out[t] = r
        start += n
    return out


def fluid_lstmp(outdir):
    """dynamic_lstmp as Fluid 1.x wrote it: fc to the 4 gates (D 4), lstmp (P 3) forward with
    peepholes and clips (Fluid 1.6+'s op: cell_clip, proj_clip), reversed without peepholes and
    with OrderedP0 (Fluid 1.5's op); the last step and the first of each sentence, concatenated."""
    pb = paddle.base.proto.framework_pb2
    D, P = 4, 3
    specs = [dict(use_peepholes=True, is_reverse=False, gate_activation="sigmoid",
                  cell_activation="tanh", candidate_activation="tanh", proj_activation="tanh",
                  cell_clip=0.2, proj_clip=0.06),
             dict(use_peepholes=False, is_reverse=True, gate_activation="sigmoid",
                  cell_activation="tanh", candidate_activation="tanh",
                  proj_activation="identity")]
    main, startup = paddle.static.Program(), paddle.static.Program()
    paddle.seed(24)
    np.random.seed(24)
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        ids, emb = seq_embed(30, 6)
        gates = [paddle.static.nn.fc(emb, 4 * D) for _ in specs]
        stand = [legacy_op("scale", {"X": [g]}, attrs={"scale": 1.0}) for g in gates]
        pools = [seq_pool(stand[0], "LAST"), seq_pool(stand[1], "FIRST")]
        y = concat(pools)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        vals, lens = seq_ids(30, [4, 1, 6, 3])
        feed = {"ids": paddle.base.create_lod_tensor(vals, [list(lens)], paddle.CPUPlace())}
        xs = [np.array(t) for t in exe.run(main, feed=feed, fetch_list=gates,
                                           return_numpy=False)]
        d = os.path.join(outdir, "fluid_lstmp")
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        prefix = os.path.join(d, "model")
        paddle.static.save_inference_model(prefix, [ids], [y], exe)
        paddle_strip.strip(prefix + ".pdmodel")
    prog = pb.ProgramDesc()
    prog.ParseFromString(open(prefix + ".pdmodel", "rb").read())
    blk = prog.blocks[0]
    var = {v.name: v for v in blk.vars}
    params = {n: s for n, s in zip(
        sorted(v.name for v in blk.vars if v.persistable and v.name not in ("feed", "fetch")),
        split_streams(open(prefix + ".pdiparams", "rb").read()))}
    template = next(v for v in blk.vars if v.persistable and v.name.endswith(".w_0"))
    projs = []
    for k, (op, spec) in enumerate(zip([o for o in blk.ops if o.type == "scale"], specs)):
        w = np.random.uniform(-0.5, 0.5, (P, 4 * D)).astype("float32")
        pw = np.random.uniform(-0.5, 0.5, (D, P)).astype("float32")
        b = np.random.uniform(-0.5, 0.5, (1, (7 if spec["use_peepholes"] else 4) * D))
        b = b.astype("float32")
        names = {"Weight": ("lstmp_%d.w_0" % k, w), "ProjWeight": ("lstmp_%d.w_1" % k, pw),
                 "Bias": ("lstmp_%d.b_0" % k, b)}
        for slot, (n, a) in names.items():
            v = blk.vars.add()
            v.CopyFrom(template)
            v.name = n
            del v.type.dense_tensor.tensor.dims[:]
            v.type.dense_tensor.tensor.dims.extend(a.shape)
            params[n] = tensor_stream(a)
        x_name = next(i.arguments[0] for i in op.inputs if i.parameter == "X")
        out_name = next(o.arguments[0] for o in op.outputs if o.parameter == "Out")
        op.type = "lstmp"
        del op.inputs[:]
        del op.outputs[:]
        for slot, arg in [("Input", x_name)] + [(s, n) for s, (n, _) in names.items()]:
            op.inputs.add(parameter=slot, arguments=[arg])
        outs = ["Cell", "BatchGate", "BatchCellPreAct", "BatchHidden"]
        if "cell_clip" not in spec:
            outs.append("OrderedP0")  # Fluid 1.5's op: no clips, OrderedP0
        op.outputs.add(parameter="Projection", arguments=[out_name])
        for slot in outs:
            n = "lstmp_%d.%s" % (k, slot)
            v = blk.vars.add()
            v.CopyFrom(var[out_name])
            v.name = n
            op.outputs.add(parameter=slot, arguments=[n])
        keep = [a for a in op.attrs if a.name.startswith("op_") or a.name == "with_quant_attr"]
        del op.attrs[:]
        op.attrs.extend(keep)
        for n, v in spec.items():
            if isinstance(v, bool):
                op.attrs.add(name=n, type=pb.BOOLEAN, b=v)
            elif isinstance(v, float):
                op.attrs.add(name=n, type=pb.FLOAT, f=v)
            else:
                op.attrs.add(name=n, type=pb.STRING, s=v)
        projs.append(np_lstmp(xs[k], lens, w, pw, b, spec))
    # The shapes downstream: the projections and the poolings [-1, P], the concat [-1, 2 P].
    for op in blk.ops:
        if op.type in ("lstmp", "sequence_pool", "concat"):
            for o in op.outputs:
                if o.parameter in ("Projection", "Out"):
                    t = var[o.arguments[0]].type.dense_tensor.tensor
                    t.dims[-1] = 2 * P if op.type == "concat" else P
    open(prefix + ".pdmodel", "wb").write(prog.SerializeToString())
    open(prefix + ".pdiparams", "wb").write(b"".join(params[n] for n in sorted(params)))
    ends = np.cumsum(lens)
    out = np.concatenate([projs[0][ends - 1], projs[1][ends - np.asarray(lens)]], axis=1)
    np.save(os.path.join(d, "in_ids.npy"), vals)
    np.save(os.path.join(d, "lens_ids.npy"), np.asarray(lens, "int64"))
    np.save(os.path.join(d, "out_%s.npy" % y.name), out.astype("float32"))
    with open(os.path.join(d, "fetch_names.txt"), "w") as f:
        f.write(y.name + "\n")
    print("fluid_lstmp    feeds ['ids'] fetches %s ops %s" % (
        [y.name], sorted({op.type for op in blk.ops})))


MODELS = [
    ("mlp", mlp, True), ("mlp_old_attrs", mlp_old_attrs, False), ("lenet", lenet, False),
    ("cnn_bn", cnn_bn, False), ("cond", cond(0.7), False),
    ("cond_false", cond(-0.3), False),
    ("while_loop", while_loop, False), ("embedding_bag", embedding_bag, True),
    ("lstm1", rnn("LSTM", 1, "forward"), False), ("lstm2_bidi", rnn("LSTM", 2, "bidirect"), False),
    ("gru1", rnn("GRU", 1, "forward"), False), ("gru2_bidi", rnn("GRU", 2, "bidirect"), False),
    ("transformer", transformer, False),
    ("seqconv_textcnn", seqconv_textcnn, False), ("fluid_lstm", fluid_lstm, False),
    ("fluid_gru", fluid_gru, False), ("fluid_bert", fluid_bert, False),
]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "interop")
    only = set(sys.argv[2:])
    for name, fn, fluid in MODELS:
        if not only or name in only:
            build(name, fn, outdir, fluid)
    if not only or "refused" in only:
        refused(outdir)
    if not only or "fluid_lstmp" in only:
        fluid_lstmp(outdir)


if __name__ == "__main__":
    main()
