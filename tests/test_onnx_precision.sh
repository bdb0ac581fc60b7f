#!/bin/sh
# float16 ONNX models and polydnn run --precision against ONNX Runtime
# (tests/onnx_precision.py). Exit 77 (skip) without a Python with numpy,
# onnx, onnxruntime and torchvision, or without ONNX import.
if "$POLYDNN_TOOL" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    echo "SKIP: this polydnn was built without ONNX import"
    exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
out=$("$POLYDNN_TOOL" run /dev/null --precision fp8 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "expected fp32, fp16 or bf16, got 'fp8'" || fail "--precision fp8 ($rc): $out"
py=${PYTHON_ONNX:-$PYTHON_TORCH}
if [ -z "$py" ] || ! "$py" -c 'import numpy, onnx, onnxruntime, torchvision' >/dev/null 2>&1; then
    echo "SKIP: no Python with numpy, onnx, onnxruntime and torchvision (set PYTHON_ONNX)"
    exit 77
fi
exec "$py" "$(dirname "$0")/onnx_precision.py" "$POLYDNN_TOOL"
