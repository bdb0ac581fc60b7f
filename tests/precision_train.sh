#!/bin/sh
# make check-precision-train: Deep MNIST on Fashion-MNIST for 3 epochs in
# fp32, fp16 and bf16; fp16's and bf16's test accuracy must reach within
# 0.5 points of fp32's (issue 43): at least fp32's minus 0.5. Usage: precision_train.sh POLYDNN LIMIT DEVICE
# [TEST] (LIMIT training images of the 60,000, TEST test images of the
# 10,000: default all).
set -u
P=$1
LIMIT=${2:-60000}
DEV=${3:-/cpu:0}
TEST=${4:-10000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for p in fp32 fp16 bf16; do
    "$P" train --device "$DEV" --epochs 3 --train-limit "$LIMIT" --test-limit "$TEST" --precision $p > "$T/$p.out" 2>/dev/null ||
        { echo "FAIL: $p run"; exit 1; }
    grep -E "^epoch 3 |^loss scale|^trained" "$T/$p.out" | sed "s/^/$p: /"
done
acc() { sed -n 's/^epoch 3 step [0-9]*: test accuracy \([0-9.]*\) .*/\1/p' "$1"; }
/usr/bin/python3 - "$(acc "$T/fp32.out")" "$(acc "$T/fp16.out")" "$(acc "$T/bf16.out")" <<'PY'
import sys
a32, a16, ab16 = (float(v) for v in sys.argv[1:])
print("test accuracy after 3 epochs: fp32 %.4f, fp16 %.4f (%+.2f points), bf16 %.4f (%+.2f points)"
      % (a32, a16, 100 * (a16 - a32), ab16, 100 * (ab16 - a32)))
# "reach within 0.5 points": not below fp32's by more (above it is no loss)
sys.exit(0 if a16 >= a32 - 0.005 and ab16 >= a32 - 0.005 else 1)
PY
