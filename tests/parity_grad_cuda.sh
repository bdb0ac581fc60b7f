#!/bin/sh
# The op-parity harness's grad mode on every CUDA device. Exits 77 (SKIP,
# never PASS) where the backend is not built, finds no device, or has no
# backward algorithm.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --mode grad --backend cuda "$@"
