#!/bin/sh
# As tests/parity_residual_broken_kernel.sh, for gemm_1x1's two kernels
# (channels-last output: the vector and strided paths of the epilogue it
# shares with implicit_gemm in conv2d_tile.cl, whose cases --algo leaves
# out; NCHW output: the rows kernel): 1.01 z instead of z must fail, each
# failure naming gemm_1x1 and a residual case.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_tile.cl \
    's/v_ += VLOADR(0, rp_ + kb_);/v_ += 1.01f * VLOADR(0, rp_ + kb_);/; s/v_ += VLOAD(0, t_);/v_ += 1.01f * VLOAD(0, t_);/' \
    --and conv2d_gemm_1x1.cl \
    's/v += VLOADR(b, rp + (long)(k0 + r) \* ys.s1);/v += 1.01f * VLOADR(b, rp + (long)(k0 + r) * ys.s1);/' \
    'gemm_1x1.* residual ' "naming gemm_1x1 and a residual case" --backend opencl --op conv2d \
    --set gemm_1x1 --algo gemm_1x1
