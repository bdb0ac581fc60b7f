#!/bin/sh
# Builds the IDX data-set reader's fuzz target with clang (libFuzzer + ASan + UBSan) and
# runs it for SECONDS (default 60) from the seed corpus
# tests/fuzz/idx-corpus. New inputs go to a scratch corpus, never into the
# committed one; a crash leaves its input in $FUZZ_OUT (default
# tests/fuzz/out, under the current directory) and fails: fix the bug,
# then add the input to tests/fuzz/idx-corpus. Needs clang and its
# runtime (Debian: clang, libclang-rt-14-dev). Usage:
#   tests/fuzz/run-fuzz-idx.sh [SECONDS]      (or: make fuzz-idx FUZZ_SECONDS=N)
set -eu
seconds=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-tests/fuzz/out}
cc=${CLANG:-clang}
mkdir -p "$out/corpus"
"$cc" -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src" -I"$src/src" \
    "$src/tests/fuzz/fuzz_idx.c" "$src/tools/idx.c" "$src/tools/npy.c" "$src/src/core/fileio.c" -lz -o "$out/fuzz_idx"
echo "fuzz_idx: ${seconds}s from $src/tests/fuzz/idx-corpus"
# -rss_limit_mb: the reader must stay small whatever the headers declare.
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$out/fuzz_idx" \
    -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=512 -malloc_limit_mb=64 -timeout=5 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "$src/tests/fuzz/idx-corpus"
