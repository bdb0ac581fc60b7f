#!/bin/sh
# The harness must catch a broken pad kernel: reflect repeating the edge
# (numpy's "symmetric") instead of mirroring about it, which only the
# reflect cases of the pad set reach (2 of 8). See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" elementwise.cl \
    's/return i < 0 ? -i : 2 \* (d - 1) - i;/return i < 0 ? -i - 1 : 2 * d - 1 - i;/' \
    'direct: pad reflect' "a reflect pad case" --mode grad --backend opencl --set pad
