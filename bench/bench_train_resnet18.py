"""Training speed of a user's model: torchvision's ResNet-18 (10 classes,
3x32x32 inputs, batch 64, SGD with momentum) trained by `polydnn train
--model` (exported from torch in training mode) against PyTorch (the same
module) and TensorFlow-CPU (the same architecture written in Keras,
channels-last), side by side on the same cores, in alternating rounds.

Each framework runs STEPS steps per round after WARM warm-up steps;
images/s is the median over rounds of each round's median step. The
training step's FLOPs (3x the forward pass's convolution and Gemm FLOPs:
forward, backward data, backward filter) over its time give GFLOP/s and
the % of the device's measured FMA peak (`polydnn bench --peak`).

Usage: python bench/bench_train_resnet18.py POLYDNN_TOOL [--device D]
[--steps N] [--rounds R] [--tf PYTHON_WITH_TENSORFLOW]
Run with a Python holding torch, torchvision and onnx (CI's
/opt/pdnn-ort/bin/python); TensorFlow runs in its own interpreter
(/opt/pdnn-tf/bin/python by default), skipped when absent.
"""
import argparse
import csv
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision

BATCH, CLASSES = 64, 10

KERAS = r'''
import json, os, statistics, sys, time
import numpy as np
import tensorflow as tf
threads, steps, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(1)
L = tf.keras.layers

def bn(x):
    return L.BatchNormalization(epsilon=1e-5, momentum=0.9)(x)

def conv(x, ch, k, s):
    if k > 1:
        x = L.ZeroPadding2D(k // 2)(x)
    return L.Conv2D(ch, k, s, use_bias=False)(x)

x_in = L.Input((32, 32, 3))
x = L.ReLU()(bn(conv(x_in, 64, 7, 2)))
x = L.MaxPool2D(3, 2)(L.ZeroPadding2D(1)(x))
for i, ch in enumerate([64, 128, 256, 512]):
    for b in range(2):
        s = 2 if i > 0 and b == 0 else 1
        y = bn(conv(L.ReLU()(bn(conv(x, ch, 3, s))), ch, 3, 1))
        sc = bn(conv(x, ch, 1, s)) if s != 1 or x.shape[-1] != ch else x
        x = L.ReLU()(L.Add()([y, sc]))
out = L.Dense(10)(L.GlobalAveragePooling2D()(x))
m = tf.keras.Model(x_in, out)
m.compile(optimizer=tf.keras.optimizers.SGD(0.01, momentum=0.9),
          loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
xs = rng.standard_normal((64, 32, 32, 3)).astype(np.float32)
ys = rng.integers(0, 10, 64)
times = []
for i in range(warm + steps):
    t0 = time.perf_counter()
    m.train_on_batch(xs, ys)
    if i >= warm:
        times.append(time.perf_counter() - t0)
print(json.dumps({"step_s": statistics.median(times)}))
'''


def train_flops(net):
    """3x the forward convolution and Linear FLOPs of one image."""
    flops = []

    def hook(mod, inp, out):
        if isinstance(mod, torch.nn.Conv2d):
            k = mod.kernel_size[0] * mod.kernel_size[1] * mod.in_channels // mod.groups
            flops.append(2 * k * out.numel())
        elif isinstance(mod, torch.nn.Linear):
            flops.append(2 * mod.in_features * out.numel())

    hs = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    with torch.no_grad():
        net.eval()(torch.zeros(1, 3, 32, 32))
    for h in hs:
        h.remove()
    return 3 * sum(flops)


def polydnn_step(tool, model, data, steps, warm, device, tmp):
    log = os.path.join(tmp, "log.csv")
    cmd = [tool, "train", "--model", model, "--npz", data, "--batch", str(BATCH), "--steps", str(warm + steps),
           "--lr", "0.01", "--momentum", "0.9", "--log", log]
    if device:
        cmd += ["--device", device]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    ips = [float(r["images_per_s"]) for r in rows[warm:]]
    return BATCH / statistics.median(ips)


def torch_step(net, steps, warm):
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(BATCH, 3, 32, 32)
    y = torch.randint(0, CLASSES, (BATCH,))
    net.train()
    times = []
    for i in range(warm + steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        if i >= warm:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--device", default=None)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tf", default="/opt/pdnn-tf/bin/python")
    a = ap.parse_args()
    threads = len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=CLASSES)
    flops = train_flops(net)
    peak_out = subprocess.run([a.tool, "bench", "--peak"] + (["--device", a.device] if a.device else []),
                              capture_output=True, text=True).stdout.strip().splitlines()
    peak = float(re.search(r"([0-9.]+) GFLOP/s", peak_out[-1]).group(1)) if peak_out else float("nan")
    have_tf = os.path.exists(a.tf) and subprocess.run([a.tf, "-c", "import tensorflow"],
                                                      capture_output=True).returncode == 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "r18.onnx")
        torch.onnx.export(net.train(), torch.zeros(BATCH, 3, 32, 32), model, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
        n = BATCH * (a.steps + a.warm)
        rng = np.random.default_rng(0)
        data = os.path.join(tmp, "d.npz")
        np.savez(data, x=rng.standard_normal((n, 3, 32, 32)).astype(np.float32),
                 y=rng.integers(0, CLASSES, n).astype(np.float32))
        kscript = os.path.join(tmp, "keras_r18.py")
        with open(kscript, "w") as f:
            f.write(KERAS)
        res = {"polydnn": [], "pytorch": [], "tensorflow": []}
        for _ in range(a.rounds):
            res["polydnn"].append(polydnn_step(a.tool, model, data, a.steps, a.warm, a.device, tmp))
            res["pytorch"].append(torch_step(net, a.steps, a.warm))
            if have_tf:
                out = subprocess.run([a.tf, kscript, str(threads), str(a.steps), str(a.warm)], capture_output=True,
                                     text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
                line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
                if line:
                    res["tensorflow"].append(json.loads(line[-1])["step_s"])
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    print(f"Machine: {cpu} ({isa}), {threads} CPUs. torchvision ResNet-18, 10 classes, 3x32x32, batch {BATCH}, "
          f"SGD momentum; {a.steps} steps after {a.warm} warm-up, median over {a.rounds} alternating rounds. "
          f"polydnn device: {a.device or 'default'}; {peak_out[-1] if peak_out else 'peak unknown'}. "
          f"Training FLOPs per image: {flops / 1e9:.3f} GFLOP (3x forward conv + Gemm).\n")
    tf_s = statistics.median(res["tensorflow"]) if res["tensorflow"] else None
    print("| framework | s/step | images/s | GFLOP/s | % of FMA peak | ratio to TensorFlow |")
    print("|---|---|---|---|---|---|")
    for k in ("polydnn", "pytorch", "tensorflow"):
        if not res[k]:
            print(f"| {k} | - | - | - | - | (not installed) |")
            continue
        s = statistics.median(res[k])
        gf = flops * BATCH / s / 1e9
        ratio = f"{tf_s / s:.2f}x" if tf_s else "-"
        print(f"| {k} | {s:.3f} | {BATCH / s:.1f} | {gf:.1f} | {100 * gf / peak:.1f}% | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
