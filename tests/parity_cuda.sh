#!/bin/sh
# The op-parity harness (tests/parity.c) on every CUDA device. Exits 77
# (SKIP, never PASS) where the backend is not built or finds no device.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --backend cuda "$@"
