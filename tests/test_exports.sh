#!/bin/sh
# libpolydnn.so exports only the public API: every defined dynamic symbol
# starts with pdnn_ or PDNN_. Internal pdnn__ functions and test hooks are
# hidden (-fvisibility=hidden; PDNN_API in polydnn.h marks what is public),
# so programs cannot come to depend on them. No DLPack name is exported:
# polydnn_dlpack.h declares DLPack's structs and enums, which have no
# symbols, and only pdnn_ functions.
#
# Usage: tests/test_exports.sh [path/to/libpolydnn.so]; under `make check`
# the library just built. .ci/run runs it too.
lib=${1:-${PDNN_TOP_BUILDDIR:-.}/.libs/libpolydnn.so}
if [ ! -f "$lib" ]; then
    echo "SKIP: $lib does not exist (configured with --disable-shared?)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
if ! command -v nm >/dev/null 2>&1; then
    echo "SKIP: nm (binutils) is not installed"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
# Symbol names are the last field; versioned ones (name@VERSION) are not
# expected, but strip the version so they are judged by their name.
syms=$(nm -D --defined-only "$lib" | awk '{ sub(/@.*/, "", $NF); print $NF }') || {
    echo "FAIL: nm -D could not read $lib"
    echo "0 passed, 1 failed"
    exit 1
}
total=$(printf '%s\n' "$syms" | grep -c .)
bad=$(printf '%s\n' "$syms" | grep -v -E '^(pdnn_|PDNN_)' | grep . || true)
internal=$(printf '%s\n' "$syms" | grep -E '^pdnn__' || true)
if [ -n "$bad$internal" ]; then
    echo "FAIL: $lib exports symbols outside the public API:"
    printf '%s\n' "$bad" "$internal" | grep . | sed 's/^/  /'
    echo "Internal code is hidden when it is built as part of libpolydnn_internal.la"
    echo "(compiled with -fvisibility=hidden, no PDNN_API); public API is declared in"
    echo "src/polydnn.h or src/polydnn_dlpack.h with PDNN_API."
    echo "0 passed, 1 failed"
    exit 1
fi
# The other way round: every function the public headers declare is
# exported. A declaration that lacks PDNN_API compiles and links inside the
# library, and is missing only for the programs that use it.
src=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
missing=
for h in "$src/src/polydnn.h" "$src/src/polydnn_dlpack.h"; do
    [ -f "$h" ] || continue
    for name in $(grep -E '^[A-Za-z_].*[^a-z0-9_]pdnn_[a-z0-9_]+\(' "$h" | grep -v -E '^(typedef|#)' |
                  sed -E 's/^.*[^a-z0-9_](pdnn_[a-z0-9_]+)\(.*$/\1/'); do
        printf '%s\n' "$syms" | grep -qx "$name" || missing="$missing $name"
    done
    undecorated=$(grep -n -E '^[A-Za-z_].*[^a-z0-9_]pdnn_[a-z0-9_]+\(' "$h" |
                  grep -v -E '^[0-9]+:(typedef|#|PDNN_API )' || true)
    if [ -n "$undecorated" ]; then
        echo "FAIL: declarations in $h without PDNN_API:"
        printf '%s\n' "$undecorated" | sed 's/^/  /'
        echo "0 passed, 1 failed"
        exit 1
    fi
done
if [ -n "$missing" ]; then
    echo "FAIL: declared in the public headers but not exported by $lib:$missing"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "PASS: $lib exports $total symbols, all pdnn_ or PDNN_, none internal (pdnn__)"
echo "1 passed, 0 failed"
