#!/bin/sh
# The op-parity harness's grad mode on every CUDA device. Exits 77 (SKIP,
# never PASS) where the backend is not built, finds no device, or has no
# backward algorithm. Grad mode is float32's; the backward ops in float16
# and bfloat16 are in the precision set, which tests/parity_cuda.sh runs.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --mode grad --backend cuda "$@"
