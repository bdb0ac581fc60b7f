#!/bin/sh
# The harness must catch a defect in dw_nchw's blocks of column chunks
# (small images split across work-items), each skipping its first chunk,
# and blame depthwise cases only, over every set. Apart from
# parity_depthwise_broken_kernel.sh's three, so that the two run side by
# side; see tests/broken_kernel.sh.
dir=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests
exec sh "$dir/broken_kernel.sh" conv2d_depthwise.cl \
    's/for (int q0 = qb; q0 < qe; q0 += DW_QV) {/for (int q0 = qb + (qb > 0 ? DW_QV : 0); q0 < qe; q0 += DW_QV) {/' \
    'depthwise: ' "a depthwise case" --mode test --op conv2d --backend opencl --algo depthwise
