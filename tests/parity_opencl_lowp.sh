#!/bin/sh
# The OpenCL convolutions and matmul in float16 and bfloat16 storage (issue 43)
# against the host reference, each algorithm forced by name, every tile
# configuration of the all-configuration grids: every algorithm on the
# layouts and edge grids (strides, padding, dilation, groups, depthwise,
# odd channels, batch 1 and 17, all 12 layout combinations), and the
# register-tiled ones on their own grids. Exits 77 (SKIP) without an
# OpenCL device.
parity="${PDNN_TOP_BUILDDIR:-.}/tests/parity"
rc=77
run() {
    "$parity" --mode test --backend opencl --op "$op" "$@"
    r=$?
    if [ "$r" -ne 0 ] && [ "$r" -ne 77 ]; then rc=1; elif [ "$r" -eq 0 ] && [ "$rc" -eq 77 ]; then rc=0; fi
}
op=conv2d
for dt in float16 bfloat16; do
    run --dtype "$dt" --set layouts
    run --dtype "$dt" --set edge
done
# The register-tiled ones' own grids once (bfloat16 differs in the
# prelude's loads and stores only, which the grids above reach in every
# kernel). By hand, for their cost here (minutes each on 2 CPUs):
# winograd's sampled_3x3 (a PoCL build per launch shape) and depthwise's
# own grid, each with --dtype float16 and bfloat16.
run --dtype float16 --set gemm_1x1 --algo gemm_1x1
run --dtype float16 --set implicit_gemm --algo implicit_gemm
# gemm_1x1 and implicit_gemm with the filter packed in the reduced dtype
# (as GPU-class devices run them; on PoCL the pack is float32), every
# configuration, 1-2 s.
for dt in float16 bfloat16; do
    run --dtype "$dt" --set layouts --algo gemm_1x1 --gpu-class
    run --dtype "$dt" --set layouts --algo implicit_gemm --gpu-class
    run --dtype "$dt" --set sim_1x1 --algo gemm_1x1 --gpu-class
done
# matmul's N-d set (tiled's and naive's kernels, transposes, strided and
# broadcast batches; conv_gemm and clblast refuse the dtype) in both, 3 s.
op=matmul
for dt in float16 bfloat16; do
    run --dtype "$dt" --set nd_matmul
done
exit "$rc"
