"""polydnn run against ONNX Runtime on torchvision's models (issue 17).

Exports each model (random initial weights, eval mode; nothing is
downloaded) with Debian's torch, then for each batch times `polydnn run
--iters N` on a device (after a tuning run with POLYDNN_TUNING=search
unless --no-tune) and ONNX Runtime's CPU provider with intra-op threads =
the cores, in alternation, and prints a Markdown table: ms per batch,
images/s, the ratio polydnn / ONNX Runtime, the convolution and matmul
GFLOP/s of each and the % of the device's measured FMA peak polydnn
reaches, and the time to load the model: polydnn's import (parse, fold,
plan; best of the rounds, each a fresh process) beside the creation of
ONNX Runtime's session (load and optimize; best of the rounds); then the
geomean of the ratios.

Usage: bench_onnx_models.py POLYDNN_TOOL [--device D] [--layout NCHW|NHWC] [--iters N]
       [--rounds R] [--batches 1,8] [--models a,b] [--no-tune]
Run with a Python that has onnx, onnxruntime and torchvision (the CI's
venv: /opt/pdnn-ort/bin/python).
"""
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_weights import export_onnx, torchvision_model  # noqa: E402 (tests/, shared with the checks)

# Untimed runs before each timing, on both sides: polydnn's first run builds
# kernels and packs frozen filters, and its second can still write fresh
# device memory (PoCL makes a buffer's pages when they are first written);
# each polydnn round is a new process, while ONNX Runtime's session lives
# through all rounds.
WARMUP = 2
MODELS = ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "googlenet", "vgg16")


def arg(name, default):
    for a in sys.argv:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    if name in sys.argv:
        i = sys.argv.index(name)
        if i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return default


def export(name, path):
    export_onnx(torchvision_model(name), path, 224)


def model_flops(path, batch):
    """2 per multiply-add of every Conv, Gemm and MatMul at this batch."""
    m = onnx.load(path)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = batch
    m = onnx.shape_inference.infer_shapes(m)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    inits = {t.name: list(t.dims) for t in m.graph.initializer}
    total = 0.0
    for n in m.graph.node:
        if n.op_type == "Conv":
            y, w = shapes.get(n.output[0]), inits.get(n.input[1])
            if y and w:
                total += 2.0 * math.prod(y) * w[1] * w[2] * w[3]
        elif n.op_type in ("Gemm", "MatMul"):
            y, w = shapes.get(n.output[0]), inits.get(n.input[1])
            if y and w:
                trans_b = any(a.name == "transB" and a.i for a in n.attribute)
                total += 2.0 * math.prod(y) * (w[1] if trans_b else w[0])
    return total


def polydnn_ms(tool, path, batch, device, iters, env, layout):
    cmd = [tool, "run", path, "--batch", str(batch), "--iters", str(iters), "--warmup", str(WARMUP), "--layout",
           layout]
    if device:
        cmd += ["--device", device]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return (float(re.search(r"time per run: ([0-9.]+) ms", out).group(1)),
            float(re.search(r"imported in ([0-9.]+) ms", out).group(1)))


def ort_ms(sess, x, iters):
    for _ in range(WARMUP):
        sess.run(None, {"x": x})
    t = time.perf_counter()
    for _ in range(iters):
        sess.run(None, {"x": x})
    return (time.perf_counter() - t) / iters * 1e3


def main():
    tool = sys.argv[1]
    device = arg("--device", None)
    layout = arg("--layout", "NCHW")
    iters = int(arg("--iters", "5"))
    rounds = int(arg("--rounds", "3"))
    batches = [int(b) for b in arg("--batches", "1,8").split(",")]
    models = arg("--models", ",".join(MODELS)).split(",")
    tune = "--no-tune" not in sys.argv
    # The CPUs this process may run on (taskset narrows both sides).
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env = dict(os.environ)
    peak_line = subprocess.run([tool, "bench", "--peak"] + (["--device", device] if device else []),
                               capture_output=True, text=True, env=env).stdout.strip().splitlines()
    peak = float(re.search(r"([0-9.]+) GFLOP/s", peak_line[-1]).group(1)) if peak_line else float("nan")
    print(f"polydnn on {device or 'the default device'}, the network in {layout}: "
          f"{peak_line[-1] if peak_line else '?'}")
    print(f"ONNX Runtime {ort.__version__} CPUExecutionProvider, intra_op_num_threads={cores}; "
          f"{iters} runs per timing after {WARMUP} untimed, best of {rounds} alternated rounds; "
          f"polydnn {'tuned (one run with POLYDNN_TUNING=search first)' if tune else 'untuned'}\n")
    print("| model | batch | GFLOP | polydnn ms | polydnn img/s | ORT ms | ORT img/s | ratio | polydnn GFLOP/s "
          "| % of peak | ORT GFLOP/s | polydnn import ms | ORT session ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="pdnn-bench-onnx-") as tmp:
        for name in models:
            path = os.path.join(tmp, name + ".onnx")
            export(name, path)
            so = ort.SessionOptions()
            so.intra_op_num_threads = cores
            o_load = float("inf")
            for _ in range(rounds):
                t = time.perf_counter()
                sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
                o_load = min(o_load, (time.perf_counter() - t) * 1e3)
            for batch in batches:
                flops = model_flops(path, batch)
                if tune:
                    tenv = dict(env, POLYDNN_TUNING="search")
                    polydnn_ms(tool, path, batch, device, 1, tenv, layout)
                x = np.random.default_rng(1).uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32)
                p_best = o_best = p_load = float("inf")
                for _ in range(rounds):
                    ms, load = polydnn_ms(tool, path, batch, device, iters, env, layout)
                    p_best, p_load = min(p_best, ms), min(p_load, load)
                    o_best = min(o_best, ort_ms(sess, x, iters))
                ratio = o_best / p_best  # throughput ratio: > 1 means polydnn is faster
                ratios.append(ratio)
                pg, og = flops / p_best / 1e6, flops / o_best / 1e6
                print(f"| {name} | {batch} | {flops / 1e9:.2f} | {p_best:.1f} | {batch / p_best * 1e3:.1f} | "
                      f"{o_best:.1f} | {batch / o_best * 1e3:.1f} | {ratio:.2f}x | {pg:.1f} | "
                      f"{100 * pg / peak:.1f}% | {og:.1f} | {p_load:.0f} | {o_load:.0f} |", flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeomean throughput ratio polydnn / ONNX Runtime: {geo:.2f}x over {len(ratios)} model-batch pairs")


if __name__ == "__main__":
    main()
