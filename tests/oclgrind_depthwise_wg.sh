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
#     not a failed build or launch;
#  3. one with 8 KiB and 64 work-items (GPUs have 32-64 KiB and 256-1024)
#     runs the parity set by the configurations that fit, under
#     --data-races, equal to the host.
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
# A small device (8 KiB of local memory, 64 work-items: where the
# default tiles of the wider filters and strides do not fit): the parity
# set under --data-races, each case by a configuration that fits.
oclgrind --data-races --local-mem-size 8192 --max-wgsize 64 "$build/tests/parity" --backend opencl --op conv2d \
    --algo depthwise_wg --set depthwise_wg >"$tmp/fits" 2>&1
rc=$?
tail -n 1 "$tmp/fits"
if [ "$rc" -eq 0 ] && grep -q "^[0-9]* passed, 0 failed" "$tmp/fits" &&
    ! grep -qiE "data race|divergence|invalid (read|write)|out of bounds|uninitiali|oclgrind.*error" "$tmp/fits"; then
    ok "8 KiB of local memory, 64 work-items: the configurations that fit run, equal to the host, nothing reported"
else
    grep -iE "data race|divergence|invalid (read|write)|^FAIL" "$tmp/fits" | head -n 10
    bad "8 KiB of local memory, 64 work-items: parity exit $rc, or something reported"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
