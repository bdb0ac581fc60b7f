#!/bin/sh
# TensorFlow and polydnn in one Python process, in every order: TensorFlow
# exports its own LLVM, and PoCL's (loaded later by the OpenCL ICD loader)
# crashed binding to it (SIGSEGV in llvm::cl::Option::addArgument) until
# the OpenCL backend loaded the ICDs with RTLD_DEEPBIND (opencl.c). And
# issue 47's sequence: TensorFlow's convolutions and pooling first, then
# depthwise kernels built from source (PoCL's compiler once refused its own
# CPU there; cl_common.c names the cause and the order that works). Needs a
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
# PoCL's own kernel cache and polydnn's program cache off: every kernel is
# compiled with PoCL's LLVM in this process.
POCL_KERNEL_CACHE=0 POLYDNN_PROGRAM_CACHE=off TF_CPP_MIN_LOG_LEVEL=3
export POLYDNN_LIBRARY PYTHONPATH POCL_KERNEL_CACHE POLYDNN_PROGRAM_CACHE TF_CPP_MIN_LOG_LEVEL
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

def tf_convs():
    # Issue 47's sequence: TensorFlow runs about 40 convolution and pooling
    # cases (dilated depthwise, SAME and VALID) before polydnn is imported;
    # then PoCL's compiler built depthwise kernels and failed ("unknown
    # target CPU 'skylake-avx512'").
    import tensorflow as tf
    rng = np.random.default_rng(0)
    for pad in ("SAME", "VALID"):
        for k in (1, 3, 5):
            for d in (1, 2):
                x = tf.constant(rng.standard_normal((2, 13, 11, 8)).astype(np.float32))
                tf.nn.conv2d(x, tf.constant(rng.standard_normal((k, k, 8, 4)).astype(np.float32)), 1, pad,
                             dilations=d).numpy()
                tf.nn.depthwise_conv2d(x, tf.constant(rng.standard_normal((k, k, 8, 2)).astype(np.float32)),
                                       [1, 1, 1, 1], pad, dilations=[d, d]).numpy()
            tf.nn.max_pool2d(x, 3, 2, pad).numpy()
            tf.nn.avg_pool2d(x, 2, 1, pad).numpy()

def pd_depthwise():
    # The filter sizes whose builds failed, NCHW on /gpu:0, each built from
    # source here (PoCL's and polydnn's caches are off), against NumPy.
    import polydnn
    rng = np.random.default_rng(1)
    for r, s, c in ((6, 5, 16), (3, 4, 8), (1, 7, 8), (3, 4, 16)):
        xa = rng.standard_normal((2, c, 15, 14)).astype(np.float32)
        wa = rng.standard_normal((c, 1, r, s)).astype(np.float32)
        x = polydnn.from_dlpack(xa).to("/gpu:0")
        w = polydnn.from_dlpack(wa, role="filter").to("/gpu:0")
        y = np.from_dlpack(polydnn.conv2d(x, w, groups=c).to("/cpu:0"))
        ref = np.zeros((2, c, 15 - r + 1, 14 - s + 1), np.float64)
        for i in range(r):
            for j in range(s):
                ref += xa[:, :, i:i + ref.shape[2], j:j + ref.shape[3]] * wa[None, :, 0, i, j, None, None]
        assert np.abs(y - ref).max() < 1e-4 * (1 + np.abs(ref).max()), (r, s, c)

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
    {"tf": tf, "pd_import": pd_import, "pd": pd, "tf_convs": tf_convs, "pd_depthwise": pd_depthwise}[step]()
print("ok")
PY
pass=0
fail=0
for order in tf,pd pd_import,tf,pd pd,tf tf_convs,pd_depthwise; do
    "$py" "$tmp/run.py" "$order" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq 77 ]; then cat "$tmp/out"; echo "SKIP: no OpenCL device"; exit 77; fi
    if [ "$rc" -eq 0 ] && grep -q '^ok$' "$tmp/out"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $order (exit $rc)"; tail -n 20 "$tmp/out" | sed 's/^/    /'; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
