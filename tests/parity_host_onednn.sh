#!/bin/sh
# The host's oneDNN algorithms take every case of the harness's matmul,
# conv backward-bias, batch norm, elementwise and softmax grids (transposed operands included: onednn once
# refused them, which the harness counts as skips, not failures), and the
# backward convolutions of NCHW 5x5 layers (Deep MNIST's) run oneDNN's
# blocked kernels, not its GEMM ones (0.3-1.2 GFLOP/s), where the machine
# has a blocked kernel for them.
B=${PDNN_TOP_BUILDDIR:-.}
P="$B/tests/parity"
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$B/polydnn" conv --algo help --device /cpu:0 2>/dev/null | grep -q "^| onednn | " ||
    { echo "SKIP: no onednn algorithm (built without oneDNN)"; exit 77; }
for op in matmul conv2d_bwd_bias; do
    "$P" --mode grad --backend host --op "$op" --algo onednn > "$T/$op" 2>&1 || { cat "$T/$op"; fail "$op"; }
    grep -q "onednn: [1-9][0-9]* passed, 0 failed, 0 skipped" "$T/$op" || { cat "$T/$op"; fail "$op: skipped cases"; }
done
# Batch norm (forward training and inference, backward), relu's backward,
# scale and softmax run every case on oneDNN; the activations every case
# but the modes oneDNN 2.x lacks (erf, hard sigmoid), NaN inputs and
# y = x included.
for op in batch_norm_fwd_train batch_norm_fwd_infer batch_norm_bwd relu_bwd scale softmax; do
    "$P" --mode grad --backend host --op "$op" --algo onednn > "$T/$op" 2>&1 || { cat "$T/$op"; fail "$op"; }
    grep -q "onednn: [1-9][0-9]* passed, 0 failed, 0 skipped" "$T/$op" || { cat "$T/$op"; fail "$op: skipped cases"; }
done
"$P" --mode grad --backend host --op activation --algo onednn -v > "$T/act" 2>&1 || { cat "$T/act"; fail "activation"; }
grep -q "onednn: [1-9][0-9]* passed, 0 failed" "$T/act" || { cat "$T/act"; fail "activation: none ran"; }
grep "^skip .* onednn" "$T/act" | grep -v " erf \| hard_sigmoid " && fail "activation: onednn skipped a mode it has"
# NCHW depthwise runs the host's own loop (host_dw.c: no per-call
# reorders, as oneDNN's blocked kernel needs), every depthwise case of the
# harness, and AUTO takes it for a MobileNetV2 layer.
"$P" --mode test --backend host --set depthwise --algo depthwise > "$T/dw" 2>&1 || { cat "$T/dw"; fail "depthwise"; }
grep -q "depthwise: [1-9][0-9]* passed, 0 failed" "$T/dw" || { cat "$T/dw"; fail "depthwise: none ran"; }
"$B/polydnn" conv --device /cpu:0 -c 144 -k 144 -g 144 -H 28 -W 28 -p 1 -q 1 --bias --relu -i 1 > "$T/dwauto" 2>&1 ||
    { cat "$T/dwauto"; fail "depthwise conv"; }
grep -q "algorithm depthwise:" "$T/dwauto" || { cat "$T/dwauto"; fail "AUTO passed over depthwise for NCHW"; }
# A 1x1 NCHW convolution with a relu runs oneDNN's GEMM and then its relu,
# not x and y reordered into blocked layouts around every call.
POLYDNN_DEBUG=1 "$B/polydnn" conv --device /cpu:0 -n 2 -c 16 -k 96 -H 56 -W 56 -x 1 -y 1 --bias --relu -i 1 \
    > "$T/1x1" 2>&1 || { cat "$T/1x1"; fail "1x1 conv"; }
if grep -q -w "avx2\|avx512f" /proc/cpuinfo && grep "onednn conv2d" "$T/1x1" | grep -q "reordered"; then
    cat "$T/1x1"
    fail "a 1x1 NCHW convolution with a relu reordered per call"
fi
# The stem's NCHW max pooling at batch 1 (SqueezeNet's) runs in channel
# slices, so oneDNN's scratchpad stays under 512 KiB (the parity harness's
# pool_edges set holds the same 1x64x112x112 case against the reference).
POLYDNN_DEBUG=1 "$B/polydnn" pool --device /cpu:0 -n 1 -c 64 -H 112 -W 112 -y 3 -x 3 -p 1 -q 1 -i 1 > "$T/pool" 2>&1 ||
    { cat "$T/pool"; fail "pool"; }
if grep -q -w "avx512f" /proc/cpuinfo && ! grep -q "in [0-9]* slices of [0-9]* channels" "$T/pool"; then
    cat "$T/pool"
    fail "the stem's pooling ran whole (a 2.4 MB scratchpad)"
fi
# oneDNN names its blocked kernels by ISA ("jit:avx512_core", "jit:avx2"),
# its GEMM convolutions "gemm:jit" and its references "ref:any".
POLYDNN_DEBUG=1 "$B/polydnn" train --device /cpu:0 --steps 1 --train-limit 64 --test-limit 8 > "$T/train" 2>&1 ||
    { cat "$T/train"; fail "train"; }
grep "onednn conv2d backward" "$T/train" > "$T/bwd"
[ "$(wc -l < "$T/bwd")" -ge 3 ] || { cat "$T/train"; fail "no backward convolution on onednn"; }
if grep -q -w "avx2\|avx512f" /proc/cpuinfo && grep -q "gemm\|ref:" "$T/bwd"; then
    cat "$T/bwd"
    fail "a backward convolution on oneDNN's GEMM or reference kernel"
fi
echo "PASS"
