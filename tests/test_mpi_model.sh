#!/bin/sh
# polydnn train --model --distributed mpi (tests/mpi_model_check.py): 2
# ranks against one process, batch norm's statistics, a /cpu:0 rank with
# a default-device rank, ranks that disagree. Needs mpirun, ONNX import
# and a Python with numpy and onnx ($PYTHON_ONNX, else $PYTHON_TORCH);
# skips (77) without them.
set -u
B=${PDNN_TOP_BUILDDIR:-.}
S=${PDNN_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
skip() { echo "SKIP: $*"; echo "0 passed, 0 failed, 1 skipped"; exit 77; }
if [ ! -x "$B/tests/mpi_api" ] || [ -z "$MPIRUN" ]; then
    skip "polydnn was built without MPI (or mpirun is missing)"
fi
P=${POLYDNN_TOOL:-$B/polydnn}
. "$S/tests/mpi_env.sh"
if "$P" run /dev/null 2>&1 | grep -q 'built without ONNX import'; then
    skip "this polydnn was built without ONNX import"
fi
py=
for p in "${PYTHON_ONNX:-}" "${PYTHON_TORCH:-}"; do
    if [ -n "$p" ] && "$p" -c 'import numpy, onnx' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || skip "no Python with numpy and onnx (set PYTHON_ONNX)"
exec "$py" "$S/tests/mpi_model_check.py" "$P" "$MPIRUN --oversubscribe"
