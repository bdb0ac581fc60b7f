#!/bin/sh
# The harness must catch a subtly broken batch normalization kernel: it
# normalizes by the unbiased variance instead of the biased one (off by
# sqrt(m / (m - 1)), 0.3% at m = 162); every failure must be a training
# forward case. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" batch_norm.cl \
    's|const float k = 1.0f / sqrt(sq / (float)m + eps);|const float k = 1.0f / sqrt(sq / (float)(m - 1) + eps);|' \
    ': train ' "a training forward case" --mode grad --backend opencl --set batch_norm
