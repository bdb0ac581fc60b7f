#!/bin/bash
# One call on a lent GPU machine (run from the checkout's top, with .gpu/
# built by bench/gpu_bundle.sh and carried): finds NVIDIA's libraries there
# (cuDNN and cuBLAS from PyTorch's wheels or the toolkit; libnvidia-opencl
# gets an ICD file if none names it), then
#   probe   the card, the driver, polydnn devices on CUDA and on OpenCL;
#   tests   test_cuda alone, then the Criterion tests that run every device;
#   parity  the parity harness on CUDA and on NVIDIA's OpenCL, forward and grad;
#   onnx    tests/onnx_check.py on CUDA (and --models with ONNX_MODELS=1);
#   models  bench/gpu_models.py (polydnn on CUDA and OpenCL vs PyTorch);
#   bench   polydnn bench resnet50 on CUDA (cuDNN the peer) and OpenCL;
#   tune    polydnn tune resnet50 on NVIDIA's OpenCL, then its bench again.
# Logs go to $OUT (at most 8 files come back); a summary is printed last.
# Usage: bash bench/gpu_check.sh [steps...]   (default: all; T= seconds per job)
cd "$(dirname "$0")/.." || exit 1
O=${OUT:-/tmp/gpu-check}; mkdir -p "$O"
steps=" ${*:-probe tests parity onnx models bench tune} "
T=${T:-150}
t0=$(date +%s)
log() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
has() { [[ $steps == *" $1 "* ]]; }
NV=$(find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' -o -name 'libcudart.so.13' \) 2>/dev/null |
     grep -v "^/proc\|/\.debug/" | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export PDNN_NV_LIBS="$NV"
ocl=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | grep -v "^/proc" | head -1)
if [ -n "$ocl" ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    mkdir -p /etc/OpenCL/vendors && echo "$ocl" > /etc/OpenCL/vendors/nvidia.icd
fi
L="$PWD/.gpu/lib:$NV"
P=$PWD/.gpu/polydnn
run() { LD_LIBRARY_PATH="$L" "$@"; }
{ log "NVIDIA libraries: $NV; OpenCL driver: ${ocl:-none}"
  if has probe; then
      nvidia-smi; uname -r; head -2 /etc/os-release; nproc
      ls -la /etc/OpenCL/vendors 2>/dev/null
  fi
  run "$P" devices --verbose; POLYDNN_BACKEND=opencl run "$P" devices --verbose
  if has tests; then log "== test_cuda alone"; run timeout 60 .gpu/bin/test_cuda 2>&1 | grep -v "^\[RUN\|^\[PASS"; fi
} > "$O/env.txt" 2>&1
tail -n 20 "$O/env.txt"
# Correctness jobs in parallel: each process takes GPU memory, so the
# tests' contexts grow on demand (th_context) and none reserves the card.
if has tests; then
    ( for t in test_conv test_ops test_pool test_bn test_grad test_train test_memory test_tuning; do
          log "== $t"; run timeout "$T" .gpu/bin/$t -j4 2>&1 | grep -v "^\[RUN\|^\[PASS" | tail -n 30
      done > "$O/tests.txt" 2>&1 ) &
fi
if has parity; then
    ( log "== parity cuda"; run timeout "$T" .gpu/bin/parity --backend cuda
      log "== grad cuda"; run timeout "$T" .gpu/bin/parity --mode grad --backend cuda
      export POLYDNN_BACKEND=opencl
      log "== parity opencl"; run timeout "$T" .gpu/bin/parity --backend opencl
      log "== grad opencl"; run timeout "$T" .gpu/bin/parity --mode grad --backend opencl
      log end ) > "$O/parity.txt" 2>&1 &
fi
if has onnx; then
    ( log "== onnx cuda"; PYTHONUNBUFFERED=1 timeout "$T" python3 tests/onnx_check.py "$P" --device=/gpu:0
      if [ -n "${ONNX_MODELS:-}" ]; then
          log "== onnx models cuda"; PYTHONUNBUFFERED=1 timeout "$T" python3 tests/onnx_check.py "$P" --device=/gpu:0 --models
      fi
      log end ) > "$O/onnx.txt" 2>&1 &
fi
wait
log "correctness jobs done"
for f in tests parity onnx; do
    [ -f "$O/$f.txt" ] || continue
    echo "## $f"
    grep -aE "==|Synthesis|FAIL|rror|rash|cases ran|^[0-9]+ passed|no device|SKIP| [1-9][0-9]* failed" "$O/$f.txt" |
        tail -n 25
done
if has models; then
    PYTHONUNBUFFERED=1 timeout "${TM:-150}" python3 bench/gpu_models.py "$P" "${MODELS:-resnet50,resnet18,mobilenet_v2}" \
        > "$O/models.txt" 2>&1
    grep "^|" "$O/models.txt"
fi
if has bench; then
    { log "== bench cuda"; run timeout 60 "$P" bench resnet50 --batch 32 --device /gpu:0
      log "== bench opencl"; POLYDNN_BACKEND=opencl run timeout 90 "$P" bench resnet50 --batch 32 --device /gpu:0
    } > "$O/bench.txt" 2>&1
    grep -aE "==|Geometric|Measured peak|rror" "$O/bench.txt"
fi
if has tune; then
    { log "== tune opencl"; POLYDNN_BACKEND=opencl run timeout 70 "$P" tune resnet50 --batch 32 --layout nchw --device /gpu:0
      log "== bench opencl after tune"; POLYDNN_BACKEND=opencl run timeout 45 "$P" bench resnet50 --batch 32 --device /gpu:0 --no-peak
    } > "$O/tune.txt" 2>&1
    grep -aE "==|Geometric" "$O/tune.txt"
fi
log done
