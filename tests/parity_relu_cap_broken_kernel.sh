#!/bin/sh
# The harness must catch a relu cap applied wrongly: depthwise's kernels
# (MobileNetV2's ReLU6 layers) clip at 1.01 times the cap. Only the capped
# cases can notice. See tests/broken_kernel.sh.
exec sh "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/tests/broken_kernel.sh" conv2d_depthwise.cl \
    's/as_float(filt\.s3))/as_float(filt.s3) * 1.01f)/g' \
    'depthwise: .* capped ' "a capped depthwise case" --mode test --op conv2d --backend opencl --algo depthwise --set layouts
