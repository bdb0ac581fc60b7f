#!/bin/sh
# The harness must catch a broken kernel and blame the right cases. Shared
# by the tests/parity*_broken*.sh scripts:
#   broken_kernel.sh FILE SED [--and FILE SED]... BLAME WHAT PARITY-ARGS...
# copies kernels_cl/, applies the sed expression SED to kernels_cl/FILE (a
# small defect, e.g. a sum scaled by 1.001, that a loose tolerance would let
# through), each --and pair's too (one defect of code that two files hold;
# every SED must change its file), and runs tests/parity PARITY-ARGS with
# that copy through POLYDNN_KERNEL_DIR, the on-disk program cache off and a
# private cache directory, so that no compiled program of the real kernels
# can stand in.
# The harness must exit 1 and every failure line must match the grep
# pattern BLAME (WHAT names those cases in the messages). Exits 77 (SKIP)
# without an OpenCL device.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/kernels" "$tmp/cache" || exit 1
cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
files=
while :; do
    file=$1 expr=$2
    shift 2
    sed "$expr" "$tmp/kernels/$file" >"$tmp/edited" || exit 1
    if cmp -s "$tmp/kernels/$file" "$tmp/edited"; then
        echo "FAIL: the injected bug no longer matches $file; update this test"
        exit 1
    fi
    mv "$tmp/edited" "$tmp/kernels/$file" || exit 1
    files="$files${files:+ and }$file"
    [ "$1" = --and ] || break
    shift
done
blame=$1 what=$2
shift 2
POLYDNN_KERNEL_DIR="$tmp/kernels" POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache" \
    "$build/tests/parity" "$@" >"$tmp/out" 2>&1
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
blamed=$(grep '^FAIL ' "$tmp/out" | grep -c -- "$blame")
if [ "$rc" -eq 1 ] && [ "$fails" -gt 0 ] && [ "$blamed" -eq "$fails" ]; then
    echo "broken $files caught: $fails failure(s), each $what"
    echo "1 passed, 0 failed"
    exit 0
fi
echo "FAIL: the harness exited $rc with $fails failure line(s), $blamed $what; wanted exit 1 and only those"
echo "0 passed, 1 failed"
exit 1
