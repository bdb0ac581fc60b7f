#!/bin/sh
# The op-parity harness's grad mode (tests/parity.c) on every OpenCL
# device: every registered backward algorithm against the host reference.
# Exits 77 (SKIP) where no OpenCL device exists.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --mode grad --backend opencl "$@"
