# Sourced by the Python test scripts after POLYDNN_LIBRARY is set: in a
# sanitizer build (PDNN_SANITIZERS=yes), the library loads into Python only
# after ASan's runtime, which must be first in the process: preload the one
# it links, with libstdc++ so that ASan finds __cxa_throw (PyTorch throws
# C++ exceptions). Python's own memory lives until exit, so leak detection
# is off; the tests count polydnn's memory through its stats. Exits 77
# (SKIP) when ldd finds no libasan to preload.
if [ "$PDNN_SANITIZERS" = yes ]; then
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
