#!/usr/bin/env python3
"""Writes the seed corpus of the .npy fuzz target (tests/fuzz/npy-corpus/):
valid float32 files written by numpy itself in format versions 1.0, 2.0 and
3.0, and the corrupt and unsupported headers tests/test_npy.c checks. The
valid files' values are arange(n) * 0.5 - 3.25, which tests/test_npy.c
reads back. Run from anywhere: python3 tests/fuzz/make-npy-corpus.py"""
import os
import struct

import numpy as np
import numpy.lib.format as fmt

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npy-corpus")
os.makedirs(out, exist_ok=True)


def values(shape):
    n = int(np.prod(shape, dtype=np.int64))
    return (np.arange(n, dtype="<f4") * np.float32(0.5) - np.float32(3.25)).reshape(shape)


def save(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


# Valid: numpy's own writer, each version.
for version in ((1, 0), (2, 0), (3, 0)):
    for shape in ((2, 3), (4,), (), (2, 0, 3), (1, 2, 3, 4)):
        tag = "x".join(str(d) for d in shape) or "scalar"
        path = os.path.join(out, "valid-v%d-%s.npy" % (version[0], tag))
        with open(path, "wb") as f:
            fmt.write_array(f, values(shape), version=version, allow_pickle=False)


def image(header, data=b"", version=1):
    """A file with this header text, padded as numpy pads it."""
    h = header.encode("latin1")
    pre = 10 if version == 1 else 12
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    size = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes((version, 0)) + size + h + data


six = values((2, 3)).tobytes()
good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
cases = {
    "dtype-f8": "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
    "dtype-big-endian": "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
    "fortran": "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
    "shape-not-int": "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }",
    "shape-no-comma": "{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
    "shape-overflow": "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9999), }",
    "missing-key": "{'descr': '<f4', 'shape': (2, 3), }",
    "extra-key": "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}",
    "duplicate-key": "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3)}",
    "key-in-string": "{'note': \"'shape': (6,)\", 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
    "double-quotes-newlines": '{"descr":\t"<f4",\n "fortran_order": False, "shape": (\n2, 3,\n)}',
    "python2-long": "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
}
for name, header in cases.items():
    save("header-%s.npy" % name, image(header, six))
save("data-truncated.npy", image(good, six[:-4]))
save("data-trailing.npy", image(good, six + b"\0\0\0\0"))
save("header-truncated.npy", image(good, six)[:60])
save("magic-bad.npy", b"X" + image(good, six)[1:])
save("magic-short.npy", image(good, six)[:5])
save("version-9.npy", image(good, six)[:6] + b"\x09" + image(good, six)[7:])
nul = bytearray(image(good, six))
nul[30] = 0
save("header-nul.npy", bytes(nul))
save("huge-declared-size.npy", image("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"))
