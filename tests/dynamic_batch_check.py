"""Dynamic batch: models exported with a symbolic batch (dynamic_axes),
imported once, run at batches 1, 3, 8 and 3 again, against ONNX Runtime.

Python's load_onnx (on /cpu:0) and `polydnn run --batches 1,3,8 --input
x.npy --output y.npy` (on the default device) each import the file once;
every output must be within 1e-4 of the largest |y| of ONNX Runtime's.
Models: ResNet-18, ShuffleNetV2 x0.5 (its channel shuffle is a 5-d
Reshape whose target holds the batch), a two-layer ViT (the class token's
Expand to the batch), a batch-sized ConstantOfShape (torch.ones(N, k)),
all on 32x32 images. A model whose Reshape target is batch * batch must
be refused at the second batch, naming that node.

Usage: dynamic_batch_check.py POLYDNN_TOOL. Exit 0 pass, 1 fail, 77
without torch, torchvision, onnx or onnxruntime.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnxruntime as ort
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

import polydnn  # noqa: E402 (PYTHONPATH from the harness)

TOL = 1e-4
BATCHES = (1, 3, 8, 3)


class Fill(torch.nn.Module):
    """A batch-sized constant: torch.ones(N, 10) exports as ConstantOfShape."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3 * 32 * 32, 10)

    def forward(self, x):
        return self.fc(x.flatten(1)) + 2.0 * torch.ones(x.shape[0], 10)


class Square(torch.nn.Module):
    """Shape arithmetic not affine in the batch: a Reshape to (N * N, -1)."""

    def forward(self, x):
        y = x.flatten(1)[:, :48]
        return y.reshape(x.shape[0] * x.shape[0], -1) * 2.0


def models():
    torch.manual_seed(0)
    yield "resnet18", torchvision.models.resnet18()
    yield "shufflenet_v2_x0_5", torchvision.models.shufflenet_v2_x0_5()
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                               mlp_dim=64, num_classes=10)
    torch.nn.init.normal_(vit.heads.head.weight)  # torchvision zeroes the head: the outputs would all be 0
    yield "vit_tiny", vit
    yield "fill", Fill()


def export(m, path):
    m.eval()
    torch.onnx.export(m, torch.randn(2, 3, 32, 32), path, opset_version=13, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})


def err(y, r):
    return float(np.abs(y - r).max() / max(np.abs(r).max(), 1e-30))


def main():
    tool = sys.argv[1]
    fails = 0
    x8 = np.random.RandomState(1).uniform(-1, 1, (8, 3, 32, 32)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        xp = os.path.join(tmp, "x8.npy")
        np.save(xp, x8)
        for name, m in models():
            path = os.path.join(tmp, name + ".onnx")
            export(m, path)
            ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            want = {b: ref.run(None, {"x": x8[:b]})[0] for b in set(BATCHES)}
            if not all(np.abs(w).max() > 0 for w in want.values()):
                print(f"FAIL {name}: ONNX Runtime's output is all zero (a check that cannot fail)")
                fails += 1
                continue
            # Python: one load, every batch
            model = polydnn.load_onnx(path, device="/cpu:0")
            errs = []
            for b in BATCHES:
                y = model(x8[:b], as_numpy=True)
                errs.append(err(y, want[b]) if y.shape == want[b].shape else float("inf"))
            ok = max(errs) <= TOL
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} load_onnx /cpu:0 batches {BATCHES}: "
                  + ", ".join(f"{e:.2e}" for e in errs))
            # the tool: one import, --batches, default device
            out = os.path.join(tmp, name + "_y.npy")
            p = subprocess.run([tool, "run", path, "--batches", "1,3,8", "--input", xp, "--output", out, "-i", "1"],
                               capture_output=True, text=True)
            errs = []
            for b in (1, 3, 8):
                f = out[:-4] + f"-b{b}.npy"
                errs.append(err(np.load(f), want[b]) if p.returncode == 0 and os.path.exists(f) else float("inf"))
            ok = p.returncode == 0 and max(errs) <= TOL
            fails += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name} polydnn run --batches 1,3,8: "
                  + ", ".join(f"{e:.2e}" for e in errs) + ("" if p.returncode == 0 else " " + p.stderr.strip()))
        # not affine: batch 1 runs, batch 3 is refused naming the Reshape
        path = os.path.join(tmp, "square.onnx")
        export(Square(), path)
        model = polydnn.load_onnx(path, device="/cpu:0")
        y = model(x8[:1], as_numpy=True)
        ok = err(y, Square()(torch.from_numpy(x8[:1])).numpy()) <= TOL
        try:
            model(x8[:3])
            ok, said = False, "batch 3 ran"
        except polydnn.Error as e:
            said = str(e)
            ok = ok and "Reshape" in said and "not affine" in said
        p = subprocess.run([tool, "run", path, "--batches", "1,3", "-i", "1"], capture_output=True, text=True)
        ok = ok and p.returncode == 1 and "Reshape" in p.stderr and "not affine" in p.stderr
        fails += not ok
        print(f"{'ok  ' if ok else 'FAIL'} square (N * N reshape) refused at batch 3: {said}")
    print(f"{fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
