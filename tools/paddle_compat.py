#!/usr/bin/env python3
"""paddle_compat.py -- derive vm/ops/compat_paddle.txt from PaddlePaddle's own op definitions.

    python3 tools/paddle_compat.py OP_COMPAT_YAML COMMIT > vm/ops/compat_paddle.txt

OP_COMPAT_YAML is PaddlePaddle's paddle/phi/ops/yaml/op_compat.yaml (kept outside the tree; the
build cannot reach Paddle's sources, so the derived list is committed), COMMIT the commit it was
read at. Needs PyYAML. The list says, per Fluid op:
  name  FLUID PHI                        the Fluid op and the phi op it became
  attr  FLUID NAME TYPE DEFAULT SOURCE   an attribute some version or backend writes beyond the
                                         op's signature (op_compat.yaml's `extra: attrs`)
  input FLUID SLOT SOURCE                an optional input slot Paddle may write bound to no var:
                                         `extra: inputs`, and the run-time tensor forms of
                                         attributes (`int_array`/`scalar`: tensor_name,
                                         tensors_name)
  output FLUID SLOT SOURCE               an output only some versions write (`extra: outputs`)
TYPE is Fluid's AttrType name (BOOLEAN, INT, LONG, FLOAT, STRING, INTS, LONGS, FLOATS,
STRINGS); DEFAULT is Paddle's default as one token ("" quoted, {} an empty list). SOURCE names
a `source` line of the header. Older releases' OpMakers (paddle/fluid/operators/*_op.cc) wrote
attributes and slots op_compat.yaml no longer lists; OPMAKERS below adds them, each with the
file and commit it was read from. tests/vm/ops/test_compat.c checks vm/ops/compat.c against the
list: every extra attribute and slot of every op pdlang has is the op's own or has a fact.
"""
import re
import sys

import yaml

TYPES = {
    "bool": "BOOLEAN", "int": "INT", "int64_t": "LONG", "float": "FLOAT", "double": "FLOAT64",
    "str": "STRING", "int[]": "INTS", "int64_t[]": "LONGS", "float[]": "FLOATS",
    "str[]": "STRINGS", "bool[]": "BOOLEANS",
}

# What older OpMakers add beyond op_compat.yaml: source key -> (path, commit), then the lines.
OPMAKER_SOURCES = {
    "conv_op": ("paddle/fluid/operators/conv_op.cc", "8b501f694b91169155370003b18368f54d366304"),
    "lookup_table_op": ("paddle/fluid/operators/lookup_table_op.cc",
                        "2c470f5a4840b2c4094256981ed6c27ca3bc8785"),
    "matmul_op": ("paddle/fluid/operators/matmul_op.cc",
                  "27cebd7d419cc85fcdce3dc4115aaeadcfbe2c81"),
    "matmul_v2_op": ("paddle/fluid/operators/matmul_v2_op.cc",
                     "464a640271a51e17924f7420c1c2fd8d559d5d5b"),
}
# Conv2DOpMaker (conv2d and depthwise_conv2d): the fused-ReLU6 flags of the oneDNN kernel and
# the dispensable, extra Bias / ResidualData inputs.
_CONV2D = [
    ("attr", "fuse_relu", "BOOLEAN", "false"), ("attr", "fuse_brelu", "BOOLEAN", "false"),
    ("attr", "fuse_brelu_threshold", "FLOAT", "6.0"),
    ("attr", "fuse_activation", "STRING", '""'), ("attr", "fuse_alpha", "FLOAT", "0.0"),
    ("attr", "fuse_beta", "FLOAT", "0.0"), ("attr", "fuse_residual_connection", "BOOLEAN", "false"),
    ("attr", "fuse_relu_before_depthwise_conv", "BOOLEAN", "false"),
    ("attr", "use_quantizer", "BOOLEAN", "false"), ("attr", "Scale_in", "FLOAT", "1.0"),
    ("attr", "Scale_out", "FLOAT", "1.0"), ("attr", "Scale_in_eltwise", "FLOAT", "1.0"),
    ("attr", "Scale_weights", "FLOATS", "{1.0}"),
    ("input", "Bias"), ("input", "ResidualData"),
]
OPMAKERS = {
    "conv_op": {"conv2d": _CONV2D, "depthwise_conv2d": _CONV2D},
    # LookupTableOpMaker: the parameter-server attributes of distributed training.
    "lookup_table_op": {"lookup_table": [
        ("attr", "is_sparse", "BOOLEAN", "false"), ("attr", "is_distributed", "BOOLEAN", "false"),
        ("attr", "padding_idx", "LONG", "-1"), ("attr", "remote_prefetch", "BOOLEAN", "false"),
        ("attr", "entry_config", "STRING", '""'), ("attr", "is_test", "BOOLEAN", "false"),
        ("attr", "entry", "STRING", '"none"'), ("attr", "table_class", "STRING", '"none"'),
        ("attr", "table_names", "STRINGS", "{}"), ("attr", "trainer_id", "INT", "0"),
        ("attr", "grad_inplace", "BOOLEAN", "false"), ("attr", "epmap", "STRINGS", "{}"),
        ("attr", "height_sections", "LONGS", "{}"),
    ]},
    # MatMulOpMaker of Paddle 2.x (Fluid's matmul): the oneDNN passes' fused reshapes and
    # transposes, and head_number, which builds with MKLML (and no CUDA) write.
    "matmul_op": {"matmul": [
        ("attr", "use_mkldnn", "BOOLEAN", "false"),
        ("attr", "fused_reshape_X", "INTS", "{}"), ("attr", "fused_reshape_Y", "INTS", "{}"),
        ("attr", "fused_transpose_X", "INTS", "{}"), ("attr", "fused_transpose_Y", "INTS", "{}"),
        ("attr", "fused_reshape_Out", "INTS", "{}"), ("attr", "fused_transpose_Out", "INTS", "{}"),
        ("attr", "use_quantizer", "BOOLEAN", "false"),
        ("attr", "mkldnn_data_type", "STRING", '"float32"'),
        ("attr", "Scale_x", "FLOAT", "1.0"), ("attr", "Scale_y", "FLOAT", "1.0"),
        ("attr", "Scale_out", "FLOAT", "1.0"), ("attr", "force_fp32_output", "BOOLEAN", "false"),
        ("attr", "head_number", "INT", "1"),
    ]},
    # MatMulV2OpMaker of Paddle 2.x: the reshapes and transposes Paddle's oneDNN passes fused
    # in (PaddleOCR's released mobile v2 direction classifier carries them, empty).
    "matmul_v2_op": {"matmul_v2": [
        ("attr", "fused_reshape_Out", "INTS", "{}"), ("attr", "fused_transpose_Out", "INTS", "{}"),
        ("attr", "use_mkldnn", "BOOLEAN", "false"),
        ("attr", "mkldnn_data_type", "STRING", '"float32"'),
        ("attr", "fused_reshape_X", "INTS", "{}"), ("attr", "fused_reshape_Y", "INTS", "{}"),
        ("attr", "fused_transpose_X", "INTS", "{}"), ("attr", "fused_transpose_Y", "INTS", "{}"),
    ]},
}


def split_names(text):
    """'add (elementwise_add)' -> ('add', 'elementwise_add'); 'abs' -> ('abs', 'abs')."""
    m = re.fullmatch(r"\s*([\w.]+)\s*(?:\(\s*([\w.]+)\s*\))?\s*", text)
    if not m:
        raise ValueError("cannot read op name %r" % text)
    return m.group(1), m.group(2) or m.group(1)


def parse_attr(text):
    """'bool use_mkldnn = false' -> ('use_mkldnn', 'BOOLEAN', 'false')."""
    m = re.fullmatch(r"\s*([\w:]+(?:\[\])?)\s+(\w+)\s*(?:=\s*(.*?))?\s*", text)
    if not m or m.group(1) not in TYPES:
        raise ValueError("cannot read attribute %r" % text)
    default = (m.group(3) or "").replace(" ", "")
    default = re.sub(r"(\d)f\b", r"\1", default)  # 1.0f -> 1.0
    if default.startswith("phi::"):
        default = default.rsplit("::", 1)[1]
    return m.group(2), TYPES[m.group(1)], default or "?"


def slot_map(entry, key):
    """The phi -> Fluid slot names of entry[key] (inputs or outputs)."""
    v = entry.get(key) or {}
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else {}


def derive(path):
    with open(path, encoding="utf-8") as f:
        entries = yaml.safe_load(f)
    ops = {}  # fluid -> {"phi": name, "lines": [...]}
    for e in entries:
        phi, fluid = split_names(str(e["op"]))
        op = ops.setdefault(fluid, {"phi": phi, "lines": []})
        lines = op["lines"]
        ins, outs = slot_map(e, "inputs"), slot_map(e, "outputs")
        extra = e.get("extra") or {}
        for a in extra.get("attrs") or []:
            name, typ, default = parse_attr(str(a))
            lines.append(("attr", name, typ, default, "yaml"))
        for s in extra.get("inputs") or []:
            lines.append(("input", ins.get(str(s), str(s)), "yaml"))
        for s in extra.get("outputs") or []:
            lines.append(("output", outs.get(str(s), str(s)), "yaml"))
        for kind in ("int_array", "scalar"):
            for cfg in (e.get(kind) or {}).values():
                for key in ("tensor_name", "tensors_name"):
                    if isinstance(cfg, dict) and cfg.get(key):
                        lines.append(("input", str(cfg[key]), "yaml"))
    for src, table in OPMAKERS.items():
        for fluid, items in table.items():
            op = ops.setdefault(fluid, {"phi": fluid, "lines": []})
            for it in items:
                op["lines"].append(tuple(it) + (src,))
    return ops


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: paddle_compat.py OP_COMPAT_YAML COMMIT\n")
        return 2
    ops = derive(argv[1])
    out = sys.stdout
    out.write("# compat_paddle.txt -- what PaddlePaddle's own definitions say its Fluid ops may "
              "carry beyond\n# their signature: written by tools/paddle_compat.py (which says "
              "the format); do not edit.\n")
    out.write("source yaml paddle/phi/ops/yaml/op_compat.yaml %s\n" % argv[2])
    for key, (p, c) in sorted(OPMAKER_SOURCES.items()):
        out.write("source %s %s %s\n" % (key, p, c))
    for fluid in sorted(ops):
        op = ops[fluid]
        out.write("name %s %s\n" % (fluid, op["phi"]))
        seen = set()
        for line in op["lines"]:
            key = line[:2]  # (kind, name): the first source that lists it wins
            if key in seen:
                continue
            seen.add(key)
            if line[0] == "attr":
                out.write("attr %s %s %s %s %s\n" % ((fluid,) + line[1:]))
            else:
                out.write("%s %s %s %s\n" % (line[0], fluid, line[1], line[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
