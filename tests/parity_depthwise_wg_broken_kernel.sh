#!/bin/sh
# The harness must catch a defect in each of depthwise_wg's index maps and
# blame only the cases that take it: dwg_nchw reading its tile's rows as
# if the stride were 1 (the stride-2 cases), dwg_nchw giving every output
# channel of a multiplier its input channel's first filter (the NCHW
# cases with a multiplier of 2), and dwg_nhwc reading its tile's columns
# as if the dilation were 1 (the dilated NHWC cases). Each bug alone; see
# tests/broken_kernel.sh.
dir=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests
args="--mode test --op conv2d --backend opencl --algo depthwise_wg --set depthwise_wg"
# shellcheck disable=SC2086 # args: the harness's options, split on purpose
sh "$dir/broken_kernel.sh" conv2d_depthwise_wg.cl \
    '/^dwg_nchw/,/^}/s/const int lr = (pr + i) \* sh + r \* dh;/const int lr = (pr + i) + r * dh;/' \
    'depthwise_wg .*stride 2,' "a stride-2 case" $args || exit $?
# shellcheck disable=SC2086
sh "$dir/broken_kernel.sh" conv2d_depthwise_wg.cl \
    's/const float fv = f\[j \* RS + r \* S + s\];/const float fv = f[r * S + s];/' \
    'depthwise_wg \[[a-z ]*nchw.* k34 .* g17 \|depthwise_wg \[[a-z ]*nchw.* k12 .* g6 \|depthwise_wg \[[a-z ]*nchw.* k6 .* g3 ' \
    "an NCHW case with a multiplier of 2" $args || exit $?
# shellcheck disable=SC2086
exec sh "$dir/broken_kernel.sh" conv2d_depthwise_wg.cl \
    's/const int lc = u \* sw + s \* dw;/const int lc = u * sw + s;/' \
    'depthwise_wg \[[a-z ]*nhwc.* dil [0-9]*,2 ' "a dilated NHWC case" $args
