#!/usr/bin/env python3
"""Global-memory traffic of the OpenCL depthwise kernels, counted by
Oclgrind (`--inst-counts`), as bench/wg_intensity.py does for the
convolution GEMMs: words loaded from and stored to global memory per
output element, and multiply-adds per global word loaded, for the
CPU-class `depthwise` (dw_nchw, dw_plane, dw_nhwc: register tiles through
the cache) against the GPU-class `depthwise_wg` (dwg_nchw, dwg_nhwc: the
input tile and its halo through local memory once), each in its default
configuration on Oclgrind's device, on MobileNetV2's 3x3 depthwise
layers at batch 1 (the 56x56 stride-1 layer at 28x28: a reduced spatial
size). A word is 4 bytes: a vloadN is N of them.

usage: bench/dw_intensity.py [POLYDNN_TOOL] (default .libs/polydnn; run
from the build tree; needs oclgrind). Prints a Markdown table."""
import os, re, subprocess, sys, tempfile

tool = sys.argv[1] if len(sys.argv) > 1 else ".libs/polydnn"
env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(".libs"), POLYDNN_PROGRAM_CACHE="off",
           POLYDNN_CACHE_DIR=tempfile.mkdtemp(), POLYDNN_TUNING="off")
# name, C (= K), H = W, stride
LAYERS = [("expand 144, 56x56 at 28x28", 144, 28, 1), ("144, 56x56 stride 2", 144, 56, 2),
          ("576, 14x14", 576, 14, 1), ("960, 7x7", 960, 7, 1)]
KERNELS = {"depthwise": ("dw_nchw", "dw_plane", "dw_nhwc"), "depthwise_wg": ("dwg_nchw", "dwg_nhwc")}


def words(what, n):
    """Global words moved by one counted instruction line (n times)."""
    b = re.search(r"\((\d+) bytes\)", what)
    if b:
        return int(b.group(1)) // 4
    v = re.match(r"call _Z\d+v(load|store)(\d+)", what)
    return n * int(v.group(2)) if v else n


def tally(text, kernels):
    """Per launch of kernels: FMAs (lanes counted), global words loaded
    and stored; and the kernels that ran."""
    fma = loads = stores = launches = 0
    ran = set()
    for sec in text.split("Instructions executed for kernel '")[1:]:
        name = sec.split("'")[0]
        if name not in kernels:
            continue
        ran.add(name)
        launches += 1
        for n, what in re.findall(r"^\s*(\d+) - (.*)$", sec, re.M):
            n = int(n)
            if re.match(r"call _Z3(fma|mad)", what):
                v = re.search(r"Dv(\d+)_", what)
                fma += n * (int(v.group(1)) if v else 1)
            elif what.startswith("load global") or re.match(r"call _Z\d+vload\d+\w*PU3AS1", what):
                loads += words(what, n)
            elif what.startswith("store global") or re.match(r"call _Z\d+vstore\d+\w*PU3AS1", what):
                stores += words(what, n)
    if not launches:
        sys.exit("dw_intensity: no counts for %s:\n%s" % (", ".join(kernels), text[-2000:]))
    return fma / launches, loads / launches, stores / launches, ", ".join(sorted(ran))


print("| layer | layout | algorithm (kernel) | global loads / output | stores / output | FMA / global load |")
print("|---|---|---|---:|---:|---:|")
for name, c, hw, st in LAYERS:
    out = c * ((hw - 1) // st + 1) ** 2
    for layout in ("NCHW", "NHWC"):
        for algo, kernels in KERNELS.items():
            cmd = ["oclgrind", "--inst-counts", tool, "conv", "-n", "1", "-c", str(c), "-H", str(hw), "-W", str(hw),
                   "-k", str(c), "-g", str(c), "-p", "1", "-q", "1", "-u", str(st), "-v", str(st), "--bias", "--relu",
                   "--layout", layout, "--algo", algo, "--device", "/gpu:0", "--iters", "1"]
            text = subprocess.run(cmd, env=env, capture_output=True, text=True).stdout
            fma, ld, sto, ran = tally(text, kernels)
            print("| %s | %s | %s (%s) | %.2f | %.2f | %.1f |" % (name, layout, algo, ran, ld / out, sto / out,
                                                                  fma / ld if ld else 0.0))
            sys.stdout.flush()
