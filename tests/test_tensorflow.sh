#!/bin/sh
# TensorFlow and polydnn in one Python process, in every order: TensorFlow
# exports its own LLVM, and PoCL's (loaded later by the OpenCL ICD loader)
# crashed binding to it (SIGSEGV in llvm::cl::Option::addArgument) until
# the OpenCL backend loaded the ICDs with RTLD_DEEPBIND (opencl.c). Needs a
# Python with tensorflow ($PYTHON_TF, else python3): exit 77 (skip)
# without one, in a sanitizer build, or without an OpenCL device.
py=${PYTHON_TF:-python3}
if [ "$PDNN_SANITIZERS" = yes ]; then
    echo "SKIP: sanitizer build (libpolydnn needs ASan preloaded to load into Python)"
    exit 77
fi
if ! "$py" -c "import tensorflow" >/dev/null 2>&1; then
    echo "SKIP: $py cannot import tensorflow (set PYTHON_TF to a Python that can)"
    exit 77
fi
POLYDNN_LIBRARY="${PDNN_TOP_BUILDDIR:-.}/.libs/libpolydnn.so.1"
PYTHONPATH="${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/python${PYTHONPATH:+:$PYTHONPATH}"
# PoCL's own kernel cache off: the conv compiles its kernel with PoCL's
# LLVM in this process.
POCL_KERNEL_CACHE=0 TF_CPP_MIN_LOG_LEVEL=3
export POLYDNN_LIBRARY PYTHONPATH POCL_KERNEL_CACHE TF_CPP_MIN_LOG_LEVEL
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/run.py" <<'PY'
import sys
import numpy as np

def tf():
    import tensorflow as tf
    assert float(tf.reduce_sum(tf.ones((2, 2)))) == 4.0

def pd_import():
    import polydnn

def pd():
    import polydnn
    if not any(d.backend == "opencl" for d in polydnn.devices()):
        print("no OpenCL device")
        sys.exit(77)
    x = polydnn.from_dlpack(np.ones((1, 8, 6, 6), np.float32)).to("/gpu:0")
    w = polydnn.from_dlpack(np.ones((4, 8, 3, 3), np.float32), role="filter").to("/gpu:0")
    y = np.from_dlpack(polydnn.conv2d(x, w, padding=1).to("/cpu:0"))
    assert y.shape == (1, 4, 6, 6) and y[0, 0, 2, 2] == 72.0 and y[0, 0, 0, 0] == 32.0, y[0, 0]

for step in sys.argv[1].split(","):
    {"tf": tf, "pd_import": pd_import, "pd": pd}[step]()
print("ok")
PY
pass=0
fail=0
for order in tf,pd pd_import,tf,pd pd,tf; do
    "$py" "$tmp/run.py" "$order" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq 77 ]; then cat "$tmp/out"; echo "SKIP: no OpenCL device"; exit 77; fi
    if [ "$rc" -eq 0 ] && grep -q '^ok$' "$tmp/out"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $order (exit $rc)"; tail -n 20 "$tmp/out" | sed 's/^/    /'; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
