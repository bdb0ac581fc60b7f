#!/bin/sh
# tests/test_kernel_build (every OpenCL kernel built from source with every
# option set, caches off: make check's longest test, about 4 minutes of one
# core) through a script: make starts a script's test at once, in TESTS'
# order, but held the compiled suites' tests back until every script had
# started (CI's log: it began 500 s into make check and ended it alone), so
# the binary is built with the suites and run from here, first.
exec "${PDNN_TOP_BUILDDIR:-.}/tests/test_kernel_build" "$@"
