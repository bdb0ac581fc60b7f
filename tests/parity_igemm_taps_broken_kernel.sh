#!/bin/sh
# The harness must catch a broken per-tap path of implicit_gemm where all
# of a tile's pixels lie inside the image (one index for all of them):
# every channel after the first reading the one before it, which only
# implicit_gemm cases notice (NCHW and grouped layers take this path, and
# NHWC's border rows). See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_implicit_gemm.cl \
    's/IG_STEP(wpc, xp\[j\]\[c \* xc\]);/IG_STEP(wpc, xp[j][(c > 0 ? c - 1 : 0) * xc]);/' \
    'implicit_gemm' "an implicit_gemm case" --mode test --op conv2d --backend opencl --algo implicit_gemm
