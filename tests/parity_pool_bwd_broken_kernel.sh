#!/bin/sh
# The harness must catch a broken max-pool backward and blame only it:
# OpenCL's 2x2/2 vector kernels (NCHW rows, NHWC channels) giving a tie to
# the later element of a window row (isgreaterequal for isgreater) must
# fail the tie cases they run (window: the 2x2/2 cases), and nothing
# else. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" pool2d_bwd.cl \
    's/int8 t = isgreater(v01, m) | isnan(v01);/int8 t = isgreaterequal(v01, m) | isnan(v01);/' \
    'window: dx of .* with ties' "a tie case run by the window algorithm" --mode grad --backend opencl --set pool_ties
