#!/bin/sh
# The harness must catch a broken index kernel: the linear weight 0.1%
# off, which only the linear resize cases of the resize set reach (mode
# 1). See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" index.cl \
    's/const float w = wt\[wt_off + a\];/const float w = wt[wt_off + a] * 1.001f;/' \
    'direct: resize .* mode 1/' "a linear resize case" --mode test --backend opencl --set resize
