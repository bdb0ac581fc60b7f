#!/bin/sh
# The harness must catch a broken layout transform, each bug alone: each
# work-item's second row of y starting one element late, which the cases
# whose work-items loop over two axes notice; and the tiled transform
# (ew_transform_tiles) dropping the last x row of a partial tile, which
# the cases with tails notice. Only transform cases may fail. See
# tests/broken_kernel.sh.
dir=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests
sh "$dir/broken_kernel.sh" elementwise.cl \
    's/for (long i3 = 0; i3 < n3; i3++)/for (long i3 = i2 == 1; i3 < n3; i3++)/' \
    'direct: transform ' "a transform case" --mode grad --backend opencl --set transform || exit $?
exec sh "$dir/broken_kernel.sh" elementwise.cl \
    's/^    for (int j = 0; j < tb; j++)$/    for (int j = 0; j < tb - (tb < TT); j++)/' \
    'direct: transform ' "a transform case" --mode grad --backend opencl --set transform
