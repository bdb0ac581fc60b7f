#!/bin/sh
# polydnn train: a short run learns (accuracy line, loss printed), a run
# interrupted and resumed from its checkpoint equals an uninterrupted one,
# and bad checkpoints / data fail clearly without overwriting anything.
# Small sizes: the host device is slow on a shared machine.
set -u
P=./polydnn
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
A="--device /cpu:0 --batch-size 8 --train-limit 64 --test-limit 16"

$P train $A --steps 20 > "$T/run.out" 2>/dev/null || fail "short run failed"
grep -q "test accuracy" "$T/run.out" || fail "no accuracy line"
grep -q "^step 20 loss" "$T/run.out" || fail "no loss line"

$P train $A --steps 4 --save "$T/a.npz" >/dev/null 2>&1 || fail "run a"
$P train $A --steps 2 --save "$T/b.npz" >/dev/null 2>&1 || fail "run b"
$P train $A --load "$T/b.npz" --steps 2 --save "$T/c.npz" >/dev/null 2>&1 || fail "resume c"
/usr/bin/python3 - "$T/a.npz" "$T/c.npz" <<'PY' || fail "resumed run differs"
import sys, numpy as np
a, c = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(c.files), (a.files, c.files)
for k in a.files:
    assert np.allclose(a[k], c[k], rtol=0, atol=1e-6), k
assert a["global_step"].ravel()[0] == 4
PY

# A truncated checkpoint: clear error, exit 1, the --save target untouched.
head -c 100 "$T/a.npz" > "$T/trunc.npz"
cp "$T/b.npz" "$T/keep.npz"
$P train $A --load "$T/trunc.npz" --steps 1 --save "$T/keep.npz" > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "truncated checkpoint: exit code"
grep -q "trunc.npz" "$T/err" || fail "truncated checkpoint: message: $(cat "$T/err")"
cmp -s "$T/b.npz" "$T/keep.npz" || fail "checkpoint overwritten on failure"

# Another optimizer's checkpoint (Adam slots): names the missing array.
$P train $A --optimizer adam --load "$T/b.npz" --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "other model: exit code"
grep -q "no array" "$T/err" || fail "other model: message: $(cat "$T/err")"

# Missing data directory.
$P train $A --data "$T/nowhere" --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 1 ] || fail "missing data: exit code"
grep -q "nowhere" "$T/err" || fail "missing data: message: $(cat "$T/err")"
echo PASS
