#!/bin/sh
# Every OpenCL kernel under Oclgrind (GPU semantics: work-groups share local
# memory and meet at barriers; --data-races), on small odd cases in both
# layouts, with results equal to the host's (the parity harness's
# verdicts, or the tool's --verify) and nothing reported. wg_gemm's
# configurations have their own script (tests/oclgrind_wg_gemm.sh).
#
# Coverage is checked, so that a new kernel or algorithm cannot go
# unsimulated: every __kernel of kernels_cl/*.cl must have been created by
# some run below (POLYDNN_DEBUG=1 names each kernel created), and every
# algorithm a parity run lists (the backend's registry, per op) must have
# passed at least one case, except those named in EXCLUDED with the reason.
# Exits 77 (SKIP) without oclgrind. `make check-oclgrind` runs it.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
build=${PDNN_TOP_BUILDDIR:-.}
command -v oclgrind >/dev/null 2>&1 || { echo "SKIP: oclgrind is not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export POLYDNN_PROGRAM_CACHE=off POLYDNN_CACHE_DIR="$tmp/cache" POLYDNN_DEBUG=1
# Not simulated, and why:
#  im2col_gemm, and its backward twins: the GEMM is CLBlast's (its own
#    kernels, compiled by CLBlast), which aborts under Oclgrind (issue 47);
#    polydnn's conv2d.cl kernels around it run in the backward algorithms.
#  wg_gemm: tests/oclgrind_wg_gemm.sh (every configuration).
#  peak.cl: `bench --peak`'s timing loops, no result to compare.
EXCLUDED_ALGOS="im2col_gemm clblast wg_gemm"
#  conv2d_gemm_epilogue: im2col_gemm's, after CLBlast's GEMM.
EXCLUDED_KERNELS="peak_copy peak_fma4 peak_fma8 peak_fma16 conv2d_wg_gemm wgg_pack wgg_reduce wgg_table
    conv2d_gemm_epilogue"
errors() { grep -iE "data race|divergence|invalid (read|write)|out of bounds|uninitiali|oclgrind.*error" "$1"; }
pass=0 fail=0 n=0
ok() { echo "PASS: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

# One parity run: exit 0, " 0 failed", nothing reported.
parity() {
    n=$((n + 1))
    oclgrind --data-races "$build/tests/parity" --backend opencl "$@" >"$tmp/run$n" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && ! errors "$tmp/run$n" >/dev/null && grep -q "^[0-9]* passed, 0 failed" "$tmp/run$n"; then
        ok "parity $* ($(grep "^[0-9]* passed" "$tmp/run$n"))"
    else
        errors "$tmp/run$n" | head -n 10
        grep "^FAIL" "$tmp/run$n" | head -n 5
        bad "parity $* (exit $rc)"
    fi
}
# One tool run with --verify: exit 0, "OK", nothing reported.
tool() {
    n=$((n + 1))
    oclgrind --data-races "$build/polydnn" "$@" --device /gpu:0 --iters 1 --verify --seed 7 >"$tmp/run$n" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && ! errors "$tmp/run$n" >/dev/null && grep -q "tolerance.*OK" "$tmp/run$n"; then
        ok "polydnn $*"
        echo "$*" | sed -n 's/.*--algo \([A-Za-z0-9_]*\).*/\1 1/p' >>"$tmp/tool_algos"
    else
        errors "$tmp/run$n" | head -n 10
        grep -iE "verify|error" "$tmp/run$n" | grep -v debug | head -n 5
        bad "polydnn $* (exit $rc)"
    fi
}

# conv2d forward: the algorithms on the wg_gemm_sim cases (tails of K,
# pixels and the reduction, groups, residual, capped relu; both layouts).
for algo in direct tiled winograd implicit_gemm; do
    parity --op conv2d --set wg_gemm_sim --algo "$algo"
done
# depthwise: rows (dw_nchw), planes of 2 chunks a work-item (dw_plane) and
# channels-last (dw_nhwc), dilated, a multiplier of 2.
tool conv -n 2 -c 6 -H 9 -W 11 -k 6 -g 6 -p 1 -q 2 -j 2 --bias --relu --algo depthwise
tool conv -n 1 -c 2 -H 20 -W 37 -k 2 -g 2 -p 1 -q 1 --algo depthwise
tool conv -n 2 -c 5 -H 7 -W 6 -k 10 -g 5 -y 5 -x 5 -p 2 -q 2 --bias --algo depthwise
tool conv -n 2 -c 11 -H 7 -W 9 -k 11 -g 11 -p 1 -q 1 -u 2 --bias --relu --layout NHWC --algo depthwise
tool conv -n 2 -c 6 -H 9 -W 11 -k 12 -g 6 -y 3 -x 4 -u 2 --bias --algo depthwise
# depthwise_wg (GPU-class: local-memory tiles and a barrier): its set, every
# configuration (tests/oclgrind_depthwise_wg.sh removes the barrier).
parity --op conv2d --set depthwise_wg --algo depthwise_wg
# gemm_1x1: odd channels and pixels, both layouts, strided; NCHW images of
# 784 pixels and more (the row kernel), with their gradients.
parity --op conv2d --set sim_1x1 --algo gemm_1x1
parity --mode grad --set sim_1x1
tool conv -n 2 -c 7 -H 5 -W 3 -k 9 -y 1 -x 1 --bias --relu --algo gemm_1x1
tool conv -n 1 -c 19 -H 4 -W 7 -k 5 -y 1 -x 1 -u 2 -v 2 --layout NHWC --algo gemm_1x1
tool conv -n 3 -c 33 -H 3 -W 3 -k 17 -y 1 -x 1 --bias --layout NHWC --algo gemm_1x1
# pool2d forward and backward: ties and NaN on the vector and plane paths.
parity --op pool2d --set pool_ties
parity --op pool2d --set pool_nan
parity --mode grad --op pool2d_bwd --set pool_ties
parity --op pool2d --set sim_pool
parity --mode grad --op pool2d_bwd --set sim_pool
# conv2d's backward algorithms (im2col's pack, col2im and the bwd kernels).
parity --mode grad --set wg_gemm_sim
# batch norm and the training ops.
for set in batch_norm relu_bwd xent sgd adam scale activation transform binary pad; do
    parity --mode grad --set "$set"
done
# The N-d math (nd_math.cl: both algorithms of each op) and the data
# movement (index.cl): their whole sets, all small.
for set in transpose softmax layer_norm reduce; do
    parity --mode grad --set "$set"
done
for set in slice where; do
    parity --set "$set"
done
# float16 and bfloat16 (issue 43): every cast kernel, and the kernels
# built over REAL_T (activation, binary, every pooling kernel forward and
# backward: window's 2x2 vector ones, plane's float32 sums, argmax, batch norm,
# direct and NHWC depthwise convolution, backward filter's gemm kernels
# and reduce, backward bias; the grouped and depthwise gradients through
# backward data's direct and implicit_gemm kernels and filter's direct and
# split) in both dtypes.
parity --set precision
# The fast convolutions in float16 and bfloat16 (cast_widen's float32
# copies, the REAL_T epilogues, x read in place in NHWC, gemm_1x1's rows
# kernel on the 28x29 image): sim_1x1's cases by gemm_1x1, wg_gemm_sim's
# (both layouts) by implicit_gemm and winograd.
for dt in float16 bfloat16; do
    parity --op conv2d --set sim_1x1 --algo gemm_1x1 --dtype "$dt"
    for algo in implicit_gemm winograd; do
        parity --op conv2d --set wg_gemm_sim --algo "$algo" --dtype "$dt"
    done
    # The filter packed in the dtype (GPU-class devices' packs; -DTILE_WR):
    # both packs of gemm_1x1 (the rows kernel's HWIO copy on the 28x29
    # image) and implicit_gemm's.
    parity --op conv2d --set sim_1x1 --algo gemm_1x1 --dtype "$dt" --gpu-class
    parity --op conv2d --set wg_gemm_sim --algo implicit_gemm --dtype "$dt" --gpu-class
done
# The N-d ops' backward (nd_grad.cl: layer norm's, by algorithm and
# through the graph's gradients).
parity --mode grad --set gg_layer_norm
# matmul's own kernels on small cases (the matmul set's are minutes here),
# each algorithm but CLBlast's.
for algo in tiled conv_gemm naive; do
    parity --mode grad --set matmul_sim --algo "$algo"
done
# Their strided batches (the NDRange's second dimension; conv_gemm once per
# matrix): the N-d set, broadcasts and transposes included.
for algo in tiled conv_gemm naive; do
    parity --set nd_matmul --algo "$algo"
done
# Both in float16 and bfloat16 storage (REAL_T loads and stores, gemm_nn's
# 8-wide A rows; conv_gemm refuses the dtypes).
for dt in float16 bfloat16; do
    for algo in tiled naive; do
        parity --op matmul --set nd_matmul --algo "$algo" --dtype "$dt"
    done
done
# The graph's elementwise kernels (add, bias, relu, softmax, row copies).
n=$((n + 1))
oclgrind --data-races "$build/polydnn" run-example cnn --device /gpu:0 >"$tmp/run$n" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! errors "$tmp/run$n" >/dev/null; then ok "run-example cnn"; else
    errors "$tmp/run$n" | head -n 10
    bad "run-example cnn (exit $rc)"
fi

# Bias and concatenation (the graph's ew_bias_add and ew_copy_rows) from
# Python, against NumPy.
n=$((n + 1))
POLYDNN_LIBRARY="$build/.libs/libpolydnn.so" PYTHONPATH="$src/python" oclgrind --data-races /usr/bin/python3 -c '
import numpy as np, polydnn
r = np.random.default_rng(3)
a, b, bias = (r.standard_normal(s).astype(np.float32) for s in ((2, 3, 5, 7), (2, 4, 5, 7), (3,)))
g = lambda v: polydnn.from_dlpack(v).to("/gpu:0")
y = np.from_dlpack(polydnn.bias_add(g(a), g(bias)).to("/cpu:0"))
assert np.allclose(y, a + bias[None, :, None, None], atol=1e-6)
y = np.from_dlpack(polydnn.concat([g(a), g(b)], axis=1).to("/cpu:0"))
assert np.array_equal(y, np.concatenate([a, b], axis=1))
print("equal to NumPy")' >"$tmp/run$n" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && ! errors "$tmp/run$n" >/dev/null && grep -q "equal to NumPy" "$tmp/run$n"; then
    ok "bias_add and concat from Python"
else
    errors "$tmp/run$n" | head -n 10
    tail -n 5 "$tmp/run$n"
    bad "bias_add and concat from Python (exit $rc)"
fi

# Coverage: every kernel of kernels_cl/ created somewhere above.
cat "$tmp"/run* | sed -n 's/.*OpenCL: kernel \([A-Za-z0-9_]*\) of .* created.*/\1/p' | sort -u >"$tmp/ran"
for f in "$src"/kernels_cl/*.cl; do
    tr '\n' ' ' <"$f" | grep -oE '__kernel[^{;]*void +[A-Za-z0-9_]+ *\(' | sed 's/.*void *\([A-Za-z0-9_]*\).*/\1/'
done | sort -u >"$tmp/all"
[ -s "$tmp/all" ] || bad "no __kernel found in $src/kernels_cl (the pattern here is out of date)"
missing=""
for k in $(comm -23 "$tmp/all" "$tmp/ran"); do
    case " $(echo $EXCLUDED_KERNELS) " in *" $k "*) ;; *) missing="$missing $k" ;; esac
done
if [ -z "$missing" ]; then
    ok "every kernel of kernels_cl/ ran under Oclgrind ($(wc -l <"$tmp/ran") kernels; excluded:" $EXCLUDED_KERNELS")"
else
    bad "kernels no case above ran under Oclgrind (add a case, or exclude them here with the reason):$missing"
fi
# Coverage: every registered algorithm a parity run listed passed a case.
# conv2d forward's registry from the tool (the runs above select them
# one by one, so no parity run lists them all).
"$build/polydnn" conv --algo help --device /gpu:0 2>/dev/null | sed -n 's/^| \([a-z0-9_]*\) | yes | .*/\1 0/p' >"$tmp/conv_algos"
[ -s "$tmp/conv_algos" ] || bad "polydnn conv --algo help listed no OpenCL algorithm (the pattern here is out of date)"
{ cat "$tmp"/run* | sed -n 's|^  /device:GPU:[0-9]* [a-z0-9_]* \([A-Za-z0-9_]*\): \([0-9]*\) passed.*|\1 \2|p'
  cat "$tmp/conv_algos" "$tmp/tool_algos" 2>/dev/null; } |
    awk '{ n[$1] += $2 } END { for (a in n) print a, n[a] }' | sort >"$tmp/algos"
unrun=""
while read -r algo count; do
    case " $(echo $EXCLUDED_ALGOS) " in *" $algo "*) continue ;; esac
    [ "$count" -gt 0 ] || unrun="$unrun $algo"
done <"$tmp/algos"
if [ ! -s "$tmp/algos" ]; then
    bad "no parity summary line read (the pattern here is out of date)"
elif [ -z "$unrun" ]; then
    ok "every registered OpenCL algorithm the parity runs list passed a case ($(wc -l <"$tmp/algos") algorithms)"
else
    bad "registered OpenCL algorithms that ran no case under Oclgrind:$unrun"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
