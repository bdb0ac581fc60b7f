"""polydnn run on PNG and JPEG inputs (tests/test_run_image.sh runs this).

Images are made here with PIL (and a few PNG kinds PIL cannot write, by
hand with zlib); the tensor polydnn feeds the network is read back through
a model whose output is its input, and compared with two references:

- the same pipeline in numpy, float64, on PIL's decoded pixels: PIL's
  bilinear weights (a triangle widened by the downscale factor), torchvision's
  Resize(shorter) size and CenterCrop offsets, then scale, mean and std.
  Tolerance 1e-4 (float32 sums of at most a few hundred terms);
- PIL's own resize and crop, which rounds to 8 bits after each of its two
  passes: within 1.5 levels of 255 (two roundings of half a level each,
  and the luminance's).

Then a small classifier (global average pool, a 3 -> 4 Gemm, optionally a
Softmax) runs on images of known colours, and its printed labels and
probabilities are checked against numpy's; and every kind of bad file
must fail with exit 1 and a message naming it.

usage: run_image_check.py POLYDNN TMPDIR
"""
import json
import os
import re
import struct
import subprocess
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

TOOL, TMP = sys.argv[1], sys.argv[2]
DEV = ["-d", "/cpu:0", "--iters", "1"]
failed = 0
checks = 0


def check(ok, what, detail=""):
    global failed, checks
    checks += 1
    if not ok:
        failed += 1
        print(f"FAIL: {what}\n{detail}")


def path(name):
    return os.path.join(TMP, name)


def run(*args):
    return subprocess.run([TOOL, "run", *args], capture_output=True, text=True)


# ---- models ---------------------------------------------------------------


def save(nodes, x_shape, y_shape, inits, name):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path(name))
    return path(name)


def identity(c, h, w):
    # y = x * 1: the input as the network received it.
    one = numpy_helper.from_array(np.ones([1], np.float32), "one")
    return save([helper.make_node("Mul", ["x", "one"], ["y"])], ["N", c, h, w], ["N", c, h, w], [one],
                f"ident{c}x{h}x{w}.onnx")


GEMM_W = np.array([[4, 0, 0, -1], [0, 4, 0, -1], [0, 0, 4, -1]], np.float32)  # red green blue dark
GEMM_B = np.array([0, 0, 0, 2], np.float32)


def classifier(softmax):
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "w", "b"], ["l" if softmax else "y"])]
    if softmax:
        nodes.append(helper.make_node("Softmax", ["l"], ["y"], axis=1))
    inits = [numpy_helper.from_array(GEMM_W, "w"), numpy_helper.from_array(GEMM_B, "b")]
    return save(nodes, ["N", 3, 16, 16], ["N", 4], inits, f"classify{int(softmax)}.onnx")


# ---- images -----------------------------------------------------------------


def smooth(h, w, c, seed):
    """An image with detail at every scale (noise over gradients), uint8."""
    r = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([(xx * 255 // max(w - 1, 1)), (yy * 255 // max(h - 1, 1)), ((xx + yy) * 7) % 256], -1)
    a = np.clip(base[..., :c] * 0.7 + r.integers(0, 77, (h, w, c)), 0, 255)
    return a.astype(np.uint8)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_by_hand(name, arr16, color_type, width=None, height=None):
    """A 16-bit PNG (PIL writes none in colour), or one that declares another size."""
    h, w = arr16.shape[:2]
    raw = b"".join(b"\0" + arr16[y].astype(">u2").tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", width or w, height or h, 16, color_type, 0, 0, 0)
    with open(path(name), "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw)) +
                png_chunk(b"IEND", b""))
    return path(name)


def make_images():
    """name -> (file, the decoded pixels as float HxWxC, 0..255)."""
    out = {}
    rgb = smooth(47, 61, 3, 1)
    Image.fromarray(rgb).save(path("rgb.png"))
    out["rgb.png"] = rgb.astype(np.float64)
    Image.fromarray(rgb).save(path("rgb.jpg"), quality=92)
    out["rgb.jpg"] = np.asarray(Image.open(path("rgb.jpg")).convert("RGB"), np.float64)
    gray = smooth(40, 29, 1, 2)[..., 0]
    Image.fromarray(gray, "L").save(path("gray.png"))
    out["gray.png"] = gray[..., None].astype(np.float64)
    Image.fromarray(gray, "L").save(path("gray.jpg"), quality=90)
    out["gray.jpg"] = np.asarray(Image.open(path("gray.jpg")), np.float64)[..., None]
    rgba = np.concatenate([smooth(20, 24, 3, 3), np.full((20, 24, 1), 17, np.uint8)], -1)
    Image.fromarray(rgba, "RGBA").save(path("rgba.png"))
    out["rgba.png"] = rgba[..., :3].astype(np.float64)  # alpha dropped, not blended
    pal = Image.fromarray(smooth(33, 35, 3, 4)).quantize(37)
    pal.info["transparency"] = 0
    pal.save(path("pal.png"), transparency=0)
    out["pal.png"] = np.asarray(Image.open(path("pal.png")).convert("RGB"), np.float64)
    bits = (smooth(18, 21, 1, 5)[..., 0] > 128)
    Image.fromarray(bits).save(path("bits.png"))  # 1-bit gray
    out["bits.png"] = bits[..., None] * 255.0
    g16 = np.random.default_rng(6).integers(0, 65536, (19, 23)).astype(np.uint16)
    png_by_hand("gray16.png", g16, 0)
    out["gray16.png"] = g16[..., None] / 257.0
    c16 = np.random.default_rng(7).integers(0, 65536, (21, 17, 3)).astype(np.uint16)
    png_by_hand("rgb16.png", c16, 2)
    out["rgb16.png"] = c16 / 257.0
    small = smooth(9, 12, 3, 8)  # smaller than the input: upsampled
    Image.fromarray(small).save(path("small.png"))
    out["small.png"] = small.astype(np.float64)
    return out


# ---- the reference pipeline -------------------------------------------------


def weights(in_size, out_size, first, count):
    """PIL's bilinear coefficients (Resample.c) for outputs first..first+count."""
    scale = in_size / out_size
    fs = max(scale, 1.0)
    m = np.zeros((count, in_size))
    for i in range(count):
        centre = (first + i + 0.5) * scale
        lo, hi = max(int(centre - fs + 0.5), 0), min(int(centre + fs + 0.5), in_size)
        x = np.arange(lo, hi)
        k = np.maximum(0.0, 1.0 - np.abs((x - centre + 0.5) / fs))
        m[i, lo:hi] = k / k.sum() if k.sum() else k
    return m


def resized(w, h, s):
    short, long_ = (w, h) if w <= h else (h, w)
    nl = int(s * long_ / short)
    return (s, nl) if w <= h else (nl, s)


def offset(size, crop):
    return int(round((size - crop) / 2.0))  # Python's round: half to even, as torchvision


def reference(px, c, h, w, shorter=None, stretch=False, scale=1 / 255, mean=(0, 0, 0), std=(1, 1, 1)):
    ih, iw, ic = px.shape
    if ic == 3 and c == 1:
        px = (px @ np.array([0.299, 0.587, 0.114]))[..., None]
    if stretch:
        rw, rh, x0, y0 = w, h, 0, 0
    else:
        if shorter is None:  # the smallest that covers
            shorter = min(h, w)
            while True:
                rw, rh = resized(iw, ih, shorter)
                if rw >= w and rh >= h:
                    break
                shorter += 1
        rw, rh = resized(iw, ih, shorter)
        x0, y0 = offset(rw, w), offset(rh, h)
    wx, wy = weights(iw, rw, x0, w), weights(ih, rh, y0, h)
    out = np.einsum("yi,ijc,xj->cyx", wy, px, wx)
    if out.shape[0] == 1 and c == 3:
        out = np.repeat(out, 3, 0)
    m, s = np.array(mean[:c])[:, None, None], np.array(std[:c])[:, None, None]
    return (out * scale - m) / s, (rw, rh, x0, y0)


def pil_reference(file, c, h, w, geom):
    rw, rh, x0, y0 = geom
    im = Image.open(file)
    im = im.convert("L" if c == 1 else "RGB")
    im = im.resize((rw, rh), Image.BILINEAR).crop((x0, y0, x0 + w, y0 + h))
    a = np.asarray(im, np.float64)
    return (a[None] if c == 1 else a.transpose(2, 0, 1))


def polydnn_tensor(model, files, *flags):
    out = path("y.npy")
    if os.path.exists(out):
        os.remove(out)
    args = [model]
    for f in files:
        args += ["--input", f]
    r = run(*args, *DEV, "--output", out, *flags)
    return (np.load(out) if r.returncode == 0 else None), r


def tensors(images):
    cases = [  # (image, C, H, W, flags, reference keywords)
        ("rgb.png", 3, 32, 32, [], {}),
        ("rgb.png", 3, 32, 32, ["--resize", "40"], {"shorter": 40}),
        ("rgb.png", 3, 24, 40, ["--stretch"], {"stretch": True}),
        ("rgb.png", 3, 16, 16, ["--scale", "1/127.5", "--mean", "1", "--std", "0.5,0.25,2"],
         {"scale": 1 / 127.5, "mean": (1, 1, 1), "std": (0.5, 0.25, 2)}),
        ("rgb.jpg", 3, 32, 32, ["--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"],
         {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}),
        ("rgb.jpg", 1, 20, 20, [], {}),
        ("gray.png", 3, 16, 16, [], {}),
        ("gray.jpg", 1, 24, 24, ["--resize", "30"], {"shorter": 30}),
        ("rgba.png", 3, 16, 16, [], {}),
        ("pal.png", 3, 16, 16, [], {}),
        ("bits.png", 1, 12, 12, [], {}),
        ("gray16.png", 1, 16, 16, [], {}),
        ("rgb16.png", 3, 16, 16, [], {}),
        ("small.png", 3, 32, 32, [], {}),
        ("small.png", 1, 16, 24, ["--stretch"], {"stretch": True}),
    ]
    for name, c, h, w, flags, kw in cases:
        got, r = polydnn_tensor(identity(c, h, w), [path(name)], *flags)
        tag = f"{name} -> {c}x{h}x{w} {' '.join(flags)}"
        if got is None:
            check(False, tag, r.stdout + r.stderr)
            continue
        want, geom = reference(images[name], c, h, w, **kw)
        err = float(np.abs(got[0] - want).max())
        check(got.shape == (1, c, h, w) and err <= 1e-4, f"{tag}: max error {err:.3g} against numpy (tolerance 1e-4)")
        if "16" not in name and not kw.get("scale") and not kw.get("mean"):
            # PIL's result, in levels of 255; 16-bit PNGs PIL truncates, so not those.
            pil = pil_reference(path(name), c, h, w, geom)
            perr = float(np.abs(got[0] * 255 - pil).max())
            check(perr <= 1.5, f"{tag}: max error {perr:.3g} levels against PIL's resize (tolerance 1.5)")
    # Several files make a batch, each image its row.
    files = ["rgb.png", "gray.png", "rgb.jpg"]
    got, r = polydnn_tensor(identity(3, 16, 16), [path(f) for f in files])
    ok = got is not None and got.shape == (3, 3, 16, 16)
    for i, f in enumerate(files):
        ok = ok and float(np.abs(got[i] - reference(images[f], 3, 16, 16)[0]).max()) <= 1e-4
    check(ok, "three image files: a batch of three, in order", r.stdout + r.stderr)


# ---- labels -----------------------------------------------------------------


def labels():
    colours = {"red": (200, 30, 40), "green": (20, 190, 60), "blue": (30, 40, 210), "dark": (10, 12, 8)}
    files = []
    for name, rgb in colours.items():
        a = np.empty((20, 26, 3), np.uint8)
        a[:] = rgb
        a[::3, ::2] = np.array(rgb) // 2  # not flat, so the resize matters
        Image.fromarray(a).save(path(f"{name}.png"))
        files.append(path(f"{name}.png"))
    with open(path("labels.txt"), "w") as f:
        f.write("red\ngreen\nblue\ndark\n")
    for softmax in (False, True):
        model = classifier(softmax)
        args = [model] + [a for f in files for a in ("--input", f)] + DEV + ["--labels", path("labels.txt"),
                                                                             "--top", "2"]
        r = run(*args)
        ok = r.returncode == 0
        which = "the output, already a distribution" if softmax else "softmax of the output"
        for i, (name, f) in enumerate(zip(colours, files)):
            x = reference(np.asarray(Image.open(f), np.float64), 3, 16, 16)[0]
            logits = GEMM_W.T.astype(np.float64) @ x.mean(axis=(1, 2)) + GEMM_B
            p = np.exp(logits - logits.max())
            p /= p.sum()
            order = np.argsort(-p)[:2]
            head = re.search(rf"^image {i} \({re.escape(f)}\) top-2, probabilities \((.*)\):\n"
                             rf"  ([0-9.]+)  (\w+) \((\d)\)\n  ([0-9.]+)  (\w+) \((\d)\)$", r.stdout, re.M)
            ok = ok and head is not None and head.group(1) == which and head.group(3) == name
            ok = ok and [int(head.group(4)), int(head.group(7))] == list(order)
            ok = ok and abs(float(head.group(2)) - p[order[0]]) <= 1e-4 and abs(float(head.group(5)) - p[order[1]]) <= 1e-4
        check(ok, f"--labels on {'a Softmax' if softmax else 'a logits'} model: names, order, probabilities",
              r.stdout + r.stderr)
        j = run(*args, "--json")
        try:
            obj = json.loads(j.stdout)
            ok = (obj["inputs"] == files and obj["probabilities"] == ("output" if softmax else "softmax") and
                  [row[0][2] for row in obj["top"]] == list(colours) and len(obj["top"][0]) == 2)
        except (ValueError, KeyError, IndexError, TypeError):
            ok = False
        check(ok, "--labels --json: inputs, probabilities and the top names", j.stdout + j.stderr)
    with open(path("three.txt"), "w") as f:
        f.write("red\ngreen\nblue\n")
    r = run(classifier(False), "--input", files[0], *DEV, "--labels", path("three.txt"))
    check(r.returncode == 1 and "three.txt has 3 lines; the model's output 'y' has 4 classes" in r.stderr,
          "a labels file of 3 lines for 4 classes is refused", r.stderr)
    r = run(classifier(False), "--input", files[0], *DEV)
    check(r.returncode == 0 and re.search(rf"^image 0 \({re.escape(files[0])}\) top-4: 0 ", r.stdout, re.M),
          "without --labels: class indices, every class when there are fewer than 5", r.stdout + r.stderr)


# ---- bad files --------------------------------------------------------------


def bad_files():
    good = open(path("rgb.png"), "rb").read()
    jpg = open(path("rgb.jpg"), "rb").read()
    cases = {}

    def put(name, data):
        with open(path(name), "wb") as f:
            f.write(data)
        return path(name)

    cases[put("empty.png", b"")] = "is empty (0 bytes)"
    cases[put("corrupt.png", good[:40] + bytes(len(good) - 40))] = "not a valid PNG image"
    cases[put("cut.png", good[: len(good) // 2])] = "not a valid PNG image"
    cases[put("cut.jpg", jpg[: len(jpg) // 2])] = "corrupt or truncated JPEG data"
    cases[put("garbage.jpg", jpg[:3] + bytes(range(256)) * 4)] = "not a valid JPEG image"
    cases[png_by_hand("huge.png", np.zeros((1, 1), np.uint16), 0, width=100000, height=100000)] = \
        "declares a 100000x100000 image; polydnn decodes 1 to 67108864 pixels"
    sof = jpg.index(b"\xff\xc0")  # baseline frame header: height and width at +5
    cases[put("huge.jpg", jpg[:sof + 5] + struct.pack(">HH", 60000, 60000) + jpg[sof + 9:])] = \
        "declares a 60000x60000 image"
    cmyk = Image.fromarray(smooth(8, 8, 3, 9)).convert("CMYK")
    cmyk.save(path("cmyk.jpg"))
    cases[path("cmyk.jpg")] = "a CMYK JPEG"
    cases[put("text.png", b"hello, world\n")] = "neither a PNG nor a JPEG image"
    fifo = path("fifo.png")
    os.mkfifo(fifo)
    cases[fifo] = "it is a FIFO, not a regular file"
    cases[path("missing.png")] = "No such file or directory"
    model = identity(3, 16, 16)
    valgrind = os.environ.get("VALGRIND")
    # Under valgrind the program itself, not libtool's wrapper script.
    here = os.path.dirname(os.path.abspath(TOOL))
    real = os.path.join(here, ".libs", os.path.basename(TOOL))
    venv = dict(os.environ, POLYDNN_BACKEND="host")
    if os.path.exists(real):
        venv["LD_LIBRARY_PATH"] = os.path.join(here, ".libs") + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")
    else:
        real = TOOL
    for f, needle in cases.items():
        # Second of two inputs, so that a FIFO (alone, a .npy pipe) is read as an image.
        args = [TOOL, "run", model, "--input", path("rgb.png"), "--input", f] + DEV
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and needle in r.stderr and f in r.stderr,
              f"bad file {os.path.basename(f)}: exit 1 naming it and '{needle}'", f"exit {r.returncode}: {r.stderr}")
        if valgrind:
            v = subprocess.run([valgrind, "-q", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect",
                                "--error-exitcode=99", real, *args[1:]], capture_output=True, text=True, timeout=600,
                               env=venv)
            check(v.returncode == 1, f"valgrind on bad file {os.path.basename(f)}: no leak, no invalid access",
                  v.stderr[-3000:])
    r = run(model, "--input", path("text.png"), *DEV)
    check(r.returncode == 1 and "is neither a .npy array nor a PNG or JPEG image" in r.stderr,
          "one file that is neither .npy nor an image", r.stderr)
    r = run(model, "--input", path("rgb.png"), *DEV, "--resize", "8")
    check(r.returncode == 1 and "--resize 8 makes this 61x47 image 10x8, smaller than the network's 16x16" in r.stderr,
          "--resize below the crop is refused", r.stderr)
    r = run(model, *DEV, "--mean", "0.5")
    check(r.returncode == 2 and "apply to image inputs" in r.stderr, "--mean without images is a usage error",
          r.stderr)
    for flag, value in (("--std", "1,0,1"), ("--mean", "1,2"), ("--scale", "0"), ("--scale", "x")):
        r = run(model, "--input", path("rgb.png"), *DEV, flag, value)
        check(r.returncode == 2 and flag in r.stderr, f"{flag} {value} is a usage error", r.stderr)
    r = run(identity(2, 16, 16), "--input", path("rgb.png"), *DEV)
    check(r.returncode == 1 and "image inputs fill" in r.stderr, "a 2-channel input is refused for images", r.stderr)


def seeds():
    """run's random inputs: seed 1 without --seed (two runs the same), --seed time printed and repeatable."""
    model = identity(3, 4, 4)
    got = []
    for extra in ([], [], ["--seed", "time"]):
        out = path("seed.npy")
        r = run(model, *DEV, "--output", out, *extra)
        m = re.search(r"^random inputs in \[-1, 1\), seed (\d+)$", r.stdout, re.M)
        got.append((np.load(out) if r.returncode == 0 else None, m.group(1) if m else None))
    same = got[0][0] is not None and got[1][0] is not None and np.array_equal(got[0][0], got[1][0])
    check(same and got[0][1] == "1", "run without --seed: seed 1, printed, the same numbers twice")
    again = run(model, *DEV, "--output", path("seed.npy"), "--seed", str(got[2][1]))
    ok = got[2][0] is not None and again.returncode == 0 and np.array_equal(np.load(path("seed.npy")), got[2][0])
    check(ok and not np.array_equal(got[2][0], got[0][0]), "run --seed time: a printed seed that repeats its draw")


def main():
    seeds()
    images = make_images()
    tensors(images)
    labels()
    bad_files()
    print(f"{checks - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
