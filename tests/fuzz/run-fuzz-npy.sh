#!/bin/sh
# Builds the .npy fuzz target with clang (libFuzzer + ASan + UBSan) and
# runs it for SECONDS (default 60) from the seed corpus
# tests/fuzz/npy-corpus. New inputs go to a scratch corpus, never into the
# committed one; a crash leaves its input in $FUZZ_OUT (default
# tests/fuzz/out, under the current directory) and fails: fix the bug,
# then add the input to tests/fuzz/npy-corpus. Needs clang and its
# runtime (Debian: clang, libclang-rt-14-dev). Usage:
#   tests/fuzz/run-fuzz-npy.sh [SECONDS]      (or: make fuzz-npy FUZZ_SECONDS=N)
set -eu
seconds=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-tests/fuzz/out}
cc=${CLANG:-clang}
mkdir -p "$out/corpus"
"$cc" -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src" -I"$src/src" \
    "$src/tests/fuzz/fuzz_npy.c" "$src/tools/npy.c" "$src/src/core/fileio.c" "$src/src/core/half.c" -o "$out/fuzz_npy"
echo "fuzz_npy: ${seconds}s from $src/tests/fuzz/npy-corpus"
# -rss_limit_mb: the reader must stay small whatever the header declares.
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$out/fuzz_npy" \
    -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=512 -malloc_limit_mb=64 -timeout=5 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "$src/tests/fuzz/npy-corpus"
