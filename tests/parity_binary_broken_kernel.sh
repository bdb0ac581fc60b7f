#!/bin/sh
# The harness must catch a broken binary kernel: b's index along each
# axis read through the next outer axis's stride, which the cases with
# more than one axis left after core merges them notice. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" elementwise.cl \
    's/bo += ik \* sb\[k\];/bo += ik * sb[k - 1];/' \
    'direct: binary ' "a binary case" --mode grad --backend opencl --set binary
