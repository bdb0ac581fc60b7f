#!/bin/sh
# The op-parity harness's grad mode (tests/parity.c) on the host backend:
# each backward op's host algorithms against the harness's naive backward
# loops, which are themselves checked against the naive forward (adjoint
# identity in double, central finite differences on small cases).
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --mode grad --backend host "$@"
