#!/bin/sh
# polydnn train --precision (issue 43), short: fp16 and bf16 runs train
# (the loss falls), fp16's dynamic loss scale shows its history, a run
# started at 2^24 backs off and still trains, an fp16 run stopped and
# resumed from its checkpoint (the scale and its counter in it) equals an
# uninterrupted one bit for bit, and bad flags are usage errors.
# Fashion-MNIST's accuracy after 3 epochs: make check-precision-train.
set -u
P=./polydnn
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
A="--device /cpu:0 --batch-size 8 --train-limit 64 --test-limit 16"

# The loss of the run's last step line, and of its first.
first_loss() { sed -n 's/^step [0-9]* loss \([0-9.]*\)$/\1/p' "$1" | head -1; }
last_loss() { sed -n 's/^step [0-9]* loss \([0-9.]*\)$/\1/p' "$1" | tail -1; }
falls() { /usr/bin/python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b < 0.8 * a else 1)" "$1" "$2"; }

for p in fp32 fp16 bf16; do
    $P train $A --epochs 6 --precision $p > "$T/$p.out" 2>"$T/$p.err" || fail "$p run failed: $(tail -3 "$T/$p.err")"
    f=$(first_loss "$T/$p.out"); l=$(last_loss "$T/$p.out")
    falls "$f" "$l" || fail "$p: the loss did not fall: $f -> $l"
    echo "ok $p: loss $f -> $l"
done
grep -q "^loss scale: 32768 from step 0" "$T/fp16.out" || fail "fp16: no loss scale history: $(tail -3 "$T/fp16.out")"
grep -q "^loss scale" "$T/fp32.out" "$T/bf16.out" && fail "a loss scale without fp16 or --loss-scale"
# The fp16 and bf16 runs are not the fp32 one (the policy casts).
cmp -s "$T/fp32.out" "$T/fp16.out" && fail "fp16 printed what fp32 did"

# From 2^24 the scale must back off: halvings (skipped steps), then training.
$P train $A --epochs 6 --precision fp16 --loss-scale 16777216 > "$T/big.out" 2>/dev/null || fail "2^24 run failed"
grep -q "loss scale 1.67772e+07 -> 8.38861e+06 (a gradient was not finite" "$T/big.out" ||
    fail "2^24: no back-off: $(grep 'loss scale' "$T/big.out" | head -3)"
f=$(first_loss "$T/big.out"); l=$(last_loss "$T/big.out")
falls "$f" "$l" || fail "2^24: the loss did not fall after the back-off: $f -> $l"
grep "^loss scale:" "$T/big.out"

# Resume: 4 steps = 2 steps, saved, then 2 more from the checkpoint.
$P train $A --precision fp16 --loss-scale 16777216 --steps 4 --save "$T/a.npz" >/dev/null 2>&1 || fail "run a"
$P train $A --precision fp16 --loss-scale 16777216 --steps 2 --save "$T/b.npz" >/dev/null 2>&1 || fail "run b"
$P train $A --precision fp16 --loss-scale 16777216 --load "$T/b.npz" --steps 2 --save "$T/c.npz" >/dev/null 2>&1 ||
    fail "resume c"
/usr/bin/python3 - "$T/a.npz" "$T/b.npz" "$T/c.npz" <<'PY' || fail "the resumed fp16 run differs"
import sys, numpy as np
a, b, c = (np.load(p) for p in sys.argv[1:])
assert sorted(a.files) == sorted(c.files), (a.files, c.files)
assert "loss_scale" in a.files and "loss_scale-good_steps" in a.files, a.files
for k in a.files:
    assert np.array_equal(a[k], c[k]), k
# the scale moved in the first two steps (2^24 overflows), so the
# checkpoint carried a scale that was not the initial one
assert b["loss_scale"].ravel()[0] < 16777216, b["loss_scale"]
print("resumed bit for bit; scale", a["loss_scale"].ravel()[0])
PY

# --model: an ONNX CNN (conv, batch norm, pool, linear) in fp16 trains and
# exports its float32 weights (ONNX Runtime runs the export).
py=${PYTHON_ONNX:-${PYTHON_TORCH:-}}
if [ -n "$py" ] && "$py" -c 'import torch, onnx, onnxruntime' >/dev/null 2>&1; then
    "$py" - "$T/cnn.onnx" <<'PY' 2>/dev/null || fail "exporting the CNN"
import sys, torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                        torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 10)).eval()
torch.onnx.export(m, torch.randn(1, 1, 28, 28), sys.argv[1], input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=13)
PY
    $P train --model "$T/cnn.onnx" $A --batch-size 16 --train-limit 320 --epochs 2 --precision fp16 \
        --loss-scale 16777216 --export "$T/out.onnx" > "$T/model.out" 2>/dev/null || fail "--model fp16 run failed"
    grep -q "^loss scale: 1.67772e+07 from step 0, 8.38861e+06 from step 1" "$T/model.out" ||
        fail "--model fp16: no back-off: $(grep 'loss scale' "$T/model.out" | tail -2)"
    "$py" - "$T/out.onnx" <<'PY' || fail "the fp16-trained export"
import sys, numpy as np, onnx, onnxruntime as ort
m = onnx.load(sys.argv[1])
assert all(t.data_type == onnx.TensorProto.FLOAT for t in m.graph.initializer)
y = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"]).run(
    None, {"x": np.zeros((2, 1, 28, 28), np.float32)})[0]
assert np.isfinite(y).all(), y
PY
    echo "ok --model fp16"
else
    echo "SKIP --model: no Python with torch, onnx and onnxruntime (set PYTHON_ONNX)"
fi

# Bad flags.
$P train $A --precision fp8 >/dev/null 2>"$T/err"; [ $? -eq 2 ] || fail "--precision fp8: exit code"
grep -q "expected fp32, fp16 or bf16, got 'fp8'" "$T/err" || fail "--precision fp8: $(cat "$T/err")"
$P train $A --precision fp16 --loss-scale 0.5 >/dev/null 2>"$T/err"; [ $? -eq 2 ] || fail "--loss-scale 0.5: exit code"
grep -q "at least 1" "$T/err" || fail "--loss-scale 0.5: $(cat "$T/err")"
echo "PASS"
