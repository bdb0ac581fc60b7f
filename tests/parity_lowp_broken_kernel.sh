#!/bin/sh
# The float16 grid (parity --dtype float16) must catch a reduced-storage
# defect that float32 never reaches: float16's 8-wide loads (prelude.cl's
# LOADR8, which winograd's NHWC input transform and the float32 copies of
# x and the filter read through) scaled by 1.01 must fail, each failure
# naming winograd. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" prelude.cl \
    's/#define LOADR8(i, p) vload_half8((size_t)(i), (p))/#define LOADR8(i, p) (1.01f * vload_half8((size_t)(i), (p)))/' \
    'winograd' "naming winograd" --backend opencl --op conv2d --dtype float16 --set layouts --algo winograd
