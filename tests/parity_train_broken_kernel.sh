#!/bin/sh
# The harness must catch a broken training kernel, and blame the right op:
# a copy of kernels_cl/ whose softmax cross-entropy gradient is scaled by
# 1.001 (1e-3 relative, which a loose tolerance would let through) is
# loaded through POLYDNN_KERNEL_DIR, with the on-disk program cache off
# and a private cache directory. The harness's grad mode on the xent set
# must exit 1, and every failure it prints must be a cross-entropy case.
# Exits 77 (SKIP) without an OpenCL device.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/kernels" "$tmp/cache" || exit 1
cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
sed 's/\* inv_s - (j == label ? 1.0f : 0.0f)) \* inv_n;/* inv_s - (j == label ? 1.0f : 0.0f)) * inv_n * 1.001f;/' \
    "$src/kernels_cl/train.cl" >"$tmp/kernels/train.cl"
if cmp -s "$src/kernels_cl/train.cl" "$tmp/kernels/train.cl"; then
    echo "FAIL: the injected bug no longer matches train.cl's cross-entropy gradient; update this test"
    exit 1
fi
POLYDNN_KERNEL_DIR="$tmp/kernels" POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache" \
    "$build/tests/parity" --mode grad --backend opencl --set xent >"$tmp/out" 2>&1
rc=$?
sed 's/^/    /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 runs passed, \2 runs caught the bug/' "$tmp/out"
if [ "$rc" -eq 77 ]; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
fails=$(grep -c '^FAIL ' "$tmp/out")
blamed=$(grep '^FAIL ' "$tmp/out" | grep -c 'direct: xent .*dlogits')
if [ "$rc" -eq 1 ] && [ "$fails" -gt 0 ] && [ "$blamed" -eq "$fails" ]; then
    echo "broken cross-entropy gradient caught: $fails failure(s), each a dlogits element of an xent case"
    echo "1 passed, 0 failed"
    exit 0
fi
echo "FAIL: the harness exited $rc with $fails failure line(s), $blamed blaming dlogits; wanted exit 1 and only those"
echo "0 passed, 1 failed"
exit 1
