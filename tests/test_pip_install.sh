#!/bin/sh
# pip install ./python into a fresh venv (offline: the interpreter's own
# setuptools, no dependencies fetched), then a short script with the
# installed package and the library just built (the venv runs the
# system pip, --system-site-packages, so no ensurepip is needed): the package is the one
# in the venv, its __version__ is configure's, and an op runs.
top=${PDNN_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${PDNN_TOP_BUILDDIR:-$top}
tool=${POLYDNN_TOOL:-$build/polydnn}
py=${PYTHON_TORCH:-python3}
if ! "$py" -c 'import venv, setuptools, numpy' >/dev/null 2>&1 || ! "$py" -m pip --version >/dev/null 2>&1; then
    echo "SKIP: $py lacks venv, pip, setuptools or numpy (python3-venv, python3-pip, python3-setuptools, python3-numpy)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
if [ "$PDNN_SANITIZERS" = yes ]; then
    echo "SKIP: sanitizer build (Python cannot load its library without preloading ASan; the default build runs this)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A copy: pip writes build/ and *.egg-info beside the sources, and a
# distcheck's source tree is read-only.
cp -R "$top/python" "$tmp/src" && rm -f "$tmp/src/polydnn/_build_config.py" || exit 1
"$py" -m venv --system-site-packages --without-pip "$tmp/venv" || { echo "FAIL: python3 -m venv"; exit 1; }
"$tmp/venv/bin/python" -m pip install -q --no-build-isolation --no-deps --no-index "$tmp/src" ||
    { echo "FAIL: pip install ./python"; echo "0 passed, 1 failed, 0 skipped"; exit 1; }
want=$("$tool" --version | awk '{ print $2 }')
cd "$tmp" && POLYDNN_LIBRARY="$build/.libs/libpolydnn.so.1" PYTHONPATH= "$tmp/venv/bin/python" - "$tmp/venv" "$want" <<'PY'
import sys, polydnn
assert polydnn.__file__.startswith(sys.argv[1]), "imported %s, not the venv's" % polydnn.__file__
assert polydnn.__version__ == sys.argv[2] == polydnn.version(), (polydnn.__version__, sys.argv[2], polydnn.version())
y = polydnn.max_pool2d(polydnn.from_dlpack(__import__("numpy").ones((1, 2, 4, 4), "float32")), 2)
assert y.shape == (1, 2, 2, 2) and float(y.numpy().sum()) == 8.0
PY
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed, 0 skipped" || echo "0 passed, 1 failed, 0 skipped"
exit $rc
