#!/bin/sh
# Training an imported ONNX model against PyTorch (tests/test_onnx_train.py):
# one SGD step, the export through ONNX Runtime, Dropout, a toy set's loss,
# the optimizers against torch.optim. Needs a Python with numpy, torch, onnx
# and onnxruntime: $PYTHON_ONNX, else the configure-time $PYTHON_TORCH.
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
# test_python_fit.sh runs its own script through this one (PDNN_ONNX_PY).
exec "$py" "$PDNN_TOP_SRCDIR/tests/${PDNN_ONNX_PY:-test_onnx_train.py}" -v "$@"
