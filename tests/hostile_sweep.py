#!/usr/bin/env python3
"""A sweep of hostile inputs over the surfaces a user hands polydnn files
and arguments through (issue 47): ONNX files (the tool on /cpu:0 and
/gpu:0, and Python's load_onnx), .npy inputs, .npz checkpoints (and kill -9
during --save), IDX training data, the tool's flags and the Python API.
The inputs are mutations of the fuzz seed corpora (tests/fuzz/*-corpus)
and of files made here, seeded, so a run is repeatable.

Every case runs under a timeout (a hang is a failure) and must end in an
ordinary exit (0, 1 or 2: no signal, no 134 or 139), print no sanitizer
report (run it against an --enable-sanitizers build), and leave every
input file as it was (checksums before and after).

Usage: hostile_sweep.py --build DIR [--src DIR] [--scale F] [--timeout S]
  --scale 1 is the whole sweep (about 2,100 cases); 0.1 a sample.
Prints the counts per surface and the time; exit 1 on any failure.
Needs numpy and onnx (Debian: python3-numpy, python3-onnx)."""
import argparse
import gzip
import hashlib
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

# Reports, not the warning of an allocation ASan returns NULL for (Python runs
# with allocator_may_return_null=1: polydnn must then fail cleanly).
SANITIZER = re.compile(rb"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:)")
OK_EXITS = (0, 1, 2)
HUGE = [b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff\xff\xff\xff\x7f"]


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def mutate(data, rng):
    """One to four byte-level changes: bit flips, a truncation, inserted or
    deleted runs, a field overwritten with an extreme integer."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        at = rng.randrange(len(b)) if b else 0
        if kind == 0 and b:
            b[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del b[rng.randrange(len(b) + 1):]
        elif kind == 2:
            b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif kind == 3 and b:
            del b[at:at + rng.randint(1, 32)]
        elif kind == 4:
            h = rng.choice(HUGE)
            b[at:at + len(h)] = h
        else:
            b[at:at] = b[at:at + rng.randint(1, 64)]  # a run repeated
    return bytes(b)


class Sweep:
    def __init__(self, args):
        self.args = args
        self.counts = {}
        self.failures = []
        self.env = dict(os.environ)
        self.env.setdefault("POLYDNN_CACHE_DIR", os.path.join(args.tmp, "cache"))
        self.env["ASAN_OPTIONS"] = self.env.get("ASAN_OPTIONS", "detect_leaks=1")
        supp = os.path.join(args.src, "tests", "lsan.supp")
        if os.path.exists(supp):
            self.env.setdefault("LSAN_OPTIONS", "suppressions=" + supp)

    def tally(self, surface, key, n=1):
        c = self.counts.setdefault(surface, {"cases": 0, "crashes": 0, "hangs": 0, "sanitizer": 0, "changed": 0,
                                             "exits": 0})
        c[key] += n

    def fail(self, surface, what, argv, out=b""):
        self.failures.append((surface, what, argv, out[-1500:].decode("utf-8", "replace")))

    def run(self, surface, argv, inputs=(), timeout=None, env=None, stdin=None, cases=1):
        """Runs argv as `cases` hostile cases of surface; returns its output."""
        sums = {p: sha(p) for p in inputs}
        self.tally(surface, "cases", cases)
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL if stdin is None else stdin, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=timeout or self.args.timeout,
                               env=env or self.env, start_new_session=True)
        except subprocess.TimeoutExpired as e:
            self.tally(surface, "hangs")
            self.fail(surface, "hang (over %d s)" % (timeout or self.args.timeout), argv, e.output or b"")
            return b""
        out = p.stdout
        if p.returncode < 0 or p.returncode in (134, 139) or p.returncode >= 128:
            self.tally(surface, "crashes")
            self.fail(surface, "crash (exit %d)" % p.returncode, argv, out)
        elif p.returncode not in OK_EXITS:
            self.tally(surface, "exits")
            self.fail(surface, "exit %d" % p.returncode, argv, out)
        if SANITIZER.search(out):
            self.tally(surface, "sanitizer")
            self.fail(surface, "sanitizer report", argv, out)
        for path, h in sums.items():
            if not os.path.exists(path) or sha(path) != h:
                self.tally(surface, "changed")
                self.fail(surface, "input changed: " + path, argv, out)
        return out


def tool(a):
    return [os.path.join(a.build, "polydnn")]


# ---- ONNX ---------------------------------------------------------------------

def onnx_structural(model_bytes, rng):
    """A parsed seed with one field made hostile: a dimension, an attribute,
    an initializer's shape or data, a node's inputs or type."""
    import onnx
    m = onnx.load_from_string(model_bytes)
    g = m.graph
    kind = rng.randrange(7)
    vals = [0, -1, -7, 1 << 31, 1 << 62, 3, 1]
    if kind == 0 and len(g.input):
        dims = g.input[0].type.tensor_type.shape.dim
        if len(dims):
            dims[rng.randrange(len(dims))].dim_value = rng.choice(vals)
    elif kind == 1 and len(g.initializer):
        t = g.initializer[rng.randrange(len(g.initializer))]
        if len(t.dims):
            t.dims[rng.randrange(len(t.dims))] = rng.choice(vals)
    elif kind == 2 and len(g.initializer):
        t = g.initializer[rng.randrange(len(g.initializer))]
        t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data) + 1)]
    elif kind == 3 and len(g.node):
        n = g.node[rng.randrange(len(g.node))]
        if len(n.attribute):
            at = n.attribute[rng.randrange(len(n.attribute))]
            if len(at.ints):
                at.ints[rng.randrange(len(at.ints))] = rng.choice(vals)
            else:
                at.i = rng.choice(vals)
                at.f = float(rng.choice([np.nan, np.inf, -1e30]))
        else:
            n.attribute.extend([onnx.helper.make_attribute("axis", rng.choice(vals))])
    elif kind == 4 and len(g.node):
        n = g.node[rng.randrange(len(g.node))]
        n.input.append(rng.choice(["", "missing", n.output[0] if len(n.output) else "y"]))
    elif kind == 5 and len(g.node):
        n = g.node[rng.randrange(len(g.node))]
        n.op_type = rng.choice(["Conv", "Relu", "Gemm", "MaxPool", "Concat", "Reshape", "Softmax", "Nope"])
    elif len(g.node):
        g.node[rng.randrange(len(g.node))].output[0] = g.input[0].name if len(g.input) else "x"  # a cycle
    return m.SerializeToString()


def sweep_onnx(s, a, rng, n_files):
    seeds = sorted(os.path.join(a.src, "tests/fuzz/onnx-corpus", f)
                   for f in os.listdir(os.path.join(a.src, "tests/fuzz/onnx-corpus")))
    d = os.path.join(a.tmp, "onnx")
    os.makedirs(d, exist_ok=True)
    files = []
    for i in range(n_files):
        seed = open(rng.choice(seeds), "rb").read()
        try:
            data = onnx_structural(seed, rng) if i % 2 else mutate(seed, rng)
        except Exception:  # a seed onnx cannot parse: bytes instead
            data = mutate(seed, rng)
        path = os.path.join(d, "m%04d.onnx" % i)
        with open(path, "wb") as f:
            f.write(data)
        files.append(path)
    for path in files:
        for dev in ("/cpu:0", "/gpu:0"):
            s.run("onnx (tool)", tool(a) + ["run", path, "--device", dev, "--iters", "1", "--warmup", "1"], [path])
    # Python: load_onnx and one call per file, 25 files a process (a crash
    # is counted for the whole batch).
    for i in range(0, len(files), 25):
        batch = files[i:i + 25]
        code = PY_PRELUDE + (
            "for p in sys.argv[1:]:\n"
            "    for dev in ('/cpu:0', '/gpu:0'):\n"
            "        try:\n"
            "            m = polydnn.load_onnx(p, device=dev)\n"
            "            m(*[np.zeros([max(1, min(int(d or 1), 8)) for d in (n.shape if hasattr(n, 'shape') else [1, 1])],"
            " np.float32) for n in m.inputs])\n"
            "        except Exception:\n"
            "            pass\n"
            "print('done')\n")
        out = s.run("onnx (Python)", [a.python, "-c", code] + batch, batch, env=s.py_env, cases=2 * len(batch),
                    timeout=a.timeout * 4)
        if out and b"done" not in out:
            s.tally("onnx (Python)", "exits")
            s.fail("onnx (Python)", "the batch did not finish", ["python -c ..."] + batch, out)


PY_PRELUDE = "import sys\nimport numpy as np\nimport polydnn\n"


# ---- .npy inputs ----------------------------------------------------------------

def sweep_npy(s, a, rng, n):
    src = os.path.join(a.src, "tests/fuzz/npy-corpus")
    seeds = sorted(os.path.join(src, f) for f in os.listdir(src))
    d = os.path.join(a.tmp, "npy")
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        path = os.path.join(d, "x%04d.npy" % i)
        with open(path, "wb") as f:
            f.write(mutate(open(rng.choice(seeds), "rb").read(), rng))
        cmd = rng.choice(["conv", "pool"])
        argv = tool(a) + [cmd, "--input", path, "--iters", "1", "--device", rng.choice(["/cpu:0", "/gpu:0"])]
        s.run(".npy (--input)", argv + (["-k", "4"] if cmd == "conv" else []), [path])


# ---- checkpoints and training data ------------------------------------------------

TRAIN = ["--device", "/cpu:0", "--batch-size", "8", "--train-limit", "32", "--test-limit", "8"]


def write_idx(d, n_train=40, n_test=10, rows=28, cols=28, rng=None):
    os.makedirs(d, exist_ok=True)
    rng = rng or random.Random(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        img = struct.pack(">IIII", 0x803, n, rows, cols) + bytes(rng.randrange(256) for _ in range(n * rows * cols))
        lab = struct.pack(">II", 0x801, n) + bytes(rng.randrange(10) for _ in range(n))
        with gzip.open(os.path.join(d, prefix + "-images-idx3-ubyte.gz"), "wb") as f:
            f.write(img)
        with gzip.open(os.path.join(d, prefix + "-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(lab)


def npz_structural(base, rng, path):
    a = dict(np.load(base))
    keys = sorted(a)
    kind = rng.randrange(6)
    k = rng.choice(keys)
    if kind == 0:
        a[k] = a[k].reshape(-1)[: rng.randrange(a[k].size + 1)]
    elif kind == 1:
        a[k] = a[k].astype(rng.choice([np.float64, np.int32, np.uint8, np.float16]))
    elif kind == 2:
        v = a[k].reshape(-1).copy()
        if v.size:
            v[rng.randrange(v.size)] = rng.choice([np.nan, np.inf, -1, 1e30, -1e30, 2 ** 40])
        a[k] = v.reshape(a[k].shape)
    elif kind == 3:
        del a[k]
    elif kind == 4:
        a["extra%d" % rng.randrange(100)] = np.zeros(rng.randrange(5), np.float32)
    else:
        a[k] = np.zeros((2,) + a[k].shape, a[k].dtype)
    np.savez(path, **a)


def sweep_checkpoints(s, a, rng, n, kills):
    d = os.path.join(a.tmp, "ckpt")
    data = os.path.join(a.tmp, "data-good")
    write_idx(data)
    os.makedirs(d, exist_ok=True)
    base, keep = os.path.join(d, "base.npz"), os.path.join(d, "keep.npz")
    subprocess.run(tool(a) + ["train"] + TRAIN + ["--data", data, "--steps", "2", "--save", base],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=s.env, check=True)
    shutil.copy(base, keep)
    raw = open(base, "rb").read()
    for i in range(n):
        path = os.path.join(d, "c%04d.npz" % i)
        if i % 2:
            npz_structural(base, rng, path)
        else:
            with open(path, "wb") as f:
                f.write(mutate(raw, rng))
        s.run("checkpoints (--load)", tool(a) + ["train"] + TRAIN + ["--data", data, "--load", path, "--steps", "1",
                                                                    "--save", keep], [path, base])
        if sha(keep) != sha(base) and os.path.exists(keep):
            pass  # a checkpoint that loads trains on and saves: keep is the new one
        shutil.copy(base, keep)
    # kill -9 during --save: the previous checkpoint stays whole and loads.
    for i in range(kills):
        ck = os.path.join(d, "kill.npz")
        shutil.copy(base, ck)
        p = subprocess.Popen(tool(a) + ["train"] + TRAIN + ["--data", data, "--checkpoint-every", "1", "--epochs", "50",
                                                             "--save", ck], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=s.env, start_new_session=True)
        time.sleep(rng.uniform(0.3, 3.0))
        p.send_signal(signal.SIGKILL)
        p.wait()
        s.tally("checkpoints (kill -9 in --save)", "cases")
        try:
            z = np.load(ck)
            _ = [z[k] for k in z.files]
        except Exception as e:
            s.tally("checkpoints (kill -9 in --save)", "changed")
            s.fail("checkpoints (kill -9 in --save)", "checkpoint unreadable after kill -9: %s" % e, ["kill"])
        s.run("checkpoints (kill -9 in --save)", tool(a) + ["train"] + TRAIN + ["--data", data, "--load", ck,
                                                                                "--steps", "1"], cases=0)


def sweep_idx(s, a, rng, n):
    good = os.path.join(a.tmp, "data-good")
    names = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
             "t10k-labels-idx1-ubyte.gz"]
    for i in range(n):
        d = os.path.join(a.tmp, "idx%04d" % i)
        kind = i % 3
        if kind == 0:  # other image sizes and counts, consistent headers
            write_idx(d, rng.choice([0, 1, 5, 40]), rng.choice([0, 1, 10]), rng.choice([0, 1, 8, 28, 32]),
                      rng.choice([1, 27, 28, 56]), rng)
        else:
            shutil.copytree(good, d)
            name = os.path.join(d, rng.choice(names))
            raw = open(name, "rb").read()
            if kind == 1:  # the gzip stream itself
                data = mutate(raw, rng)
            else:  # the IDX bytes inside a sound gzip stream
                data = gzip.compress(mutate(gzip.decompress(raw), rng))
            with open(name, "wb") as f:
                f.write(data)
        files = [os.path.join(d, f) for f in os.listdir(d)]
        s.run("IDX data (--data)", tool(a) + ["train"] + TRAIN + ["--data", d, "--steps", "1"], files)
        shutil.rmtree(d)


# ---- flags --------------------------------------------------------------------------

VALUES = ["", "-1", "0", "nan", "inf", "-inf", "1e400", "abc", "2147483648", "9223372036854775808",
          "-9223372036854775809", "0x10", "1.5", "1,2", "/gpu:99", "/cpu:-1", "%s%n%x", "\u00e9\u00e9", "x" * 5000,
          "--", "-", "NCHW", "NHWC", "/dev/null", "/nonexistent/x.npy"]
COMMANDS = {
    "conv": ["-n", "-c", "-H", "-W", "-k", "-y", "-x", "-p", "-q", "-u", "-v", "-l", "-j", "-g", "--pad-top",
             "--layout", "--filter-layout", "--device", "--algo", "--iters", "--seed", "--input", "--filter",
             "--bias-file", "--padding"],
    "pool": ["-n", "-c", "-H", "-W", "-y", "-x", "-p", "-q", "-u", "-v", "-m", "--layout", "--device", "--iters",
             "--input", "--pad-left"],
    "run": ["--input", "-n", "-d", "-i", "--warmup", "--seed", "--memory-fraction"],
    "train": ["--epochs", "-n", "--lr", "--momentum", "--optimizer", "--layout", "--device", "--seed", "--steps",
              "--train-limit", "--test-limit", "--data", "--load", "--checkpoint-every", "--memory-fraction"],
    "tune": ["--device", "--batch", "--iters"],
    "bench": ["--device", "--iters", "-n"],
    "run-example": ["-d", "--memory-fraction"],
    "devices": ["--memory-fraction"],
}
SAFE = {"conv": ["--iters", "1", "-c", "4", "-k", "4", "-H", "6", "-W", "6"], "pool": ["--iters", "1", "-H", "6", "-W", "6"],
        "train": TRAIN + ["--steps", "1"], "tune": ["conv", "--iters", "1"], "bench": ["conv", "--iters", "1"],
        "run-example": ["cnn"], "run": [], "devices": []}


def sweep_flags(s, a, rng, n):
    model = sorted(os.path.join(a.src, "tests/fuzz/onnx-corpus", f)
                   for f in os.listdir(os.path.join(a.src, "tests/fuzz/onnx-corpus")))[0]
    data = os.path.join(a.tmp, "data-good")
    for _ in range(n):
        cmd = rng.choice(sorted(COMMANDS))
        argv = tool(a) + [cmd] + list(SAFE[cmd])
        if cmd == "run":
            argv.append(model)
        if cmd == "train":
            argv += ["--data", data]
        for _ in range(rng.randint(1, 3)):
            argv += [rng.choice(COMMANDS[cmd]), rng.choice(VALUES)]
        if rng.randrange(8) == 0:
            argv.insert(rng.randrange(1, len(argv) + 1), rng.choice(["--bogus", "-Z", "--iters", "--", "-"]))
        s.run("flags", argv)


# ---- the Python API -----------------------------------------------------------------

PY_CASES = [
    "polydnn.conv2d(T((1,3,5,5)), T((4,3,3,3)), stride={v})",
    "polydnn.conv2d(T((1,3,5,5)), T((4,3,3,3)), padding={v})",
    "polydnn.conv2d(T((1,3,5,5)), T((4,3,3,3)), dilation={v})",
    "polydnn.conv2d(T((1,4,5,5)), T((4,1,3,3)), groups={v})",
    "polydnn.conv2d(T({s}), T({s2}))",
    "polydnn.matmul(T({s}), T({s2}))",
    "polydnn.add(T({s}), T({s2}))",
    "polydnn.concat([T({s}), T({s2})], axis={v})",
    "polydnn.softmax(T({s}))",
    "polydnn.relu(T({s}))",
    "polydnn.transform(T({s}), {q})",
    "polydnn.empty({s}, device={q})",
    "polydnn.empty({s}, layout={q})",
    "polydnn.from_dlpack(np.zeros({s}, {dt}))",
    "polydnn.from_dlpack(np.zeros({s}, np.float32)[..., ::2])",
    "T({s}).to({q})",
    "polydnn.load_onnx({b})",
    "polydnn.load_onnx(b'\\x08' * {v})",
    "polydnn.conv2d_backward_data({s}, T((4,3,3,3)), T({s2}))",
    "polydnn.batch_norm(T({s}), T({s2}), T({s2}))",
    "polydnn.softmax_cross_entropy(T({s}), T({s2}))",
]
PY_VALS = ["0", "-1", "1 << 40", "float('nan')", "(1, 2, 3)", "None", "'2'", "2.5", "[]", "-(1 << 63)"]
PY_SHAPES = ["(1,3,5,5)", "(0,3,5,5)", "(1,0,1,1)", "(2,3)", "(1,1,1,1)", "(1,3,5,5,1)", "()", "(1 << 31, 1, 1, 1)",
             "(3,)", "(-1, 2, 2, 2)", "(1, 2, 1 << 20, 1 << 20)"]
PY_STRS = ["'/gpu:0'", "'/gpu:99'", "'/cpu:0'", "''", "'NHWC'", "'NCHW'", "'bogus'", "None", "3", "'\\x00'"]
PY_BYTES = ["b''", "b'\\x00' * 100", "'/nonexistent.onnx'", "'/dev/null'", "'/'"]


def sweep_python(s, a, rng, n):
    per = 50
    for i in range(0, n, per):
        lines = []
        for _ in range(min(per, n - i)):
            c = rng.choice(PY_CASES).format(v=rng.choice(PY_VALS), s=rng.choice(PY_SHAPES), s2=rng.choice(PY_SHAPES),
                                            q=rng.choice(PY_STRS), dt=rng.choice(["np.float64", "np.int8", "bool",
                                                                                  "np.float16", "np.float32"]),
                                            b=rng.choice(PY_BYTES))
            lines.append("try:\n    %s\nexcept Exception:\n    pass\n" % c)
        # T: a tensor of the shape, from NumPy where NumPy can hold it, else
        # polydnn's own empty() (a shape of 2**41 elements made NumPy abort
        # under ASan: the harness's allocation, not polydnn's).
        code = (PY_PRELUDE + "def T(shape, device=%r):\n"
                "    if len(shape) and min(shape) >= 0 and np.prod(shape, dtype=float) <= 1e7:\n"
                "        return polydnn.from_dlpack(np.ones(shape, np.float32)).to(device)\n"
                "    return polydnn.empty(shape, device=device)\n" % rng.choice(["/cpu:0", "/gpu:0"])
                + "".join(lines) + "print('done')\n")
        out = s.run("Python API", [a.python, "-c", code], env=s.py_env, cases=len(lines), timeout=a.timeout * 4)
        if out and b"done" not in out:
            s.tally("Python API", "exits")
            s.fail("Python API", "the batch did not finish", ["python -c ..."], out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--seed", type=int, default=47)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", help="a comma list of surfaces: ONNX,.npy,checkpoints,IDX,flags,Python")
    a = ap.parse_args()
    a.build, a.src = os.path.abspath(a.build), os.path.abspath(a.src)
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        a.tmp = tmp
        s = Sweep(a)
        s.py_env = dict(s.env)
        s.py_env["POLYDNN_LIBRARY"] = os.path.join(a.build, ".libs", "libpolydnn.so")
        s.py_env["PYTHONPATH"] = os.path.join(a.src, "python")
        san = os.path.join(a.build, "config.log")
        if os.path.exists(san) and "--enable-sanitizers" in open(san, errors="replace").read(4000):
            libasan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
            s.py_env["LD_PRELOAD"] = libasan
            # Python's own allocations are not ours; a hostile size must get
            # NULL (and polydnn's error), not ASan's abort.
            s.py_env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1"
        rng = random.Random(a.seed)

        def k(n):
            return max(1, int(round(n * a.scale)))
        steps = [("ONNX", lambda: sweep_onnx(s, a, rng, k(140))), (".npy", lambda: sweep_npy(s, a, rng, k(200))),
                 ("checkpoints", lambda: sweep_checkpoints(s, a, rng, k(180), k(10))),
                 ("IDX", lambda: sweep_idx(s, a, rng, k(180))), ("flags", lambda: sweep_flags(s, a, rng, k(600))),
                 ("Python", lambda: sweep_python(s, a, rng, k(400)))]
        for name, step in steps:
            if a.only and name not in a.only.split(","):
                continue
            t0 = time.time()
            step()
            print("%-12s done in %.0f s" % (name, time.time() - t0), flush=True)
    total = {key: sum(c[key] for c in s.counts.values()) for key in ("cases", "crashes", "hangs", "sanitizer",
                                                                       "changed", "exits")}
    print("\n%-34s %6s %7s %5s %9s %7s %10s" % ("surface", "cases", "crashes", "hangs", "sanitizer", "changed",
                                                 "other exit"))
    for name, c in sorted(s.counts.items()):
        print("%-34s %6d %7d %5d %9d %7d %10d" % (name, c["cases"], c["crashes"], c["hangs"], c["sanitizer"],
                                                   c["changed"], c["exits"]))
    print("%-34s %6d %7d %5d %9d %7d %10d" % ("total", total["cases"], total["crashes"], total["hangs"],
                                               total["sanitizer"], total["changed"], total["exits"]))
    print("time: %.0f s" % (time.time() - start))
    for surface, what, argv, out in s.failures[:30]:
        print("\nFAIL %s: %s\n  %s\n%s" % (surface, what, " ".join(argv)[:400], out))
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
