#!/bin/sh
# polydnn train against its peers, side by side on the same cores: the
# Deep MNIST network on Fashion-MNIST, batch 64, SGD lr 0.05 momentum 0.9,
# STEPS training steps each (images/s over the steps after the first, as
# bench/train_reference.py counts), in ROUNDS alternating rounds, so that
# load changes on a shared machine fall on every framework alike. Prints
# each run and a Markdown table of the median images/s with the ratio to
# TensorFlow's.
#
#   bench/train_compare.sh [STEPS [ROUNDS]]     (defaults 300 and 2)
#
# Environment: POLYDNN (the tool, default ./polydnn), POLYDNN_ARGS (more
# flags, e.g. "--layout NHWC" or "--device /gpu:0"), POLYDNN_DEVICES (a
# list of devices, each a row of its own: "default /cpu:0" puts the
# placer's choice beside the host; DEVICE,VAR=VALUE,--flag=value runs it
# with that environment and those flags, e.g.
# /cpu:0,OMP_WAIT_POLICY=passive,--layout=NHWC), TF_PYTHON (a Python
# with PyPI tensorflow-cpu; skipped when unset or not importable),
# TORCH_PYTHON (default /usr/bin/python3 with Debian's python3-torch;
# TORCH_PYTHON=none skips it: it is 5-8x slower than the others here),
# TORCH_STEPS (its steps, default STEPS: fewer keeps the run short).
steps=${1:-300}
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
tool=${POLYDNN:-./polydnn}
torch_py=${TORCH_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

frameworks=polydnn
[ -n "$POLYDNN_DEVICES" ] && frameworks=$(for d in $POLYDNN_DEVICES; do printf 'polydnn@%s ' "$d"; done)
if [ -n "$TF_PYTHON" ] && "$TF_PYTHON" -c 'import tensorflow' >/dev/null 2>&1; then
    frameworks="$frameworks tensorflow"
else
    echo "SKIP tensorflow: set TF_PYTHON to a Python with PyPI tensorflow-cpu"
fi
if [ "$torch_py" != none ] && "$torch_py" -c 'import torch' >/dev/null 2>&1; then
    frameworks="$frameworks torch"
else
    echo "SKIP torch: no torch for ${torch_py}"
fi

run() { # run FRAMEWORK: one run, prints its images/s on the last line
    case $1 in
    polydnn*)
        spec=${1#polydnn@} dev='' vars='' flags=''
        case $spec in *,*) extra=${spec#*,} spec=${spec%%,*} ;; *) extra= ;; esac
        for x in $(echo "$extra" | tr , ' '); do
            case $x in -*) flags="$flags $x" ;; *) vars="$vars $x" ;; esac
        done
        case $spec in default | polydnn) ;; *) dev="--device $spec" ;; esac
        # shellcheck disable=SC2086
        env $vars "$tool" train --steps "$steps" --test-limit 1000 $dev $flags $POLYDNN_ARGS >"$tmp/out" 2>&1 || { cat "$tmp/out"; return 1; }
        sed -n 's/^trained [0-9]* steps: \([0-9.]*\) images\/s.*/\1/p' "$tmp/out" | tail -n 1 ;;
    tensorflow)
        "$TF_PYTHON" "$here/train_reference.py" --framework tensorflow --steps "$steps" >"$tmp/out" 2>&1 ||
            { cat "$tmp/out"; return 1; }
        sed -n 's/.* steps, \([0-9.]*\) images\/s.*/\1/p' "$tmp/out" | tail -n 1 ;;
    torch)
        "$torch_py" "$here/train_reference.py" --framework torch --steps "${TORCH_STEPS:-$steps}" >"$tmp/out" 2>&1 ||
            { cat "$tmp/out"; return 1; }
        sed -n 's/.* steps, \([0-9.]*\) images\/s.*/\1/p' "$tmp/out" | tail -n 1 ;;
    esac
}

isa=AVX2
grep -q avx512f /proc/cpuinfo && isa=AVX-512
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $isa, $(nproc) CPUs"
for r in $(seq 1 "$rounds"); do
    for f in $frameworks; do
        v=$(run "$f") || exit 1
        [ -n "$v" ] || { echo "$f printed no images/s:"; cat "$tmp/out"; exit 1; }
        echo "round $r $f: $v images/s (load $(cut -d' ' -f1 /proc/loadavg))"
        echo "$f $v" >>"$tmp/all"
    done
done

median() { grep "^$1 " "$tmp/all" | cut -d' ' -f2 | sort -g | awk '{ v[NR] = $1 } END {
    if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
tf=$(median tensorflow)
echo
echo "| framework | steps | runs | median images/s | ratio to TensorFlow |"
echo "| --- | ---: | ---: | ---: | ---: |"
for f in $frameworks; do
    m=$(median "$f")
    n=$steps
    [ "$f" = torch ] && n=${TORCH_STEPS:-$steps}
    ratio=$(awk -v a="$m" -v b="$tf" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    echo "| $f | $n | $rounds | $m | $ratio |"
done
