#!/bin/sh
# Runs the Python module's tests (tests/test_python.py) against the
# library just built, with an interpreter that has PyTorch. Exit 77 (skip)
# without one. Arguments (test classes, e.g. Lifetimes) go to unittest.
if [ -z "$PYTHON_TORCH" ]; then
    echo "SKIP: no Python with PyTorch was found at configure time (apt-get install python3-torch)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
POLYDNN_LIBRARY="$PDNN_TOP_BUILDDIR/.libs/libpolydnn.so.1"
PYTHONPATH="$PDNN_TOP_SRCDIR/python${PYTHONPATH:+:$PYTHONPATH}"
export POLYDNN_LIBRARY PYTHONPATH
. "$PDNN_TOP_SRCDIR/tests/python_asan.sh"
exec "$PYTHON_TORCH" "$PDNN_TOP_SRCDIR/tests/test_python.py" -v "$@"
