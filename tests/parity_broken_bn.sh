#!/bin/sh
# The harness must catch a subtly broken batch normalization kernel: a
# copy of kernels_cl/ whose batch_norm.cl normalizes by the unbiased
# variance instead of the biased one (off by sqrt(m / (m - 1)), 0.3% at
# m = 162) is loaded through POLYDNN_KERNEL_DIR with the program cache
# off; the harness's batch_norm set must exit 1, every failure naming a
# training forward case. Exits 77 (SKIP) without an OpenCL device.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/kernels" "$tmp/cache" || exit 1
cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
sed 's|const float k = 1.0f / sqrt(sq / (float)m + eps);|const float k = 1.0f / sqrt(sq / (float)(m - 1) + eps);|' \
    "$src/kernels_cl/batch_norm.cl" >"$tmp/kernels/batch_norm.cl"
if cmp -s "$src/kernels_cl/batch_norm.cl" "$tmp/kernels/batch_norm.cl"; then
    echo "FAIL: the injected bug no longer matches batch_norm.cl's bn_finish; update this test"
    exit 1
fi
POLYDNN_KERNEL_DIR="$tmp/kernels" POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache" \
    "$build/tests/parity" --mode grad --backend opencl --set batch_norm >"$tmp/out" 2>&1
rc=$?
sed 's/^/    /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 runs passed, \2 runs caught the bug/' "$tmp/out"
if [ "$rc" -eq 77 ]; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
fails=$(grep -c '^FAIL ' "$tmp/out")
blamed=$(grep '^FAIL ' "$tmp/out" | grep -c ': train ')
if [ "$rc" -eq 1 ] && [ "$fails" -gt 0 ] && [ "$blamed" -eq "$fails" ]; then
    echo "broken batch_norm kernel caught: $fails failure(s), each a training forward case"
    echo "1 passed, 0 failed"
    exit 0
fi
echo "FAIL: the harness exited $rc with $fails failure line(s), $blamed on training cases; wanted exit 1 and only those"
echo "0 passed, 1 failed"
exit 1
