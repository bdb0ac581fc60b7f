#!/usr/bin/env python3
"""The peers of `polydnn train`: TensorFlow's "Deep MNIST" network trained
on Fashion-MNIST with PyTorch and with TensorFlow (Keras), the same model,
batch and optimizer as polydnn's defaults, read from the same IDX files.

  conv 5x5x32 SAME, relu, max-pool 2; conv 5x5x64 SAME, relu, max-pool 2;
  fully connected 1024, relu; fully connected 10; softmax cross-entropy;
  batch 64; SGD lr 0.05, momentum 0.9.

Prints, per framework and epoch, training images/s (training steps only,
the first step excluded: it builds graphs and allocates) and the test
accuracy on the 10000 test images.

  bench/train_reference.py [--framework torch|tensorflow|all] [--epochs N]
                           [--steps N] [--threads N] [--data DIR] [--seed S]

PyTorch comes from Debian (python3-torch, /usr/bin/python3); TensorFlow
from PyPI's tensorflow-cpu, usually in a venv, so run the script once with
each interpreter; with --framework all (the default) a framework that does
not import is skipped with a message, and the exit status is 77 when none
ran.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, magic, ndim):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 + 4 * ndim or struct.unpack(">I", raw[:4])[0] != magic:
        sys.exit("%s: not an IDX file with magic 0x%08x" % (path, magic))
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        sys.exit("%s: %d bytes of data, the header declares %s" % (path, data.size, dims))
    return data.reshape(dims)


def find(data_dir, name):
    for n in (name + ".gz", name):
        p = os.path.join(data_dir, n)
        if os.path.exists(p):
            return p
    sys.exit("%s: no %s[.gz] (Debian: apt-get install dataset-fashion-mnist)" % (data_dir, name))


def load(data_dir, split):
    x = read_idx(find(data_dir, split + "-images-idx3-ubyte"), 0x0803, 3).astype(np.float32) / 255.0
    y = read_idx(find(data_dir, split + "-labels-idx1-ubyte"), 0x0801, 1).astype(np.int64)
    if len(x) != len(y) or y.max() > 9:
        sys.exit("%s: %d images, %d labels, largest label %d" % (split, len(x), len(y), y.max()))
    return x, y


def schedule(args, n_train):
    """(epoch, permutation, steps in it) per epoch; --steps cuts the run."""
    rng = np.random.default_rng(args.seed)
    per_epoch = n_train // args.batch_size
    left = args.steps if args.steps else per_epoch * args.epochs
    epoch = 0
    while left > 0 and epoch < args.epochs:
        epoch += 1
        steps = min(per_epoch, left)
        left -= steps
        yield epoch, rng.permutation(n_train), steps


def report(name, epoch, steps, images, seconds, loss, acc):
    print("%-10s epoch %d: %5d steps, %.1f images/s (%d images in %.1f s, first step excluded), "
          "mean loss %.4f, test accuracy %.2f%%" % (name, epoch, steps, images / seconds if seconds > 0 else 0.0,
                                                   images, seconds, loss, 100.0 * acc), flush=True)


def run_torch(args, train, test):
    import torch
    import torch.nn as nn

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()
    xtr = torch.from_numpy(train[0]).unsqueeze(1)
    ytr = torch.from_numpy(train[1])
    xte = torch.from_numpy(test[0]).unsqueeze(1)
    yte = torch.from_numpy(test[1])
    print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()), flush=True)
    for epoch, perm, steps in schedule(args, len(xtr)):
        model.train()
        losses = []
        t0 = None
        for s in range(steps):
            idx = torch.from_numpy(perm[s * args.batch_size:(s + 1) * args.batch_size])
            opt.zero_grad()
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            losses.append(float(loss))
            if s == 0:
                t0 = time.perf_counter()
        dt = time.perf_counter() - t0
        model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(xte), 1000):
                correct += int((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum())
        report("torch", epoch, steps, (steps - 1) * args.batch_size, dt, float(np.mean(losses)),
               correct / len(xte))


def run_tensorflow(args, train, test):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.random.set_seed(args.seed)
    L = tf.keras.layers
    model = tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        L.Conv2D(32, 5, padding="same", activation="relu"), L.MaxPool2D(2),
        L.Conv2D(64, 5, padding="same", activation="relu"), L.MaxPool2D(2),
        L.Flatten(), L.Dense(1024, activation="relu"), L.Dense(10)])
    opt = tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=args.momentum)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    @tf.function
    def predict(x):
        return tf.argmax(model(x, training=False), axis=1)

    xtr = train[0][..., None]
    ytr = train[1].astype(np.int32)
    xte = test[0][..., None]
    print("tensorflow %s, %d intra-op threads" % (tf.__version__, args.threads), flush=True)
    for epoch, perm, steps in schedule(args, len(xtr)):
        losses = []
        t0 = None
        for s in range(steps):
            idx = perm[s * args.batch_size:(s + 1) * args.batch_size]
            losses.append(float(step(tf.constant(xtr[idx]), tf.constant(ytr[idx]))))
            if s == 0:
                t0 = time.perf_counter()
        dt = time.perf_counter() - t0
        correct = 0
        for i in range(0, len(xte), 1000):
            correct += int(np.sum(predict(tf.constant(xte[i:i + 1000])).numpy() == test[1][i:i + 1000]))
        report("tensorflow", epoch, steps, (steps - 1) * args.batch_size, dt, float(np.mean(losses)),
               correct / len(xte))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--framework", choices=("torch", "tensorflow", "all"), default="all")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0, help="stop after N training steps in all (quick runs)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="intra-op threads (default: cores)")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.epochs < 1 or args.steps < 0 or args.batch_size < 1 or (args.steps and args.steps < 2):
        ap.error("--epochs >= 1, --batch-size >= 1, --steps 0 (whole epochs) or >= 2")
    train, test = load(args.data, "train"), load(args.data, "t10k")
    ran = 0
    for name, fn in (("torch", run_torch), ("tensorflow", run_tensorflow)):
        if args.framework not in (name, "all"):
            continue
        try:
            __import__(name)
        except ImportError as e:
            if args.framework == name:
                sys.exit("%s is not installed: %s" % (name, e))
            print("SKIP %s: not installed for %s (%s)" % (name, sys.executable, e), flush=True)
            continue
        fn(args, train, test)
        ran += 1
    if not ran:
        sys.exit(77)


if __name__ == "__main__":
    main()
