#!/bin/sh
# The harness must catch a defect in each of the depthwise kernels' fast
# paths, and blame depthwise cases only: dw_nchw's border chunks (masked
# loads reaching into the next row, in its blocks of rows) with each tap
# taking the next tap's lanes, dw_nhwc's blocks inside the image with
# each column's input read one column too far, and dw_plane's column
# masks letting a tap one column past the right edge read the next row's
# first pixel. Each bug alone; see
# tests/broken_kernel.sh. dw_nchw's column chunks are
# parity_depthwise_chunks_broken_kernel.sh's, which runs beside this one.
dir=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests
sh "$dir/broken_kernel.sh" conv2d_depthwise.cl \
    's/#define DW_TAP_MASKED(v, f, a, s) select((a), fma((v), (qv_t)(f), (a)), msk\[s\])/#define DW_TAP_MASKED(v, f, a, s) select((a), fma((v), (qv_t)(f), (a)), msk[((s) + 1) % DW_S])/' \
    'depthwise: ' "a depthwise case" --mode test --op conv2d --backend opencl --algo depthwise --set depthwise || exit $?
sh "$dir/broken_kernel.sh" conv2d_depthwise.cl \
    's/DW_GLOAD(xp + t \* step)/DW_GLOAD(xp + (t + 1) * step)/' \
    'depthwise: ' "a depthwise case" --mode test --op conv2d --backend opencl --algo depthwise --set depthwise || exit $?
exec sh "$dir/broken_kernel.sh" conv2d_depthwise.cl \
    's/col\[s\] = c >= 0 \&\& c < W;/col[s] = c >= 0 \&\& c <= W;/' \
    'depthwise: ' "a depthwise case" --mode test --op conv2d --backend opencl --algo depthwise --set depthwise
