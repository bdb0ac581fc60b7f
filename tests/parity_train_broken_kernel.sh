#!/bin/sh
# The harness must catch a broken training kernel and blame the right op:
# the softmax cross-entropy gradient scaled by 1.001 (1e-3 relative); every
# failure must be a dlogits element of a cross-entropy case. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" train.cl \
    's/\* inv_s - (j == label ? 1.0f : 0.0f)) \* inv_n;/* inv_s - (j == label ? 1.0f : 0.0f)) * inv_n * 1.001f;/' \
    'direct: xent .*dlogits' "a dlogits element of an xent case" --mode grad --backend opencl --set xent
