"""polydnn run on CUDA and on NVIDIA's OpenCL driver against PyTorch eager
(cuDNN, FP32 with TF32 off, cudnn.benchmark on) on torchvision models with
random weights: ms per batch (polydnn: `--iters 20` mean; PyTorch: best of
5 rounds of 10, CUDA events), the ratio, and the largest difference from
PyTorch's output relative to its largest magnitude. Runs on a lent GPU
machine through bench/gpu_check.sh. Usage: gpu_models.py POLYDNN_TOOL
model,model,... (BATCHES=1,32 in the environment picks the batches)."""
import os, re, subprocess, sys, tempfile
import numpy as np, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from torch_weights import export_onnx, input_sensitive_weights, torchvision_model
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.benchmark = True


tool = sys.argv[1]
models = sys.argv[2].split(",")
tmp = tempfile.mkdtemp()
print("| model | batch | layout | device | polydnn ms | PyTorch ms | ratio (PyTorch ms / polydnn ms) | max rel err vs PyTorch |")
print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: |", flush=True)
for name in models:
    net = torchvision_model(name)
    input_sensitive_weights(net, 224)  # else GoogLeNet's output is a constant
    path = os.path.join(tmp, name + ".onnx")
    export_onnx(net, path, 224)
    gnet = net.cuda()
    for batch in [int(b) for b in os.environ.get("BATCHES", "1,32").split(",")]:
        x = np.random.default_rng(1).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        xp, yp = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(xp, x)
        with torch.no_grad():
            xt = torch.from_numpy(x).cuda()
            for _ in range(3): ref = gnet(xt)
            torch.cuda.synchronize()
            ts = []
            for _ in range(5):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                for _ in range(10): gnet(xt)
                e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 10)
            tms = min(ts); ref = ref.cpu().numpy()
        for env_backend, dev in (("cuda", "/gpu:0"), ("opencl", "/gpu:0")):
            for layout in ("NCHW", "NHWC"):
                env = dict(os.environ, POLYDNN_BACKEND=env_backend)
                try:
                    out = subprocess.run([tool, "run", path, "--batch", str(batch), "--input", xp, "--output", yp,
                                          "--device", dev, "--layout", layout, "--iters", "20"], env=env,
                                         capture_output=True, text=True, timeout=120)
                    m = re.search(r"time per run: ([0-9.]+) ms", out.stdout)
                    if out.returncode or not m:
                        print(f"| {name} | {batch} | {layout} | {env_backend} | FAILED rc={out.returncode}: {(out.stderr or out.stdout)[-300:]!r} | | | |", flush=True)
                        continue
                    pms = float(m.group(1)); y = np.load(yp)
                    err = float(np.max(np.abs(y - ref)) / np.max(np.abs(ref)))
                    print(f"| {name} | {batch} | {layout} | {env_backend} | {pms:.3f} | {tms:.3f} | {tms / pms:.2f}x | {err:.2e} |", flush=True)
                except subprocess.TimeoutExpired:
                    print(f"| {name} | {batch} | {layout} | {env_backend} | TIMEOUT | | | |", flush=True)
