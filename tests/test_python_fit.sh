#!/bin/sh
# Python training of a user's model (tests/test_python_fit.py): fit against
# train_step, polydnn.torch.fit against torch.optim, NHWC against NCHW.
# Needs what test_onnx_train.sh needs (numpy, torch, onnx, onnxruntime) and
# skips as it does.
PDNN_ONNX_PY=test_python_fit.py exec sh "$PDNN_TOP_SRCDIR/tests/test_onnx_train.sh" "$@"
