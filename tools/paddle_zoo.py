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
    PADDLEOCR_SRC=/opt/paddleocr_one /opt/pdvenv/bin/python tools/paddle_zoo.py \
        [--list] [--size HxW|N] [OUTDIR [NAME...]]

PADDLEOCR_SRC names a folder holding PaddleOCR's ppocr/ tree of commit PADDLEOCR_COMMIT (below,
_ppocr()). OUTDIR defaults to tests/interop/zoo. --size exports the families at another input
size: HxW for the images, N tokens for ERNIE (bench/infer_compare.py uses it). Several NAMEs are exported one process each.
Each model NAME gets OUTDIR/NAME holding:
  inference.pdmodel   the program as Paddle saved it, less each op's op_callstack (the Python
                      stack that built it: this machine's folders; tools/paddle_strip.py);
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

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # tools/paddle_zoo_pir.py sets "1"

import numpy as np  # noqa: E402
import paddle  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddle_strip  # noqa: E402
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

def _legacy_binary(op_type, reverse=False, attrs=None, out_dtype=None):
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
        out = block.create_var(name=paddle.utils.unique_name.generate(op_type),
                               dtype=out_dtype or ref.dtype)
        block.append_op(type=op_type, inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                        attrs={"axis": -1} if attrs is None else attrs)
        return out
    return f


def _legacy_unary(op_type, attrs=None, original=None):
    def f(x, *args, name=None, **kw):
        if not isinstance(x, Variable):
            return original(x, *args, **kw)
        block = paddle.static.default_main_program().current_block()
        out = block.create_var(name=paddle.utils.unique_name.generate(op_type), dtype=x.dtype)
        a = attrs(*args, **kw) if attrs else {}
        block.append_op(type=op_type, inputs={"X": [x]}, outputs={"Out": [out]}, attrs=a)
        return out
    return f


def _legacy_matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate("matmul_v2"), dtype=x.dtype)
    block.append_op(type="matmul_v2", inputs={"X": [x], "Y": [y]}, outputs={"Out": [out]},
                    attrs={"trans_x": transpose_x, "trans_y": transpose_y})
    return out


# Paddle 3.3 replaces these functions (paddle/base/dygraph/generated_tensor_methods_patch.py)
# with ones that take only dygraph tensors or PIR values: a legacy Variable goes to the Fluid op.
UNARY = {"abs": "abs", "exp": "exp", "sigmoid": "sigmoid", "tanh": "tanh", "sqrt": "sqrt",
         "rsqrt": "rsqrt", "log": "log", "floor": "floor", "ceil": "ceil", "round": "round",
         "sin": "sin", "cos": "cos", "logical_not": "logical_not"}
BINARY = {"multiply": "elementwise_mul", "add": "elementwise_add",
          "subtract": "elementwise_sub", "divide": "elementwise_div",
          "maximum": "elementwise_max", "minimum": "elementwise_min"}


def _legacy_grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=True,
                        name=None):
    if not isinstance(x, Variable):
        return _grid_sample(x, grid, mode, padding_mode, align_corners, name)
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate("grid_sampler"), dtype=x.dtype)
    block.append_op(type="grid_sampler", inputs={"X": [x], "Grid": [grid]},
                    outputs={"Output": [out]},
                    attrs={"mode": mode, "padding_mode": padding_mode,
                           "align_corners": bool(align_corners)})
    return out


_grid_sample = paddle.nn.functional.grid_sample


def patch_legacy():
    mods = (paddle, sys.modules["paddle.tensor"], paddle.nn.functional)
    paddle.nn.functional.grid_sample = _legacy_grid_sample
    for fn, op in UNARY.items():
        for m in mods:
            if hasattr(m, fn):
                setattr(m, fn, _legacy_unary(op, original=getattr(m, fn)))
    for fn, op in UNARY.items():  # x.sqrt() and the like
        setattr(Variable, fn, _legacy_unary(op))
    gelu = paddle.nn.functional.gelu
    paddle.nn.functional.gelu = _legacy_unary(
        "gelu", lambda approximate=False, name=None: {"approximate": bool(approximate)}, gelu)
    for fn, op in BINARY.items():
        for m in mods[:2]:
            setattr(m, fn, _legacy_binary(op))
    for fn in ("logical_and", "logical_or", "logical_xor"):
        setattr(paddle, fn, _legacy_binary(fn, attrs={}, out_dtype="bool"))
    paddle.matmul = sys.modules["paddle.tensor"].matmul = Variable.matmul = _legacy_matmul
    for dunder, op in (("mul", "elementwise_mul"), ("add", "elementwise_add"),
                       ("sub", "elementwise_sub"), ("truediv", "elementwise_div")):
        setattr(Variable, "__%s__" % dunder, _legacy_binary(op))
        setattr(Variable, "__r%s__" % dunder, _legacy_binary(op, reverse=True))


# ---------------------------------------------------------------- the families

def _ppcls():
    sys.path.insert(0, os.path.join(SITE, "paddleclas"))
    from ppcls.utils import logger
    logger.init_logger()
    import ppcls.arch.backbone as bb
    return bb


# --size HxW (or --size N: a sequence length) exports a family at another input size than the
# tests' (bench/infer_compare.py: the sizes the field serves at); None keeps each family's own.
SIZE = None


def image(c=3, h=64, w=64, n=2):
    if isinstance(SIZE, tuple):
        h, w = SIZE
    return [paddle.static.InputSpec([None, c, h, w], "float32", "x")], {
        "x": np.random.RandomState(7).uniform(-1, 1, (n, c, h, w)).astype("float32")}


def cls(arch, **kw):
    def make():
        bb = _ppcls()
        m = getattr(bb, arch)(class_num=10, **kw)
        return m, image()
    return make


def seg(arch):
    def make():
        import paddleseg.models as sm
        if arch == "pp_liteseg":
            m = sm.PPLiteSeg(num_classes=4, backbone=sm.backbones.STDC1())
        else:
            m = sm.UNet(num_classes=4)
        return m, image()
    return make


def ernie():
    from paddlenlp.transformers import ErnieConfig, ErnieForSequenceClassification
    # ernie-3.0-tiny-micro-v2's shape (4 layers, 384 wide, 12 heads) on a small vocabulary.
    n = SIZE if isinstance(SIZE, int) else 16
    cfg = ErnieConfig(vocab_size=1000, hidden_size=384, num_hidden_layers=4,
                      num_attention_heads=12, intermediate_size=1536,
                      max_position_embeddings=max(64, n), type_vocab_size=4, num_labels=3)
    m = ErnieForSequenceClassification(cfg)
    rs = np.random.RandomState(7)
    spec = [paddle.static.InputSpec([None, None], "int64", "input_ids"),
            paddle.static.InputSpec([None, None], "int64", "token_type_ids")]
    return m, (spec, {"input_ids": rs.randint(1, 1000, (2, n)).astype("int64"),
                      "token_type_ids": (np.arange(n)[None, :] >= n * 9 // 16).repeat(2, 0).astype(
                          "int64")})


def det_inputs(size=64, names=("image", "im_shape", "scale_factor"), seed=7):
    """PaddleDetection's export inputs: the image, its size and the scale it was resized by
    (those of names: the exporter drops the ones the model does not read)."""
    if isinstance(SIZE, tuple):
        size = SIZE[0]
    spec = {"image": paddle.static.InputSpec([None, 3, size, size], "float32", "image"),
            "im_shape": paddle.static.InputSpec([None, 2], "float32", "im_shape"),
            "scale_factor": paddle.static.InputSpec([None, 2], "float32", "scale_factor")}
    rs = np.random.RandomState(seed)
    feeds = {"image": rs.uniform(-1, 1, (2, 3, size, size)).astype("float32"),
             "im_shape": np.array([[size, size]] * 2, "float32"),
             "scale_factor": np.array([[1.0, 1.0], [0.5, 0.5]], "float32")}
    return [{k: v for k, v in spec.items() if k in names}], feeds


def nms():
    from ppdet.modeling.layers import MultiClassNMS
    return MultiClassNMS(score_threshold=0.01, nms_top_k=100, keep_top_k=20, nms_threshold=0.45)


def yolov3():
    from ppdet.modeling.architectures.yolo import YOLOv3
    from ppdet.modeling.backbones.mobilenet_v1 import MobileNet
    from ppdet.modeling.heads.yolo_head import YOLOv3Head
    from ppdet.modeling.layers import YOLOBox
    from ppdet.modeling.necks.yolo_fpn import YOLOv3FPN
    from ppdet.modeling.post_process import BBoxPostProcess
    bb = MobileNet(feature_maps=[4, 6, 13], with_extra_blocks=False)
    neck = YOLOv3FPN(in_channels=[s.channels for s in bb.out_shape])
    head = YOLOv3Head(in_channels=[s.channels for s in neck.out_shape], num_classes=4)
    pp = BBoxPostProcess(decode=YOLOBox(num_classes=4), nms=nms())
    return YOLOv3(bb, neck, head, post_process=pp), det_inputs()


def ppyoloe():
    from ppdet.modeling.architectures.yolo import YOLOv3
    from ppdet.modeling.backbones.cspresnet import CSPResNet
    from ppdet.modeling.heads.ppyoloe_head import PPYOLOEHead
    from ppdet.modeling.necks.custom_pan import CustomCSPPAN
    # PP-YOLOE-s's widths (width_mult 0.5, depth_mult 0.33).
    bb = CSPResNet(layers=[3, 6, 6, 3], channels=[64, 128, 256, 512, 1024], return_idx=[1, 2, 3],
                   use_large_stem=True, width_mult=0.5, depth_mult=0.33)
    neck = CustomCSPPAN(in_channels=[s.channels for s in bb.out_shape],
                        out_channels=[768, 384, 192], stage_num=1, block_num=3, act="swish",
                        spp=True, width_mult=0.5, depth_mult=0.33)
    head = PPYOLOEHead(in_channels=[s.channels for s in neck.out_shape], num_classes=4,
                       static_assigner_epoch=-1, nms=nms())
    return YOLOv3(bb, neck, head, post_process=None), det_inputs(names=("image", "scale_factor"))


def picodet():
    from ppdet.modeling.architectures.picodet import PicoDet
    from ppdet.modeling.backbones.lcnet import LCNet
    from ppdet.modeling.heads.pico_head import PicoFeat, PicoHeadV2
    from ppdet.modeling.losses.gfocal_loss import DistributionFocalLoss
    from ppdet.modeling.losses.iou_loss import GIoULoss
    from ppdet.modeling.losses.varifocal_loss import VarifocalLoss
    from ppdet.modeling.necks.lc_pan import LCPAN
    # picodet_s_416_coco_lcnet.yml's architecture, 4 classes, on a 64x64 image.
    bb = LCNet(scale=0.75, feature_maps=[3, 4, 5])
    neck = LCPAN(in_channels=[s.channels for s in bb.out_shape], out_channels=96,
                 use_depthwise=True, num_features=4)
    feat = PicoFeat(feat_in=96, feat_out=96, num_convs=2, num_fpn_stride=4, norm_type="bn",
                    share_cls_reg=True, use_se=True)
    head = PicoHeadV2(conv_feat=feat, num_classes=4, fpn_stride=[8, 16, 32, 64],
                      feat_in_chan=96, prior_prob=0.01, reg_max=7, cell_offset=0.5,
                      grid_cell_scale=5.0, static_assigner_epoch=100, use_align_head=True,
                      loss_class=VarifocalLoss(use_sigmoid=True, iou_weighted=True),
                      loss_dfl=DistributionFocalLoss(), loss_bbox=GIoULoss(), nms=nms())
    # Seed 7's image gives two boxes scores equal to float32 rounding, which NMS may order
    # either way: not a test of anything.
    return PicoDet(bb, neck, head), det_inputs(names=("image", "scale_factor"), seed=8)


def ssd():
    from ppdet.modeling.architectures.ssd import SSD
    from ppdet.modeling.backbones.mobilenet_v1 import MobileNet
    from ppdet.modeling.heads.ssd_head import SSDHead
    from ppdet.modeling.layers import SSDBox
    from ppdet.modeling.post_process import BBoxPostProcess
    # ssd_mobilenet_v1_300_120e_voc's architecture on a 128x128 image (the anchors' steps and
    # sizes as the config gives them for 300x300).
    bb = MobileNet(norm_type="bn", with_extra_blocks=True, feature_maps=[11, 13, 14, 15, 16, 17])
    head = SSDHead(num_classes=4, in_channels=[s.channels for s in bb.out_shape],
                   anchor_generator=dict(
                       steps=[0, 0, 0, 0, 0, 0],
                       aspect_ratios=[[2.], [2., 3.], [2., 3.], [2., 3.], [2., 3.], [2., 3.]],
                       min_ratio=20, max_ratio=90, base_size=300,
                       min_sizes=[60.0, 105.0, 150.0, 195.0, 240.0, 285.0],
                       max_sizes=[[], 150.0, 195.0, 240.0, 285.0, 300.0], offset=0.5,
                       flip=True, min_max_aspect_ratios_order=False),
                   kernel_size=3, padding=1)
    pp = BBoxPostProcess(decode=SSDBox(), nms=nms())
    return SSD(bb, head, pp), det_inputs(128)


def blazeface():
    from ppdet.modeling.architectures.blazeface import BlazeFace
    from ppdet.modeling.backbones.blazenet import BlazeNet
    from ppdet.modeling.heads.face_head import FaceHead
    from ppdet.modeling.layers import MultiClassNMS, SSDBox
    from ppdet.modeling.necks.blazeface_fpn import BlazeNeck
    from ppdet.modeling.post_process import BBoxPostProcess
    # blazeface_1000e.yml's architecture.
    bb = BlazeNet(blaze_filters=[[24, 24], [24, 24], [24, 48, 2], [48, 48], [48, 48]],
                  double_blaze_filters=[[48, 24, 96, 2], [96, 24, 96], [96, 24, 96],
                                        [96, 24, 96, 2], [96, 24, 96], [96, 24, 96]],
                  use_5x5kernel=True)
    neck = BlazeNeck(in_channel=[96, 96], neck_type="None", data_format="NCHW")
    head = FaceHead(in_channels=[96, 96], num_classes=1,
                    anchor_generator=dict(steps=[8., 16.], aspect_ratios=[[1.], [1.]],
                                          min_sizes=[[16., 24.], [32., 48., 64., 80., 96., 128.]],
                                          max_sizes=[[], []], offset=0.5, flip=False,
                                          min_max_aspect_ratios_order=False),
                    kernel_size=3, padding=1)
    pp = BBoxPostProcess(decode=SSDBox(),
                         nms=MultiClassNMS(keep_top_k=20, score_threshold=0.01,
                                           nms_threshold=0.3, nms_top_k=100))
    return BlazeFace(bb, head, neck, pp), det_inputs(128)

# The one PaddleOCR commit the ppocr families are built from: its ppocr/ tree, extracted
# (git archive COMMIT ppocr) to the folder PADDLEOCR_SRC names.
PADDLEOCR_COMMIT = "4b17511491adcfd0f3e2970895d06814d1ce56cc"


def _ppocr():
    """PaddleOCR's ppocr package from the folder PADDLEOCR_SRC names: PaddleOCR is not
    pip-installable (the paddleocr 3.x wheel has only wrappers). The folder holds the ppocr/ tree
    of PaddleOCR commit PADDLEOCR_COMMIT (2023-11-17, after PP-OCRv4), e.g.
        git --git-dir=PaddleOCR/.git archive PADDLEOCR_COMMIT ppocr | tar -x -C /opt/paddleocr_one
    Only the modules used are imported (ppocr/modeling/*/__init__.py import each architecture
    inside their build functions)."""
    src = os.environ.get("PADDLEOCR_SRC", "/opt/paddleocr_one")
    if not os.path.isdir(os.path.join(src, "ppocr")):
        sys.exit("paddle_zoo.py: PADDLEOCR_SRC=%s has no ppocr/ folder" % src)
    if src not in sys.path:
        sys.path.insert(0, src)


class OCRModel(paddle.nn.Layer):
    """[transform ->] backbone -> neck -> head, as ppocr's BaseModel chains them."""
    def __init__(self, backbone, neck, head, transform=None):
        super().__init__()
        self.backbone, self.neck, self.head = backbone, neck, head
        self.transform = transform

    def forward(self, x):
        if self.transform is not None:
            x = self.transform(x)
        x = self.backbone(x)
        if self.neck is not None:
            x = self.neck(x)
        return self.head(x)


def db_det(neck_name):
    """DB text detection: PP-OCRv3 det's student (MobileNetV3 large x0.5 without SE, RSEFPN 96
    with shortcut, DBHead k=50) or PP-OCRv2's (DBFPN 96)."""
    def make():
        _ppocr()
        from ppocr.modeling.backbones.det_mobilenet_v3 import MobileNetV3
        from ppocr.modeling.heads.det_db_head import DBHead
        from ppocr.modeling.necks import db_fpn
        bb = MobileNetV3(in_channels=3, model_name="large", scale=0.5, disable_se=True)
        if neck_name == "RSEFPN":
            neck = db_fpn.RSEFPN(bb.out_channels, 96, shortcut=True)
        else:
            neck = db_fpn.DBFPN(bb.out_channels, 96)
        return OCRModel(bb, neck, DBHead(96, k=50)), image()
    return make


# The number of classes of the recognisers' CTC heads: PaddleOCR's en_dict.txt (95 characters)
# with the space and the CTC blank.
REC_CLASSES = 97


def rec_image(w=160):
    """A recogniser's input: one text line 48 high (the PP-OCRv3/v4 rec shape 3x48x320, narrowed
    to keep the files small: the architectures take any width)."""
    return image(3, 48, w, n=1)


def crnn_rec():
    """CRNN, PP-OCR mobile v2.0 rec (rec_chinese_lite_train_v2.0.yml): rec MobileNetV3 small
    x0.5 with small_stride [1, 2, 2, 2], SequenceEncoder "rnn" (a 2-layer bidirectional LSTM,
    48 wide), CTCHead."""
    _ppocr()
    from ppocr.modeling.backbones.rec_mobilenet_v3 import MobileNetV3
    from ppocr.modeling.heads.rec_ctc_head import CTCHead
    from ppocr.modeling.necks.rnn import SequenceEncoder
    bb = MobileNetV3(in_channels=3, model_name="small", scale=0.5, small_stride=[1, 2, 2, 2])
    neck = SequenceEncoder(bb.out_channels, "rnn", hidden_size=48)
    return OCRModel(bb, neck, CTCHead(neck.out_channels, REC_CLASSES, fc_decay=1e-5)), rec_image()


def _repped(model):
    """What PaddleOCR's tools/export_model.py does before saving: the re-parameterisable layers
    (PPLCNetV3's LearnableRepLayer) fold their branches into one convolution."""
    for layer in model.sublayers():
        if hasattr(layer, "rep") and not getattr(layer, "is_repped", False):
            layer.rep()
    return model


def svtr_lcnet_rec(version):
    """SVTR_LCNet, PP-OCRv3 rec (ch_PP-OCRv3_rec.yml: MobileNetV1Enhance x0.5, MultiHead with
    the CTC branch's SequenceEncoder "svtr" and a SARHead) or PP-OCRv4 rec (ch_PP-OCRv4_rec.yml:
    PPLCNetV3 x0.95, MultiHead with "svtr" kernel [1, 3] and an NRTRHead). In inference the
    MultiHead runs the CTC branch only."""
    def make():
        _ppocr()
        from ppocr.modeling.heads.rec_multi_head import MultiHead
        outs = {"CTCLabelDecode": REC_CLASSES, "SARLabelDecode": REC_CLASSES + 2,
                "NRTRLabelDecode": REC_CLASSES + 3}
        if version == 3:
            from ppocr.modeling.backbones.rec_mv1_enhance import MobileNetV1Enhance
            bb = MobileNetV1Enhance(scale=0.5, last_conv_stride=[1, 2], last_pool_type="avg",
                                    last_pool_kernel_size=[2, 2])
            heads = [{"CTCHead": {"Neck": {"name": "svtr", "dims": 64, "depth": 2,
                                           "hidden_dims": 120, "use_guide": True},
                                  "Head": {"fc_decay": 1e-5}}},
                     {"SARHead": {"enc_dim": 512, "max_text_length": 25}}]
        else:
            from ppocr.modeling.backbones.rec_lcnetv3 import PPLCNetV3
            bb = PPLCNetV3(scale=0.95)
            heads = [{"CTCHead": {"Neck": {"name": "svtr", "dims": 120, "depth": 2,
                                           "hidden_dims": 120, "kernel_size": [1, 3],
                                           "use_guide": True},
                                  "Head": {"fc_decay": 1e-5}}},
                     {"NRTRHead": {"nrtr_dim": 384, "max_text_length": 25}}]
        head = MultiHead(bb.out_channels, outs, head_list=heads)
        return _repped(OCRModel(bb, None, head)), rec_image()
    return make


def svtr_rec():
    """SVTR-Tiny as rec_svtrnet.yml builds it: the STN_ON transform (a TPS rectification: a
    localization network on the image resized to 32x64 predicting 20 control points, the TPS grid
    of a 32x100 output, grid_sample), SVTRNet (patch merging by convolution, 6 local + 6 global
    mixers, last stage), SequenceEncoder "reshape", CTCHead. The input is 1x3x32x128 (the config
    evaluates 64x256; the STN resamples any size to 32x100). The local mixers' masks (0 in the
    7x11 window, -inf outside) are persistable tensors of the program (eager_tmp_N), made from
    weights.txt like every parameter: the test runs them with the generator's values; the model
    with its own masks (paddle.jit.save's parameters) agrees with Paddle as well."""
    _ppocr()
    from ppocr.modeling.backbones.rec_svtrnet import SVTRNet
    from ppocr.modeling.heads.rec_ctc_head import CTCHead
    from ppocr.modeling.necks.rnn import SequenceEncoder
    from ppocr.modeling.transforms.stn import STN_ON
    stn = STN_ON(3, tps_inputsize=[32, 64], tps_outputsize=[32, 100], num_control_points=20,
                 tps_margins=[0.05, 0.05], stn_activation="none")
    bb = SVTRNet(img_size=[32, 100], out_char_num=25, out_channels=192, patch_merging="Conv",
                 embed_dim=[64, 128, 256], depth=[3, 6, 3], num_heads=[2, 4, 8],
                 mixer=["Local"] * 6 + ["Global"] * 6, local_mixer=[[7, 11]] * 3,
                 last_stage=True, prenorm=False)
    neck = SequenceEncoder(bb.out_channels, "reshape")
    return (OCRModel(bb, neck, CTCHead(neck.out_channels, REC_CLASSES), transform=stn),
            image(3, 32, 128, n=1))


def text_cls():
    """The text direction classifier (cls_mv3.yml): rec MobileNetV3 small x0.35, ClsHead with 2
    classes (0 and 180 degrees), on its input shape 3x48x192."""
    _ppocr()
    from ppocr.modeling.backbones.rec_mobilenet_v3 import MobileNetV3
    from ppocr.modeling.heads.cls_head import ClsHead
    bb = MobileNetV3(in_channels=3, model_name="small", scale=0.35)
    return OCRModel(bb, None, ClsHead(bb.out_channels, 2)), image(3, 48, 192, n=1)


FAMILIES = {
    # name: (builder, where the architecture comes from)
    "mobilenet_v1": (cls("MobileNetV1"), "paddleclas ppcls MobileNetV1"),
    "mobilenet_v2": (cls("MobileNetV2"), "paddleclas ppcls MobileNetV2"),
    "mobilenet_v3": (cls("MobileNetV3_large_x1_0"), "paddleclas ppcls MobileNetV3_large_x1_0"),
    "pp_lcnet": (cls("PPLCNet_x1_0"), "paddleclas ppcls PPLCNet_x1_0"),
    "resnet50_vd": (cls("ResNet50_vd"), "paddleclas ppcls ResNet50_vd"),
    "pp_hgnet": (cls("PPHGNet_tiny"), "paddleclas ppcls PPHGNet_tiny"),
    "pp_liteseg": (seg("pp_liteseg"), "paddleseg PPLiteSeg(num_classes=4, backbone=STDC1())"),
    "unet": (seg("unet"), "paddleseg UNet(num_classes=4)"),
    "yolov3": (yolov3, "paddledet YOLOv3, MobileNetV1 backbone, YOLOv3FPN, YOLOv3Head, "
               "YOLOBox + MultiClassNMS (yolov3_mobilenet_v1), 4 classes"),
    "ppyoloe": (ppyoloe, "paddledet PP-YOLOE-s (CSPResNet, CustomCSPPAN, PPYOLOEHead with "
                "MultiClassNMS), 4 classes"),
    "picodet": (picodet, "paddledet PicoDet-S: LCNet x0.75, LCPAN, PicoHeadV2 with "
                "MultiClassNMS (picodet_s_416_coco_lcnet), 4 classes"),
    "ssd": (ssd, "paddledet SSD, MobileNetV1 with extra blocks, SSDHead (prior_box anchors), "
            "SSDBox (box_coder) + MultiClassNMS (ssd_mobilenet_v1_300_120e_voc), 4 classes"),
    "blazeface": (blazeface, "paddledet BlazeFace: BlazeNet, BlazeNeck, FaceHead, SSDBox + "
                  "MultiClassNMS (blazeface_1000e)"),
    "ernie3_tiny": (ernie, "paddlenlp ErnieForSequenceClassification, ernie-3.0-tiny-micro's "
                    "shape, vocab 1000"),
    "db_det": (db_det("RSEFPN"), "PaddleOCR commit %s PP-OCRv3 det student: det_mobilenet_v3."
               "MobileNetV3(large, 0.5, disable_se), RSEFPN(96, shortcut), DBHead(k=50)"
               % PADDLEOCR_COMMIT),
    "db_det_dbfpn": (db_det("DBFPN"), "PaddleOCR commit %s PP-OCRv2 det: det_mobilenet_v3."
                     "MobileNetV3(large, 0.5, disable_se), DBFPN(96), DBHead(k=50)"
                     % PADDLEOCR_COMMIT),
    "crnn_rec": (crnn_rec, "PaddleOCR commit %s CRNN (PP-OCR mobile v2.0 rec): rec_mobilenet_v3."
                 "MobileNetV3(small, 0.5, small_stride [1,2,2,2]), SequenceEncoder(rnn, 48), "
                 "CTCHead(97)" % PADDLEOCR_COMMIT),
    "ppocrv3_rec": (svtr_lcnet_rec(3), "PaddleOCR commit %s PP-OCRv3 rec (SVTR_LCNet): "
                    "MobileNetV1Enhance(0.5), MultiHead(CTCHead(97) with SequenceEncoder(svtr, "
                    "64, depth 2, 120), SARHead)" % PADDLEOCR_COMMIT),
    "ppocrv4_rec": (svtr_lcnet_rec(4), "PaddleOCR commit %s PP-OCRv4 rec (SVTR_LCNet): "
                    "PPLCNetV3(0.95, repped), MultiHead(CTCHead(97) with SequenceEncoder(svtr, "
                    "120, depth 2, 120, kernel [1,3]), NRTRHead)" % PADDLEOCR_COMMIT),
    "svtr_rec": (svtr_rec, "PaddleOCR commit %s SVTR-Tiny (rec_svtrnet.yml): STN_ON (TPS, 20 "
                 "control points), SVTRNet(img_size [32,100], out_char_num 25), "
                 "SequenceEncoder(reshape), CTCHead(97)" % PADDLEOCR_COMMIT),
    "text_cls": (text_cls, "PaddleOCR commit %s text direction classifier: rec_mobilenet_v3."
                 "MobileNetV3(small, 0.35), ClsHead(2)" % PADDLEOCR_COMMIT),
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
    # Paddle 3.3's nn.LSTM/GRU keep their dropout state as a tensor never allocated, whose place
    # to_static cannot read in legacy mode ("Unknown place type: Place(undefined:0)"): give it
    # an empty one of the same name (which keeps it out of the saved parameters; the state is an
    # output of the rnn op, unused in inference).
    for layer in model.sublayers():
        if isinstance(layer, paddle.nn.layer.rnn.RNNBase):
            state = paddle.zeros([0], "uint8")
            state.name = layer._dropout_state.name
            layer._dropout_state = state
    static = paddle.jit.to_static(model, input_spec=spec, full_graph=True)
    prefix = os.path.join(d, "inference")
    paddle.jit.save(static, prefix)
    os.remove(prefix + ".pdiparams.info")
    paddle_strip.strip(prefix + ".pdmodel")  # op_callstack names this machine's folders
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
        outs = exe.run(prog, feed={n: feeds[n] for n in feed_names}, fetch_list=fetch_targets,
                       return_numpy=False)
        outs = [np.array(o) for o in outs]
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
    global SIZE
    if argv[:1] == ["--list"]:
        print("\n".join(FAMILIES))
        return
    size = []
    if argv[:1] == ["--size"] and len(argv) > 1:
        size, argv = argv[:2], argv[2:]
        h, _, w = size[1].partition("x")
        SIZE = (int(h), int(w)) if w else int(h)
    outdir = argv[0] if argv else os.path.join(os.path.dirname(__file__), "..", "tests",
                                               "interop", "zoo")
    names = argv[1:] or list(FAMILIES)
    if len(names) > 1:
        # One process per family: the names Paddle generates (parameters, temporaries, and the
        # eager_tmp_N of tensors a model makes itself, whose counter no guard resets) then do not
        # depend on which families ran before it.
        import subprocess
        for n in names:
            subprocess.run([sys.executable, os.path.abspath(__file__)] + size + [outdir, n],
                           check=True)
        return
    patch_legacy()
    export(names[0], outdir)


if __name__ == "__main__":
    main(sys.argv[1:])
