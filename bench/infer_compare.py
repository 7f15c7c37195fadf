#!/usr/bin/env python3
"""infer_compare.py -- inference of the field's model families (tests/interop/zoo/NAME, with the
parameters their weights.txt makes; or the small models of tests/interop/NAME: mlp, lenet,
cnn_bn, transformer, lstm1) timed in pdlang (`pdlang bench`), Paddle Inference (plain
and with oneDNN), ONNX Runtime (the model converted by paddle2onnx at opset 17) and OpenVINO
(which reads the .pdmodel itself; in float32: on this CPU it would pick bfloat16), in the same run, each in a process of its own (its peak
resident memory is the process's), at the same batch and number of threads. Every framework's
outputs are first checked against pdlang's (`pdlang exec`, 1e-4 relative); then the median and
p90 latency of --runs calls after --warmup calls, the first call's time (the load and the first
inference), and the peak memory; the ratios are pdlang's median over each other's (above 1:
pdlang is faster). pdlang runs first: a run measured right after another framework's measured
slower here.

A call is what a server does per request in each: pdlang bench times pd_model_feed + run (the
outputs left in the fetch list); the others copy the input in, run, and copy the outputs out,
from Python, their binding's per-call floor taken off their figures: the median of calls of
a one-op model made the same way in the same process (ONNX Runtime ~6 us here, Paddle ~22,
OpenVINO ~33), after the model's own runs and peak memory.

    PY_PADDLE=/path/venv-with-paddle+paddle2onnx/bin/python \\
    PY_BENCH=/path/venv-with-onnxruntime+openvino/bin/python \\
      python3 bench/infer_compare.py BUILD_DIR [--models a,b] [--batches 1,16] [--runs N]
                                               [--size field|zoo] [--work DIR]

BUILD_DIR is the build folder (its pdlang and tests/interop/test_interop, which writes a
family's program and parameters with --zoo-params). Without PY_PADDLE or PY_BENCH those
frameworks are left out, with the reason.
"""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)


def make_call(kind, model_dir, inputs, threads):
    """A call of the model in model_dir (inference.pdmodel, or model.onnx for ONNX Runtime) in
    framework `kind`, as a server makes one: the inputs copied in, the run, the outputs copied
    out. Returns a function that makes it and returns the outputs."""
    pdmodel = os.path.join(model_dir, "inference.pdmodel")
    pdiparams = os.path.join(model_dir, "inference.pdiparams")
    if kind.startswith("paddle"):
        import paddle.inference as pi
        config = pi.Config(pdmodel, pdiparams)
        config.disable_gpu()
        config.set_cpu_math_library_num_threads(threads)
        if kind == "paddle-onednn":
            config.enable_mkldnn()
        else:
            config.disable_mkldnn()
        config.disable_glog_info()
        pred = pi.create_predictor(config)
        names = pred.get_input_names()

        def call():
            for n in names:
                pred.get_input_handle(n).copy_from_cpu(inputs[n])
            pred.run()
            return [pred.get_output_handle(o).copy_to_cpu() for o in pred.get_output_names()]
        return call
    if kind == "onnxruntime":
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so,
                                    providers=["CPUExecutionProvider"])

        def call():
            return sess.run(None, {i.name: inputs[i.name] for i in sess.get_inputs()})
        return call
    if kind == "openvino":
        import openvino as ov
        core = ov.Core()
        compiled = core.compile_model(core.read_model(pdmodel), "CPU",
                                      {"INFERENCE_NUM_THREADS": threads,
                                       "PERFORMANCE_HINT": "LATENCY",
                                       # on CPUs with AVX512-BF16 it computes in bf16 unless told
                                       "INFERENCE_PRECISION_HINT": "f32"})
        req = compiled.create_infer_request()
        names = [i.get_any_name() for i in compiled.inputs]

        def call():
            req.infer({n: inputs[n] for n in names})
            return [req.get_output_tensor(i).data.copy() for i in range(len(compiled.outputs))]
        return call
    raise SystemExit("unknown framework " + kind)


def latencies_ms(call, runs):
    """The sorted latencies (ms) of runs calls."""
    lat = []
    for _ in range(runs):
        s = time.perf_counter()
        call()
        lat.append((time.perf_counter() - s) * 1e3)
    lat.sort()
    return lat


def child(kind, model_dir, feeds, runs, warmup, threads, floor_dir):
    """Time one framework in this process; print one JSON line. With floor_dir (a one-op model,
    make_floor's), also the median of FLOOR_RUNS calls of that model, made the same way: the
    binding's per-call cost, which the driver takes off the figures."""
    inputs = {n: np.load(f) for n, f in feeds}
    t0 = time.perf_counter()
    call = make_call(kind, model_dir, inputs, threads)
    outs = call()
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(warmup):
        call()
    lat = latencies_ms(call, runs)
    rss = peak_rss_mib()  # before the floor model's
    floor = None
    if floor_dir:
        try:
            one = make_call(kind, floor_dir, {"x": np.ones([1, 1], np.float32)}, threads)
            for _ in range(FLOOR_RUNS // 10):
                one()
            fl = latencies_ms(one, FLOOR_RUNS)
            floor = fl[len(fl) // 2]
        except Exception as e:  # the figures stay, with the floor inside (the row says so)
            print("floor: %s" % e, file=sys.stderr)
    out_file = os.path.join(model_dir, "out_%s.npy" % kind)
    np.save(out_file, np.asarray(outs[0]))
    print(json.dumps({"median": lat[len(lat) // 2], "p90": lat[min(len(lat) - 1, int(0.9 * len(lat)))],
                      "first": first, "rss_mib": rss, "floor": floor,
                      "out": out_file}))


# The calls of the one-op model a framework's per-call floor is the median of.
FLOOR_RUNS = 2000

# The one-op model (a [1, 1] input times a [1, 1] parameter, matmul_v2, which OpenVINO reads
# and Fluid's mul it does not) whose call measures a framework's per-call floor, saved by
# PaddlePaddle in the legacy format and converted by paddle2onnx.
FLOOR_SCRIPT = """
import os, sys
os.environ["FLAGS_enable_pir_api"] = "0"
import paddle
paddle.enable_static()
main, startup = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, startup):
    x = paddle.static.data("x", [1, 1], "float32")
    w = paddle.static.create_parameter([1, 1], "float32")
    block = main.current_block()  # the op appended directly: 3.x's matmul refuses a Variable
    y = block.create_var(name="y", dtype="float32", shape=[1, 1])
    block.append_op(type="matmul_v2", inputs={"X": [x], "Y": [w]}, outputs={"Out": [y]},
                    attrs={"trans_x": False, "trans_y": False})
exe = paddle.static.Executor(paddle.CPUPlace())
exe.run(startup)
paddle.static.save_inference_model(os.path.join(sys.argv[1], "inference"), [x], [y], exe,
                                   program=main)
"""


def to_onnx(py_paddle, d):
    """paddle2onnx (opset 17) of d's inference.pdmodel into d/model.onnx; its CompletedProcess."""
    return subprocess.run([py_paddle, "-m", "paddle2onnx.command", "--model_dir", d,
                           "--model_filename", "inference.pdmodel",
                           "--params_filename", "inference.pdiparams",
                           "--save_file", os.path.join(d, "model.onnx"),
                           "--opset_version", "17"], capture_output=True, text=True)


def make_floor(py_paddle, work):
    """The floor model in work/floor (inference.pdmodel, .pdiparams and model.onnx), made once;
    its folder, or None (and why) where it could not be made."""
    d = os.path.join(work, "floor")
    if os.path.exists(os.path.join(d, "model.onnx")):
        return d, None
    os.makedirs(d, exist_ok=True)
    p = subprocess.run([py_paddle, "-c", FLOOR_SCRIPT, d], capture_output=True, text=True)
    if p.returncode == 0:
        p = to_onnx(py_paddle, d)
    if p.returncode != 0 or not os.path.exists(os.path.join(d, "model.onnx")):
        return None, ((p.stderr + p.stdout).strip().splitlines() or ["?"])[-1][:120]
    return d, None


def peak_rss_mib():
    """VmHWM, which starts afresh at exec; ru_maxrss keeps the peak of the forked parent (this
    driver, which holds the inputs) from before it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_quiet(args, env=None):
    """args run to its end in a session of its own, without a core dump, and then every process
    of that session gone (30 s at most, then killed): a failed framework's crash (its core dump,
    helper processes it left) once ran on beside the next model's timing (ERNIE at batch 16 198
    ms right after OpenVINO's PicoDet process failed, 140 ms alone). Returns the
    CompletedProcess."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    out, err = p.communicate()
    deadline = time.monotonic() + 30
    while True:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        if time.monotonic() > deadline:
            os.killpg(p.pid, signal.SIGKILL)
            break
        time.sleep(0.1)
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def pdlang_bench(build, model_dir, feeds, runs, warmup, threads):
    args = [os.path.join(build, "pdlang"), "bench", os.path.join(model_dir, "inference.pdmodel"),
            "--runs", str(runs), "--warmup", str(warmup), "--threads", str(threads)]
    for n, f in feeds:
        args += ["--feed", "%s=%s" % (n, f)]
    p = run_quiet(args)
    p.check_returncode()
    text = p.stdout
    r = {}
    for line in text.splitlines():
        w = line.replace(",", "").split()
        if line.startswith("load and first run:"):
            r["first"] = float(w[4])
        elif line.startswith("latency over"):
            r["median"] = float(w[w.index("median") + 1])
            r["p90"] = float(w[w.index("p90") + 1])
        elif line.startswith("peak resident memory:"):
            r["rss_mib"] = float(w[3])
    out_dir = os.path.join(model_dir, "pdlang_out")
    exec_args = [os.path.join(build, "pdlang"), "exec", os.path.join(model_dir, "inference.pdmodel"),
                 "--out", out_dir] + args[args.index("--threads") + 2:]
    subprocess.run(exec_args, capture_output=True, text=True, check=True)
    r["outs"] = sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir))
    return r


# The input sizes the field serves these families at (the performance issue's list), which
# tools/paddle_zoo.py --size exports them at; --size zoo keeps the tests' small sizes (64x64
# images, 16 tokens), where per-op costs dominate.
FIELD_SIZES = {"db_det": (640, 640), "db_det_dbfpn": (640, 640), "crnn_rec": (48, 320),
               "svtr_rec": (48, 320), "ppocrv3_rec": (48, 320), "ppocrv4_rec": (48, 320),
               "text_cls": (48, 192), "mobilenet_v1": (224, 224), "mobilenet_v2": (224, 224),
               "mobilenet_v3": (224, 224), "pp_lcnet": (224, 224), "pp_hgnet": (224, 224),
               "resnet50_vd": (224, 224), "picodet": (320, 320), "ppyoloe": (320, 320),
               "pp_liteseg": (512, 512), "unet": (512, 512), "ernie3_tiny": 128}


def agrees(a, b, rel=1e-4):
    """The same values; for a detector's [N, 6] boxes (class, score, x0, y0, x1, y1), the same
    classes and scores in order with boxes of tied scores in any order: a random-weight model
    gives many boxes one score, and each framework keeps its own pick of them at the cut."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    close = lambda x, y: bool(np.all(np.abs(x - y) <= 1e-5 + rel * np.abs(y)))
    if close(a, b):
        return True
    if a.ndim != 2 or a.shape[1] != 6 or not close(a[:, :2], b[:, :2]):
        return False
    _, first, count = np.unique(b[:, 1], return_index=True, return_counts=True)
    alone = first[count == 1]  # the boxes of a score no other box has: the same box
    return close(a[alone], b[alone])


def main(argv):
    if argv[:1] == ["--child"]:
        kind, model_dir, runs, warmup, threads = argv[1], argv[2], int(argv[3]), int(argv[4]), int(argv[5])
        feeds = [tuple(a.split("=", 1)) for a in argv[6:]]
        child(kind, model_dir, feeds, runs, warmup, threads, os.environ.get("FLOOR_DIR"))
        return
    build = os.path.abspath(argv[0])
    opts = dict(zip(argv[1::2], argv[2::2]))
    models = opts.get("--models", "mobilenet_v3,pp_lcnet,resnet50_vd,db_det,ernie3_tiny").split(",")
    batches = [int(b) for b in opts.get("--batches", "1,16").split(",")]
    runs, warmup, threads = int(opts.get("--runs", "50")), int(opts.get("--warmup", "5")), 2
    for tool in ("pdlang", os.path.join("tests", "interop", "test_interop")):
        if not os.access(os.path.join(build, tool), os.X_OK):  # test_interop is a check program
            sys.exit("infer_compare.py: %s has no %s: build it first (make -C %s %s)"
                     % (build, tool, build, tool))
    py_paddle, py_bench = os.environ.get("PY_PADDLE"), os.environ.get("PY_BENCH")
    # the field's sizes need Paddle to export the families again (tools/paddle_zoo.py --size)
    field = opts.get("--size", "field") == "field" and bool(py_paddle)
    # --work DIR keeps the exports and the runs' files there (and reuses the exports on the
    # next run); without it they go to a temporary folder removed at the end
    keep = "--work" in opts
    work = os.path.abspath(opts["--work"]) if keep else tempfile.mkdtemp(prefix="pd-infer-")
    os.makedirs(work, exist_ok=True)
    floor_dir, why = make_floor(py_paddle, work) if py_paddle else (None, "no PY_PADDLE")
    print("threads %d, %d runs after %d warm-up, %s input sizes; median / p90 / first call ms, "
          "peak MiB; ratio = other's median / pdlang's"
          % (threads, runs, warmup, "the field's" if field else "the tests'"))
    if floor_dir:
        print("the others' median and p90 less their binding's per-call floor from Python (the "
              "median of %d calls of a one-op model made the same way in the same process), "
              "shown in us as floor" % FLOOR_RUNS)
    else:
        print("the others' figures include their binding's per-call cost from Python (no "
              "one-op model to measure it: %s)" % why)
    try:
        for name in models:
            zoo = os.path.join(SRC, "tests", "interop", "zoo", name)
            for batch in batches:
                d = os.path.join(work, "%s-b%d" % (name, batch))
                shutil.rmtree(d, ignore_errors=True)  # a kept folder's earlier run
                src = zoo
                small = os.path.join(SRC, "tests", "interop", name)
                if not os.path.isdir(zoo) and os.path.isfile(os.path.join(small, "model.pdmodel")):
                    # one of the small models Paddle saved for the interop tests (mlp, lenet,
                    # cnn_bn, transformer, lstm1): its program and parameters as they are
                    src = small
                    os.makedirs(d)
                    for f in ("pdmodel", "pdiparams"):
                        shutil.copy(os.path.join(small, "model." + f), os.path.join(d, "inference." + f))
                elif field and FIELD_SIZES.get(name):
                    # the family exported again at the field's input size, with its reference inputs
                    size = FIELD_SIZES[name]
                    src = os.path.join(work, "export", name)
                    if not os.path.isdir(src):
                        subprocess.run([py_paddle, os.path.join(SRC, "tools", "paddle_zoo.py"),
                                        "--size", "%dx%d" % size if isinstance(size, tuple) else str(size),
                                        os.path.dirname(src), name], check=True, capture_output=True)
                    shutil.copytree(src, d)
                    subprocess.run([os.path.join(build, "tests", "interop", "test_interop"),
                                    "--zoo-params", d], check=True, capture_output=True)
                else:
                    subprocess.run([os.path.join(build, "tests", "interop", "test_interop"),
                                    "--zoo-params", name, d], check=True, capture_output=True,
                                   env=dict(os.environ, top_srcdir=SRC))
                feeds = []
                for f in sorted(os.listdir(src)):
                    if f.startswith("in_") and f.endswith(".npy"):
                        x = np.load(os.path.join(src, f))
                        x = np.concatenate([x] * ((batch + len(x) - 1) // len(x)))[:batch]
                        np.save(os.path.join(d, f), x)
                        feeds.append((f[3:-4], os.path.join(d, f)))
                rows = {"pdlang": pdlang_bench(build, d, feeds, runs, warmup, threads)}
                ref = np.load(rows["pdlang"]["outs"][0]) if rows["pdlang"]["outs"] else None
                kinds = []
                if py_paddle:
                    kinds += [("paddle", py_paddle), ("paddle-onednn", py_paddle)]
                    conv = to_onnx(py_paddle, d)
                    if conv.returncode != 0 or not os.path.exists(os.path.join(d, "model.onnx")):
                        # its error, not the last of Paddle's log lines that follow it
                        lines = (conv.stdout + conv.stderr).strip().splitlines() or ["?"]
                        errs = [l for l in lines if "ERROR" in l or "Error" in l] or lines
                        msg = errs[-1].split("]", 1)[-1].strip() if "[ERROR]" in errs[-1] else errs[-1]
                        rows["onnxruntime"] = {"error": "paddle2onnx: " + msg[:120]}
                if py_bench:
                    if "onnxruntime" not in rows:
                        kinds.append(("onnxruntime", py_bench))
                    kinds.append(("openvino", py_bench))
                for kind, py in kinds:
                    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
                    if floor_dir:
                        env["FLOOR_DIR"] = floor_dir
                    p = run_quiet([py, os.path.abspath(__file__), "--child", kind, d, str(runs),
                                   str(warmup), str(threads)] + ["%s=%s" % f for f in feeds],
                                  env=env)
                    if p.returncode != 0:
                        rows[kind] = {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
                        continue
                    r = json.loads(p.stdout.strip().splitlines()[-1])
                    r["same"] = ref is not None and agrees(np.load(r["out"]), ref)
                    if r.get("floor"):
                        r["median"] -= r["floor"]
                        r["p90"] -= r["floor"]
                    rows[kind] = r
                print("\n%s, batch %d, %s:" % (name, batch, " ".join(
                    "%s %s" % (n, "x".join(map(str, np.load(f).shape))) for n, f in feeds)))
                base = rows["pdlang"]["median"]
                for kind, r in rows.items():
                    if "error" in r:
                        print("  %-14s %s" % (kind, r["error"]))
                        continue
                    note = "" if kind == "pdlang" else ("  %.2fx%s%s" % (
                        r["median"] / base,
                        ("  floor %.0f us" % (r["floor"] * 1e3) if r.get("floor")
                         else "  floor not measured" if floor_dir else ""),
                        "" if r.get("same") else "  OUTPUTS DIFFER"))
                    print("  %-14s %9.3f %9.3f %9.1f %8.1f%s" % (kind, r["median"], r["p90"], r["first"], r["rss_mib"], note))
                sys.stdout.flush()

    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)

if __name__ == "__main__":
    main(sys.argv[1:])
