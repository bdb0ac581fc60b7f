#!/usr/bin/env python3
"""numpy's side of the .npz tests (tests/test_trainio.c runs it).

npz_numpy.py check FILE   numpy.load (and torch.from_numpy, when torch is
                          there) of a checkpoint polydnn wrote: the arrays
                          test_trainio.c wrote, bit for bit.
npz_numpy.py make DIR     numpy.savez / savez_compressed files, good
                          (ok-*) and bad (bad-*), for polydnn's reader; the
                          fuzz seed corpus tests/fuzz/npz-corpus/ is this
                          output, committed.
"""
import os
import sys
import zipfile

import numpy as np


def expected():
    # Must match write_checkpoint() in tests/test_trainio.c.
    return {
        "conv1.w": (np.arange(24, dtype=np.float32) * np.float32(0.25) - np.float32(1)).reshape(2, 3, 4),
        "conv1.b": np.arange(3, dtype=np.float32) + np.float32(0.5),
        "empty": np.zeros((0,), dtype=np.float32),
        "step": np.array([7.0], dtype=np.float32),
    }


def check(path):
    with np.load(path) as z:
        names = sorted(z.files)
        want = expected()
        if names != sorted(want):
            sys.exit("members %r, expected %r" % (names, sorted(want)))
        for k, v in want.items():
            a = z[k]
            if a.dtype != np.float32 or a.shape != v.shape or not np.array_equal(a, v):
                sys.exit("member %s: %s %s %r, expected %s %r" % (k, a.dtype, a.shape, a, v.shape, v))
    # zipfile's own check of every CRC and header.
    with zipfile.ZipFile(path) as zf:
        bad = zf.testzip()
        if bad is not None:
            sys.exit("zipfile.testzip: bad member %s" % bad)
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_DEFLATED:
                sys.exit("member %s is not deflated" % info.filename)
    try:
        import torch
    except ImportError:
        print("ok (numpy; no torch)")
        return
    with np.load(path) as z:
        t = torch.from_numpy(z["conv1.w"])
        if t.dtype != torch.float32 or tuple(t.shape) != (2, 3, 4) or float(t[1, 2, 3]) != 23 * 0.25 - 1:
            sys.exit("torch.from_numpy: %r" % t)
    print("ok (numpy and torch)")


def make(d):
    os.makedirs(d, exist_ok=True)
    a = (np.arange(6, dtype=np.float32) * np.float32(0.5)).reshape(2, 3)
    b = np.linspace(-1, 1, 5, dtype=np.float32)
    np.savez(os.path.join(d, "ok-savez.npz"), a, weights=a, bias=b)
    np.savez_compressed(os.path.join(d, "ok-savez-compressed.npz"), weights=a, bias=b)
    np.savez_compressed(os.path.join(d, "ok-empty-array.npz"), e=np.zeros((0, 3), dtype=np.float32))
    # numpy reads these; polydnn refuses them with a message.
    np.savez(os.path.join(d, "bad-int64-member.npz"), n=np.arange(3))
    good = open(os.path.join(d, "ok-savez-compressed.npz"), "rb").read()
    with open(os.path.join(d, "bad-truncated.npz"), "wb") as f:
        f.write(good[: len(good) - 30])
    # A flipped byte inside the first member's compressed data.
    k = 30 + len("weights.npy") + 20 + 8
    with open(os.path.join(d, "bad-flipped-byte.npz"), "wb") as f:
        f.write(good[:k] + bytes([good[k] ^ 0x10]) + good[k + 1:])
    with open(os.path.join(d, "bad-not-zip.npz"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + b" " * 40)
    with zipfile.ZipFile(os.path.join(d, "bad-not-npy-name.npz"), "w") as zf:
        zf.writestr("weights.txt", b"hello")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "make"):
        sys.exit(__doc__)
    (check if sys.argv[1] == "check" else make)(sys.argv[2])
