#!/bin/sh
# The float16 grid (parity --dtype float16) must catch a reduced-storage
# defect that float32 never reaches: float16's 8-wide loads (prelude.cl's
# LOADR8, which winograd's NHWC input transform and the float32 copies of
# x and the filter read through) scaled by 1.01 must fail, each failure
# naming winograd. And float16's matmul: gemm_nn's 8-wide loads of A's
# rows (a path only the reduced dtypes take) scaled by 1.01 must fail,
# naming tiled alone. And max pooling's backward: plane's rounding of its
# float32 sums into dx (a float16 and bfloat16 path only; its 8-wide
# stores along contiguous rows and its scalar ones) scaled by 1.01
# must fail the precision set's pooling-backward cases, naming plane
# alone (1 s). And the grouped gradients' scalar float16 loads (the
# prelude's LOAD_REAL_S, a float16 path only) scaled by 1.01 must fail
# the precision set's backward-data cases, naming direct (under 1 s).
# See tests/broken_kernel.sh.
bk="${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh"
sh "$bk" elementwise.cl \
    's/const float8 x0 = LOADR8(0, a + ar\[0\] + ap)/const float8 x0 = 1.01f * LOADR8(0, a + ar[0] + ap)/' \
    'tiled' "naming tiled" --backend opencl --op matmul --dtype float16 --set nd_matmul
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
sh "$bk" pool2d_bwd_argmax.cl \
    's/STORE_REAL(ab\[(long)a \* W + b\], db,/STORE_REAL(1.01f * ab[(long)a * W + b], db,/; s/STORER8(vload8(0, ab/STORER8(1.01f * vload8(0, ab/' \
    'plane' "naming plane" --backend opencl --op pool2d_bwd --set precision --algo plane
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
sh "$bk" prelude.cl \
    's/#define LOAD_REAL_S F16_LOAD_INLINE/#define LOAD_REAL_S(p, i) (1.01f * F16_LOAD_INLINE(p, i))/' \
    'direct' "naming direct" --backend opencl --op conv2d_bwd_data --set precision --algo direct
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
exec sh "$bk" prelude.cl \
    's/#define LOADR8(i, p) vload_half8((size_t)(i), (p))/#define LOADR8(i, p) (1.01f * vload_half8((size_t)(i), (p)))/' \
    'winograd' "naming winograd" --backend opencl --op conv2d --dtype float16 --set layouts --algo winograd
