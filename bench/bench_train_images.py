"""Does decoding a folder of images keep up with training? `polydnn train
--model --images DIR` against the same images from `--npz`, side by side,
alternating, on the default device: whole-run wall time (loading included)
as images/s, and the ratio. Issue 44's target: at least 0.9x.

The images are Fashion-MNIST's first N training images, written as PNG
(two in three) and JPEG (one in three) into class folders; the .npz holds
the same pixels as float32 in 0..1 (what the folder's default --scale
1/255 gives). The model is a small CNN (two 3x3 convolutions, max pooling,
a Gemm) at batch 64, trained for one epoch.

Usage: python3 bench/bench_train_images.py POLYDNN_TOOL [N] [ROUNDS]
(needs numpy, onnx, PIL). Prints a Markdown table.
"""
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from fashion_idx import idx  # noqa: E402 (tests/fashion_idx.py)


def model(path, batch):
    rng = np.random.default_rng(0)

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [init("w1", rng.normal(0, 0.47, (16, 1, 3, 3))), init("b1", np.zeros(16)),
             init("w2", rng.normal(0, 0.12, (32, 16, 3, 3))), init("b2", np.zeros(32)),
             init("w3", rng.normal(0, 0.025, (10, 32 * 7 * 7))), init("b3", np.zeros(10))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["p2"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "bench", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 1, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def main():
    tool = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    xs, ys = idx("train-images-idx3-ubyte.gz")[:n], idx("train-labels-idx1-ubyte.gz")[:n]
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "images")
        for k in range(10):
            os.makedirs(os.path.join(root, f"class{k}"))
        for i in range(n):
            img = Image.fromarray(xs[i], "L")
            stem = os.path.join(root, f"class{ys[i]}", f"{i:06d}")
            if i % 3 == 2:
                img.save(stem + ".jpg", quality=95)
            else:
                img.save(stem + ".png")
        npz = os.path.join(tmp, "data.npz")
        np.savez(npz, x=(xs.astype(np.float32) / 255)[:, None], y=ys.astype(np.float32))
        m = os.path.join(tmp, "m.onnx")
        model(m, 64)
        common = [tool, "train", "--model", m, "--batch", "64", "--epochs", "1", "--lr", "0.05", "--val-split", "0.1"]
        t_img, t_npz = [], []
        for _ in range(rounds):  # alternating, so that load on the machine hits both
            t_img.append(timed(common + ["--images", root]))
            t_npz.append(timed(common + ["--npz", npz]))
        ti, tn = min(t_img), min(t_npz)
        cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                   platform.processor())
        print(f"Machine: {cpu}, {os.cpu_count()} CPUs. {n} Fashion-MNIST images (2/3 PNG, 1/3 JPEG), one epoch at "
              f"batch 64, default device; best of {rounds} alternating rounds, wall time including loading.\n")
        print("| data | wall s | images/s | ratio to .npz |")
        print("|---|---|---|---|")
        print(f"| --npz | {tn:.2f} | {n / tn:.0f} | 1.00x |")
        print(f"| --images (PNG/JPEG folder) | {ti:.2f} | {n / ti:.0f} | {tn / ti:.2f}x |")


if __name__ == "__main__":
    main()
