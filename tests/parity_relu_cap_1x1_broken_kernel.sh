#!/bin/sh
# The harness must catch a relu cap applied wrongly in gemm_1x1 (both of
# its kernels clip at 1.01 times the cap: MobileNetV2's expansion layers;
# the first kernel's epilogue is conv2d_tile.cl's, implicit_gemm's too,
# whose cases --algo leaves out). Only the capped cases can notice. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_tile.cl \
    's/(vec_t)(as_float(RELU))/(vec_t)(as_float(RELU) * 1.01f)/' \
    --and conv2d_gemm_1x1.cl 's/(vec_t)(as_float(misc\.s3))/(vec_t)(as_float(misc.s3) * 1.01f)/g' \
    'gemm_1x1.*: .* capped ' "a capped gemm_1x1 case" --mode test --op conv2d --backend opencl --algo gemm_1x1 --set gemm_1x1
