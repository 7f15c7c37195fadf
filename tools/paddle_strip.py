#!/usr/bin/env python3
"""paddle_strip.py -- remove the op_callstack attribute from every op of a saved Fluid program
(a .pdmodel or __model__ file), in place. PaddlePaddle records there the Python stack that built
each op: the saving machine's folders (the script's path, the venv's site-packages), which no
file of the tree should name. Nothing else of the program changes: the other attributes, the
vars and the op order are written back as they were read, and the parameters are not touched.
tools/paddle_models.py and tools/paddle_zoo.py call strip() on what they save; run it on files
saved before:

    PYTHON tools/paddle_strip.py FILE...

PYTHON: one with paddlepaddle (its framework_pb2, the ProgramDesc schema).
"""
import os
import sys

from paddle.base.proto import framework_pb2


def strip(path):
    """Remove op_callstack from every op of the program in path; returns how many were removed."""
    prog = framework_pb2.ProgramDesc()
    with open(path, "rb") as f:
        prog.ParseFromString(f.read())
    removed = 0
    for block in prog.blocks:
        for op in block.ops:
            keep = [a for a in op.attrs if a.name != "op_callstack"]
            if len(keep) != len(op.attrs):
                removed += len(op.attrs) - len(keep)
                del op.attrs[:]
                op.attrs.extend(keep)
    if removed:
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "wb") as f:
            f.write(prog.SerializeToString())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    return removed


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        print("%s: %d op_callstack attributes removed" % (path, strip(path)))


if __name__ == "__main__":
    main()
