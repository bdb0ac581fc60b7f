"""`polydnn train --model --distributed mpi`: data-parallel training of an
imported ONNX model over Open MPI ranks on this machine.

- A model without batch norm, 2 ranks of 4 rows each against one process
  with the whole batch of 8: the exported weights agree within 1e-5
  (each rank's gradient mean, averaged over the ranks, is the batch's).
- A model with batch norm: every rank ends with the same variables (the
  tool checks and says so), the running statistics averaged over the ranks.
- A rank on /cpu:0 and one on the default device (PoCL) finish together.
- Ranks started with different flags refuse together, naming the flag.

Usage: mpi_model_check.py POLYDNN_BINARY MPIRUN. Exit 0, 1 on a failure,
77 without numpy/onnx.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

TOOL, MPIRUN = sys.argv[1], sys.argv[2].split()
failures, passes = [], []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    (passes if cond else failures).append(what)


def model(path, bn, rng):
    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [init("w1", rng.normal(0, 0.5, (6, 2, 3, 3))), init("b1", rng.normal(0, 0.1, 6)),
             init("w2", rng.normal(0, 0.1, (3, 6 * 4 * 4))), init("b2", np.zeros(3))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1])]
    last = "c"
    if bn:
        inits += [init("s", rng.uniform(0.5, 1.5, 6)), init("t", rng.normal(0, 0.2, 6)),
                  init("mean", rng.normal(0, 0.1, 6)), init("var", rng.uniform(0.5, 1.5, 6))]
        nodes.append(helper.make_node("BatchNormalization", ["c", "s", "t", "mean", "var"], ["n", "rm", "rv"],
                                      momentum=0.9))
        last = "n"
    nodes += [helper.make_node("Relu", [last], ["r"]),
              helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
              helper.make_node("Flatten", ["p"], ["f"]),
              helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 2, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 3])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def main():
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        x = rng.normal(0, 1, (64, 2, 8, 8)).astype(np.float32)
        y = rng.integers(0, 3, 64)
        x[:, 0, :, :4] += (y[:, None, None] - 1.0).astype(np.float32)
        data = os.path.join(tmp, "d.npz")
        np.savez(data, x=x, y=y.astype(np.float32))
        plain, bn = os.path.join(tmp, "plain.onnx"), os.path.join(tmp, "bn.onnx")
        model(plain, False, rng)
        model(bn, True, rng)
        common = ["train", "--model", plain, "--npz", data, "--batch", "8", "--epochs", "2", "--lr", "0.05",
                  "--momentum", "0.9", "--seed", "3", "--device", "/cpu:0", "--val-split", "0.25"]
        one, two = os.path.join(tmp, "one.onnx"), os.path.join(tmp, "two.onnx")
        rc1, t1 = run([TOOL] + common + ["--export", one])
        rc2, t2 = run(MPIRUN + ["-np", "2", TOOL] + common + ["--distributed", "mpi", "--export", two])
        check(rc1 == 0 and rc2 == 0, f"one process and 2 ranks train (exit {rc1}, {rc2}: {t2[-400:]})")
        check("variables identical on all 2 ranks" in t2, "the ranks end with identical variables")
        if rc1 == 0 and rc2 == 0:
            a, b = weights(one), weights(two)
            worst = max(float(np.abs(a[k] - b[k]).max() / (np.abs(a[k]).max() + 1e-12)) for k in a)
            check(worst < 1e-5, f"2 ranks of 4 rows train as one process of 8 (largest relative difference "
                                f"{worst:.2e})")
            acc1 = [ln for ln in t1.splitlines() if "validation accuracy" in ln][-1:]
            acc2 = [ln for ln in t2.splitlines() if "validation accuracy" in ln][-1:]
            check(acc1 == acc2 and acc1, f"the same validation accuracy, evaluated in shards ({acc1} / {acc2})")
        # Towers inside each rank: 2 ranks x 2 towers of 2 rows train as one process of 8.
        if rc1 == 0 and "opencl" in run([TOOL, "devices"])[1]:
            four = os.path.join(tmp, "four.onnx")
            tw = [c if c != "/cpu:0" else "/cpu:0,/gpu:0" for c in common]
            rc, t = run(MPIRUN + ["-np", "2", TOOL] + tw + ["--distributed", "mpi", "--export", four])
            check(rc == 0 and "variables identical on all 2 ranks" in t,
                  f"2 ranks of 2 towers end identical (exit {rc}: {t[-400:]})")
            if rc == 0:
                a, b = weights(one), weights(four)
                worst = max(float(np.abs(a[k] - b[k]).max() / (np.abs(a[k]).max() + 1e-12)) for k in a)
                check(worst < 1e-5, f"2 ranks x 2 towers of 2 rows train as one process of 8 (largest relative "
                                    f"difference {worst:.2e})")
        # Batch norm: each rank's own batch statistics, the running ones averaged.
        common_bn = [c if c != plain else bn for c in common]
        three = os.path.join(tmp, "three.onnx")
        rc, t = run(MPIRUN + ["-np", "2", TOOL] + common_bn + ["--distributed", "mpi", "--export", three])
        check(rc == 0 and "variables identical on all 2 ranks" in t,
              f"with batch norm the ranks end identical (exit {rc}: {t[-400:]})")
        if rc == 0:
            w = weights(three)
            check(not np.allclose(w["mean"], weights(bn)["mean"]), "the running mean was trained and exported")
        # One rank on the host, one on the default device (issue 45's mixed job).
        mixed = MPIRUN + ["-np", "1", TOOL] + common_bn + ["--distributed", "mpi"] + \
            [":", "-np", "1", TOOL] + [c for c in common_bn if c != "/cpu:0" and c != "--device"] + \
            ["--distributed", "mpi"]
        rc, t = run(mixed)
        kinds = "opencl" in run([TOOL, "devices"])[1] or "cuda" in run([TOOL, "devices"])[1]
        check(not kinds or "different kinds of device" in t, "the mixed job says its devices differ in kind")
        check(rc == 0 and "variables identical on all 2 ranks" in t,
              f"a /cpu:0 rank and a default-device rank finish together (exit {rc}: {t[-400:]})")
        # Ranks that disagree refuse together.
        bad = MPIRUN + ["-np", "1", TOOL] + common + ["--distributed", "mpi"] + \
            [":", "-np", "1", TOOL] + common + ["--distributed", "mpi", "--lr", "0.07"]
        rc, t = run(bad)
        check(rc != 0 and "the ranks disagree on --lr" in t and "MPI_Abort" not in t,
              f"different --lr on the ranks is refused by name (exit {rc}: {t[-300:]})")
        rc, t = run(MPIRUN + ["-np", "3", TOOL] + common + ["--distributed", "mpi"])
        check(rc != 0 and "not a multiple of the 3 ranks" in t, f"--batch-size 8 on 3 ranks is refused ({t[-200:]})")
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
