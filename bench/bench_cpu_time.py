"""CPU time per inference run: polydnn run on a device against ONNX Runtime,
one thread each (issue 45).

On a machine other jobs keep busy, wall-clock times swing by 2x from run
to run (bench/results-host-onednn.md); the CPU time a run consumes swings
far less. Each side runs single-threaded (OMP_NUM_THREADS=1 for polydnn's
oneDNN, intra_op_num_threads=1 for ONNX Runtime) and its CPU seconds per
run are the difference between a process timing K2 runs and one timing K1
(import, session creation and warm-up cancel), best of R alternated
rounds. PoCL's CPU time counts its worker threads and any spinning.

Usage: bench_cpu_time.py POLYDNN_TOOL [--devices /cpu:0,default] [--layout NCHW|NHWC]
       [--models resnet18,mobilenet_v2,googlenet,squeezenet1_1] [--batches 1,8]
       [--k1 2] [--k2 12] [--rounds 2]
Run with /opt/pdnn-ort/bin/python (onnx, onnxruntime, torchvision).
"""
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from bench_onnx_models import arg  # noqa: E402 (this directory: the same flag reader)
from torch_weights import export_onnx, torchvision_model  # noqa: E402

ORT_CHILD = r"""
import sys, numpy as np, onnxruntime as ort
path, batch, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
x = np.random.default_rng(1).uniform(-1, 1, (batch, 3, 224, 224)).astype(np.float32)
s.run(None, {s.get_inputs()[0].name: x})
for _ in range(k):
    s.run(None, {s.get_inputs()[0].name: x})
"""


def cpu_of(cmd, env):
    """CPU seconds (user + system) the command's process tree used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def per_run(make_cmd, env, k1, k2):
    return (cpu_of(make_cmd(k2), env) - cpu_of(make_cmd(k1), env)) / (k2 - k1)


def main():
    tool = sys.argv[1]
    devices = arg("--devices", "/cpu:0").split(",")
    layout = arg("--layout", "NCHW")
    models = arg("--models", "resnet18,mobilenet_v2,googlenet,squeezenet1_1").split(",")
    batches = [int(b) for b in arg("--batches", "1,8").split(",")]
    k1, k2, rounds = int(arg("--k1", "2")), int(arg("--k2", "12")), int(arg("--rounds", "2"))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    print(f"CPU ms per run (user + system, runs {k1}..{k2} differenced, best of {rounds} alternated rounds), "
          f"one thread each; polydnn --layout {layout}\n")
    cols = " | ".join(f"polydnn {d} ms | ratio {d}" for d in devices)
    print(f"| model | batch | ORT ms | {cols} |")
    print("| --- | ---: | ---: |" + " ---: | ---: |" * len(devices))
    with tempfile.TemporaryDirectory(prefix="pdnn-cpu-time-") as tmp:
        for name in models:
            path = os.path.join(tmp, name + ".onnx")
            export_onnx(torchvision_model(name), path, 224)
            for batch in batches:
                best = {d: float("inf") for d in devices + ["ort"]}
                for _ in range(rounds):
                    for d in devices:
                        def cmd(k, d=d):
                            c = [tool, "run", path, "--batch", str(batch), "--iters", str(k), "--warmup", "1",
                                 "--layout", layout]
                            return c + ([] if d == "default" else ["--device", d])
                        best[d] = min(best[d], per_run(cmd, env, k1, k2))
                    best["ort"] = min(best["ort"], per_run(
                        lambda k: [sys.executable, "-c", ORT_CHILD, path, str(batch), str(k)], env, k1, k2))
                row = " | ".join(f"{best[d] * 1e3:.1f} | {best['ort'] / best[d]:.2f}x" for d in devices)
                print(f"| {name} | {batch} | {best['ort'] * 1e3:.1f} | {row} |", flush=True)


if __name__ == "__main__":
    main()
