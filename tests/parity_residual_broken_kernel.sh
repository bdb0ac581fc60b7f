#!/bin/sh
# The harness must catch a broken residual epilogue: implicit_gemm adding
# 1.01 z instead of z (the sampled cases with a residual, both output
# layouts: the vector path and the strided one); every failure must name
# implicit_gemm and a residual case. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_implicit_gemm.cl \
    's/v += VLOAD(0, rp + kr);/v += 1.01f * VLOAD(0, rp + kr);/; s/v += VLOAD(0, t);/v += 1.01f * VLOAD(0, t);/' \
    'implicit_gemm.* residual ' "naming implicit_gemm and a residual case" --backend opencl --op conv2d \
    --set sampled --algo implicit_gemm
