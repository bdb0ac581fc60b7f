#!/bin/sh
# The harness must catch a broken binary kernel: b's third index (in
# memory order) read through the second's stride, which the cases where
# those strides differ and the third axis is longer than 1 notice (15 of
# 22). See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" elementwise.cl \
    's/i2 \* bs\.s2 + i3 \* bs\.s3\];/i2 * bs.s1 + i3 * bs.s3];/' \
    'direct: binary ' "a binary case" --mode grad --backend opencl --set binary
