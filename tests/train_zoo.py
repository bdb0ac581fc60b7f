"""make check-train-zoo: torchvision's ResNet-18 and MobileNetV2 (untrained,
32x32 inputs, 10 classes) exported to ONNX and trained by `polydnn train
--model` on Fashion-MNIST (28x28 padded to 32x32, gray tiled to 3 channels)
for 3 epochs; the test accuracy must reach 91 %, and the exported model
must run in ONNX Runtime as in polydnn (within 1e-5). SGD with Nesterov
momentum at lr 0.02 (ResNet-18: 0.9136; 0.05 gave 0.9006, 0.1 0.8820, on
the unnormalized images). Slow: minutes to
hours on a CPU; not in make check. Usage: train_zoo.py POLYDNN [MODEL...]
(models: resnet18, mobilenet_v2; extra flags in $TRAIN_ZOO_FLAGS)."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime
import torch
import torchvision

import polydnn


def export(name, path, batch):
    """In training mode: batch norm kept apart, trained with batch
    statistics (MobileNetV2 too, now that its ReLU6 bounds' Cast imports;
    exported folded for inference it did not learn)."""
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(num_classes=10)
    mode = torch.onnx.TrainingMode.TRAINING
    m = m.train()
    torch.onnx.export(m, torch.zeros(batch, 3, 32, 32), path, opset_version=13, do_constant_folding=False,
                      training=mode, input_names=["input.1"])


def main():
    tool = sys.argv[1]
    models = sys.argv[2:] or ["resnet18", "mobilenet_v2"]
    flags = os.environ.get("TRAIN_ZOO_FLAGS", "").split()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name in models:
            src, out = os.path.join(d, name + ".onnx"), os.path.join(d, name + "-trained.onnx")
            export(name, src, 64)
            cmd = [tool, "train", "--model", src, "--batch", "64", "--epochs", "3", "--optimizer", "sgd", "--lr",
                   "0.02", "--momentum", "0.9", "--nesterov", "--weight-decay", "5e-4", "--lr-schedule", "cosine",
                   "--warmup", "200", "--export", out, "--log", os.path.join(d, name + ".csv")] + flags
            print(" ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True)
            print(r.stdout[-2000:], r.stderr[-2000:], flush=True)
            accs = [float(a) for a in re.findall(r"test accuracy ([0-9.]+)", r.stdout)]
            acc = accs[-1] if accs else 0.0
            x = np.random.default_rng(0).random((64, 3, 32, 32), dtype=np.float32)
            ort = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"input.1": x}) \
                if r.returncode == 0 else None
            ok = r.returncode == 0 and acc >= 0.91
            if ort is not None:
                mine = polydnn.load_onnx(out)(x, as_numpy=True)
                diff = float(np.abs(mine - ort[0]).max())
                scale = max(1.0, float(np.abs(ort[0]).max()))  # 1e-5 of the logits' size: float32's rounding
                ok = ok and diff <= 1e-5 * scale
                print("%s: test accuracy %.4f, exported model vs ONNX Runtime max |diff| %.2e (logits up to %.3g)"
                      % (name, acc, diff, scale))
            print("%s: %s" % (name, "PASS" if ok else "FAIL"), flush=True)
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
