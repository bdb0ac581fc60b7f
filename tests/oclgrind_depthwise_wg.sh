#!/bin/sh
# depthwise_wg (the GPU-class depthwise convolution) under Oclgrind, whose
# GPU semantics (work-items of a group share local memory and meet at
# barriers) PoCL's CPU execution can hide. tests/oclgrind_kernels.sh runs
# its parity set under --data-races; here:
#  1. the barrier after each kernel's local-memory fill removed: Oclgrind
#     must report a data race, in both layouts' kernels (on PoCL the
#     outputs can stay right);
#  2. devices whose local memory (256 bytes) or work-groups (32
#     work-items) fit no configuration get a refusal naming the limits,
#     not a failed build or launch; and one with 2 KiB (AMD's and Intel's
#     parts have 32-64 KiB) still runs the small-tile configurations,
#     with results equal to the host's.
# Exits 77 (SKIP) without oclgrind. `make check-oclgrind` runs it.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
command -v oclgrind >/dev/null 2>&1 || { echo "SKIP: oclgrind is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache"
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

mkdir "$tmp/kernels" && cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
sed -i 's|barrier(CLK_LOCAL_MEM_FENCE); /\* the tile.s fill \*/|/* removed */|' "$tmp/kernels/conv2d_depthwise_wg.cl"
if [ "$(grep -c 'removed' "$tmp/kernels/conv2d_depthwise_wg.cl")" -ne 2 ]; then
    bad "the two fill barriers are no longer where this test removes them; update the test"
else
    for layout in NCHW NHWC; do
        POLYDNN_KERNEL_DIR="$tmp/kernels" oclgrind --data-races "$build/polydnn" conv -n 2 -c 8 -H 6 -W 7 -k 16 \
            -g 8 -p 1 -q 1 --algo depthwise_wg --device /gpu:0 --iters 1 --layout "$layout" >"$tmp/race" 2>&1
        if grep -qi "data race" "$tmp/race"; then
            ok "$layout: the fill's barrier removed, Oclgrind reports a data race"
        else
            tail -n 5 "$tmp/race"
            bad "$layout: the fill's barrier removed, and Oclgrind reported no race"
        fi
    done
fi

for limit in "--local-mem-size 256" "--max-wgsize 32"; do
    for layout in NCHW NHWC; do
        # shellcheck disable=SC2086 # two words: the option and its value
        oclgrind $limit "$build/polydnn" conv -n 1 -c 8 -H 6 -W 7 -k 8 -g 8 -p 1 -q 1 --algo depthwise_wg \
            --device /gpu:0 --iters 1 --layout "$layout" >"$tmp/small" 2>&1
        if grep -q "depthwise_wg: no configuration fits this device" "$tmp/small" &&
            grep -qE "the device has (256 bytes|[0-9]+ bytes and 32 work-items)" "$tmp/small"; then
            ok "$layout, oclgrind $limit: refused, naming the limits"
        else
            cat "$tmp/small"
            bad "$layout, oclgrind $limit: no refusal naming the limits"
        fi
    done
done
for layout in NCHW NHWC; do
    oclgrind --data-races --local-mem-size 2048 "$build/polydnn" conv -n 1 -c 8 -H 6 -W 7 -k 8 -g 8 -p 1 -q 1 \
        --algo depthwise_wg --device /gpu:0 --iters 1 --verify --layout "$layout" >"$tmp/fits" 2>&1
    if grep -q "tolerance.*OK" "$tmp/fits" && ! grep -qiE "data race|invalid (read|write)|divergence" "$tmp/fits"; then
        ok "$layout, 2 KiB of local memory: a configuration that fits runs, equal to the host"
    else
        tail -n 5 "$tmp/fits"
        bad "$layout, 2 KiB of local memory: no configuration ran, or its result differs"
    fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
