#!/bin/sh
# The op-parity harness (tests/parity.c) on the host backend: each of its
# algorithms against the harness's own naive loops, which checks the
# reference every other backend is compared with.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/parity" --backend host "$@"
