#!/bin/sh
# polydnn run on PNG and JPEG inputs (tests/run_image_check.py): the
# tensor fed to the network against numpy's and PIL's, labels and
# probabilities, every kind of bad file (each also under valgrind, where
# installed and outside sanitizer builds: no leak, no invalid access).
# Needs a Python with numpy, onnx and PIL (Debian: python3-onnx,
# python3-pil): $PYTHON_ONNX, else $PYTHON_TORCH, else python3. Exit 77
# (skip) without one, without ONNX import, or in a build without libpng
# or libjpeg (whose refusal it checks first).
tool=${POLYDNN_TOOL:-./polydnn}
skip() { echo "SKIP: $*"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
if "$tool" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    skip "this polydnn was built without ONNX import"
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A build without a library names it and its package (configure --without-png).
printf '\211PNG\r\n\032\n' >"$tmp/a.png"
printf '\377\330\377\340' >"$tmp/a.jpg"
for f in a.png:libpng-dev a.jpg:libjpeg62-turbo-dev; do
    out=$("$tool" run "$tmp/none.onnx" --input "$tmp/${f%%:*}" --input "$tmp/${f%%:*}" 2>&1)
    if echo "$out" | grep -q "built without"; then
        echo "$out" | grep -q "apt-get install ${f#*:}" || { echo "FAIL: the refusal does not name ${f#*:}: $out"; exit 1; }
        skip "this polydnn was built without ${f#*:} (its refusal checked)"
    fi
done
py=
for p in "$PYTHON_ONNX" "$PYTHON_TORCH" python3 /usr/bin/python3; do
    if [ -n "$p" ] && "$p" -c 'import numpy, onnx, PIL' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || skip "no Python with numpy, onnx and PIL (Debian: python3-onnx python3-pil)"
VALGRIND=
if [ "${PDNN_SANITIZERS:-no}" != yes ] && command -v valgrind >/dev/null 2>&1; then VALGRIND=valgrind; fi
export VALGRIND
"$py" "$PDNN_TOP_SRCDIR/tests/run_image_check.py" "$tool" "$tmp"
