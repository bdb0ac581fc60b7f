#!/bin/bash
# One call on a lent GPU machine (run from the checkout's top, with .gpu/
# built by bench/gpu_bundle.sh and carried): finds NVIDIA's libraries there
# (cuDNN and cuBLAS from PyTorch's wheels or the toolkit; libnvidia-opencl
# gets an ICD file if none names it), then
#   probe   the card, the driver, polydnn devices on CUDA and on OpenCL;
#   tests   test_cuda alone, then the Criterion tests that run every device;
#   parity  the parity harness on CUDA and on NVIDIA's OpenCL, forward and grad;
#   onnx    tests/onnx_check.py on CUDA (and --models with ONNX_MODELS=1, alone
#           with ONNX_MODELS=only);
#   models  bench/gpu_models.py (polydnn on CUDA and OpenCL vs PyTorch);
#   bench   polydnn bench resnet50 on CUDA (cuDNN the peer) and OpenCL;
#   tune    polydnn tune resnet50 on NVIDIA's OpenCL, then its bench again;
#   bwd     backward convolution on CUDA and NVIDIA's OpenCL (bench_conv_bwd,
#           ResNet-50 at batch 32; not in the default);
#   wino    winograd's parity grid on NVIDIA's OpenCL, and its time beside
#           implicit_gemm and tiled on 3x3 layers there (not in the default);
#   profile the time of one small convolution call on CUDA and OpenCL, and
#           polydnn run --profile of ResNet-50 and GoogLeNet at batch 1 on
#           CUDA (not in the default);
#   pool    max pooling (ResNet-50's first, batch 32) on CUDA and OpenCL in
#           both layouts, GB/s beside the copy bandwidth (bench --peak);
#   lowp    float16 and bfloat16 on CUDA (issue 43: cuDNN and cuBLAS GemmEx
#           paths written without a GPU, first run here): the parity
#           harness's precision set and the conv2d and matmul grids in both
#           dtypes, test_precision, the Python TorchPrecision class (every
#           device, CUDA included; needs bench/gpu_bundle.sh's shared
#           library), then ResNet-50 at batch 32 under --precision fp16 and
#           bf16 against fp32 on CUDA, and the float32 run again with TF32
#           allowed (TensorFlow's default). About 240 s (an estimate: never
#           run yet; its timeouts add up to 780 s), so not in the
#           default: 90 (parity) + 30 (test_precision) + 60 (Python) + 60
#           (four runs of ResNet-50).
# `gpu41` (alone) is issue 41's whole measurement in one call of under
# 10 minutes, every job under its own timeout and the rest skipped once
# BUDGET seconds (default 540) are spent: ResNet-50's forward on CUDA and
# OpenCL in both layouts; polydnn tune resnet50 --backward in both layouts
# (forward and the backward's inner shapes tuned and stored) and the
# forward bench again; backward data and filter against cuDNN in both
# layouts (OpenCL with the tuned cache); pooling; depthwise_wg against the
# CPU-class depthwise and cuDNN (MobileNetV2's layers); and the five
# networks at batch 32 against PyTorch, last. About 45 + 160 + 210 + 50 +
# 60 + 150 s.
# It needs no network: the models are torchvision's with random weights.
# Logs go to $OUT (at most 8 files come back); a summary is printed last.
# Usage: bash bench/gpu_check.sh [steps...]   (default: the first seven; T= seconds
# per job; GTESTS= the Criterion tests; PARITY=cuda skips OpenCL's harness;
# NV_ONLY=1 hides PoCL from OpenCL)
cd "$(dirname "$0")/.." || exit 1
# float32 held to float32 references, as make check does: no TF32 on CUDA
# (the library's default, TensorFlow's, allows it; the bench steps say
# where they turn it on).
export POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION=${POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION:-false}
O=${OUT:-/tmp/gpu-check}; mkdir -p "$O"
steps=" ${*:-probe tests parity onnx models bench tune} "
if [[ $steps == " gpu41 " ]]; then
    # In this order, models last (the script runs models41 at its end).
    steps=" probe bench tune41 bwd pool dw models41 "
    export MODELS=${MODELS:-resnet50,resnet18,googlenet,vgg16,mobilenet_v2} BATCHES=${BATCHES:-32}
    export TM=${TM:-150} TB=${TB:-45} TBWD=${TBWD:-45} BENCH_OPENCL=0 NV_ONLY=${NV_ONLY:-1}
fi
BUDGET=${BUDGET:-100000}
[[ $steps == *" tune41 "* ]] && BUDGET=${BUDGET_GPU41:-540}
T=${T:-150}
t0=$(date +%s)
log() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
# A step runs when asked for and while the budget lasts.
has() {
    [[ $steps == *" $1 "* ]] || return 1
    if (( $(date +%s) - t0 > BUDGET )); then echo "[budget] $1 skipped: ${BUDGET} s spent" >&2; return 1; fi
}
NV=$(find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' -o -name 'libcudart.so.13' \) 2>/dev/null |
     grep -v "^/proc\|/\.debug/" | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export PDNN_NV_LIBS="$NV"
ocl=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | grep -v "^/proc" | head -1)
if [ -n "$ocl" ] && ! grep -qs nvidia /etc/OpenCL/vendors/*.icd; then
    mkdir -p /etc/OpenCL/vendors && echo "$ocl" > /etc/OpenCL/vendors/nvidia.icd
fi
# NV_ONLY=1: OpenCL sees NVIDIA's driver alone, so the OpenCL jobs skip
# the image's PoCL CPU device (most of their time there).
if [ -n "${NV_ONLY:-}" ]; then
    icd=$(grep -ls nvidia /etc/OpenCL/vendors/*.icd | head -1)
    if [ -n "$icd" ]; then
        mkdir -p /tmp/nv-icd && cp "$icd" /tmp/nv-icd/ && export OCL_ICD_VENDORS=/tmp/nv-icd
    fi
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
    ( for t in ${GTESTS:-test_conv test_ops test_pool test_bn test_grad test_train test_memory test_tuning}; do
          log "== $t"; run timeout "$T" .gpu/bin/$t -j4 2>&1 | grep -v "^\[RUN\|^\[PASS" | tail -n 30
      done > "$O/tests.txt" 2>&1 ) &
fi
if has parity; then
    ( log "== parity cuda"; run timeout "$T" .gpu/bin/parity --backend cuda
      log "== grad cuda"; run timeout "$T" .gpu/bin/parity --mode grad --backend cuda
      if [ "${PARITY:-}" != cuda ]; then
          export POLYDNN_BACKEND=opencl
          log "== parity opencl"; run timeout "$T" .gpu/bin/parity --backend opencl
          log "== grad opencl"; run timeout "$T" .gpu/bin/parity --mode grad --backend opencl
      fi
      log end ) > "$O/parity.txt" 2>&1 &
fi
if has onnx; then
    ( if [ "${ONNX_MODELS:-}" != only ]; then
          log "== onnx cuda"; PYTHONUNBUFFERED=1 timeout "$T" python3 tests/onnx_check.py "$P" --device=/gpu:0
      fi
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
models_job() {
    PYTHONUNBUFFERED=1 timeout "${TM:-150}" python3 bench/gpu_models.py "$P" "${MODELS:-resnet50,resnet18,mobilenet_v2}" \
        > "$O/models.txt" 2>&1
    grep "^|" "$O/models.txt"
}
if has models; then models_job; fi
if has bench; then
    # BENCH_OPENCL=0 (gpu41): CUDA only; tune41 benches OpenCL tuned.
    { log "== bench cuda"; run timeout "${TB:-60}" "$P" bench resnet50 --batch 32 --device /gpu:0
      if [ "${BENCH_OPENCL:-1}" != 0 ]; then
          log "== bench opencl"; POLYDNN_BACKEND=opencl run timeout 90 "$P" bench resnet50 --batch 32 --device /gpu:0
      fi
    } > "$O/bench.txt" 2>&1
    grep -aE "==|Geometric|Measured peak|rror" "$O/bench.txt"
fi
if has tune; then
    { log "== tune opencl"; POLYDNN_BACKEND=opencl run timeout 70 "$P" tune resnet50 --batch 32 --layout nchw --device /gpu:0
      log "== bench opencl after tune"; POLYDNN_BACKEND=opencl run timeout 45 "$P" bench resnet50 --batch 32 --device /gpu:0 --no-peak
    } > "$O/tune.txt" 2>&1
    grep -aE "==|Geometric" "$O/tune.txt"
fi
if has tune41; then
    # Both layouts, the backward's inner shapes too (polydnn tune
    # --backward), then the forward bench with the tuned cache.
    { for l in nchw nhwc; do
          log "== tune opencl $l --backward"
          POLYDNN_BACKEND=opencl run timeout 75 "$P" tune resnet50 --batch 32 --layout $l --backward --device /gpu:0
      done
      log "== bench opencl after tune"; POLYDNN_BACKEND=opencl run timeout 45 "$P" bench resnet50 --batch 32 --device /gpu:0 --no-peak
    } > "$O/tune.txt" 2>&1
    grep -aE "==|Geometric|\| (data|filter) \|" "$O/tune.txt" | tail -n 40
fi
if has wino; then
    { log "== winograd parity, opencl"
      POLYDNN_BACKEND=opencl run timeout 90 .gpu/bin/parity --backend opencl --op conv2d --algo winograd
      for shape in "-n 1 -c 64 -H 56 -W 56 -k 64" "-n 32 -c 64 -H 56 -W 56 -k 64" \
                   "-n 32 -c 256 -H 14 -W 14 -k 256" "-n 8 -c 128 -H 28 -W 28 -k 128"; do
          for layout in NCHW NHWC; do
              for a in winograd implicit_gemm tiled; do
                  printf '%s %s %-14s ' "$shape" "$layout" "$a"
                  POLYDNN_BACKEND=opencl run timeout 30 "$P" conv $shape -p 1 -q 1 --layout "$layout" \
                      --device /gpu:0 --algo "$a" --iters 20 2>&1 | grep -aE "GFLOP|rror" | tr '\n' ' '
                  echo
              done
          done
      done
    } > "$O/wino.txt" 2>&1
    grep -aE "==|passed|failed|GFLOP|rror" "$O/wino.txt" | tail -n 30
fi
if has bwd; then
    # Backward convolution, cuDNN against NVIDIA's OpenCL (wg_gemm inside
    # the backward-as-forward algorithms), ResNet-50 at batch 32.
    { for l in NCHW NHWC; do
          log "== bwd cuda $l"; BENCH_NO_IM2COL=1 POLYDNN_BACKEND=cuda run timeout "${TBWD:-50}" .gpu/bin/bench_conv_bwd 32 3 /gpu:0 $l
          log "== bwd opencl $l"; BENCH_NO_IM2COL=1 POLYDNN_BACKEND=opencl run timeout 60 .gpu/bin/bench_conv_bwd 32 3 /gpu:0 $l
      done
    } > "$O/bwd.txt" 2>&1
    grep -aE "==|eometric|rror" "$O/bwd.txt"
fi
if has pool; then
    # ResNet-50's first max pool at batch 32 (128.5 MB read and written);
    # the copy bandwidth from bench --peak beside it.
    { for be in cuda opencl; do
          log "== peak $be"; POLYDNN_BACKEND=$be run timeout 30 "$P" bench --peak --device /gpu:0
          for l in NCHW NHWC; do
              printf '%s %s ' "$be" "$l"
              POLYDNN_BACKEND=$be run timeout 20 "$P" pool -n 32 -c 64 -H 112 -W 112 -y 3 -x 3 -p 1 -q 1 \
                  --layout $l --device /gpu:0 --iters 20 2>&1 | grep -aE "GB/s|rror"
          done
      done
    } > "$O/pool.txt" 2>&1
    grep -aE "==|GB/s|rror" "$O/pool.txt"
fi
if has dw; then
    # depthwise_wg (the GPU-class depthwise convolution) against the CPU-class
    # depthwise kernels and cuDNN: MobileNetV2's 3x3 depthwise layers at batch 32.
    { for shape in "-c 144 -H 56 -W 56" "-c 144 -H 56 -W 56 -u 2 -v 2" "-c 576 -H 14 -W 14" "-c 960 -H 7 -W 7"; do
          c=${shape#-c }; c=${c%% *}
          for l in NCHW NHWC; do
              for a in opencl:depthwise_wg opencl:depthwise cuda:auto; do
                  printf '%s %s %-22s ' "$shape" "$l" "$a"
                  POLYDNN_BACKEND=${a%%:*} run timeout 20 "$P" conv -n 32 $shape -k "$c" -g "$c" -p 1 -q 1 --bias \
                      --relu --layout "$l" --device /gpu:0 --algo "${a#*:}" --iters 20 2>&1 | grep -aE "GFLOP|rror" |
                      tr '\n' ' '
                  echo
              done
          done
      done
    } > "$O/dw.txt" 2>&1
    grep -aE "GFLOP|rror" "$O/dw.txt" | tail -n 30
fi
if has profile; then
    { log "== profile on CUDA, batch 1"
      python3 -c "import sys; sys.path.insert(0, 'tests'); import torch_weights as t
for m in ('resnet50', 'googlenet'): t.export_onnx(t.torchvision_model(m), '/tmp/%s.onnx' % m, 224)"
      # The cost of one call where the GPU's work is tiny: the host's.
      for be in cuda opencl; do
          for f in "" "--bias --relu"; do
              printf '%s %-14s ' "$be" "${f:-plain}"
              POLYDNN_BACKEND=$be run timeout 30 "$P" conv -n 1 -c 64 -H 7 -W 7 -k 64 -p 1 -q 1 $f \
                  --device /gpu:0 --iters 1000 2>&1 | grep -aE "GFLOP|rror"
          done
      done
      for m in resnet50 googlenet; do
          log "== $m"
          run timeout 60 "$P" run /tmp/$m.onnx --device /gpu:0 --iters 20 --warmup 3 --profile
      done
    } > "$O/profile.txt" 2>&1
    grep -aE "==|time per run|rror|GFLOP" "$O/profile.txt"
fi
if has lowp; then
    { log "== parity cuda: precision set"; run timeout 90 .gpu/bin/parity --backend cuda --set precision
      for dt in float16 bfloat16; do
          for set in layouts edge; do
              log "== parity cuda conv2d $dt $set"
              run timeout 60 .gpu/bin/parity --backend cuda --op conv2d --dtype $dt --set $set
          done
          log "== parity cuda matmul $dt"; run timeout 30 .gpu/bin/parity --backend cuda --op matmul --dtype $dt --set nd_matmul
      done
      log "== test_precision"; run timeout 60 .gpu/bin/test_precision 2>&1 | grep -v "^\[RUN\|^\[PASS"
      if [ -f .gpu/lib/libpolydnn.so ]; then
          log "== TorchPrecision (python)"
          POLYDNN_LIBRARY=$PWD/.gpu/lib/libpolydnn.so PYTHONPATH=$PWD/python:$PWD/tests run timeout 150 \
              python3 -m unittest -v test_python_precision.TorchPrecision 2>&1 | tail -n 30
      else
          log "== TorchPrecision skipped: .gpu/lib/libpolydnn.so is missing (bench/gpu_bundle.sh builds it)"
      fi
      python3 -c "import sys; sys.path.insert(0, 'tests'); import torch_weights as t
t.export_onnx(t.torchvision_model('resnet50'), '/tmp/resnet50.onnx', 224)"
      for pr in fp32 fp16 bf16; do
          log "== resnet50 batch 32 $pr cuda"
          run timeout 45 "$P" run /tmp/resnet50.onnx --batch 32 --precision $pr --device /gpu:0 --iters 20 --warmup 3
      done
      log "== resnet50 batch 32 fp32 cuda, TF32 allowed"
      POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION=true run timeout 45 "$P" run /tmp/resnet50.onnx --batch 32 \
          --precision fp32 --device /gpu:0 --iters 20 --warmup 3
    } > "$O/lowp.txt" 2>&1
    grep -aE "==|passed|failed|FAIL|rror|time per run|^OK|Ran " "$O/lowp.txt" | tail -n 60
fi
if has models41; then models_job; fi
log done
