#!/bin/sh
# The harness must catch a broken whole-row path of implicit_gemm for few
# channels in other layouts (a row's taps channel by channel): every tap
# after the first reading the second's filter column, which only
# implicit_gemm cases notice. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_implicit_gemm.cl \
    's/IG_STEP(wpr + (long)s \* wst\.s2,/IG_STEP(wpr + (long)(s > 0) * wst.s2,/' \
    'implicit_gemm' "an implicit_gemm case" --mode test --op conv2d --backend opencl --algo implicit_gemm
