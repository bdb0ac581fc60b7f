#!/bin/sh
# The harness must catch a broken matmul kernel and blame only it: the
# naive kernel's products scaled by 1.0001 (1e-4 relative, ten times the
# matmul tolerance); conv_gemm and clblast, run on the same cases, must
# still pass. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" elementwise.cl \
    's/acc = fma(LOAD_REAL(a, ai + p \* as), LOAD_REAL(b, bj + p \* bs), acc);/acc = fma(LOAD_REAL(a, ai + p * as), LOAD_REAL(b, bj + p * bs) * 1.0001f, acc);/' \
    'naive: matmul' "a matmul case run by the naive kernel" --mode grad --backend opencl --set matmul
