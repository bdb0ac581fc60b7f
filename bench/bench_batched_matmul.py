#!/usr/bin/env python3
"""Attention-shaped batched matmuls (issue 42): pdnn_matmul with two builds
of the library, alternated, wall and CPU time per call.

ViT-B/16's q @ k^T and attn @ v ({1,12,197,64} @ {1,12,64,197}, {1,12,197,
197} @ {1,12,197,64}) and Swin-T's first stage's ({64,3,49,32} @ {64,3,32,
49}, {64,3,49,49} @ {64,3,49,32}): one GEMM dispatch per matrix before the
strided batch, one dispatch in all after. Each round runs a child process
per build (the library chosen by POLYDNN_LIBRARY) that times N calls
after a warm-up, best of 5; the table gives each build's median over the
rounds and before / after (above 1: faster now). CPU time (the child's,
PoCL's worker threads included) swings less than wall time on a busy
machine.

usage: bench_batched_matmul.py BEFORE_LIB AFTER_LIB [--devices /gpu:0,/cpu:0] [--rounds 5]
(each LIB a libpolydnn.so.1; run from the build tree, whose python/ is
imported)."""
import os
import statistics
import subprocess
import sys

SHAPES = [("ViT-B/16 q @ k^T", (1, 12, 197, 64), (1, 12, 64, 197)),
          ("ViT-B/16 attn @ v", (1, 12, 197, 197), (1, 12, 197, 64)),
          ("Swin-T q @ k^T", (64, 3, 49, 32), (64, 3, 32, 49)),
          ("Swin-T attn @ v", (64, 3, 49, 49), (64, 3, 49, 32))]

CHILD = r"""
import resource, sys, time, numpy as np
sys.path.insert(0, "python")
import polydnn as pd
dev, shapes = sys.argv[1], eval(sys.argv[2])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
out = []
for sa, sb in shapes:
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal(sa, dtype=np.float32), rng.standard_normal(sb, dtype=np.float32)
    a = pd.empty(sa, layout="ND", device=dev); a.write_bytes(an.tobytes())
    b = pd.empty(sb, layout="ND", device=dev); b.write_bytes(bn.tobytes())
    c = pd.matmul(a, b)
    ref = np.matmul(an, bn)
    err = np.abs(c.numpy().reshape(ref.shape) - ref).max() / np.abs(ref).max()
    assert err < 1e-4, err
    for _ in range(3):
        pd._check(pd._matmul(a._handle(), b._handle(), 0, 0, c._handle()))
    c.numpy()
    wall = cput = 1e9
    for rep in range(5):
        n = 20
        t0, c0 = time.perf_counter(), cpu()
        for _ in range(n):
            pd._check(pd._matmul(a._handle(), b._handle(), 0, 0, c._handle()))
        c.numpy()
        wall, cput = min(wall, (time.perf_counter() - t0) / n), min(cput, (cpu() - c0) / n)
    out.append("%.6f %.6f" % (wall * 1e3, cput * 1e3))
print(" ".join(out))
"""


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    libs = {"before": sys.argv[1], "after": sys.argv[2]}
    opt = dict(a.split("=", 1) for a in sys.argv[3:] if "=" in a)
    devices = opt.get("--devices", "/gpu:0,/cpu:0").split(",")
    rounds = int(opt.get("--rounds", "5"))
    shapes = repr([(a, b) for _, a, b in SHAPES])
    got = {}
    for dev in devices:
        for _ in range(rounds):
            for name, lib in libs.items():
                o = subprocess.run([sys.executable, "-c", CHILD, dev, shapes], capture_output=True, text=True,
                                   env=dict(os.environ, POLYDNN_LIBRARY=lib), check=True).stdout.split()
                for i in range(len(SHAPES)):
                    got.setdefault((dev, name, i), []).append((float(o[2 * i]), float(o[2 * i + 1])))
    print("| device | matmul | before ms (wall / CPU) | after ms (wall / CPU) | before / after (wall / CPU) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for dev in devices:
        for i, (label, _, _) in enumerate(SHAPES):
            b = [statistics.median(x[j] for x in got[(dev, "before", i)]) for j in (0, 1)]
            a = [statistics.median(x[j] for x in got[(dev, "after", i)]) for j in (0, 1)]
            print("| %s | %s | %.3f / %.3f | %.3f / %.3f | %.2fx / %.2fx |" %
                  (dev, label, b[0], b[1], a[0], a[1], b[0] / a[0], b[1] / a[1]))


if __name__ == "__main__":
    main()
