#!/bin/sh
# Dynamic batch (tests/dynamic_batch_check.py): torchvision models exported
# with a symbolic batch, imported once and run at batches 1, 3 and 8 by
# load_onnx and `polydnn run --batches`, against ONNX Runtime. Needs a
# Python with numpy, onnx, onnxruntime, torch and torchvision ($PYTHON_ONNX,
# else the configure-time $PYTHON_TORCH); exit 77 (skip) without one, in a
# sanitizer build (the library loads into Python only with ASan
# preloaded), or without ONNX import.
if "$POLYDNN_TOOL" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    echo "SKIP: this polydnn was built without ONNX import"
    exit 77
fi
if [ "${PDNN_SANITIZERS:-no}" = yes ]; then
    echo "SKIP: a sanitizer build (test_python.sh covers the module there)"
    exit 77
fi
py=${PYTHON_ONNX:-$PYTHON_TORCH}
if [ -z "$py" ] || ! "$py" -c 'import numpy, onnx, onnxruntime, torch, torchvision' >/dev/null 2>&1; then
    echo "SKIP: no Python with numpy, onnx, onnxruntime, torch and torchvision (set PYTHON_ONNX)"
    exit 77
fi
POLYDNN_LIBRARY="$PDNN_TOP_BUILDDIR/.libs/libpolydnn.so.1"
PYTHONPATH="$PDNN_TOP_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
export POLYDNN_LIBRARY PYTHONPATH
exec "$py" "$PDNN_TOP_SRCDIR/tests/dynamic_batch_check.py" "$POLYDNN_TOOL"
