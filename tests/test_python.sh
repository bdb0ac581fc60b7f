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
if [ "$PDNN_SANITIZERS" = yes ]; then
    # A sanitizer build's library loads into Python only after ASan's
    # runtime, which must be first in the process: preload the one it
    # links, with libstdc++ so that ASan finds __cxa_throw (PyTorch throws
    # C++ exceptions). Python's own memory lives until exit, so leak
    # detection is off; the tests count polydnn's memory through its stats.
    asan=$(ldd "$POLYDNN_LIBRARY" 2>/dev/null | awk '/libasan/ { print $3; exit }')
    stdcxx=$(ldd "$POLYDNN_LIBRARY" 2>/dev/null | awk '/libstdc\+\+/ { print $3; exit }')
    if [ ! -f "$asan" ]; then
        echo "SKIP: sanitizer build, but ldd finds no libasan for $POLYDNN_LIBRARY to preload"
        echo "0 passed, 0 failed, 1 skipped"
        exit 77
    fi
    LD_PRELOAD="$asan${stdcxx:+ $stdcxx}${LD_PRELOAD:+ $LD_PRELOAD}"
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    export LD_PRELOAD ASAN_OPTIONS
fi
exec "$PYTHON_TORCH" "$PDNN_TOP_SRCDIR/tests/test_python.py" -v "$@"
