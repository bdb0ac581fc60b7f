"""polydnn run on float16 ONNX models and under --precision, against ONNX
Runtime (issue 43). torchvision ResNet-18 and MobileNetV2 (random weights,
tests/torch_weights.py; 64x64 input) are exported in float32; their float16 twins are what
model.half() exports on a GPU (torch's CPU convolution has no half kernel,
so it cannot trace one here): every float initializer and the graph's
input and output in float16. Checked, within 1e-2 of the output's largest
magnitude (or twice ONNX Runtime's own float16 error where that is
larger: see below):
  - the float16 file on polydnn (fed float32, output float32:
    keep_io_types) against ONNX Runtime running the same file in float16;
  - the float32 file under --precision fp16 against ONNX Runtime in
    float32 (bf16: within 5e-2, its 8 bits of precision);
and that the reduced run is not the float32 one (the policy did cast).
Usage: onnx_precision.py POLYDNN_TOOL"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

tool = sys.argv[1]
tmp = tempfile.mkdtemp()


def export(name):
    """torchvision's name with weights under which its output depends on its
    input (tests/torch_weights.py), in float32."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from torch_weights import export_onnx, input_sensitive_weights, torchvision_model
    net = torchvision_model(name)
    input_sensitive_weights(net, 64)
    path = os.path.join(tmp, name + ".onnx")
    export_onnx(net, path, 64)
    return path


def halve(path):
    """The float16 model: initializers, constants, input and output in float16."""
    m = onnx.load(path)
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for n in g.node:  # Clip's bounds and other Constant nodes
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    for v in list(g.input) + list(g.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    out = path.replace(".onnx", "_fp16.onnx")
    onnx.save(m, out)
    return out


def run(model, x, *flags):
    xp, yp = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xp, x)
    r = subprocess.run([tool, "run", model, "--input", xp, "--output", yp, "--device", "/cpu:0", "--iters", "1"] + list(flags), capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: polydnn run %s %s: %s" % (model, flags, r.stderr[-2000:]))
    y = np.load(yp)
    if y.dtype != np.float32:
        sys.exit("FAIL: %s %s: the output is %s, not float32" % (model, flags, y.dtype))
    return y, r.stderr


def ort_run(model, x):
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feed = x.astype(np.float16) if s.get_inputs()[0].type == "tensor(float16)" else x
    return s.run(None, {"x": feed})[0].astype(np.float32)


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


failed = 0
x = np.random.RandomState(1).randn(1, 3, 64, 64).astype(np.float32)
for name in ("resnet18", "mobilenet_v2"):
    p32 = export(name)
    p16 = halve(p32)
    want32, want16 = ort_run(p32, x), ort_run(p16, x)
    y16, log16 = run(p16, x)
    y32, _ = run(p32, x)
    yp16, logp = run(p32, x, "--precision", "fp16")
    ypbf, _ = run(p32, x, "--precision", "bf16")
    # Where ONNX Runtime's own float16 run is further than 1e-2 from its
    # float32 one (MobileNetV2 under these weights: 2.3e-2), the model
    # itself loses that much in float16: the bound is twice that (two
    # engines, each rounding its own way), and bfloat16's 8 times it.
    own = rel(want16, want32)
    t16 = max(1e-2, 2 * own)
    print("%s: ONNX Runtime's own float16 vs its float32: %.2e" % (name, own))
    checks = [("float16 file vs ONNX Runtime float16", rel(y16, want16), t16),
              ("--precision fp16 vs ONNX Runtime float32", rel(yp16, want32), t16),
              ("--precision bf16 vs ONNX Runtime float32", rel(ypbf, want32), max(5e-2, 8 * own)),
              ("float32 vs ONNX Runtime float32", rel(y32, want32), 1e-4)]
    for what, err, tol in checks:
        ok = err <= tol
        failed += not ok
        print("%s %s: %s: %.2e (tolerance %.0e)" % ("ok" if ok else "FAIL", name, what, err, tol))
    if np.array_equal(yp16, y32) or np.array_equal(y16, y32):
        failed += 1
        print("FAIL %s: a reduced run equals the float32 one" % name)
    # ResNet's residual Adds (and the Relus after them) fuse into their
    # Conv under the policy as in float32: none is left to fall back.
    if name == "resnet18" and "(Add) on" in logp:
        failed += 1
        print("FAIL %s: a residual Add was not fused under --precision fp16:\n%s" % (name, logp[-1000:]))
    if "runs in float32 with casts around it" not in logp:
        failed += 1
        print("FAIL %s: no float32 fallback logged under --precision fp16:\n%s" % (name, logp[-1000:]))
print("%d failed" % failed)
sys.exit(1 if failed else 0)
