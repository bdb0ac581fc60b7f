#!/bin/sh
# The harness must catch a broken layout transform: each work-item's
# second row of y starting one element late, which the cases whose
# work-items loop over two axes notice, and only transform cases fail.
# See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" elementwise.cl \
    's/for (long i3 = 0; i3 < n3; i3++)/for (long i3 = i2 == 1; i3 < n3; i3++)/' \
    'direct: transform ' "a transform case" --mode grad --backend opencl --set transform
