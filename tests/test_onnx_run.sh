#!/bin/sh
# `polydnn run` on ONNX models (tests/onnx_check.py) against ONNX Runtime,
# on /cpu:0 and on the default device. Needs a Python with numpy, onnx and
# onnxruntime (PyTorch too for the exported models): $PYTHON_ONNX, else
# the configure-time $PYTHON_TORCH. Exit 77 (skip) without one, or when
# this polydnn was built without ONNX import.
py=${PYTHON_ONNX:-$PYTHON_TORCH}
if [ -z "$py" ] || ! "$py" -c 'import numpy, onnx, onnxruntime' >/dev/null 2>&1; then
    echo "SKIP: no Python with numpy, onnx and onnxruntime (set PYTHON_ONNX; see README 'Running ONNX models')"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
if "$POLYDNN_TOOL" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    echo "SKIP: this polydnn was built without ONNX import"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
status=0
"$py" "$PDNN_TOP_SRCDIR/tests/onnx_check.py" "$POLYDNN_TOOL" --device=/cpu:0 || status=1
"$py" "$PDNN_TOP_SRCDIR/tests/onnx_check.py" "$POLYDNN_TOOL" || status=1
exit $status
