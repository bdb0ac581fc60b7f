#!/bin/sh
# Runs the command blocks of README.md and docs/*.md (tests/doc_blocks.py):
# in make check those not marked slow or skip; with --slow (make
# check-models) the slow ones. Each block runs alone, with the build's
# polydnn and the Python that has PyTorch first on PATH.
top=${PDNN_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ "$PDNN_SANITIZERS" = yes ]; then
    # The default build runs them; Python and cc cannot load a sanitizer
    # build's library without preloading its runtime.
    echo "SKIP: sanitizer build (the docs' blocks run in the default build)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
py=${PYTHON_TORCH:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
exec "$py" "$top/tests/doc_blocks.py" "$@" "$top/README.md" "$top"/docs/*.md
