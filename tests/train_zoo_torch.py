"""The PyTorch side of `make check-train-zoo` (issue 44: "the same training
with PyTorch from the same initial weights and data order stays within 1
point of accuracy"): torchvision's model built as train_zoo.py builds it
(torch.manual_seed(0), num_classes=10: the weights train_zoo.py exports),
Fashion-MNIST read and fitted as `polydnn train --model` fits it (pixels
/ 255, 28x28 centred on a 32x32 zero image, gray tiled to 3 channels),
each epoch's order polydnn's (tools/cmd_train.c's epoch_order: Fisher-Yates
from splitmix64 seeded by seed * 0x2545F4914F6CDD1D + epoch), the same
steps per epoch (the last partial batch left out), SGD with Nesterov
momentum 0.9 and L2 weight decay 5e-4 on every parameter, lr warmed up
linearly over 200 steps then cosine (train_onnx.c's lr_at), batch norm
in training mode. Prints each epoch's test accuracy on the 10,000 test
images (batch norm in inference mode) and the training images/s.

Usage: train_zoo_torch.py MODEL [--epochs N] [--lr LR] [--seed S]
       [--train-limit N] [--data DIR] [--threads N]"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torchvision

MASK = (1 << 64) - 1


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data, split, limit):
    prefix = "train" if split == "train" else "t10k"
    name = lambda kind: next(os.path.join(data, f) for f in (prefix + "-" + kind, prefix + "-" + kind + ".gz")
                             if os.path.exists(os.path.join(data, f)))
    x = read_idx(name("images-idx3-ubyte")).astype(np.float32) / 255.0
    y = read_idx(name("labels-idx1-ubyte")).astype(np.int64)
    if limit:
        x, y = x[:limit], y[:limit]
    out = np.zeros((x.shape[0], 3, 32, 32), np.float32)
    out[:, :, 2:30, 2:30] = x[:, None]
    return torch.from_numpy(out), torch.from_numpy(y)


def splitmix64(s):
    s = (s + 0x9E3779B97F4A7C15) & MASK
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return s, z ^ (z >> 31)


def epoch_order(n, seed, epoch):
    s = (seed * 0x2545F4914F6CDD1D + epoch) & MASK
    perm = list(range(n))
    for i in range(n - 1, 0, -1):
        s, r = splitmix64(s)
        j = r % (i + 1)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def lr_at(base, gs, total, warmup):
    if warmup > 0 and gs < warmup:
        return base * (gs + 1) / warmup
    t = (gs - warmup) / (total - warmup) if total > warmup else 1.0
    return base * 0.5 * (1.0 + math.cos(math.pi * min(t, 1.0)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)  # polydnn's CLI_SEED_DEFAULT
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    xtr, ytr = load(a.data, "train", a.train_limit)
    xte, yte = load(a.data, "test", 0)
    torch.manual_seed(0)
    m = getattr(torchvision.models, a.model)(num_classes=10)
    opt = torch.optim.SGD(m.parameters(), lr=a.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    spe = xtr.shape[0] // a.batch
    total = a.epochs * spe
    gs = 0
    print("%s: PyTorch %s, %d threads, %d steps of %d a epoch" % (a.model, torch.__version__,
                                                                  torch.get_num_threads(), spe, a.batch), flush=True)
    for epoch in range(a.epochs):
        perm = torch.tensor(epoch_order(xtr.shape[0], a.seed, epoch))
        m.train()
        t0, seen, losses = time.perf_counter(), 0, []
        for step in range(spe):
            idx = perm[step * a.batch:(step + 1) * a.batch]
            for g in opt.param_groups:
                g["lr"] = lr_at(a.lr, gs, total, a.warmup)
            loss = torch.nn.functional.cross_entropy(m(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss))
            gs += 1
            seen += a.batch
            if step % 100 == 99:
                print("  step %d: loss %.4f, %.1f images/s" % (step + 1, np.mean(losses[-100:]),
                                                              seen / (time.perf_counter() - t0)), flush=True)
        ips = seen / (time.perf_counter() - t0)
        m.eval()
        hits = 0
        with torch.no_grad():
            for k in range(0, xte.shape[0], 500):
                hits += int((m(xte[k:k + 500]).argmax(1) == yte[k:k + 500]).sum())
        print("epoch %d: loss %.4f, test accuracy %.4f, %.1f images/s" % (epoch + 1, np.mean(losses),
                                                                         hits / xte.shape[0], ips), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
