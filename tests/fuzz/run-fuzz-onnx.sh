#!/bin/sh
# Builds the ONNX importer's fuzz target with clang (libFuzzer + ASan +
# UBSan on the importer, src/io/onnx_*.c; the rest of the library from the
# built tree's libpolydnn_internal.a) and runs it for SECONDS (default 60) from
# the seed corpus tests/fuzz/onnx-corpus (small models of every supported
# op, written by tests/fuzz/make-onnx-corpus.py). Run it in a configured
# and built tree (BUILDDIR, default the current directory). New inputs go
# to a scratch corpus; a crash leaves its input in $FUZZ_OUT (default
# tests/fuzz/out) and fails: fix the bug, then add the input to the corpus.
# Usage: tests/fuzz/run-fuzz-onnx.sh [SECONDS]   (or: make fuzz-onnx FUZZ_SECONDS=N)
set -eu
seconds=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${BUILDDIR:-.}" && pwd)
out=${FUZZ_OUT:-tests/fuzz/out}
cc=${CLANG:-clang}
if [ ! -f "$build/onnx.pb-c.h" ] || [ ! -f "$build/.libs/libpolydnn_internal.a" ]; then
    echo "run-fuzz-onnx: $build is not a built tree with ONNX import (no onnx.pb-c.h or .libs/libpolydnn_internal.a)"
    exit 1
fi
# The libraries the archive needs, as libtool recorded them (so that one
# added to the library, MPI's for the trainable import, is never missed).
libs=$(sed -n "s/^dependency_libs='\\(.*\\)'$/\\1/p" "$build/libpolydnn_internal.la")
mkdir -p "$out/corpus"
# The importer's files (onnx_import.c and its parts) are compiled here,
# instrumented; the archive's own copies are never pulled in, since every
# symbol they define is defined first.
"$cc" -g -O1 -std=c11 -D_GNU_SOURCE -DPDNN_BUILDING -DHAVE_CONFIG_H -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src" -I"$src/src" -I"$build" \
    "$src/tests/fuzz/fuzz_onnx.c" "$src"/src/io/onnx_*.c "$build/.libs/libpolydnn_internal.a" \
    $libs -lpthread -ldl -lm -o "$out/fuzz_onnx"
echo "fuzz_onnx: ${seconds}s from $src/tests/fuzz/onnx-corpus"
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_onnx" \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "$src/tests/fuzz/onnx-corpus"
