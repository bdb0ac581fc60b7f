"""Fashion-MNIST's IDX files as numpy arrays, for the tests and benchmarks
that write them out as other formats (train_images_check.py,
bench/bench_train_images.py)."""
import gzip
import os

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist"


def idx(name, folder=FASHION):
    """The array in folder/name (a gzipped IDX file: uint8 data)."""
    with gzip.open(os.path.join(folder, name)) as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)
