#!/bin/sh
# Runs the polydnn tool as a user would: devices, conv and pool with
# verification on an accelerator and runs on the host, every layout, .npy
# files in and out, --help, and bad input that must fail with a message.
# POLYDNN_TOOL is the built tool (automake sets it).
tool=${POLYDNN_TOOL:-./polydnn}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

# run CMD...: CMD with its output in $tmp/out, run once more when (in the
# sanitizer build) LeakSanitizer's tracer itself crashed at exit, which
# says nothing of leaks (a leak reads "detected memory leaks"). The known
# cause, the __tls_get_addr interception of GCC 12's runtime misreading
# PoCL's dynamic TLS, is off in `make check` (intercept_tls_get_addr=0,
# Makefile.am), so this is a safety net that should not fire.
run() {
    "$@" >"$tmp/out" 2>&1; rc=$?
    if [ "${PDNN_SANITIZERS:-no}" = yes ] && grep -q 'LeakSanitizer has encountered a fatal error' "$tmp/out"; then
        echo "note: LeakSanitizer's tracer crashed; running once more: $*"
        "$@" >"$tmp/out" 2>&1; rc=$?
    fi
    return $rc
}
ok() { # ok NAME CMD...: CMD must exit 0
    name=$1; shift
    if run "$@"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $name (exit $?)"; sed 's/^/    /' "$tmp/out"; fi
}
bad() { # bad NAME CODE NEEDLE CMD...: CMD must exit CODE and print NEEDLE
    name=$1; code=$2; needle=$3; shift 3
    run "$@"; rc=$?
    if [ "$rc" -eq "$code" ] && grep -q -- "$needle" "$tmp/out"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $name (exit $rc, wanted $code and '$needle')"; sed 's/^/    /' "$tmp/out"; fi
}
has() { # has NAME NEEDLE: the last output contains NEEDLE
    if grep -q -- "$2" "$tmp/out"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: output lacks '$2'"; sed 's/^/    /' "$tmp/out"; fi
}

ok "devices" "$tool" devices
has "devices lists the host" "/job:localhost/replica:0/task:0/device:CPU:0 -> device: 0, backend: host"
ok "devices --verbose" "$tool" devices --verbose
has "verbose shows drivers" "driver:"
# --json: one object per device and line, the same devices as the text.
run "$tool" devices; sed -n 's|^/job:localhost/replica:0/task:0\(/device:[A-Z]*:[0-9]*\) -> .*|\1|p' "$tmp/out" >"$tmp/names"
ok "devices --json" "$tool" devices --json
cp "$tmp/out" "$tmp/json"
if command -v python3 >/dev/null 2>&1; then
    ok "devices --json: JSON Lines with the text's names" python3 -c '
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
names = open(sys.argv[2]).read().split()
assert [r["name"] for r in rows] == names and names, (rows, names)
assert all(r["type"] in ("CPU", "GPU") and r["memory_bytes"] > 0 for r in rows), rows' "$tmp/json" "$tmp/names"
fi
# One name for the batch size everywhere (-n, --batch); train keeps its
# older --batch-size. Each reaches the same value check before any work.
bad "train --batch 0" 2 "--batch must be at least 1" "$tool" train --batch 0
bad "train -n 0" 2 "-n must be at least 1" "$tool" train -n 0
bad "train --batch-size 0 (its older name)" 2 "--batch-size must be at least 1" "$tool" train --batch-size 0
bad "run -n 0" 2 "-n must be at least 1" "$tool" run "$tmp/none.onnx" -n 0
# -d is --device in every command that takes a device: each reaches the
# device lookup (naming the device; tune calls a missing one a usage
# error), not the flag parser ("unknown flag").
bad "conv -d" 1 "device '/gpu:9' does not exist" "$tool" conv -d /gpu:9 --iters 1
bad "pool -d" 1 "device '/gpu:9' does not exist" "$tool" pool -d /gpu:9 --iters 1
bad "bench conv -d" 1 "device '/gpu:9' does not exist" "$tool" bench conv -d /gpu:9 --iters 1
bad "tune conv -d" 2 "device '/gpu:9' does not exist" "$tool" tune conv -d /gpu:9 -c 4 -k 4 -H 8 -W 8
bad "train -d" 1 "explicitly assigned to /gpu:9" "$tool" train -d /gpu:9 --steps 1 --train-limit 64 --test-limit 64
bad "run-example -d" 1 "/gpu:9" "$tool" run-example cnn -d /gpu:9
for cmd in conv pool bench tune run train run-example; do
    ok "$cmd --help" "$tool" $cmd --help
    has "$cmd --help: -d is --device" "^  -d, --device V "
done
# One --seed default everywhere (1): two runs without --seed draw the same
# numbers; --seed time draws from the clock and prints the seed.
for cmd in conv pool; do
    ok "$cmd without --seed (1)" "$tool" $cmd -d /cpu:0 --iters 1 --output "$tmp/s1.npy"
    has "$cmd without --seed: seed 1, printed" "random inputs in \[-1, 1), seed 1$"
    ok "$cmd without --seed (2)" "$tool" $cmd -d /cpu:0 --iters 1 --output "$tmp/s2.npy"
    if cmp -s "$tmp/s1.npy" "$tmp/s2.npy"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $cmd: two runs without --seed differ"; fi
    ok "$cmd --seed time" "$tool" $cmd -d /cpu:0 --iters 1 --seed time --output "$tmp/s3.npy"
    seed=$(sed -n 's/^random inputs in \[-1, 1), seed \([0-9]*\)$/\1/p' "$tmp/out")
    ok "$cmd --seed $seed repeats --seed time's draw" "$tool" $cmd -d /cpu:0 --iters 1 --seed "$seed" --output "$tmp/s4.npy"
    if [ -n "$seed" ] && cmp -s "$tmp/s3.npy" "$tmp/s4.npy" && ! cmp -s "$tmp/s1.npy" "$tmp/s3.npy"; then
        pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $cmd --seed time: seed '$seed' not printed, or not its draw"; fi
    bad "$cmd --seed x" 2 "--seed takes a whole number from 0 to 2147483647, or time; got 'x'" "$tool" $cmd --seed x
done
bad "train --seed -1 (-v parsed as --verbose)" 2 "--seed takes a whole number" "$tool" train -v --seed -1
bad "train --seed time --distributed" 2 "every rank would draw its own seed" "$tool" train --seed time --distributed mpi
ok "POLYDNN_BACKEND=host keeps only the host" env POLYDNN_BACKEND=host "$tool" devices --verbose
has "host kept" "device:CPU:0 -> device: 0, backend: host"
has "opencl skipped" "opencl: skipped (POLYDNN_BACKEND)"
if grep -q "backend: opencl" "$tmp/out"; then fail=$((fail + 1)); echo "FAIL: POLYDNN_BACKEND=host still lists OpenCL"; else pass=$((pass + 1)); fi
ok "POLYDNN_BACKEND=opencl lists OpenCL" env POLYDNN_BACKEND=opencl "$tool" devices
has "opencl kept" "backend: opencl"
bad "unknown POLYDNN_BACKEND" 1 "POLYDNN_BACKEND='rocm,opencl': unknown backend 'rocm'" \
    env POLYDNN_BACKEND=rocm,opencl "$tool" devices
ok "--version" "$tool" --version
ok "--help" "$tool" --help

# --verify compares with the host reference (/device:CPU:0), so it checks
# parity only on another device: /gpu:0 (PoCL where there is no GPU). The
# same runs on the host itself exercise its path without --verify, which
# there would compare the reference with itself.
for dev in /gpu:0 /cpu:0; do
    verify=--verify
    [ "$dev" = /cpu:0 ] && verify=
    for layout in NCHW NHWC; do
        for fl in OIHW OHWI HWIO; do
            # shellcheck disable=SC2086
            ok "conv $layout/$fl $dev" "$tool" conv -n 2 -c 5 -H 9 -W 7 -k 6 -y 3 -x 2 -p 1 -q 0 -u 2 -v 1 \
                --layout $layout --filter-layout $fl --bias --relu --iters 1 --seed 3 --device $dev $verify
            if [ -n "$verify" ]; then has "conv verified on $dev" "verify against /device:CPU:0.*OK"
            else has "conv ran on the host" "device /device:CPU:0 (host,"; fi
        done
        # shellcheck disable=SC2086
        ok "depthwise $layout $dev" "$tool" conv -n 1 -c 6 -H 8 -W 8 -k 6 -g 6 -y 3 -x 3 --padding same \
            -l 2 -j 2 --layout $layout --iters 1 --device $dev $verify
        for mode in "--mode max" "--mode avg" "--mode avg --exclude-padding"; do
            # shellcheck disable=SC2086
            ok "pool $layout $mode $dev" "$tool" pool -n 3 -c 5 -H 9 -W 8 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 \
                --ceil-mode $mode --layout $layout --iters 1 --device $dev $verify
            if [ -n "$verify" ]; then has "pool verified on $dev" "verify against /device:CPU:0.*OK"
            else has "pool ran on the host" "device /device:CPU:0 (host,"; fi
        done
    done
done
for algo in direct im2col_gemm; do
    ok "conv --algo $algo" "$tool" conv -n 2 -c 7 -H 10 -W 9 -k 5 -p 1 -q 1 --layout NHWC --bias --relu --algo $algo --iters 1 --verify
    has "algorithm reported" "algorithm $algo"
done
# 1 MiB holds the tensors but not im2col's 1.3 MiB workspace: AUTO falls
# back to direct and says so in the debug log.
# The 1.1 MiB filter fits under 2 MiB, its packed copy (tiled) and
# im2col's columns do not: AUTO falls through to direct and says why.
ok "workspace fallback" env POLYDNN_MEMORY_LIMIT_MB=2 POLYDNN_DEBUG=1 "$tool" conv -c 64 -H 4 -W 4 -k 512 -p 1 -q 1 --iters 1 --verify
has "fallback logged" "tiled needs .* of workspace, which does not fit"
has "fallback ran direct" "algorithm direct"
bad "im2col on host" 1 "not available" "$tool" conv --algo im2col_gemm --device /cpu:0
bad "bad algo" 2 "--algo must be one of auto, direct, .*, got 'fft'" "$tool" conv --algo fft
bad "winograd on 5x5" 1 "winograd .* 3x3 filters only" "$tool" conv --algo winograd -y 5 -x 5
ok "winograd" "$tool" conv -n 3 -c 5 -H 9 -W 13 -k 20 -p 1 -q 1 --layout NHWC --filter-layout HWIO --bias --relu --algo winograd --verify
ok "tiled" "$tool" conv -n 3 -c 5 -H 9 -W 13 -k 20 -p 1 -q 1 --layout NHWC --filter-layout HWIO --bias --relu --algo tiled --verify
# --algo help: the registry's algorithms for the shape on the device, each
# with whether it applies and why not; the error for a bad name lists the
# same names.
ok "conv --algo help" "$tool" conv -c 8 -H 6 -W 6 -k 16 -y 1 -x 1 --algo help
has "algo help table" "^| algorithm | in opencl | applies | AUTO | workspace | tunable | configuration | why not"
has "algo help: direct applies" "^| direct | yes | yes | candidate, rank [0-9]* | 0 B | no | - | - |$"
has "algo help: depthwise says why not" "^| depthwise | yes | no | - | - | no | - | depthwise runs only depthwise"
has "algo help: AUTO's order" "^AUTO runs the tuning cache's measured choice .*, else the first whose workspace fits of: .*direct"
names=$(sed -n 's/^| \([a-z_0-9]*\) | [a-z]* | .*/\1/p' "$tmp/out" | grep -v '^algorithm$')
"$tool" conv --algo fft >"$tmp/out" 2>&1
for n in $names; do has "bad algo lists $n" "must be one of auto.* $n[, ]"; done
ok "conv --algo help on the host" "$tool" conv -c 8 -k 4 --algo help --device /cpu:0
has "host: direct applies" "^| direct | yes | yes | candidate, rank"
# What AUTO runs on the host: oneDNN's algorithm where the build has it,
# else the reference.
host_algo=direct
grep -q "^| onednn | yes | yes | candidate, rank" "$tmp/out" && host_algo=onednn
has "host: no im2col_gemm" "^| im2col_gemm | no | - |"
ok "bench --algo help" "$tool" bench conv -c 8 -H 6 -W 6 -k 16 --layout NHWC --algo help
has "bench --algo help heading" "^## c8 6x6 k16 3x3, NHWC, batch 1$"
ok "tune --algo help" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 --layout nchw --algo help
has "tune --algo help heading" "^## c8 6x6 k16 3x3, NCHW, batch 1$"
# --verify on the host would compare the reference with itself: it says so.
ok "conv --verify on the host" "$tool" conv -c 4 -k 4 --iters 1 --verify --device /cpu:0
has "conv: nothing to compare on the host" "^verify: /device:CPU:0 is the host reference; nothing to compare"
ok "pool --verify on the host" "$tool" pool -c 4 --iters 1 --verify --device /cpu:0
has "pool: nothing to compare on the host" "^verify: /device:CPU:0 is the host reference; nothing to compare"
ok "conv prints GFLOP/s" "$tool" conv --iters 2
has "GFLOP/s line" "GFLOP/s"
ok "pool prints GB/s" "$tool" pool --iters 2
has "GB/s line" "GB/s"
ok "memory stats" "$tool" conv --memory-stats --iters 1
has "memory stats line" "reserved"

# .npy in and out: the output of one run read back as the next run's input,
# and the same op on the host must give the same file.
ok "conv writes npy" "$tool" conv -n 1 -c 3 -H 6 -W 6 -k 4 --seed 1 --iters 1 --output "$tmp/y.npy"
ok "pool reads npy" "$tool" pool --input "$tmp/y.npy" --mode max -y 2 -x 2 --iters 1 --verify --output "$tmp/p.npy"
has "pool output shape" "\[1,4,2,2\]"
ok "pool on host" "$tool" pool --input "$tmp/y.npy" --mode max -y 2 -x 2 --iters 1 --device /cpu:0 --output "$tmp/p2.npy"
ok "same file from both devices (max is exact)" cmp "$tmp/p.npy" "$tmp/p2.npy"
ok "nhwc npy out" "$tool" conv -n 1 -c 3 -H 6 -W 6 -k 4 --layout NHWC --seed 1 --iters 1 --output "$tmp/yh.npy"
ok "nhwc npy in" "$tool" conv --input "$tmp/yh.npy" --layout NHWC -k 2 -y 1 -x 1 --iters 1 --verify
has "shape from file" "n1 c4 4x4"
# --output may name the --input file: the output replaces it only when
# whole. Under a file size limit (a full disk) the write fails, says so,
# and the input is still there, unchanged, with no temporary file left.
ok "pool expected" "$tool" pool --input "$tmp/y.npy" -y 2 -x 2 --iters 1 --device /cpu:0 --output "$tmp/pe.npy"
cp "$tmp/y.npy" "$tmp/same.npy"
ok "pool --output = --input" "$tool" pool --input "$tmp/same.npy" -y 2 -x 2 --iters 1 --device /cpu:0 \
    --output "$tmp/same.npy"
ok "--output = --input gives the result" cmp "$tmp/same.npy" "$tmp/pe.npy"
mkdir "$tmp/full"
ok "a 4 KB output" "$tool" conv -c 3 -H 16 -W 16 -k 4 -p 1 -q 1 --seed 2 --iters 1 --device /cpu:0 \
    --output "$tmp/full/x.npy"
cp "$tmp/full/x.npy" "$tmp/x-before.npy"
bad "--output = --input on a full disk" 1 "File too large; the existing file is unchanged" \
    sh -c 'ulimit -f 4; trap "" XFSZ; exec "$0" conv --input "$1" -k 4 -p 1 -q 1 --iters 1 --device /cpu:0 --output "$1"' \
    "$tool" "$tmp/full/x.npy"
ok "the input survived" cmp "$tmp/full/x.npy" "$tmp/x-before.npy"
ok "no temporary file left" test "$(ls -A "$tmp/full")" = x.npy

# Bad input: usage errors exit 2, runtime errors 1, each with a message.
bad "unknown flag" 2 "unknown flag" "$tool" conv --frobnicate
bad "unknown command" 2 "unknown command" "$tool" frobnicate
bad "non-numeric" 2 "whole number" "$tool" conv -n abc
bad "zero channels" 2 "at least 1" "$tool" conv -c 0
bad "negative pad" 2 "at least 0" "$tool" pool -p -1
bad "overflow" 2 "whole number" "$tool" conv -H 99999999999999999999
bad "missing value" 2 "needs a value" "$tool" conv -n
bad "bad layout" 2 "NCHW or NHWC" "$tool" conv --layout CHWN
bad "bad filter layout" 2 "OIHW" "$tool" conv --filter-layout NCHW
bad "bad mode" 2 "max or avg" "$tool" pool --mode median
bad "unknown device" 1 "does not exist" "$tool" conv --device /gpu:99
bad "malformed device" 1 "malformed" "$tool" pool --device /tpu:0
bad "filter too big" 1 "larger than" "$tool" conv -H 2 -W 2 -y 5 -x 5
bad "groups mismatch" 2 "groups" "$tool" conv -c 3 -g 2
bad "pool pad" 1 "padding" "$tool" pool -y 2 -p 2
bad "missing npy" 1 "No such file" "$tool" conv --input "$tmp/none.npy"
printf 'not a numpy file at all' >"$tmp/bad.npy"
bad "corrupt npy" 1 "magic" "$tool" pool --input "$tmp/bad.npy"
head -c 100 "$tmp/y.npy" >"$tmp/trunc.npy"
bad "truncated npy" 1 "truncated" "$tool" pool --input "$tmp/trunc.npy"
bad "4-d bias" 1 "expected 1" "$tool" conv -k 2 --bias-file "$tmp/p.npy"
# A zero-element input (shape 1x2x0x4) silently became random inputs.
h="{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 0, 4), }"
{ printf '\223NUMPY\001\000\166\000%s' "$h"; printf '%*s\n' $((117 - ${#h})) ''; } >"$tmp/empty.npy"
bad "zero-element conv --input" 1 "empty.npy holds no elements" "$tool" conv --input "$tmp/empty.npy" --iters 1
# The .npy reader looks at the header before the data: /dev/zero is
# refused at once in bounded memory (it used to be read until memory ran
# out), and each header numpy refuses is refused with what is wrong.
corpus=${PDNN_TOP_SRCDIR:-.}/tests/fuzz/npy-corpus
vlimit="ulimit -v 1000000;" # 1 GB; ASan reserves terabytes of address space
[ "${PDNN_SANITIZERS:-no}" = yes ] && vlimit=
bad "/dev/zero input" 1 "bad magic" sh -c "$vlimit"' exec timeout 5 "$0" pool --input /dev/zero' "$tool"
bad "npy duplicate key" 1 "duplicate key 'shape'" "$tool" pool --input "$corpus/header-duplicate-key.npy"
bad "npy key inside a string" 1 "unknown key 'note'" "$tool" pool --input "$corpus/header-key-in-string.npy"
bad "npy missing key" 1 "no 'fortran_order' key" "$tool" pool --input "$corpus/header-missing-key.npy"
bad "npy extra key" 1 "unknown key 'x'" "$tool" pool --input "$corpus/header-extra-key.npy"
bad "npy shape overflow" 1 "overflows" "$tool" pool --input "$corpus/header-shape-overflow.npy"
bad "npy larger than the file" 1 "needs 4000000000000 bytes of float32, the file has 0" \
    "$tool" pool --input "$corpus/huge-declared-size.npy"
# numpy's own files of each version; a 1x1 pool with stride 1 is the
# identity, and our writer writes numpy's version 1.0 bytes.
for v in 1 2 3; do
    ok "npy version $v.0 in" "$tool" pool --input "$corpus/valid-v$v-1x2x3x4.npy" -y 1 -x 1 -u 1 -v 1 --iters 1 \
        --device /cpu:0 --output "$tmp/v$v.npy"
    ok "npy version $v.0 read right" cmp "$tmp/v$v.npy" "$corpus/valid-v1-1x2x3x4.npy"
done
# Against numpy.load itself, on hand-written and randomly mutated headers:
# numpy refuses => we refuse; numpy reads => we read the same (or refuse
# on purpose, with the reasons the script lists).
py=${PYTHON_TORCH:-python3}
if "$py" -c 'import numpy' 2>/dev/null; then
    ok "npy reader against numpy" "$py" "${PDNN_TOP_SRCDIR:-.}/tests/npy_vs_numpy.py" "$tool"
    has "numpy comparison ran" "both read"
else
    echo "SKIP: npy reader against numpy: no numpy for $py"
fi
# A host allocation that fails names the buffer and its size (1.2 TiB of
# input; ASan must return NULL rather than abort, as malloc does).
big_env="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1"
bad "conv: host OOM names the buffer" 1 "out of host memory for the input x: 1284505600000 bytes (1.2 TiB)" \
    env "$big_env" "$tool" conv -n 100000 -c 64 -H 224 -W 224 -k 64 --iters 1 --device /cpu:0
bad "pool: host OOM names the buffer" 1 "out of host memory for the input x: 1284505600000 bytes (1.2 TiB)" \
    env "$big_env" "$tool" pool -n 100000 -c 64 -H 224 -W 224 --iters 1 --device /cpu:0
# A named algorithm that does not apply says why, in its own words.
bad "--algo tiled on groups says why" 1 \
    "tiled runs groups == 1 or groups of a multiple of 16 output channels; this one has 8 output channels in 2 groups" \
    "$tool" conv -c 8 -k 8 -g 2 --algo tiled --iters 1
ok "help conv" "$tool" conv --help
has "help lists flags" "--filter-layout"
ok "help pool" "$tool" pool --help
has "help lists pool flags" "--exclude-padding"
ok "help devices" "$tool" devices --help

# run-example: graphs in a session, placement and its log.
ok "cnn" "$tool" run-example cnn --log-device-placement --allow-growth --memory-stats
has "cnn logs the mapping" "Device mapping:"
has "cnn logs each node" "Softmax: (Softmax): /job:localhost/replica:0/task:0/device:"
has "cnn checks the host" "against /device:CPU:0: max abs error"
has "cnn memory stats" "memory /device:"
ok "cnn pinned to the cpu" "$tool" run-example cnn --device /cpu:0 --log-device-placement
has "cnn on cpu" "MaxPool_1: (MaxPool): /job:localhost/replica:0/task:0/device:CPU:0"
ok "towers on two pocl devices" env POCL_DEVICES="pthread pthread" "$tool" run-example towers \
    --log-device-placement --allow-growth --memory-fraction 0.5
has "towers sum" "matches \[\[44, 56\], \[98, 128\]\]"
has "tower 1 placed" "MatMul_1: (MatMul): /job:localhost/replica:0/task:0/device:GPU:1"
has "towers copy" "MatMul_1/_copy_to_CPU_0: (_Copy)"
bad "towers without GPU:1" 1 "explicitly assigned to /device:GPU:1 but available devices are" \
    env POCL_DEVICES=pthread "$tool" run-example towers
ok "towers soft" env POCL_DEVICES=pthread "$tool" run-example towers --allow-soft-placement
has "soft placement logged" "Soft placement: MatMul_1 (MatMul): requested /device:GPU:1, which does not exist"
bad "unknown example" 2 "towers or cnn" "$tool" run-example resnet
bad "bad fraction" 2 "must be a number in (0, 1]" "$tool" run-example cnn --memory-fraction 2
bad "unknown device" 1 "Cannot assign a device for operation" "$tool" run-example cnn --device /gpu:9
ok "help run-example" "$tool" run-example --help
has "help lists example flags" "--allow-soft-placement"

# bench: tables of measured numbers, checked for content, not just exit 0.
check() { # check NAME CMD...: CMD (a test of the last output) must succeed
    name=$1; shift
    if "$@"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $name"; sed 's/^/    /' "$tmp/out"; fi
}
# Whether this build has the oneDNN peer decides which columns must appear.
dnnl=no
grep -q '^#define PDNN_HAVE_DNNL 1' "${PDNN_TOP_BUILDDIR:-.}/config.h" 2>/dev/null && dnnl=yes
# conv_rows N: N table rows of shape c8 8x8 k8 3x3, each with GFLOP/s > 0,
# its % of the measured peak in the header, im2col+CLBlast's GFLOP/s and
# a ratio that is their quotient (to rounding), and when built with
# oneDNN, the same for oneDNN's columns.
conv_rows() {
    awk -F'|' -v want="$1" -v dnnl="$dnnl" '
        /^Measured peak/ { peak = $0; sub(/.*: /, "", peak); peak += 0 }
        # The printed values are rounded (one decimal at and above 1).
        function near(r, a, b) { return r > 0 && r >= 0.85 * a / b - 0.02 && r <= 1.15 * a / b + 0.02 }
        $2 ~ /^ c8 8x8 k8 3x3 $/ { n++; g = $7 + 0
            if (!(g > 0 && $9 + 0 > 0 && near($10 + 0, g, $9 + 0))) bad++
            if (peak > 0 && !near($8 + 0, 100 * g, peak)) bad++
            if (dnnl == "yes" && !($11 + 0 > 0 && near($12 + 0, g, $11 + 0))) bad++ }
        END { exit !(n == want && bad == 0) }' "$tmp/out"
}
ok "bench conv" "$tool" bench conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 --iters 1
has "bench conv heading" "^## polydnn bench conv, batch 1: /device:GPU:0 (opencl, .*, driver .*), 20[0-9-]* [0-9:]* UTC, \`polydnn bench conv -n 1"
has "bench conv peak" "^Measured peak (polydnn bench --peak): [0-9.]* GFLOP/s fp32 FMA, [0-9.]* GB/s copy"
has "bench conv columns" "| layer | layout | algorithm | GFLOP | ms | GFLOP/s | % of peak | im2col+CLBlast GFLOP/s | polydnn / im2col+CLBlast |"
check "bench conv rows: GFLOP/s, % of peak and ratios consistent, both layouts" conv_rows 2
has "bench conv NCHW row" "^| c8 8x8 k8 3x3 | NCHW | [a-z_0-9]* |"
has "bench conv NHWC row" "^| c8 8x8 k8 3x3 | NHWC | [a-z_0-9]* |"
has "bench conv geometric means" "^Geometric means over 2 convolution(s): polydnn [0-9.]* GFLOP/s ([0-9.]*% of peak); im2col+CLBlast [0-9.]* GFLOP/s, polydnn / im2col+CLBlast [0-9.]* over 2"
if [ "$dnnl" = yes ]; then
    has "bench conv oneDNN columns" "| oneDNN (host CPU) GFLOP/s | polydnn / oneDNN |"
    has "bench conv oneDNN mean" "; oneDNN [0-9.]* GFLOP/s, polydnn / oneDNN [0-9.]* over 2"
else
    has "bench conv without oneDNN says so" "oneDNN: not configured"
    check "bench conv without oneDNN columns" sh -c "! grep -q 'oneDNN (host CPU) GFLOP/s' '$tmp/out'"
fi
ok "bench conv on the host" "$tool" bench conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 --iters 1 --no-peak --device /cpu:0 --layout NHWC
has "host row: $host_algo, no im2col peer" "^| c8 8x8 k8 3x3 | NHWC | $host_algo | [0-9.e-]* | [0-9.]* | [0-9.e-]* | - | - | - |"
has "host: peak not measured" "^Peak: not measured (--no-peak)."
# --json: one object per row on stdout (the host: no im2col peer, null),
# the means on stderr.
if "$tool" bench conv -n 1 -c 8 -H 8 -W 8 -k 8 -y 3 -x 3 --iters 1 --no-peak --device /cpu:0 --json \
    >"$tmp/bench.json" 2>"$tmp/bench.err" && command -v python3 >/dev/null 2>&1; then
    ok "bench --json: a JSON object per row" python3 -c '
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
# /cpu:0 runs oneDNN where configure found it (onednn), else the reference (direct).
assert [(r["kind"], r["layout"]) for r in rows] == [("conv", "NCHW"), ("conv", "NHWC")], rows
assert len({r["algorithm"] for r in rows}) == 1 and rows[0]["algorithm"] in ("onednn", "direct"), rows
assert all(r["gflops"] > 0 and r["ms"] > 0 and r["pct_of_peak"] is None and r["im2col_gemm_gflops"] is None
           for r in rows), rows' "$tmp/bench.json"
    cp "$tmp/bench.err" "$tmp/out"
    has "bench --json: the means on stderr" "^Geometric means over 2 convolution(s): polydnn"
else
    fail=$((fail + 1)); echo "FAIL: bench --json exited non-zero"; cat "$tmp/bench.err"
fi
ok "bench conv, strided, grouped, dilated, SAME" "$tool" bench conv -n 2 -c 12 -H 13 -W 11 -k 8 -g 4 -y 3 -x 2 -u 2 -v 1 \
    -l 2 -j 1 --padding same --iters 1 --no-peak
has "shape named in the row" "^| c12 13x11 k8 3x2 /2,1 pad 2,2,0,1 dil 2,1 g4 | NHWC |"

peak_positive() { # the --peak line has GFLOP/s > 0 and GB/s > 0
    sed -n 's/^peak .*): \([0-9.]*\) GFLOP\/s fp32 FMA, \([0-9.]*\) GB\/s copy$/\1 \2/p' "$tmp/out" |
        awk '{ n++; if ($1 + 0 > 0 && $2 + 0 > 0) good++ } END { exit !(n == 1 && good == 1) }'
}
ok "bench --peak" "$tool" bench --peak
has "peak names the default device" "^peak /device:GPU:0 (opencl: "
check "peak rates > 0 on the default device" peak_positive
ok "bench --peak on the host" "$tool" bench --peak --device /cpu:0
check "peak rates > 0 on the host" peak_positive

ok "bench resnet50" "$tool" bench resnet50 --batch 1 --layout NHWC --iters 1
has "resnet50 conv1" "^| conv1 | NHWC | [a-z_0-9]* | 0.236 |"
has "resnet50 last conv" "^| res5 3x3 512 | NHWC |"
has "resnet50 max pool" "^| pool1 3x3 /2 | NHWC | 4.0 | [0-9.]* | [0-9.]* | [0-9.]* |"
check "resnet50: 23 convolutions and 1 pool, NHWC only" \
    test "$(grep -c '^| .* | NHWC | ' "$tmp/out")" -eq 24 -a "$(grep -c '^| .* | NCHW | ' "$tmp/out")" -eq 0
check "resnet50 ends with the geometric means" sh -c "tail -n 1 '$tmp/out' | grep -q \
'^Geometric means over 23 convolution(s): polydnn [0-9.]* GFLOP/s ([0-9.]*% of peak); im2col+CLBlast .* over 23.*; max pool [0-9.]* GB/s over 1 ([0-9.]*% of copy bandwidth)\.$'"
ok "bench vgg16, first 2 layers" "$tool" bench vgg16 --layers 2 --layout NCHW --iters 1 --no-peak
check "vgg16: conv1_1, conv1_2, pool1 and pool2 only" \
    test "$(grep -c '^| conv1_[12] | NCHW | ' "$tmp/out")" -eq 2 -a "$(grep -c '^| pool[12] 2x2 /2 | NCHW | ' "$tmp/out")" -eq 2 \
    -a "$(grep -c '^| .* | NCHW | ' "$tmp/out")" -eq 4
has "vgg16 pool1 bytes" "^| pool1 2x2 /2 | NCHW | 16.1 |"
ok "bench mobilenet, first 2 layers" "$tool" bench mobilenet --layers 2 --layout NHWC --iters 1 --no-peak
has "mobilenet: AUTO runs depthwise on dw1" "^| dw1 32 | NHWC | depthwise | 0.00723 |"
check "mobilenet: conv1 and dw1 only, no pools" \
    test "$(grep -c '^| .* | NHWC | ' "$tmp/out")" -eq 2 -a "$(grep -c 'max pool' "$tmp/out")" -eq 0
ok "depthwise, multiplier 2" "$tool" conv -n 2 -c 6 -H 9 -W 13 -k 12 -g 6 -p 1 -q 1 -u 2 --bias --relu --algo depthwise --verify
bad "depthwise refuses other groups" 1 "depthwise runs only depthwise convolutions" \
    "$tool" conv -c 6 -k 12 -g 3 --algo depthwise --iters 1

bad "bench unknown layer set" 2 "unknown layer set 'resnet18'; known: resnet50, vgg16" "$tool" bench resnet18
bad "bench --batch 0" 2 "bench resnet50: --batch must be at least 1, got 0" "$tool" bench resnet50 --batch 0
bad "bench unknown device" 1 "device '/gpu:9' does not exist" "$tool" bench resnet50 --device /gpu:9
bad "bench without a set" 2 "name a layer set" "$tool" bench
bad "bench shape flag on a set" 2 "apply to polydnn bench conv only" "$tool" bench vgg16 -c 8
bad "bench bad layout" 2 "--layout must be NCHW or NHWC, got 'NCWH'" "$tool" bench conv --layout NCWH
bad "bench bad algo" 2 "bench conv: --algo must be one of auto, direct, .*, got 'fft'" "$tool" bench conv --algo fft
bad "bench bad groups" 2 "groups 3 must divide the input channels 8" "$tool" bench conv -c 8 -k 6 -g 3
ok "help bench" "$tool" bench --help
has "help lists bench flags" "--no-peak"

# tune: a tiny shape against a private cache. The first run searches and
# stores what its row shows; the second finds it cached and leaves the file
# alone; --force searches again and replaces it.
tc="$tmp/tune-cache"
tkey="conv2d_fwd f32 NCHW/OIHW/NCHW n1 c8 h6 w6 k16 r3 s3 p6 q6 u1,1 d1,1 pad1,1,1,1 g1"
trow="^| c8 6x6 k16 3x3 pad 1,1,1,1 | NCHW | 1 | [a-z_0-9]*\( [a-z]*=[0-9]*\)* | implicit_gemm vw=[0-9]* kb=[0-9] pt=[0-9]* | [0-9.e+-]* | [0-9.e+-]* | [0-9.]* |"
# the tuned "algorithm [configuration]" of the last output's row is what
# the cache holds: AUTO's stored choice and, for tiled and implicit_gemm,
# its stored tile
tuned_is_stored() {
    row=$(grep "^| c8 6x6 k16 3x3 pad 1,1,1,1 | NCHW | 1 |" "$tmp/out" | cut -d'|' -f5 | sed 's/^ *//; s/ *$//')
    algo=$(awk -F'\t' '$2 == "conv2d_algo" && $3 ~ /^conv2d_fwd f32 NCHW\/OIHW\/NCHW n1 c8 h6 w6 k16 r3 s3 / { print $4 }' \
        "$tc/tuning-v1.tsv")
    tile=$(awk -F'\t' -v k="$tkey" '$2 == "conv2d_tiled" && $3 == k { print $4 }' "$tc/tuning-v1.tsv")
    igtile=$(awk -F'\t' -v k="$tkey" '$2 == "conv2d_implicit_gemm" && $3 == k { print $4 }' "$tc/tuning-v1.tsv")
    [ -n "$row" ] && [ -n "$algo" ] || return 1
    if [ "$algo" = tiled ]; then [ "$row" = "tiled $tile" ];
    elif [ "$algo" = implicit_gemm ]; then [ "$row" = "implicit_gemm $igtile" ];
    else [ "$row" = "$algo" ]; fi
}
ok "tune conv" env POLYDNN_CACHE_DIR="$tc" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --layout nchw
has "tune row: searched, seconds given" "$trow [0-9.]* |$"
has "tune summary" "^Tuned 1 of 1 row(s): 1 searched, 0 from the cache; 0 not tunable; 0 failed."
has "tune names the cache" "^Tuning cache: $tc/tuning-v1.tsv (1 shape searched by this run; the file holds 3 entries)."
check "tune stored the row's configuration for the shape" tuned_is_stored
cp "$tc/tuning-v1.tsv" "$tmp/tune-first.tsv"
ok "tune conv again" env POLYDNN_CACHE_DIR="$tc" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --layout nchw
has "tune again: cached" "$trow cached |$"
has "tune again: no search" "^Tuned 1 of 1 row(s): 0 searched, 1 from the cache;"
check "tune again left the cache as it was" cmp -s "$tc/tuning-v1.tsv" "$tmp/tune-first.tsv"
check "tune again ran the cached configuration" tuned_is_stored
ok "tune --force, two batches" env POLYDNN_CACHE_DIR="$tc" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 \
    --layout NCHW --force --batch 1 --batch 2
has "tune --force: mode" "^Mode: force"
has "tune --force: searched again" "$trow [0-9.]* |$"
has "tune --force: batch 2 row" "^| c8 6x6 k16 3x3 pad 1,1,1,1 | NCHW | 2 | [a-z_0-9]*\( [a-z]*=[0-9]*\)* | .* | [0-9.]* |$"
has "tune --force: both searched" "^Tuned 2 of 2 row(s): 2 searched, 0 from the cache;"
has "tune progress: row 1 of 2, on stderr" "^polydnn tune conv: \[1/2\] c8 6x6 k16 3x3 pad 1,1,1,1 NCHW batch 1 ([0-9]* s so far)$"
has "tune progress: row 2 of 2 with an ETA" "^polydnn tune conv: \[2/2\] c8 6x6 k16 3x3 pad 1,1,1,1 NCHW batch 2 ([0-9]* s so far, ETA [0-9]* s)$"
has "tune --force: 2 shapes, 6 entries" "(2 shapes searched by this run; the file holds 6 entries)."
check "tune --force rewrote the entry" sh -c "! cmp -s '$tc/tuning-v1.tsv' '$tmp/tune-first.tsv'"
check "tune --force stored the row's configuration" tuned_is_stored
# --json: stdout is one object per row (here both cached), the rest on stderr.
if env POLYDNN_CACHE_DIR="$tc" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --layout NCHW --batch 1,2 --json \
    >"$tmp/tune.json" 2>"$tmp/tune.err" && command -v python3 >/dev/null 2>&1; then
    ok "tune --json: a JSON object per row, cached" python3 -c '
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
assert [(r["batch"], r["status"], r["cached"]) for r in rows] == [(1, "tuned", True), (2, "tuned", True)], rows
assert all(r["tuned_gflops"] > 0 and r["search_s"] is None and r["layout"] == "NCHW" for r in rows), rows' "$tmp/tune.json"
    cp "$tmp/tune.err" "$tmp/out"
    has "tune --json: the summary on stderr" "^Tuned 2 of 2 row(s): 0 searched, 2 from the cache;"
else
    fail=$((fail + 1)); echo "FAIL: tune --json exited non-zero"; cat "$tmp/tune.err"
fi
# --emit-defaults: the run's winners as a row of the OpenCL device table.
# Every entry must name a kernel and configuration the run stored in its
# cache (so both are real names), and the row must compile against the
# table's header where a C compiler is at hand.
te="$tmp/tune-emit"
ok "tune --emit-defaults" env POLYDNN_CACHE_DIR="$te" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --emit-defaults
has "emit: heading" "^Device table row for this device class"
has "emit: vendor key" '^        .vendor = ".*",$'
has "emit: a default" '^                {"conv2d_[a-z_0-9]*\(/nchw\)\{0,1\}", "[a-z]*=[0-9]*\( [a-z]*=[0-9a-z]*\)*"}, /\* [0-9]* of [0-9]* N[CHW]* rows \*/$'
sed -n '/^```c$/,/^```$/p' "$tmp/out" | sed '1d;$d' >"$tmp/row.txt"
emitted_are_stored() {
    n=0
    while IFS= read -r line; do
        kernel=$(echo "$line" | sed -n 's|^ *{"\([a-z_0-9]*\)[/a-z]*", "\([^"]*\)"}.*|\1|p')
        config=$(echo "$line" | sed -n 's|^ *{"\([a-z_0-9]*\)[/a-z]*", "\([^"]*\)"}.*|\2|p')
        [ -n "$kernel" ] || continue
        awk -F'\t' -v k="$kernel" -v c="$config" '$2 == k && $4 == c { f = 1 } END { exit !f }' \
            "$te/tuning-v1.tsv" || { echo "not in the cache: $kernel $config"; return 1; }
        n=$((n + 1))
    done <"$tmp/row.txt"
    [ "$n" -gt 0 ]
}
check "emit: each default is a stored kernel and configuration" emitted_are_stored
top=${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}
if command -v "${CC:-cc}" >/dev/null 2>&1; then
    { echo '#include "backends/opencl/cl_device_table.h"'; echo 'const pdnn__cl_device_row rows[] = {';
      cat "$tmp/row.txt"; echo '};'; } >"$tmp/row.c"
    check "emit: the row compiles" "${CC:-cc}" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$top" -I"$top/src" "$tmp/row.c"
else
    echo "note: no C compiler (${CC:-cc}): the emitted row's syntax is not compiled"
fi
# --backward: each direction a row, and what runs inside them tuned and
# stored (AUTO's backward choices, searched only by these calls).
tb="$tmp/tune-bwd"
ok "tune --backward" env POLYDNN_CACHE_DIR="$tb" "$tool" tune conv -c 8 -H 6 -W 6 -k 8 -p 1 -q 1 --layout nchw \
    --backward
has "backward: data row" "^| c8 6x6 k8 3x3 pad 1,1,1,1 | NCHW | 1 | data | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |$"
has "backward: filter row" "^| c8 6x6 k8 3x3 pad 1,1,1,1 | NCHW | 1 | filter | "
if grep -q "	conv2d_bwd_data_algo	" "$tb/tuning-v1.tsv" && grep -q "	conv2d_bwd_filter_algo	" "$tb/tuning-v1.tsv"
then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: tune --backward stored no backward choice"; cat "$tb/tuning-v1.tsv"; fi
bad "emit: OpenCL only" 2 "--emit-defaults: the device table is the OpenCL backend's" \
    env POLYDNN_CACHE_DIR="$te" "$tool" tune conv -c 4 -H 5 -W 5 -k 4 --device /cpu:0 --emit-defaults
ok "tune on the host" env POLYDNN_CACHE_DIR="$tc" "$tool" tune conv -c 4 -H 5 -W 5 -k 4 --device /cpu:0
if [ "$host_algo" = direct ]; then
    has "host: not tunable" "^| c4 5x5 k4 3x3 | NHWC | 1 | not tunable: direct has no tunable parameters |"
    has "host: nothing stored" "^Tuned 0 of 2 row(s): 0 searched, 0 from the cache; 2 not tunable; 0 failed."
else # two algorithms: AUTO's measured choice between them is searched
    has "host: AUTO's choice searched" "^| c4 5x5 k4 3x3 | NHWC | 1 | [a-z]* | onednn | "
    has "host: both rows searched" "^Tuned 2 of 2 row(s): 2 searched, 0 from the cache; 0 not tunable; 0 failed."
fi
# The default's kernel (implicit_gemm for this shape; its epilogue is
# conv2d_tile.cl's) adding 0.5 to every output: all its configurations
# agree with each other, so only the check against the host can catch it,
# and the layer must fail loudly with nothing stored.
kdir="$tmp/bad-kernels"
mkdir -p "$kdir" && cp "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}"/kernels_cl/*.cl "$kdir/"
sed -i 's/vec_t v_ = acc\[b_\]\[j_\] + bv\[b_\];/vec_t v_ = acc[b_][j_] + bv[b_] + 0.5f;/' "$kdir/conv2d_tile.cl"
check "the broken kernel differs" sh -c "! cmp -s '$kdir/conv2d_tile.cl' '${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}/kernels_cl/conv2d_tile.cl'"
bad "tune: default against the host" 1 "FAILED: the default configuration disagrees with the host reference" \
    env POLYDNN_CACHE_DIR="$tmp/tune-bad" POLYDNN_KERNEL_DIR="$kdir" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 --layout nhwc
has "tune: failed row" "^| c8 6x6 k16 3x3 | NHWC | 1 | FAILED: implicit_gemm vw=[0-9]* kb=[0-9] pt=[0-9]* differs from the host reference |"
has "tune: failure counted" "0 not tunable; 1 failed."
check "tune: nothing stored for the failed layer" test ! -s "$tmp/tune-bad/tuning-v1.tsv"
# A cache that cannot be written: its directory's parent is a regular file
# (which stops root too, unlike a read-only directory). The run warns and
# exits 1 instead of reporting results it kept in memory only.
: >"$tmp/not-a-dir"
bad "tune: unwritable cache" 1 "polydnn tune conv: warning: tuning cache: 3 results of this process could not be written: .*$tmp/not-a-dir/cache.*Not a directory" \
    env POLYDNN_CACHE_DIR="$tmp/not-a-dir/cache" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --layout nchw
has "tune: unwritable cache, summary" "^Tuning cache: 3 results could not be written (see the warning)"
# A FIFO at the cache path: refused with a warning, not waited on forever.
mkdir -p "$tmp/fifo-cache" && mkfifo "$tmp/fifo-cache/tuning-v1.tsv"
bad "tune: a FIFO at the cache path" 1 "ignoring the tuning cache $tmp/fifo-cache/tuning-v1.tsv: it is a FIFO" \
    timeout 120 env POLYDNN_CACHE_DIR="$tmp/fifo-cache" "$tool" tune conv -c 8 -H 6 -W 6 -k 16 -p 1 -q 1 --layout nchw
has "tune: the FIFO is named in the failure" "could not be written: .*tuning-v1.tsv is a FIFO, not a regular file"
check "tune: the FIFO is left alone" test -p "$tmp/fifo-cache/tuning-v1.tsv"
# Out of memory in the reference check is an error, not a wrong answer.
bad "tune: out of memory is reported as such" 1 "out of memory on /device:GPU:0" \
    env POLYDNN_CACHE_DIR="$tmp/tune-oom" POLYDNN_MEMORY_LIMIT_MB=1 "$tool" tune conv -c 64 -H 32 -W 32 -k 64 --layout nchw
check "tune: out of memory is not a difference" sh -c "! grep -q 'differs from the host reference' '$tmp/out'"
check "tune: out of memory is not a failed check" sh -c "! grep -q 'FAILED' '$tmp/out'"
ok "tune --algo tiled on groups" env POLYDNN_CACHE_DIR="$tmp/tune-tiled" "$tool" tune conv -c 8 -k 8 -g 2 --algo tiled --layout nchw
has "tune row: the algorithm's whole reason" "^| c8 32x32 k8 3x3 g2 | NCHW | 1 | not tunable: .*this one has 8 output channels in 2 groups; use PDNN_CONV_ALGO_AUTO |"
bad "tune unknown layer set" 2 "unknown layer set 'resnet18'" "$tool" tune resnet18
bad "tune without a set" 2 "name a layer set" "$tool" tune
bad "tune unknown device" 2 "device '/gpu:9' does not exist" "$tool" tune conv --device /gpu:9
bad "tune bad layout" 2 "--layout must be nchw, nhwc or both, got 'chwn'" "$tool" tune conv --layout chwn
bad "tune --batch 0" 2 "--batch must be at least 1, got 0" "$tool" tune conv --batch 0
bad "tune bad batch list" 2 "--batch expects whole numbers separated by commas, got '1,,2'" "$tool" tune conv --batch 1,,2
bad "tune shape flag on a set" 2 "apply to polydnn tune conv only" "$tool" tune resnet50 -k 8
bad "tune unknown flag" 2 "unknown flag" "$tool" tune conv --fast
ok "help tune" "$tool" tune --help
has "help lists tune flags" "--force"

# A successful run says nothing on stderr: no kernel compiler notes
# ("N warnings generated."), with every program built from source (PoCL's
# own kernel cache off too: a cached build prints nothing).
quiet_conv() {
    env POCL_KERNEL_CACHE=0 POLYDNN_CACHE_DIR="$tmp/quiet-cache" POLYDNN_PROGRAM_CACHE=off "$tool" conv -n 1 -c 16 -H 12 -W 12 -k 32 \
        -p 1 -q 1 --iters 1 --device /gpu:0 --verify "$@" 2>"$tmp/err" >/dev/null && ! [ -s "$tmp/err" ] ||
        { sed 's/^/    stderr: /' "$tmp/err"; false; }
}
for algo in auto direct im2col_gemm tiled winograd implicit_gemm; do
    check "conv --algo $algo on /gpu:0: nothing on stderr" quiet_conv --algo $algo
done
check "1x1 conv on /gpu:0: nothing on stderr" quiet_conv -y 1 -x 1 -p 0 -q 0 --algo gemm_1x1
check "depthwise conv on /gpu:0: nothing on stderr" quiet_conv -k 16 -g 16 --algo depthwise

# A kernel that builds with a warning: its build log is shown with
# POLYDNN_DEBUG=1 (and kernels_cl/ has none: tests/test_kernel_build).
wdir="$tmp/warn-kernels"
mkdir -p "$wdir" && cp "${PDNN_TOP_SRCDIR:-$(dirname "$0")/..}"/kernels_cl/*.cl "$wdir/"
printf '#warning polydnn-test-warning\n' | cat - "$wdir/conv2d.cl" >"$wdir/c.cl" && mv "$wdir/c.cl" "$wdir/conv2d.cl"
ok "a kernel's build log with POLYDNN_DEBUG=1" env POCL_KERNEL_CACHE=0 POLYDNN_DEBUG=1 POLYDNN_KERNEL_DIR="$wdir" \
    POLYDNN_CACHE_DIR="$tmp/warn-cache" POLYDNN_PROGRAM_CACHE=off "$tool" conv --algo direct --iters 1 --device /gpu:0
has "build log named" "^polydnn: debug: OpenCL: the build log of conv2d.cl with '-cl-std=CL1.2 *':"
has "build log shown" "polydnn-test-warning"

# --profile: each training node timed; the table lists the backward
# convolutions by their TensorFlow op names, and both tables add up.
idx_dir=/usr/share/datasets/fashion-mnist
if [ -r "$idx_dir/train-images-idx3-ubyte.gz" ]; then
    ok "train --profile on /cpu:0" "$tool" train --device /cpu:0 --steps 2 --batch-size 8 --train-limit 64 \
        --test-limit 16 --profile
    has "profile: the node table" "^| node | op | device | algorithm | first ms | later runs | ms/run | GFLOP/s | total ms | % |"
    has "profile: a backward convolution row" "^| gradients/Conv2D_1_grad/Conv2DBackpropFilter | Conv2DBackpropFilter | /device:CPU:0 | - | "
    # The forward convolutions name the algorithm that ran (AUTO's on the
    # host) and their rate; ReLU counts no flops.
    has "profile: a forward convolution's algorithm and GFLOP/s" "^| Conv2D_1 | Conv2D | /device:CPU:0 | $host_algo | [0-9.]* | 3 | [0-9.]* | [0-9.]*[1-9][0-9.]* | "
    has "profile: no GFLOP/s for Relu" "^| Relu[_0-9]* | Relu | /device:CPU:0 | - | [0-9.]* | 3 | [0-9.]* | - | "
    has "profile: the op table" "^| MatMul | "
    # Each forward node runs 4 times (2 steps, 2 test batches of 8): 3
    # after its first, 6 for the two Conv2D nodes in the op table.
    profile_runs() {
        awk -F'|' '/^\| Conv2D \| [0-9]/ { c = $4 + 0 } END { exit !(c == 6) }' "$tmp/out"
    }
    check "profile: the op table counts Conv2D's later runs (6)" profile_runs
fi

# Under an address-space limit (ulimit -v) just above a 2 GiB reservation,
# PoCL aborted at the first kernel ("Assertion `p->mem_ptr != NULL'",
# exit 134): the reservation took the space PoCL allocates its buffers
# from. It now keeps room for the driver: the conv runs, or the
# reservation stops with a warning naming the limit. Not under ASan (it
# reserves terabytes of address space).
if [ "${PDNN_SANITIZERS:-no}" != yes ] && "$tool" devices 2>/dev/null | grep -q "GPU:0 -> .*backend: opencl"; then
    for v in 1800000 2100000 2400000 2700000 3000000; do
        ok "conv on /gpu:0 under ulimit -v $v with a 2 GiB limit" sh -c "ulimit -v $v;"' \
            POLYDNN_MEMORY_LIMIT_MB=2048 exec "$0" conv --device /gpu:0 --iters 1 -c 8 -H 12 -W 12 -k 16' "$tool"
        if grep -q "warning: out of memory" "$tmp/out"; then has "ulimit -v $v: the warning names it" "(ulimit -v)"; fi
    done
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
