#!/bin/sh
# Builds the .npz fuzz target with clang (libFuzzer + ASan + UBSan) and
# runs it for SECONDS (default 60) from the seed corpus
# tests/fuzz/npz-corpus. New inputs go to a scratch corpus, never into the
# committed one; a crash leaves its input in $FUZZ_OUT (default
# tests/fuzz/out, under the current directory) and fails: fix the bug,
# then add the input to tests/fuzz/npz-corpus. Needs clang and its
# runtime (Debian: clang, libclang-rt-14-dev). FUZZ_TARGET=idx (what
# run-fuzz-idx.sh sets) does the same for the IDX reader (fuzz_idx.c,
# tests/fuzz/idx-corpus). Usage:
#   tests/fuzz/run-fuzz-npz.sh [SECONDS]      (or: make fuzz-npz FUZZ_SECONDS=N)
set -eu
seconds=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-tests/fuzz/out}
cc=${CLANG:-clang}
t=${FUZZ_TARGET:-npz}
case $t in
npz) reader="$src/tools/npz.c" max_len=8192 ;;
idx) reader="$src/tools/idx.c" max_len=4096 ;;
*) echo "FUZZ_TARGET: expected npz or idx, got '$t'" >&2; exit 2 ;;
esac
mkdir -p "$out/corpus"
"$cc" -g -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$src" -I"$src/src" \
    "$src/tests/fuzz/fuzz_$t.c" "$reader" "$src/tools/npy.c" "$src/src/core/fileio.c" "$src/src/core/half.c" -lz -o "$out/fuzz_$t"
echo "fuzz_$t: ${seconds}s from $src/tests/fuzz/$t-corpus"
# -rss_limit_mb: the reader must stay small whatever the headers declare.
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$out/fuzz_$t" \
    -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=512 -malloc_limit_mb=64 -timeout=5 \
    -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" "$src/tests/fuzz/$t-corpus"
