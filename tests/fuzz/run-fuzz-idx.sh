#!/bin/sh
# The IDX data-set reader's fuzz target (tests/fuzz/fuzz_idx.c, seeds in
# tests/fuzz/idx-corpus), built and run as run-fuzz-npz.sh builds and runs
# the .npz reader's. Usage:
#   tests/fuzz/run-fuzz-idx.sh [SECONDS]      (or: make fuzz-idx FUZZ_SECONDS=N)
FUZZ_TARGET=idx exec sh "$(dirname "$0")/run-fuzz-npz.sh" "$@"
