#!/bin/sh
# The harness must catch a broken kernel and blame the right algorithm: the
# tiled convolution with every sum scaled by 1.001 (1e-3 relative); every
# failure must name tiled. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_tiled.cl \
    's/acc\[b\]\[j\] = FMA16(xv, wv\[b\], acc\[b\]\[j\]);/acc[b][j] = FMA16(xv, wv[b] * 1.001f, acc[b][j]);/' \
    ' tiled' "naming tiled" --backend opencl --op conv2d --set edge
