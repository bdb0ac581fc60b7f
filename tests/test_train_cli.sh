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
# --json: the same run's step, epoch and closing lines as JSON objects,
# the same numbers (the run is deterministic on /cpu:0).
$P train $A --steps 20 --json > "$T/run.json" 2>/dev/null || fail "--json run failed"
/usr/bin/python3 - "$T/run.out" "$T/run.json" <<'PY' || fail "--json lines differ from the text"
import json, re, sys
text = open(sys.argv[1]).read()
rows = [json.loads(line) for line in open(sys.argv[2])]
steps = [r for r in rows if r["event"] == "step"]
assert [r["step"] for r in steps] == [10, 20], rows
assert "%.4f" % steps[1]["loss"] == re.search(r"^step 20 loss (\S+)$", text, re.M).group(1), (steps, text)
epochs = [(r["epoch"], r["step"], "%.4f" % r["test_accuracy"], r["test_images"]) for r in rows if r["event"] == "epoch"]
want = [(int(e), int(st), a, int(n)) for e, st, a, n in
        re.findall(r"^epoch (\d+) step (\d+): test accuracy (\S+) \((\d+) images\)$", text, re.M)]
assert epochs == want and want, (epochs, want)
assert rows[-1]["event"] == "trained" and rows[-1]["steps"] == 20, rows
PY

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
# --save into a missing directory, or an empty path: refused before the
# first step (it used to be reported after the training it was to keep).
$P train $A --steps 1 --save "$T/missing/x.npz" > "$T/out" 2> "$T/err"
[ $? -eq 2 ] && grep -q "missing/x.npz: .*/missing does not exist" "$T/err" && ! grep -q "accuracy" "$T/out" ||
    fail "save into a missing directory: $(cat "$T/err")"
$P train $A --steps 1 --save "" > "$T/out" 2> "$T/err"
[ $? -eq 2 ] && grep -q "the path names no file" "$T/err" || fail "empty --save: $(cat "$T/err")"

# Checkpoints of another model: an extra array, a mis-shaped one.
/usr/bin/python3 - "$T/a.npz" "$T/extra.npz" "$T/shape.npz" <<'PY' || fail "making the bad checkpoints"
import sys, numpy as np
a = dict(np.load(sys.argv[1]))
np.savez(sys.argv[2], extra_w=np.zeros(3, np.float32), **a)
a["fc2_w"] = np.zeros((10, 1024), np.float32)
np.savez(sys.argv[3], **a)
PY
$P train $A --load "$T/extra.npz" --steps 1 --save "$T/keep.npz" > /dev/null 2> "$T/err"
[ $? -eq 1 ] && grep -q "'extra_w' is not in this model" "$T/err" || fail "extra array: $(cat "$T/err")"
$P train $A --load "$T/shape.npz" --steps 1 --save "$T/keep.npz" > /dev/null 2> "$T/err"
[ $? -eq 1 ] && grep -q "'fc2_w' has the wrong shape" "$T/err" || fail "mis-shaped array: $(cat "$T/err")"
cmp -s "$T/b.npz" "$T/keep.npz" || fail "checkpoint overwritten by a failed load"

# Hostile checkpoints: a global_step (it picks the epoch and the place in
# the epoch's order of images) or a train_state value that is negative,
# NaN, infinite, not an integer or past the run: refused at load, naming
# the file, the field, the value and the allowed range; exit 1, never a
# crash (a step of -1 used to read before the order, 1e18 to exit 0 with no
# output), and the --save target untouched.
/usr/bin/python3 - "$T/a.npz" "$T" <<'PY' || fail "making the hostile checkpoints"
import sys, numpy as np
a = dict(np.load(sys.argv[1]))
def put(name, key, i, v):
    b = {k: x.copy() for k, x in a.items()}
    b[key].reshape(-1)[i] = v
    np.savez("%s/%s.npz" % (sys.argv[2], name), **b)
for name, v in [("m1", -1), ("nan", np.nan), ("inf", np.inf), ("ninf", -np.inf), ("big", 1e30),
                ("nbig", -1e30), ("e18", 1e18), ("half", 2.5), ("past", 25), ("end", 24)]:
    put("gs-" + name, "global_step", 0, v)
put("seed-neg", "train_state", 0, -1)
put("seed-nan", "train_state", 3, np.nan)
put("seed-big", "train_state", 2, 65536)
put("batch-nan", "train_state", 4, np.nan)
put("size-inf", "train_state", 5, np.inf)
PY
for c in m1:-1 nan:nan inf:inf ninf:-inf big:1.00000002e+30 nbig:-1.00000002e+30 e18:9.99999984e+17 \
    half:2.5 past:25; do
    name=${c%%:*} val=${c#*:}
    $P train $A --load "$T/gs-$name.npz" --steps 1 --save "$T/keep.npz" > /dev/null 2> "$T/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "gs-$name.npz: global_step is $val; expected an integer in 0\.\.24 (this run's 3 epochs of 8 steps" "$T/err" ||
        fail "global_step $val: exit $rc: $(cat "$T/err")"
done
for c in seed-neg:"train_state\[0\] (16 bits of the seed) is -1; expected an integer in 0\.\.65535" \
    seed-nan:"train_state\[3\] (16 bits of the seed) is nan;" \
    seed-big:"train_state\[2\] (16 bits of the seed) is 65536; expected an integer in 0\.\.65535" \
    batch-nan:"train_state\[4\] (the batch size) is nan; expected an integer in 1\.\.16777216" \
    size-inf:"train_state\[5\] (the training-set size) is inf; expected an integer in 1\.\.16777216"; do
    name=${c%%:*} want=${c#*:}
    $P train $A --load "$T/$name.npz" --steps 1 --save "$T/keep.npz" > /dev/null 2> "$T/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q "$name.npz: $want" "$T/err" || fail "$name: exit $rc: $(cat "$T/err")"
done
cmp -s "$T/b.npz" "$T/keep.npz" || fail "checkpoint overwritten by a refused checkpoint"
# At the run's last step: nothing to train, said so; one more epoch trains on.
$P train $A --load "$T/gs-end.npz" > "$T/out" 2> "$T/err" || fail "checkpoint at the end: $(cat "$T/err")"
grep -q "global_step 24: this run's 3 epochs are done; nothing to train" "$T/err" || fail "at the end: $(cat "$T/err")"
$P train $A --epochs 4 --load "$T/gs-end.npz" --steps 1 > "$T/out" 2> "$T/err" || fail "one epoch more: $(cat "$T/err")"
grep -q "^epoch 4 step 25: test accuracy" "$T/out" || fail "one epoch more: $(cat "$T/out")"

# A FIFO as the checkpoint: refused at once, not waited on.
mkfifo "$T/fifo.npz" || fail "mkfifo"
timeout 60 $P train $A --load "$T/fifo.npz" --steps 1 > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "fifo.npz: it is a FIFO, not a regular file" "$T/err" || fail "FIFO checkpoint: exit $rc: $(cat "$T/err")"

# Bad data: a truncated .gz, a wrong IDX magic, a label outside 0..9 (a
# copy of the data directory with one file replaced each time).
D=/usr/share/datasets/fashion-mnist
bad_data() { # bad_data NAME FILE MAKER NEEDLE
    rm -rf "$T/d" && mkdir "$T/d" && cp "$D"/*.gz "$T/d/" || fail "copying the data"
    /usr/bin/python3 -c "$3" "$T/d/$2" || fail "$1: making the file"
    $P train $A --data "$T/d" --steps 1 > /dev/null 2> "$T/err"
    [ $? -eq 1 ] && grep -q -- "$4" "$T/err" || fail "$1: $(cat "$T/err")"
}
bad_data "truncated gz" train-images-idx3-ubyte.gz \
    'import sys; b = open(sys.argv[1], "rb").read(); open(sys.argv[1], "wb").write(b[: len(b) // 2])' \
    "train-images-idx3-ubyte.gz"
bad_data "bad magic" t10k-labels-idx1-ubyte.gz \
    'import sys, gzip; gzip.open(sys.argv[1], "wb").write(b"\0\0\x08\x03" + bytes(16))' \
    "t10k-labels-idx1-ubyte.gz"
bad_data "label out of range" train-labels-idx1-ubyte.gz \
    'import sys, gzip; d = bytearray(gzip.open(sys.argv[1]).read()); d[8 + 5] = 12; gzip.open(sys.argv[1], "wb").write(bytes(d))' \
    "12"
bad_data "gz without its trailer" train-labels-idx1-ubyte.gz \
    'import sys; b = open(sys.argv[1], "rb").read(); open(sys.argv[1], "wb").write(b[:-8])' \
    "train-labels-idx1-ubyte.gz: corrupt gzip data: truncated"
# Training images of another size than the network's 28x28 (with as many
# labels): refused, naming the file and both sizes; they used to be read
# out of bounds (8x8, 1x1) or trained on as garbage (32x32, 28x27).
for size in 8x8 1x1 32x32 28x27 56x28; do
    rows=${size%x*} cols=${size#*x}
    bad_data "$size images" train-images-idx3-ubyte.gz "import sys, gzip, struct
n, r, c = 64, $rows, $cols
gzip.open(sys.argv[1], 'wb').write(struct.pack('>4I', 0x803, n, r, c) + bytes(range(256)) * (n * r * c // 256) + bytes(n * r * c % 256))
gzip.open(sys.argv[1].replace('images-idx3', 'labels-idx1'), 'wb').write(struct.pack('>2I', 0x801, n) + bytes(i % 10 for i in range(n)))" \
        "train-images-idx3-ubyte.gz holds 64 images of ${size} (rows x columns); the network needs 28x28 images"
done

# Flags: a batch the towers cannot split, a device listed twice, a
# parameter device without towers, a memory fraction out of range: usage
# errors (exit 2).
$P train --device /cpu:0,/gpu:0 --batch-size 9 --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "does not split evenly over 2 towers" "$T/err" || fail "uneven towers: $(cat "$T/err")"
$P train --device /cpu:0,/cpu:0 --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "listed twice" "$T/err" || fail "repeated tower: $(cat "$T/err")"
$P train --device /cpu:0 --param-device /cpu:0 --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "needs towers" "$T/err" || fail "param device alone: $(cat "$T/err")"
$P train --memory-fraction 1.5 --steps 1 > /dev/null 2> "$T/err"
[ $? -eq 2 ] && grep -q "must be a number in (0, 1]" "$T/err" || fail "memory fraction: $(cat "$T/err")"

# --memory-stats: the allocator's peak after the first step and at the end.
$P train $A --steps 2 --memory-stats > "$T/out" 2>&1 || fail "memory stats run: $(cat "$T/out")"
grep -q "^memory after the first step:" "$T/out" && grep -q "^memory at the end:" "$T/out" &&
    grep -q "^memory /device:CPU:0: in use [0-9]* B (peak [1-9][0-9]* B)" "$T/out" || fail "memory stats: $(cat "$T/out")"
# A device too small for the model: out of memory, named, exit 1.
$P train --batch-size 8 --train-limit 64 --test-limit 16 --steps 1 --memory-fraction 0.00001 > /dev/null 2> "$T/err"
rc=$?
if grep -q "GPU" "$T/err"; then # only an accelerator takes the fraction
    [ $rc -eq 1 ] && grep -q "out of memory on /device:GPU:0 allocating" "$T/err" || fail "tiny memory: $(cat "$T/err")"
fi

# The default device (PoCL here) learns: the loss falls over 60 steps.
$P train --batch-size 32 --train-limit 2048 --test-limit 256 --steps 60 > "$T/out" 2>/dev/null || fail "default device"
grep -q "test accuracy" "$T/out" || fail "default device: no accuracy line"
first=$(sed -n 's/^step 10 loss //p' "$T/out")
last=$(sed -n 's/^step 60 loss //p' "$T/out")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.8 * a) }' ||
    fail "default device: loss $first at step 10, $last at step 60"

# Towers on two PoCL devices: two towers of 16 equal one device at 32.
if POCL_DEVICES="pthread pthread" $P devices 2>/dev/null | grep -q "/device:GPU:1"; then
    TA="--batch-size 32 --train-limit 512 --test-limit 64 --steps 4"
    POCL_DEVICES="pthread pthread" $P train $TA --device /gpu:0,/gpu:1 --log-device-placement \
        --save "$T/towers.npz" > "$T/out" 2>&1 || fail "towers run: $(cat "$T/out")"
    grep -q "average/fc1_w/mean: (Mul): /job:localhost/replica:0/task:0/device:CPU:0" "$T/out" ||
        fail "towers: no averaged gradient on /cpu:0"
    grep -q "gradients_1/.*Conv2DBackpropFilter): /job:localhost/replica:0/task:0/device:GPU:1" "$T/out" ||
        fail "towers: tower 1's backward is not on GPU:1"
    POCL_DEVICES="pthread pthread" $P train $TA --device /gpu:0 --save "$T/one.npz" > /dev/null 2>&1 ||
        fail "one-device run"
    /usr/bin/python3 - "$T/towers.npz" "$T/one.npz" <<'PY' || fail "towers differ from one device"
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert sorted(a.files) == sorted(b.files), (a.files, b.files)
for k in a.files:
    if k == "train_state":
        continue
    # Sums in another order (two halves, then their mean) differ by ulps;
    # where that flips a near-tie of a max-pool window, the gradient moves
    # to the window's other element, a step of lr x that gradient: 5e-4 of
    # the array's largest value bounds both over 4 steps (a wrong average,
    # e.g. a sum not halved, is off by half the update, far above it).
    scale = np.abs(b[k]).max()
    tol = (5e-4 if "Momentum" not in k else 2e-3) * scale + 1e-6
    assert np.abs(a[k] - b[k]).max() <= tol, (k, np.abs(a[k] - b[k]).max(), scale)
assert a["global_step"].ravel()[0] == 4
PY
fi
echo PASS
