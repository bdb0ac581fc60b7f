#!/usr/bin/env python3
"""Arithmetic intensity of the OpenCL convolution kernels, the property
that decides their speed on a GPU, counted by Oclgrind (`--inst-counts`):
multiply-adds per global-memory word loaded by the convolution kernel
itself (the filter pack and the table kernels, which run once per call
on the filter, are left out). Each kernel runs in the configuration the
device table gives NVIDIA-class GPUs (wg_gemm 128 x 64 tiles, implicit_gemm
vw=4 kb=1 pt=8), forced through a private tuning cache, on ResNet-50's
3x3 and 1x1 layers at batch 8 with 4x4 images (a reduced spatial size:
every pixel tile but the last is whole either way).

The backward table: backward data and backward filter by forward_gemm
(wg_gemm inside, in the configuration the device table gives Oclgrind's
device, a generic GPU: 64 x 64 tiles) through the Python module, counting
conv2d_wg_gemm and, where the reduction is split, wgg_reduce; with
--before KERNEL_DIR (the .cl files of an earlier commit) a column for
those kernels beside it.

usage: bench/wg_intensity.py [POLYDNN_TOOL] [--backward [--before DIR]]
(default .libs/polydnn; run from the build tree; needs oclgrind; the
backward table needs /opt/pdnn-ort/bin/python or PYTHON with numpy).
Prints a Markdown table."""
import os, re, subprocess, sys, tempfile

args = sys.argv[1:]
backward = "--backward" in args
before = args[args.index("--before") + 1] if "--before" in args else None
args = [a for i, a in enumerate(args) if a != "--backward" and a != "--before" and (i == 0 or args[i - 1] != "--before")]
tool = args[0] if args else ".libs/polydnn"
env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(".libs"), POLYDNN_PROGRAM_CACHE="off")
cache = tempfile.mkdtemp()
env["POLYDNN_CACHE_DIR"] = cache
CONFIG = {"wg_gemm": ("conv2d_wg_gemm", "tm=128 tn=64 tk=16 rm=8 rn=4 db=1 pad=1"),
          "implicit_gemm": ("conv2d_implicit_gemm", "vw=4 kb=1 pt=8")}
LAYERS = [("res2 3x3 64", 64, 64, 3), ("res4 3x3 256", 256, 256, 3), ("res2 1x1 64>256", 64, 256, 1),
          ("res2 1x1 256>64", 256, 64, 1), ("res4 1x1 1024>256", 1024, 256, 1)]
N, HW = 8, 4

out = subprocess.run(["oclgrind", tool, "devices", "--verbose"], env=env, capture_output=True, text=True).stdout
m = re.search(r"backend: opencl, vendor: (.*?), name: (.*?), memory.*\n\s*driver: (.*?), largest", out)
if not m:
    sys.exit("wg_intensity: Oclgrind offers no OpenCL device:\n" + out)
key = "opencl|%s|%s|%s" % m.groups()
lines = ["polydnn-tuning\t1"]
for name, c, k, r in LAYERS:
    pad = r // 2
    shape = ("conv2d_fwd f32 NCHW/OIHW/NCHW n%d c%d h%d w%d k%d r%d s%d p%d q%d u1,1 d1,1 pad%d,%d,%d,%d g1"
             % (N, c, HW, HW, k, r, r, HW, HW, pad, pad, pad, pad))
    for kern, cfg in CONFIG.values():
        lines.append("\t".join([key, kern, shape, cfg, "1.0"]))
with open(os.path.join(cache, "tuning-v1.tsv"), "w") as f:
    f.write("\n".join(lines) + "\n")


def lanes(mangled):
    v = re.search(r"Dv(\d+)_", mangled)
    return int(v.group(1)) if v else 1


def tally(text, kernels):
    """FMAs and global words of every launch of kernels in Oclgrind's counts."""
    fma = words = 0
    sections = text.split("Instructions executed for kernel '")[1:]
    if not any(sec.split("'")[0] in kernels for sec in sections):
        sys.exit("wg_intensity: no counts for %s:\n%s" % (", ".join(kernels), text[-2000:]))
    for sec in sections:
        if sec.split("'")[0] not in kernels:
            continue
        for n, what in re.findall(r"^\s*(\d+) - (.*)$", sec, re.M):
            n = int(n)
            if re.match(r"call _Z3fma", what) or re.match(r"call _Z3mad", what):
                fma += n * lanes(what)
            elif what.startswith("load global"):
                words += int(re.search(r"\((\d+) bytes\)", what).group(1)) // 4
            elif re.match(r"call _Z\d+vload(\d+)\w*PU3AS1", what):
                words += n * int(re.match(r"call _Z\d+vload(\d+)", what).group(1))
    return fma, words


def count(algo, c, k, r):
    pad = r // 2
    cmd = ["oclgrind", "--inst-counts", tool, "conv", "-n", str(N), "-c", str(c), "-H", str(HW), "-W", str(HW),
           "-k", str(k), "-y", str(r), "-x", str(r), "-p", str(pad), "-q", str(pad), "--algo", algo,
           "--device", "/gpu:0", "--iters", "1"]
    text = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout
    kernel = {"wg_gemm": "conv2d_wg_gemm", "implicit_gemm": "conv2d_implicit_gemm"}[algo]
    return tally(text, (kernel,))


# One backward call through the Python module (sys.argv: direction,
# layout, C, K, R, N, HW), random data, on Oclgrind's device.
DRIVER = """
import sys, numpy as np, polydnn as pd
d, layout, c, k, r, n, hw = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
nhwc = layout == "NHWC"
rng = np.random.default_rng(1)
x = rng.standard_normal((n, hw, hw, c) if nhwc else (n, c, hw, hw), dtype=np.float32)
dy = rng.standard_normal((n, hw, hw, k) if nhwc else (n, k, hw, hw), dtype=np.float32)
w = rng.standard_normal((r, r, c, k) if nhwc else (k, c, r, r), dtype=np.float32)
ctx = pd.default_context()
def on_gpu(a, role):
    return pd._import(a, role, layout, ctx).to("/gpu:0")
if d == "data":
    out = pd.conv2d_backward_data(x.shape, on_gpu(w, pd._FILTER), on_gpu(dy, pd._ACTIVATION), padding=r // 2,
                                  data_format=layout, algorithm="forward_gemm")
else:
    out = pd.conv2d_backward_filter(on_gpu(x, pd._ACTIVATION), w.shape, on_gpu(dy, pd._ACTIVATION),
                                    padding=r // 2, data_format=layout, algorithm="forward_gemm")
out.numpy()
"""


def count_bwd(direction, layout, c, k, r, kernel_dir=None):
    py = os.environ.get("PYTHON", "/opt/pdnn-ort/bin/python")
    e = dict(env, POLYDNN_LIBRARY=os.path.abspath(os.path.join(".libs", "libpolydnn.so")),
             PYTHONPATH=os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "python")),
             POLYDNN_GPU_CLASS="1")
    if kernel_dir:
        e["POLYDNN_KERNEL_DIR"] = kernel_dir
    cmd = ["oclgrind", "--inst-counts", py, "-c", DRIVER, direction, layout] + [str(v) for v in (c, k, r, N, HW)]
    p = subprocess.run(cmd, env=e, capture_output=True, text=True)
    return tally(p.stdout + p.stderr, ("conv2d_wg_gemm", "wgg_reduce"))


if backward:
    BWD = [("res2 3x3 64", 64, 64, 3), ("res4 3x3 256", 256, 256, 3), ("res4 1x1 1024>256", 1024, 256, 1)]
    head = "| layer (batch %d, %dx%d) | layout | direction | wg_gemm FMA / global word |" % (N, HW, HW)
    print(head + (" before (%s) |" % before if before else ""))
    print("| --- | --- | --- | ---: |" + (" ---: |" if before else ""))
    for name, c, k, r in BWD:
        for layout in ("NCHW", "NHWC"):
            for direction in ("data", "filter"):
                row = []
                for kd in ([None, before] if before else [None]):
                    fma, words = count_bwd(direction, layout, c, k, r, kd)
                    row.append("%.1f" % (fma / words if words else float("nan")))
                print("| %s | %s | %s | %s |" % (name, layout, direction, " | ".join(row)), flush=True)
    sys.exit(0)

print("| layer (batch %d, %dx%d, NCHW) | wg_gemm FMA / global word | implicit_gemm FMA / global word |" % (N, HW, HW))
print("| --- | ---: | ---: |")
for name, c, k, r in LAYERS:
    row = []
    for algo in ("wg_gemm", "implicit_gemm"):
        fma, words = count(algo, c, k, r)
        row.append("%.1f" % (fma / words if words else float("nan")))
    print("| %s | %s | %s |" % (name, row[0], row[1]), flush=True)
