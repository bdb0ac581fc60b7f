#!/usr/bin/env python3
"""The tool's .npy reader against numpy's own (numpy.load), on headers
written by hand and on seeded random mutations of numpy's header.

Safety: whatever numpy refuses, polydnn refuses. Fidelity: whatever numpy
reads as a float32 C-order 4-D array, polydnn reads to the same values,
except for the differences polydnn makes on purpose (ALLOWED below).
Usage: npy_vs_numpy.py TOOL (test_cli.sh runs it when numpy is there)."""
import io
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np

tool = sys.argv[1]
tmp = tempfile.mkdtemp()
DATA = (np.arange(6, dtype="<f4") * np.float32(0.5)).tobytes()
# numpy reads these; polydnn refuses them on purpose, with this message.
ALLOWED = {
    "trailing data": "numpy ignores bytes after the array",
    "duplicate key": "numpy takes the last of two",
    "after the header's closing": "a comment after the dict",
    "is not supported": "a float32 alias other than '<f4'",
    "Fortran order": "polydnn reads C order only",
}


def image(header, data=DATA, version=1):
    h = header.encode("latin1")
    pre = 10 if version == 1 else 12
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    size = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes((version, 0)) + size + h + data


def numpy_reads(img):
    try:
        a = np.load(io.BytesIO(img), allow_pickle=False)
    except Exception:  # noqa: BLE001 - any refusal counts
        return None
    return a if isinstance(a, np.ndarray) else None


def tool_reads(img):
    src, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    with open(src, "wb") as f:
        f.write(img)
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([tool, "pool", "--input", src, "-y", "1", "-x", "1", "-u", "1", "-v", "1", "--iters", "1",
                        "--device", "/cpu:0", "--output", out], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, POLYDNN_BACKEND="host"))
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.load(out), ""


failures = 0
checked = {"both read": 0, "both refused": 0, "allowed difference": 0, "not 4-D": 0}


def compare(img, what):
    global failures
    want = numpy_reads(img)
    got, msg = tool_reads(img)
    if want is None:
        if got is not None:
            failures += 1
            print("FAIL: numpy refuses, polydnn reads: %s" % what)
        else:
            checked["both refused"] += 1
        return
    if want.ndim != 4:
        checked["not 4-D"] += 1  # the pool command needs 4-D: not a reader question
        if got is not None:
            failures += 1
            print("FAIL: polydnn read a %d-D array as 4-D: %s" % (want.ndim, what))
        return
    if got is None:
        if any(k in msg for k in ALLOWED):
            checked["allowed difference"] += 1
            return
        failures += 1
        print("FAIL: numpy reads %s %s, polydnn refuses: %s\n    %s" % (want.dtype, want.shape, what, msg))
        return
    if want.dtype != np.float32 or got.shape != want.shape or not np.array_equal(got, want):
        failures += 1
        print("FAIL: different arrays (numpy %s %s, polydnn %s): %s" % (want.dtype, want.shape, got.shape, what))
        return
    checked["both read"] += 1


K = "'descr': '<f4', 'fortran_order': False"
hand = [
    "{%s, 'shape': (1, 1, 2, 3), }" % K,
    "{%s, 'shape': (1, 1, 2, 3)}" % K,
    '{"descr": "<f4", "fortran_order": False, "shape": (1, 1, 2, 3,)}',
    "{u'descr': r'<f4', U'fortran_order': False, R'shape': (1, 1, 2, 3)}",
    "{b'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 3)}",
    "  {'shape': (1,1,2,3), 'fortran_order': False,\n'descr':\t'<f4'}",
    "{%s, 'shape': (1L, 1L, 2L, 3L), }" % K,
    "{%s, 'shape': (1, 1, 2, 3), 'shape': (1, 1, 2, 3)}" % K,
    "{%s, 'shape': (1, 1, 2, 3)} # comment" % K,
    "{%s, 'shape': (1, 1, 2, 3), 'extra': 0}" % K,
    "{'note': \"'shape': (1, 1, 2, 3)\", %s, 'shape': (1, 1, 6, 1)}" % K,
    "{'descr': '<f4', 'shape': (1, 1, 2, 3)}",
    "{%s, 'shape': (1, 1, 2, 3), " % K,
    "{'descr': 'f4', 'fortran_order': False, 'shape': (1, 1, 2, 3)}",
    "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 2, 3)}",
    "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 2, 3)}",
    "{'descr': '>f4', 'fortran_order': False, 'shape': (1, 1, 2, 3)}",
    "{%s, 'shape': (1, 1, -2, -3)}" % K,
    "{%s, 'shape': (1, 1, 2, 3.0)}" % K,
    "{%s, 'shape': [1, 1, 2, 3]}" % K,
    "{%s, 'shape': (1, 1, 2, 3)}}" % K,
    "{%s, 'shape': (01, 1, 2, 3)}" % K,
]
for h in hand:
    compare(image(h), repr(h))
for v in (2, 3):
    compare(image("{%s, 'shape': (1, 1, 2, 3), }" % K, version=v), "version %d.0" % v)
compare(image("{%s, 'shape': (1, 1, 2, 3), }" % K) + b"\0\0\0\0", "trailing data")
compare(image("{%s, 'shape': (1, 1, 2, 3), }" % K)[:-4], "truncated data")

# Seeded mutations of the header text: replace, insert or delete a byte
# (from the characters a header is made of), once to three times.
rng = random.Random(14)
alphabet = "{}()[]:,'\" \t\n0123456789-+.L#\\xTFalseTrudscrpho_<>f4"
base = "{%s, 'shape': (1, 1, 2, 3), }" % K
for _ in range(int(os.environ.get("NPY_MUTATIONS", "200"))):
    h = list(base)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(h) + 1)
        op = rng.randrange(3)
        c = rng.choice(alphabet)
        if op == 0 and i < len(h):
            h[i] = c
        elif op == 1:
            h.insert(i, c)
        elif i < len(h):
            del h[i]
    h = "".join(h)
    compare(image(h), repr(h))

print("npy_vs_numpy: %s" % ", ".join("%d %s" % (n, k) for k, n in checked.items()))
for f in os.listdir(tmp):
    os.unlink(os.path.join(tmp, f))
os.rmdir(tmp)
sys.exit(1 if failures else 0)
