#!/bin/sh
# The op-parity harness (tests/parity.c) on every CUDA device. Exits 77
# (SKIP, never PASS) where the backend is not built or finds no device.
# The whole table includes the precision set (casts, activations, binary,
# pooling, batch norm, convolution forward and backward in float16 and
# bfloat16); then the convolution grids and the N-d matmul set in both
# reduced dtypes, as tests/parity_opencl_lowp.sh runs them on OpenCL.
parity="${PDNN_TOP_BUILDDIR:-.}/tests/parity"
"$parity" --backend cuda "$@"
rc=$?
# No device (77) or a failure: nothing more to learn here.
if [ "$rc" -ne 0 ] || [ "$#" -gt 0 ]; then exit "$rc"; fi
for dt in float16 bfloat16; do
    for set in layouts edge; do
        "$parity" --mode test --backend cuda --op conv2d --dtype "$dt" --set "$set" || rc=1
    done
    "$parity" --mode test --backend cuda --op matmul --dtype "$dt" --set nd_matmul || rc=1
done
exit "$rc"
