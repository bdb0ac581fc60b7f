#!/bin/sh
# The harness must catch a broken residual epilogue: implicit_gemm adding
# 1.01 z instead of z (the sampled cases with a residual, both output
# layouts: the vector path and the strided one); every failure must name
# implicit_gemm and a residual case. The epilogue is conv2d_tile.cl's,
# gemm_1x1's too, whose cases --algo leaves out. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_tile.cl \
    's/v_ += VLOADR(0, rp_ + kb_);/v_ += 1.01f * VLOADR(0, rp_ + kb_);/; s/v_ += VLOAD(0, t_);/v_ += 1.01f * VLOAD(0, t_);/' \
    'implicit_gemm.* residual ' "naming implicit_gemm and a residual case" --backend opencl --op conv2d \
    --set sampled --algo implicit_gemm
