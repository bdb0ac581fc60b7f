#!/bin/sh
# wg_gemm under Oclgrind, an OpenCL simulator with GPU semantics (the
# work-items of a group share local memory and must all reach each
# barrier), which PoCL's CPU execution can hide:
#  1. every configuration on the parity harness's wg_gemm_sim cases under
#     --data-races, with NVIDIA's, AMD's and Intel's local-memory and
#     work-group limits: outputs equal to the host's and no race, barrier
#     divergence or out-of-bounds access reported;
#  2. the double-buffered loop's end-of-step barrier removed: Oclgrind
#     must report a data race (on PoCL the outputs stay right);
#  3. a device whose local memory fits no configuration (4 KiB) gets a
#     refusal naming the limits, not a failed build or launch;
#  4. the same cases' gradients by every backward algorithm, wg_gemm
#     inside the backward-as-forward ones (--gpu-class), under
#     --data-races: equal to the host's, nothing reported;
#  5. the reduction's table is built once for a shape, not once per call
#     (three calls of one convolution: one build).
# Exits 77 (SKIP) without oclgrind. `make check-oclgrind` runs it.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
command -v oclgrind >/dev/null 2>&1 || { echo "SKIP: oclgrind is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache"
# Oclgrind's errors: races, divergence, invalid accesses, uninitialised
# values, API misuse.
errors() { grep -iE "data race|divergence|invalid (read|write)|out of bounds|uninitiali|oclgrind.*error" "$1"; }
pass=0 fail=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# Under the tightest of the limits of the GPU classes the device table
# names (bytes of local memory, work-items per group): NVIDIA's 48 KiB
# (its 1024 work-items), AMD's under ROCm and Intel Gen9's 256 work-items
# (their 64 KiB). A configuration runs the same under any limits it fits,
# so one run inside all of them covers the three.
oclgrind --data-races --local-mem-size 49152 --max-wgsize 256 "$build/tests/parity" --backend opencl --op conv2d \
    --algo wg_gemm --set wg_gemm_sim >"$tmp/sim" 2>&1
rc=$?
tail -n 3 "$tmp/sim"
if [ "$rc" -eq 77 ]; then echo "SKIP: Oclgrind offers no device"; exit 77; fi
if [ "$rc" -eq 0 ] && ! errors "$tmp/sim" >/dev/null && grep -q " 0 failed" "$tmp/sim" &&
    ! grep -q "passed, 0 failed, [1-9]" "$tmp/sim"; then
    ok "every wg_gemm configuration under Oclgrind within NVIDIA's, AMD's and Intel's limits: equal to the host, no race or invalid access"
else
    errors "$tmp/sim" | head -n 20
    bad "wg_gemm under Oclgrind within the GPU classes' limits (parity exit $rc)"
fi

mkdir "$tmp/kernels" && cp "$src"/kernels_cl/*.cl "$tmp/kernels/" || exit 1
sed -i 's|barrier(CLK_LOCAL_MEM_FENCE); /\* the step.s end \*/|/* removed */|' "$tmp/kernels/conv2d_wg_gemm.cl"
if cmp -s "$src/kernels_cl/conv2d_wg_gemm.cl" "$tmp/kernels/conv2d_wg_gemm.cl"; then
    bad "the end-of-step barrier is no longer where this test removes it; update the test"
else
    POLYDNN_KERNEL_DIR="$tmp/kernels" oclgrind --data-races "$build/polydnn" conv -n 2 -c 40 -H 5 -W 4 -k 9 \
        -p 1 -q 1 --algo wg_gemm --device /gpu:0 --iters 1 >"$tmp/race" 2>&1
    if grep -qi "data race" "$tmp/race"; then
        ok "the barrier removed: Oclgrind reports a data race"
    else
        tail -n 5 "$tmp/race"
        bad "the barrier removed, and Oclgrind reported no race"
    fi
fi

oclgrind --local-mem-size 4096 "$build/polydnn" conv -n 1 -c 4 -H 5 -W 5 -k 4 --algo wg_gemm --device /gpu:0 \
    --iters 1 >"$tmp/small" 2>&1
if grep -q "no configuration fits this device" "$tmp/small" && grep -q "4096 bytes of local memory" "$tmp/small"; then
    ok "4 KiB of local memory: refused, naming the limits"
else
    cat "$tmp/small"
    bad "4 KiB of local memory: no refusal naming the limits"
fi
oclgrind --data-races "$build/tests/parity" --mode grad --backend opencl --set wg_gemm_sim --gpu-class \
    >"$tmp/grad" 2>&1
rc=$?
tail -n 1 "$tmp/grad"
if [ "$rc" -eq 0 ] && ! errors "$tmp/grad" >/dev/null && grep -q "forward_gemm: [1-9]" "$tmp/grad"; then
    ok "the backward algorithms under Oclgrind, wg_gemm inside: equal to the host, nothing reported"
else
    errors "$tmp/grad" | head -n 20
    bad "the backward algorithms under Oclgrind (parity exit $rc)"
fi
POLYDNN_DEBUG=1 oclgrind "$build/polydnn" conv -n 1 -c 8 -H 5 -W 5 -k 8 -p 1 -q 1 --algo wg_gemm --device /gpu:0 \
    --iters 3 >"$tmp/table" 2>&1
built=$(grep -c "wg_gemm's reduction table built" "$tmp/table")
if [ "$built" -eq 1 ] && grep -q "GFLOP/s" "$tmp/table"; then
    ok "the reduction's table: built once for four calls of one shape"
else
    tail -n 5 "$tmp/table"
    bad "the reduction's table: built $built times for four calls of one shape (want 1)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
