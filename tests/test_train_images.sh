#!/bin/sh
# polydnn train --model --images DIR: training on a folder of PNG and JPEG
# images (torchvision's ImageFolder layout), the labels' order checked
# through ONNX Runtime, and every kind of bad folder
# (tests/train_images_check.py). Needs a Python with numpy, onnx,
# onnxruntime and PIL: $PYTHON_ONNX, else $PYTHON_TORCH. Exit 77 (skip)
# without one, without ONNX import, or without libpng and libjpeg.
tool=${POLYDNN_TOOL:-./polydnn}
skip() { echo "SKIP: $*"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
if "$tool" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    skip "this polydnn was built without ONNX import"
fi
if ! grep -q '^#define PDNN_HAVE_PNG 1' "$PDNN_TOP_BUILDDIR/config.h" ||
    ! grep -q '^#define PDNN_HAVE_JPEG 1' "$PDNN_TOP_BUILDDIR/config.h"; then
    skip "this polydnn was built without libpng or libjpeg"
fi
py=
for p in "$PYTHON_ONNX" "$PYTHON_TORCH"; do
    if [ -n "$p" ] && "$p" -c 'import numpy, onnx, onnxruntime, PIL' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || skip "no Python with numpy, onnx, onnxruntime and PIL (set PYTHON_ONNX)"
exec "$py" "$PDNN_TOP_SRCDIR/tests/train_images_check.py" "$tool"
