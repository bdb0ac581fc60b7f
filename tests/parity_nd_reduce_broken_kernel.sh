#!/bin/sh
# The harness must catch a broken N-d reduction: the odometer stepping
# back one element too far when a reduced axis wraps, which only the
# reductions over two or more separate axes reach. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" nd_math.cl \
    's/off -= (idx\[k\] - 1) \* xs\[k\];/off -= idx[k] * xs[k];/' \
    'direct: reduce' "a reduction over separate axes" --mode grad --backend opencl --set reduce
