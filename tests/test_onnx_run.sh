#!/bin/sh
# `polydnn run` on ONNX models (tests/onnx_check.py) against ONNX Runtime,
# on /cpu:0 and on the default device. Needs a Python with numpy, onnx and
# onnxruntime (PyTorch too for the exported models): $PYTHON_ONNX, else
# the configure-time $PYTHON_TORCH. Exit 77 (skip) without one, or when
# this polydnn was built without ONNX import.
if "$POLYDNN_TOOL" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    echo "SKIP: this polydnn was built without ONNX import"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
# The tool's own errors, which need no Python: a usage error (exit 2) and
# a file that is not ONNX (exit 1, saying so).
fail() { echo "FAIL: $*"; exit 1; }
"$POLYDNN_TOOL" run >/dev/null 2>&1; [ $? -eq 2 ] || fail "polydnn run without a model is not a usage error"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
printf 'not a model' >"$tmp/bad.onnx"
out=$("$POLYDNN_TOOL" run "$tmp/bad.onnx" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a garbage model exited $rc"
echo "$out" | grep -q 'is not a valid ONNX model' || fail "a garbage model said: $out"
out=$("$POLYDNN_TOOL" run "$tmp/none.onnx" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "$tmp/none.onnx" || fail "a missing model ($rc): $out"
# A FIFO as the model is refused at once, never waited on.
mkfifo "$tmp/fifo.onnx" || exit 1
out=$(timeout 60 "$POLYDNN_TOOL" run "$tmp/fifo.onnx" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "fifo.onnx: it is a FIFO, not a regular file" || fail "a FIFO model ($rc): $out"

py=${PYTHON_ONNX:-$PYTHON_TORCH}
if [ -z "$py" ] || ! "$py" -c 'import numpy, onnx, onnxruntime' >/dev/null 2>&1; then
    echo "SKIP: no Python with numpy, onnx and onnxruntime (set PYTHON_ONNX; see docs/onnx.md)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
# LSan's tracer crashes now and then at the exit of runs that ran CLBlast
# on PoCL (tests/test_cli.sh): in sanitizer builds the default-device pass
# (where Gemm and MatMul may run CLBlast's SGEMM, if a tuning search
# measured it fastest) keeps ASan but not LSan; the /cpu:0 pass keeps both.
lsan_off=
[ "${PDNN_SANITIZERS:-no}" = yes ] && lsan_off="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# The Python module's load_onnx runs each model too, except in a sanitizer
# build, whose library loads into Python only with ASan preloaded
# (test_python.sh covers the module there).
pyarg=
if [ "${PDNN_SANITIZERS:-no}" != yes ]; then
    POLYDNN_LIBRARY="$PDNN_TOP_BUILDDIR/.libs/libpolydnn.so.1"
    PYTHONPATH="$PDNN_TOP_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
    export POLYDNN_LIBRARY PYTHONPATH
    pyarg=--python
fi
# The torchvision models run once, in the default build, not again under
# the sanitizers (their plain-C /cpu:0 pass is the slow part).
status=0
"$py" "$PDNN_TOP_SRCDIR/tests/onnx_check.py" "$POLYDNN_TOOL" --device=/cpu:0 $pyarg || status=1
env $lsan_off "$py" "$PDNN_TOP_SRCDIR/tests/onnx_check.py" "$POLYDNN_TOOL" $pyarg || status=1
# One small family of make check-zoo's (MobileNetV3: hard sigmoid, hard
# swish and squeeze-and-excitation), outside sanitizer builds; 77 is no
# torchvision.
if [ "${PDNN_SANITIZERS:-no}" != yes ]; then
    "$py" "$PDNN_TOP_SRCDIR/tests/zoo_check.py" "$POLYDNN_TOOL" --family=MobileNetV3
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
fi
exit $status
