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

usage: bench/wg_intensity.py [POLYDNN_TOOL]   (default .libs/polydnn; run
from the build tree; needs oclgrind). Prints a Markdown table."""
import os, re, subprocess, sys, tempfile

tool = sys.argv[1] if len(sys.argv) > 1 else ".libs/polydnn"
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


def count(algo, c, k, r):
    pad = r // 2
    cmd = ["oclgrind", "--inst-counts", tool, "conv", "-n", str(N), "-c", str(c), "-H", str(HW), "-W", str(HW),
           "-k", str(k), "-y", str(r), "-x", str(r), "-p", str(pad), "-q", str(pad), "--algo", algo,
           "--device", "/gpu:0", "--iters", "1"]
    text = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout
    kernel = {"wg_gemm": "conv2d_wg_gemm", "implicit_gemm": "conv2d_implicit_gemm"}[algo]
    part = text.split("Instructions executed for kernel '%s':" % kernel)
    if len(part) < 2:
        sys.exit("wg_intensity: no counts for %s:\n%s" % (kernel, text[-2000:]))
    body = part[1].split("Instructions executed for kernel")[0]
    fma = words = 0
    for n, what in re.findall(r"^\s*(\d+) - (.*)$", body, re.M):
        n = int(n)
        if re.match(r"call _Z3fma", what) or re.match(r"call _Z3mad", what):
            fma += n * lanes(what)
        elif what.startswith("load global"):
            words += int(re.search(r"\((\d+) bytes\)", what).group(1)) // 4
        elif re.match(r"call _Z\d+vload(\d+)\w*PU3AS1", what):
            words += n * int(re.match(r"call _Z\d+vload(\d+)", what).group(1))
    return fma, words


print("| layer (batch %d, %dx%d, NCHW) | wg_gemm FMA / global word | implicit_gemm FMA / global word |" % (N, HW, HW))
print("| --- | ---: | ---: |")
for name, c, k, r in LAYERS:
    row = []
    for algo in ("wg_gemm", "implicit_gemm"):
        fma, words = count(algo, c, k, r)
        row.append("%.1f" % (fma / words if words else float("nan")))
    print("| %s | %s | %s |" % (name, row[0], row[1]), flush=True)
