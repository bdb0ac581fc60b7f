#!/bin/sh
# The harness must catch a broken kernel, and blame the right algorithm:
# a copy of kernels_cl/ whose tiled convolution scales every sum by 1.001
# (a defect of 1e-3 relative, which a loose tolerance would let through)
# is loaded through POLYDNN_KERNEL_DIR, with the on-disk program cache off
# and a private cache directory, so that no compiled program of the real
# kernels can stand in. The harness must exit 1, and every failure it
# prints must name tiled. Exits 77 (SKIP) without an OpenCL device.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/kernels" "$tmp/cache" || exit 1
cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
sed 's/acc\[b\]\[j\] = FMA16(xv, wv\[b\], acc\[b\]\[j\]);/acc[b][j] = FMA16(xv, wv[b] * 1.001f, acc[b][j]);/' \
    "$src/kernels_cl/conv2d_tiled.cl" >"$tmp/kernels/conv2d_tiled.cl"
if cmp -s "$src/kernels_cl/conv2d_tiled.cl" "$tmp/kernels/conv2d_tiled.cl"; then
    echo "FAIL: the injected bug no longer matches conv2d_tiled.cl's accumulation; update this test"
    exit 1
fi
POLYDNN_KERNEL_DIR="$tmp/kernels" POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache" \
    "$build/tests/parity" --backend opencl --op conv2d --set edge >"$tmp/out" 2>&1
rc=$?
# Indented, and its closing "N passed, N failed" line reworded: the
# deliberate failures are not this test's result, which is its own
# closing line below (what CI's summary reads).
sed 's/^/    /; s/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 runs passed, \2 runs caught the bug/' "$tmp/out"
if [ "$rc" -eq 77 ]; then
    echo "SKIP: no OpenCL device"
    exit 77
fi
fails=$(grep -c '^FAIL ' "$tmp/out")
blamed=$(grep '^FAIL ' "$tmp/out" | grep -c ' tiled')
if [ "$rc" -eq 1 ] && [ "$fails" -gt 0 ] && [ "$blamed" -eq "$fails" ]; then
    echo "broken tiled kernel caught: $fails failure(s), each naming tiled"
    echo "1 passed, 0 failed"
    exit 0
fi
echo "FAIL: the harness exited $rc with $fails failure line(s), $blamed naming tiled; wanted exit 1 and only tiled"
echo "0 passed, 1 failed"
exit 1
