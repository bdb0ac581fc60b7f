#!/bin/sh
# The harness must catch a broken work-group reduction (the last halving
# step dropped), which only the GPU-class "group" softmax and layer norm
# run; "direct" loops per item and must still pass. See
# tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" nd_math.cl \
    's/for (size_t s = n \/ 2; s > 0; s \/= 2) {/for (size_t s = n \/ 2; s > 1; s \/= 2) {/' \
    'group: \(softmax\|layer_norm\)' "a row reduced by a work-group" --mode grad --backend opencl --set layer_norm
