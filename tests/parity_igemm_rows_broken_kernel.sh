#!/bin/sh
# The harness must catch a broken whole-row path of implicit_gemm (taps
# and channels of a filter row reduced as one run in NHWC): the run one
# element short, which only implicit_gemm cases notice. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_implicit_gemm.cl \
    's/const int run = S \* cpg;/const int run = S * cpg - 1;/' \
    'implicit_gemm' "an implicit_gemm case" --mode test --op conv2d --backend opencl --algo implicit_gemm
