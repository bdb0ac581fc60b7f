#!/bin/sh
# Python training of a user's model (tests/test_python_fit.py): fit against
# train_step, polydnn.torch.fit against torch.optim. Needs a Python with
# numpy, torch, onnx and onnxruntime: $PYTHON_ONNX, else $PYTHON_TORCH.
# Exit 77 (skip) without one, or when this polydnn has no ONNX import.
if "$POLYDNN_TOOL" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    echo "SKIP: this polydnn was built without ONNX import"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
py=${PYTHON_ONNX:-$PYTHON_TORCH}
if [ -z "$py" ] || ! "$py" -c 'import numpy, torch, onnx, onnxruntime' >/dev/null 2>&1; then
    echo "SKIP: no Python with numpy, torch, onnx and onnxruntime (set PYTHON_ONNX)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
POLYDNN_LIBRARY="$PDNN_TOP_BUILDDIR/.libs/libpolydnn.so.1"
PYTHONPATH="$PDNN_TOP_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
export POLYDNN_LIBRARY PYTHONPATH
. "$PDNN_TOP_SRCDIR/tests/python_asan.sh"
exec "$py" "$PDNN_TOP_SRCDIR/tests/test_python_fit.py" -v "$@"
