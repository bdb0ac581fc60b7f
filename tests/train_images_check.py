"""`polydnn train --model m.onnx --images DIR`: training on a folder of
PNG and JPEG images laid out as torchvision's ImageFolder.

A small CNN (hand-built ONNX) learns three synthetic classes from images
of mixed sizes, modes and formats; the class folders are named so that
their sorted order (the labels, as torchvision's class_to_idx) differs
from the order they were made in, and the exported model, run by ONNX
Runtime on numpy's own decoding of the test images, must score them by
those labels. Then every kind of bad folder gets its own message.

Usage: train_images_check.py POLYDNN_TOOL. Exit 0, 1 on a failure, 77
without numpy/onnx/onnxruntime/PIL.
"""
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    from PIL import Image
    from fashion_idx import FASHION, idx  # beside this file
except ImportError as e:
    print(f"SKIP: {e}")
    sys.exit(77)

TOOL = sys.argv[1]
H = W = 16
# Made in this order; sorted they are alpha_left (0), mid_stripes (1), zeta_right (2).
CLASSES = ["zeta_right", "alpha_left", "mid_stripes"]
failures = []
passes = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    (passes if cond else failures).append(what)


def pattern(cls, h, w, rng):
    img = rng.uniform(0, 60, (h, w)).astype(np.float32)
    if cls == "alpha_left":
        img[:, : w // 2] += 180
    elif cls == "zeta_right":
        img[:, w // 2:] += 180
    else:
        for r in range(0, h, 4):
            img[r: r + 2, :] += 180
    return np.clip(img, 0, 255).astype(np.uint8)


def make_folder(root, per_class, rng, sizes):
    for k, cls in enumerate(CLASSES):
        os.makedirs(os.path.join(root, cls))
        for i in range(per_class):
            h, w = sizes[(i + k) % len(sizes)]
            gray = pattern(cls, h, w, rng)
            kind = i % 3
            if kind == 0:
                Image.fromarray(gray, "L").save(os.path.join(root, cls, f"img{i:03d}.png"))
            elif kind == 1:
                Image.fromarray(np.stack([gray] * 3, -1), "RGB").save(os.path.join(root, cls, f"img{i:03d}.PNG"))
            else:
                Image.fromarray(np.stack([gray] * 3, -1), "RGB").save(os.path.join(root, cls, f"img{i:03d}.jpg"),
                                                                      quality=95)
        # What torchvision skips, and so must we.
        with open(os.path.join(root, cls, "notes.txt"), "w") as f:
            f.write("not an image\n")
        with open(os.path.join(root, cls, ".hidden.png"), "wb") as f:
            f.write(b"corrupt")


def model(path, rng):
    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [
        init("w1", rng.normal(0, (2.0 / 27) ** 0.5, (8, 3, 3, 3))), init("b1", np.zeros(8)),
        init("w2", rng.normal(0, (1.0 / 512) ** 0.5, (3, 8 * 8 * 8))), init("b2", np.zeros(3)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "images", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, path)


def train(*args):
    r = subprocess.run([TOOL, "train", *args], capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


FASHION_NAMES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                 "Ankle_boot"]


def fashion(tmp, rng):
    """Fashion-MNIST written as a folder of PNG and JPEG files, some of
    other sizes, some corrupt: trains with --skip-bad-images naming each
    bad file, stops at the first without it."""
    if not os.path.isdir(FASHION):
        print(f"note: no {FASHION}: the Fashion-MNIST folder part is not run")
        return
    xs, ys = idx("train-images-idx3-ubyte.gz"), idx("train-labels-idx1-ubyte.gz")
    root = {"train": os.path.join(tmp, "fm-train"), "test": os.path.join(tmp, "fm-test")}
    picked = {"train": range(0, 2000), "test": range(50000, 50400)}
    for part, r in picked.items():
        for name in FASHION_NAMES:
            os.makedirs(os.path.join(root[part], name))
        for i in r:
            img = Image.fromarray(xs[i], "L")
            d = os.path.join(root[part], FASHION_NAMES[ys[i]])
            if i % 97 == 0:
                img = img.resize((40, 40), Image.BILINEAR)  # another size: resized back to 28x28
            if i % 3 == 2:
                img.convert("RGB").save(os.path.join(d, f"{i}.jpg"), quality=95)
            else:
                img.save(os.path.join(d, f"{i}.png"))
    d = os.path.join(root["train"], "Bag")
    good = open(os.path.join(d, os.listdir(d)[0]), "rb").read()
    bad = {"truncated.png": good[: len(good) // 2] if good[:4] == b"\x89PNG" else b"\x89PNG\r\n\x1a\n",
           "noise.png": bytes(rng.integers(0, 256, 300, dtype=np.uint8)), "empty.jpg": b"",
           "cut.jpg": b"\xff\xd8\xff\xe0" + bytes(40),
           "huge.png": b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\x01\x86\xa0\0\x01\x86\xa0\x08\0\0\0\0" + bytes(8)}
    for name, data in bad.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    m = os.path.join(tmp, "fm.onnx")
    fm_model(m, rng)
    args = ["--model", m, "--images", root["train"], "--test-images", root["test"], "--batch", "32", "--lr", "0.05",
            "--momentum", "0.9", "--epochs", "2"]
    rc, text = train(*args)
    check(rc == 1 and "(5 of 2005 images failed; --skip-bad-images skips them)" in text,
          f"a folder with 5 bad files stops at the first, naming it and the count (got {rc}: {text[-400:]})")
    rc, text = train(*args, "--skip-bad-images")
    named = all(f"skipping {os.path.join(d, n)}" in text for n in bad)
    check(rc == 0 and named and "2000 images in 10 classes" in text and "5 skipped" in text,
          f"--skip-bad-images names each of the 5 and trains on the 2000 (got {rc}: {text[-600:]})")
    acc = [float(a) for a in re.findall(r"test accuracy ([0-9.]+)", text)]
    check(bool(acc) and acc[-1] >= 0.7, f"Fashion-MNIST from PNG/JPEG files: test accuracy >= 0.7 after 2 epochs "
                                         f"(got {acc})")


def fm_model(path, rng):
    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [
        init("w1", rng.normal(0, (2.0 / 9) ** 0.5, (8, 1, 3, 3))), init("b1", np.zeros(8)),
        init("w2", rng.normal(0, (2.0 / 72) ** 0.5, (16, 8, 3, 3))), init("b2", np.zeros(16)),
        init("w3", rng.normal(0, (1.0 / 784) ** 0.5, (10, 784))), init("b3", np.zeros(10)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p2"], ["f"]),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "fm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 1, 28, 28])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def main():
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as tmp:
        trn, tst = os.path.join(tmp, "train"), os.path.join(tmp, "test")
        make_folder(trn, 30, rng, [(16, 16), (24, 20), (13, 29), (40, 32)])
        make_folder(tst, 10, rng, [(16, 16)])
        m = os.path.join(tmp, "m.onnx")
        model(m, rng)
        out = os.path.join(tmp, "trained.onnx")
        common = ["--model", m, "--batch", "8", "--lr", "0.05", "--momentum", "0.9", "--device", "/cpu:0"]
        rc, text = train(*common, "--images", trn, "--test-images", tst, "--epochs", "4", "--export", out)
        check(rc == 0, f"training on the folder exits 0 (got {rc}: {text[-600:]})")
        check("90 images in 3 classes (0 alpha_left, 1 mid_stripes, 2 zeta_right)" in text,
              "the classes are labelled in sorted order and counted (.txt and hidden files skipped)")
        acc = [float(a) for a in re.findall(r"test accuracy ([0-9.]+)", text)]
        check(bool(acc) and acc[-1] >= 0.9, f"test accuracy after 4 epochs >= 0.9 (got {acc})")
        if rc == 0:
            # The exported model on numpy's decoding: labels are the sorted order.
            sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
            xs, ys = [], []
            for k, cls in enumerate(sorted(CLASSES)):
                for name in sorted(os.listdir(os.path.join(tst, cls))):
                    if name.startswith(".") or not name.lower().endswith((".png", ".jpg")):
                        continue
                    a = np.asarray(Image.open(os.path.join(tst, cls, name)).convert("RGB"), np.float32) / 255
                    xs.append(a.transpose(2, 0, 1))
                    ys.append(k)
            xs = np.stack(xs)
            pred = []
            for i in range(0, len(xs), 8):  # the model's batch is 8: pad the last
                part = xs[i: i + 8]
                full = np.concatenate([part, np.zeros((8 - len(part),) + part.shape[1:], np.float32)])
                pred += list(sess.run(None, {"x": full})[0].argmax(1)[: len(part)])
            hit = float(np.mean(np.array(pred) == np.array(ys)))
            check(hit >= 0.9, f"the exported model, on the test images decoded by PIL, scores by sorted labels "
                              f"(accuracy {hit:.3f})")
        # A validation split mixes the classes (the folder lists them in blocks).
        rc, text = train(*common, "--images", trn, "--val-split", "0.25", "--epochs", "3")
        acc = [float(a) for a in re.findall(r"validation accuracy ([0-9.]+)", text)]
        check(rc == 0 and bool(acc) and acc[-1] >= 0.8,
              f"--val-split over a folder holds out a mix of classes (accuracy {acc}, rc {rc}: {text[-300:]})")
        # The same seed, the same run.
        a = train(*common, "--images", trn, "--steps", "6", "--seed", "5")
        b = train(*common, "--images", trn, "--steps", "6", "--seed", "5")
        losses = [re.findall(r"loss ([0-9.]+)", t[1]) for t in (a, b)]
        check(a[0] == 0 and b[0] == 0 and losses[0] and losses[0] == losses[1],
              f"two runs with one seed train the same (losses {losses})")

        # NHWC inside the network: the same training (the data and the file stay NCHW).
        c = train(*common, "--images", trn, "--steps", "6", "--seed", "5", "--layout", "NHWC")
        lc = re.findall(r"loss ([0-9.]+)", c[1])
        check(c[0] == 0 and len(lc) == len(losses[0]) and
              all(abs(float(p) - float(q)) <= 2e-4 for p, q in zip(lc, losses[0])),
              f"--layout NHWC trains as NCHW does (losses {lc} against {losses[0]}; rc {c[0]}: {c[1][-300:]})")

        # --steps ending with an epoch (90 images: 11 steps of 8) starts no empty one.
        rc, text = train(*common, "--images", trn, "--steps", "11")
        check(rc == 0 and "epoch 1/3 done: 88 images" in text and "epoch 2/" not in text,
              f"--steps that end an epoch start no other (got {rc}: {text[-300:]})")

        # Bad folders and flags: each named.
        empty = os.path.join(tmp, "empty")
        os.makedirs(empty)
        noimg = os.path.join(tmp, "noimg")
        os.makedirs(os.path.join(noimg, "a"))
        with open(os.path.join(noimg, "a", "x.txt"), "w") as f:
            f.write("x")
        four = os.path.join(tmp, "four")
        make_folder(four, 2, rng, [(16, 16)])
        os.makedirs(os.path.join(four, "omega"))
        Image.fromarray(pattern("alpha_left", 16, 16, rng), "L").save(os.path.join(four, "omega", "a.png"))
        corrupt = os.path.join(tmp, "corrupt")
        make_folder(corrupt, 2, rng, [(16, 16)])
        with open(os.path.join(corrupt, "mid_stripes", "broken.png"), "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
        notdir = os.path.join(tmp, "file")
        with open(notdir, "w") as f:
            f.write("x")
        cases = [
            (["--images", os.path.join(tmp, "missing")], 1, "missing: No such file or directory"),
            (["--images", notdir], 1, "is not a folder"),
            (["--images", empty], 1, "has no class folders"),
            (["--images", noimg], 1, "has no images"),
            (["--images", four], 1, "has 4 class folders; the model scores 3"),
            (["--images", corrupt], 1, "broken.png"),
            (["--images", trn, "--test-images", four], 1, "--test-images " + four + "/omega: no training class of that name"),
            (["--images", trn, "--npz", "x.npz"], 2, "not with --npz"),
            (["--images", trn, "--test-images", tst, "--val-split", "0.2"], 2, "give one"),
            (["--resize", "20"], 2, "apply to --images only"),
            (["--images", trn, "--mean", "a,b"], 2, "--mean takes V or R,G,B"),
        ]
        for args, want_rc, want in cases:
            rc, text = train(*common, "--steps", "1", *args)
            check(rc == want_rc and want in text,
                  f"{' '.join(args)}: exit {want_rc} naming '{want}' (got {rc}: {text.strip()[-300:]})")
        fashion(tmp, rng)
    print(f"{len(passes)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
