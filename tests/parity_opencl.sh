#!/bin/sh
# The op-parity harness (tests/parity.c) on every OpenCL device (PoCL on a
# machine without a GPU): every registered algorithm and configuration
# against the host reference. Exits 77 (SKIP) where no OpenCL device exists.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --backend opencl "$@"
