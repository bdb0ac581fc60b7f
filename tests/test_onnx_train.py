"""Training an imported ONNX model (issue 44) against PyTorch: one SGD
step of a small CNN (conv + batch norm + relu + pool, conv + batch norm +
ReLU6, a Gemm) gives torch's weights and running statistics; the exported
model runs in ONNX Runtime as polydnn runs it; a toy set's loss goes down;
the optimizers (SGD with momentum, Nesterov and L2 weight decay, Adam,
AdamW) match torch.optim step by step; a tiny vision transformer (layer
norm, GELU, batched and broadcast MatMul, Transpose/Reshape, Concat,
Split and Slice, broadcast Add and Mul of parameters) takes torch's SGD
step. Needs torch, onnx and onnxruntime."""
import copy
import csv
import os
import re
import signal
import subprocess
import tempfile
import time
import unittest

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import TensorProto, helper, numpy_helper

import polydnn


def devices():
    """/cpu:0 and the OpenCL device when there is one."""
    return ["/cpu:0"] + [d.name for d in polydnn.devices() if d.backend == "opencl"][:1]


class Net(torch.nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.c1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.b1 = torch.nn.BatchNorm2d(4)
        self.c2 = torch.nn.Conv2d(4, 6, 3, padding=1, bias=False)
        self.b2 = torch.nn.BatchNorm2d(6)
        self.fc = torch.nn.Linear(6 * 4 * 4, 3)
        self.drop = torch.nn.Dropout(dropout)

    def forward(self, x):
        y = torch.max_pool2d(torch.relu(self.b1(self.c1(x))), 2)
        y = torch.clamp(self.b2(self.c2(y)), 0.0, 6.0)
        return self.fc(self.drop(torch.flatten(y, 1)))


def to_onnx(net, path, batch, dropout=None, shared=False):
    """net as an ONNX model written node by node (BatchNormalization kept
    apart from its Conv, as a training export has it). shared: c1's bias
    and b1's bias (equal) are one initializer, b1 reading it through an
    Identity, as torch.onnx shares equal initializers."""
    sd = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    inits = []
    extra = []
    if shared:
        np.testing.assert_array_equal(sd["c1.bias"], sd["b1.bias"])
        extra.append(helper.make_node("Identity", ["c1.bias"], ["b1.bias"]))

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a, dtype=np.float32), name))
        return name

    def bn(prefix, x, out):
        bias = prefix + ".bias" if shared and prefix == "b1" else init(prefix + ".bias", sd[prefix + ".bias"])
        return helper.make_node("BatchNormalization", [x, init(prefix + ".weight", sd[prefix + ".weight"]), bias,
                                                       init(prefix + ".running_mean", sd[prefix + ".running_mean"]),
                                                       init(prefix + ".running_var", sd[prefix + ".running_var"])],
                                [out], epsilon=1e-5, momentum=0.9)

    nodes = extra + [
        helper.make_node("Conv", ["x", init("c1.weight", sd["c1.weight"]), init("c1.bias", sd["c1.bias"])], ["a1"],
                         pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        bn("b1", "a1", "n1"),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", init("c2.weight", sd["c2.weight"])], ["a2"], pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        bn("b2", "a2", "n2"),
        helper.make_node("Clip", ["n2", init("lo", np.float32(0)), init("hi", np.float32(6))], ["r2"]),
        helper.make_node("Flatten", ["r2"], ["f"], axis=1),
    ]
    last = "f"
    if dropout is not None:
        nodes.append(helper.make_node("Dropout", ["f", init("ratio", np.float32(dropout))], ["d"]))
        last = "d"
    nodes.append(helper.make_node("Gemm", [last, init("fc.weight", sd["fc.weight"]), init("fc.bias", sd["fc.bias"])],
                                  ["y"], transB=1))
    g = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def T(a, dev):
    """A polydnn Tensor of the array a on device dev."""
    return polydnn.from_dlpack(torch.from_numpy(np.ascontiguousarray(a))).to(dev)


def batch(n, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 2, 8, 8)).astype(np.float32), rng.integers(0, 3, n).astype(np.int32)


class OneStep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        torch.manual_seed(4)
        self.net = Net()
        with torch.no_grad():  # batch-norm parameters away from 1 and 0
            for b in (self.net.b1, self.net.b2):
                b.weight.uniform_(0.5, 1.5)
                b.bias.uniform_(-0.5, 0.5)
                b.running_mean.uniform_(-0.2, 0.2)
                b.running_var.uniform_(0.5, 2.0)
        self.path = os.path.join(self.tmp.name, "net.onnx")
        to_onnx(self.net, self.path, 8)

    def tearDown(self):
        self.tmp.cleanup()

    def test_one_sgd_step_equals_torch(self):
        x, y = batch(8, 1)
        ref = Net()
        ref.load_state_dict(self.net.state_dict())
        ref.train()
        opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y).long())
        opt.zero_grad()
        loss.backward()
        opt.step()
        want = {k: v.detach().numpy() for k, v in ref.state_dict().items() if "num_batches" not in k}
        for dev in devices():
            with self.subTest(device=dev):
                m = polydnn.load_onnx(self.path, device=dev, trainable=True, optimizer="sgd", lr=0.1)
                got_loss = m.train_step(x, y)
                self.assertAlmostEqual(got_loss, float(loss), delta=1e-5)
                params = m.parameters()
                for k, w in want.items():
                    self.assertIn(k, params)
                    np.testing.assert_allclose(params[k].reshape(w.shape), w, atol=1e-4, rtol=0, err_msg=k)

    def test_towers_from_python_take_torch_step_over_the_halves(self):
        # load_onnx(device=[A, B]): each tower normalizes its half with its own
        # batch statistics, the loss is the halves' mean, and tower 0's rows
        # alone move the running statistics
        devs = devices()
        if len(devs) < 2:
            self.skipTest("no OpenCL device for a second tower")
        x, y = batch(8, 1)
        ref = Net()
        ref.load_state_dict(self.net.state_dict())
        ref.train()
        opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y).long()
        loss = (torch.nn.functional.cross_entropy(ref(xt[:4]), yt[:4]) +
                torch.nn.functional.cross_entropy(ref(xt[4:]), yt[4:])) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = Net()
        first.load_state_dict(self.net.state_dict())
        first.train()
        first(xt[:4])
        want = {k: (first if "running" in k else ref).state_dict()[k].detach().numpy()
                for k in ref.state_dict() if "num_batches" not in k}
        for order in (devs, devs[::-1]):
            with self.subTest(devices=order):
                m = polydnn.load_onnx(self.path, device=order, trainable=True, optimizer="sgd", lr=0.1)
                self.assertEqual((m.towers, m.inputs[0].shape[0]), (2, 4))
                self.assertAlmostEqual(m.train_step(x, y), float(loss), delta=1e-5)
                params = m.parameters()
                for k, w in want.items():
                    np.testing.assert_allclose(params[k].reshape(w.shape), w, atol=1e-4, rtol=0, err_msg=k)
        with self.assertRaisesRegex(ValueError, "does not split evenly over 3 towers"):
            polydnn.load_onnx(self.path, device=devs + devs[:1], trainable=True)
        with self.assertRaisesRegex(ValueError, "needs towers"):
            polydnn.load_onnx(self.path, device=devs[0], trainable=True, param_device="/cpu:0")
        with self.assertRaisesRegex(ValueError, "needs trainable=True"):
            polydnn.load_onnx(self.path, device=devs)
        m = polydnn.load_onnx(self.path, device=devs, trainable=True, batch=16, param_device=devs[1])
        with self.assertRaisesRegex(ValueError, "takes 16 rows"):
            m.train_step(x, y)
        hist = m.fit(np.concatenate([x, x]), np.concatenate([y, y]), epochs=2)
        self.assertEqual(len(hist["loss"]), 2)
        with self.assertRaisesRegex(ValueError, "runs at the batch it was loaded with"):
            m(x[:3])  # a session at another batch would start from the initial weights

    def test_a_torch_training_export_trains_as_torch_does(self):
        # torch.onnx.export in training mode keeps BatchNormalization apart,
        # with its running statistics as extra outputs that nothing reads
        torch.manual_seed(6)
        net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                  torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 3))
        path = os.path.join(self.tmp.name, "torch.onnx")
        torch.onnx.export(net.train(), torch.zeros(8, 2, 8, 8), path, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])
        ref = copy.deepcopy(net).train()
        opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        m = polydnn.load_onnx(path, trainable=True, optimizer="sgd", lr=0.1, momentum=0.9)
        for s in range(2):
            x, y = batch(8, 20 + s)
            loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            self.assertAlmostEqual(m.train_step(x, y), float(loss), delta=1e-5)
        got = m.parameters()
        for k, w in ref.state_dict().items():
            if "num_batches" not in k:
                np.testing.assert_allclose(got[k].reshape(w.shape), w.numpy(), atol=1e-4, rtol=0, err_msg=k)
        # exported for inference: ONNX Runtime uses the running statistics, as torch's eval() does
        out = os.path.join(self.tmp.name, "torch-trained.onnx")
        m.export(out)
        self.assertEqual([len(n.output) for n in onnx.load(out).graph.node if n.op_type == "BatchNormalization"], [1])
        x, _ = batch(8, 30)
        ort = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(ort, ref.eval()(torch.from_numpy(x)).detach().numpy(), atol=1e-4, rtol=0)
        np.testing.assert_allclose(m.evaluate(x), ort, atol=1e-5, rtol=0)

    def test_export_runs_in_onnxruntime_as_in_polydnn(self):
        for dev in devices():
            with self.subTest(device=dev):
                m = polydnn.load_onnx(self.path, device=dev, trainable=True, optimizer="sgd", lr=0.05,
                                      momentum=0.9)
                for s in range(3):
                    m.train_step(*batch(8, 10 + s))
                x, _ = batch(8, 99)
                mine = m.evaluate(x)
                out = os.path.join(self.tmp.name, "trained.onnx")
                self.assertEqual(m.export(out), 13)  # weights, biases, batch norms; not the Clip bounds
                ort = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
                np.testing.assert_allclose(mine, ort, atol=1e-5, rtol=0)
                before = onnxruntime.InferenceSession(self.path, providers=["CPUExecutionProvider"]).run(
                    None, {"x": x})[0]
                self.assertGreater(np.abs(before - ort).max(), 1e-3)  # the weights did change
                # polydnn runs the exported model (inference import, batch norm folded) the same way
                again = polydnn.load_onnx(out, device=dev)(x, as_numpy=True)
                np.testing.assert_allclose(again, ort, atol=1e-5, rtol=0)

    def test_an_initializer_shared_through_identity_is_untied(self):
        with torch.no_grad():
            self.net.c1.bias.zero_()
            self.net.b1.bias.zero_()
        path = os.path.join(self.tmp.name, "shared.onnx")
        to_onnx(self.net, path, 8, shared=True)
        x, y = batch(8, 5)
        ref = Net()
        ref.load_state_dict(self.net.state_dict())
        opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        m = polydnn.load_onnx(path, trainable=True, optimizer="sgd", lr=0.1)
        for _ in range(2):
            loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
            m.train_step(x, y)
        p = m.parameters()
        np.testing.assert_allclose(p["c1.bias"], ref.c1.bias.detach().numpy(), atol=1e-4, rtol=0)
        np.testing.assert_allclose(p["b1.bias"], ref.b1.bias.detach().numpy(), atol=1e-4, rtol=0)
        out = os.path.join(self.tmp.name, "shared-trained.onnx")
        m.export(out)
        model = onnx.load(out)
        self.assertNotIn("Identity", [n.op_type for n in model.graph.node])
        self.assertIn("b1.bias", [i.name for i in model.graph.initializer])
        ort = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(m.evaluate(x), ort, atol=1e-5, rtol=0)

    def test_a_model_with_more_than_64_variables_takes_a_step(self):
        # the train op reads one update per variable (MobileNetV2: 158)
        rng = np.random.default_rng(2)
        inits, nodes, last = [], [], "x"
        for i in range(40):
            inits.append(numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32) * 0.5, "w%d" % i))
            inits.append(numpy_helper.from_array(np.zeros(4, np.float32), "b%d" % i))
            nodes.append(helper.make_node("Gemm", [last, "w%d" % i, "b%d" % i], ["h%d" % i]))
            last = "h%d" % i
        g = helper.make_graph(nodes, "deep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, [2, 4])], initializer=inits)
        path = os.path.join(self.tmp.name, "deep.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
        m = polydnn.load_onnx(path, trainable=True, optimizer="sgd", lr=0.01)
        before = m.parameters()["w0"].copy()
        self.assertTrue(np.isfinite(m.train_step(np.ones((2, 4), np.float32), [1, 2])))
        self.assertEqual(len(m.parameters()), 80)
        self.assertGreater(np.abs(m.parameters()["w0"] - before).max(), 0)

    def test_dropout_is_active_in_training_only(self):
        path = os.path.join(self.tmp.name, "drop.onnx")
        to_onnx(self.net, path, 8, dropout=0.5)
        x, y = batch(8, 3)
        m = polydnn.load_onnx(path, trainable=True, optimizer="sgd", lr=0.0)
        ort = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_allclose(m.evaluate(x), ort, atol=1e-5, rtol=0)
        # with lr 0 nothing moves but the running statistics; two steps at
        # different global steps draw different masks, so different losses
        l1, l2 = m.train_step(x, y), m.train_step(x, y)
        self.assertTrue(np.isfinite(l1) and np.isfinite(l2))
        self.assertNotEqual(l1, l2)

    def test_loss_decreases_on_a_two_class_toy_set(self):
        rng = np.random.default_rng(7)
        y = rng.integers(0, 2, 64).astype(np.int32)
        x = rng.standard_normal((64, 2, 8, 8)).astype(np.float32) * 0.5
        x[:, 0] += (y * 2 - 1)[:, None, None]  # class 1 bright in channel 0
        path = os.path.join(self.tmp.name, "toy.onnx")
        to_onnx(self.net, path, 16)
        m = polydnn.load_onnx(path, trainable=True, optimizer="adam", lr=0.01)
        losses = []
        for epoch in range(4):
            for b in range(4):
                losses.append(m.train_step(x[b * 16:(b + 1) * 16], y[b * 16:(b + 1) * 16]))
        self.assertLess(np.mean(losses[-4:]), 0.5 * np.mean(losses[:4]), losses)


class TinyViT(torch.nn.Module):
    """A vision-transformer block as torch exports it: a patch Conv, a
    class token (Expand, Concat), a position embedding (broadcast Add),
    pre-LayerNorm attention with two heads (MatMul of a rank-3 activation
    by a rank-2 weight, Reshape/Transpose, Split, batched MatMul,
    Softmax), a GELU MLP scaled per channel (broadcast Mul, ConvNeXt's
    layer scale), the class token sliced out for a linear head."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.d, self.h = d, heads
        self.patch = torch.nn.Conv2d(2, d, 4, stride=4)
        self.cls = torch.nn.Parameter(torch.randn(1, 1, d) * 0.5)
        self.pos = torch.nn.Parameter(torch.randn(1, 5, d) * 0.5)
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 2 * d)
        self.fc2 = torch.nn.Linear(2 * d, d)
        self.scale = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.head = torch.nn.Linear(d, 3)
        with torch.no_grad():  # layer norm parameters away from 1 and 0
            for ln in (self.ln1, self.ln2):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        b = x.shape[0]
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = torch.cat([self.cls.expand(b, -1, -1), t], 1) + self.pos
        qkv = self.qkv(self.ln1(t)).reshape(b, 5, 3, self.h, self.d // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = torch.softmax(q @ k.transpose(-2, -1) * (self.d // self.h) ** -0.5, -1)
        t = t + self.proj((a @ v).transpose(1, 2).reshape(b, 5, self.d))
        t = t + self.scale * self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(t))))
        return self.head(t[:, 0:1].flatten(1))


class TransformerStep(unittest.TestCase):
    def test_one_sgd_step_equals_torch(self):
        torch.manual_seed(3)
        net = TinyViT()
        x, y = batch(4, 7)
        with tempfile.TemporaryDirectory() as d:
            for opset in (13, 17):  # LayerNormalization decomposed (fused at import), then native
                path = os.path.join(d, "vit%d.onnx" % opset)
                torch.onnx.export(net, torch.from_numpy(x), path, opset_version=opset, do_constant_folding=False,
                                  training=torch.onnx.TrainingMode.TRAINING, input_names=["x"], output_names=["y"])
                ref = copy.deepcopy(net)
                opt = torch.optim.SGD(ref.parameters(), lr=0.1)
                loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)), torch.from_numpy(y).long())
                opt.zero_grad()
                loss.backward()
                opt.step()
                for dev in devices():
                    with self.subTest(opset=opset, device=dev):
                        m = polydnn.load_onnx(path, device=dev, trainable=True, optimizer="sgd", lr=0.1)
                        self.assertAlmostEqual(m.train_step(x, y), float(loss), delta=1e-5)
                        got = m.parameters()
                        for k, w in ref.state_dict().items():
                            w = w.numpy()
                            self.assertIn(k, got)
                            moved = np.abs(w - net.state_dict()[k].numpy()).max()
                            self.assertGreater(moved, 1e-4, k)  # every parameter takes a step
                            err = np.abs(got[k].reshape(w.shape) - w).max() / np.abs(w).max()
                            self.assertLess(err, 1e-5, k)
                        # the trained model, exported, runs in ONNX Runtime as in polydnn
                        out = os.path.join(d, "trained.onnx")
                        self.assertEqual(m.export(out), len(got))
                        ort = onnxruntime.InferenceSession(out, providers=["CPUExecutionProvider"]).run(
                            None, {"x": x})[0]
                        np.testing.assert_allclose(m.evaluate(x), ort, atol=1e-5, rtol=0)
                        np.testing.assert_allclose(ort, ref(torch.from_numpy(x)).detach().numpy(), atol=1e-5,
                                                   rtol=0)


class Optimizers(unittest.TestCase):
    """pdnn_optimizer_update against torch.optim, five steps each."""

    CASES = [
        ("sgd", dict(lr=0.1, momentum=0.9), torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
        ("sgd", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), torch.optim.SGD,
         dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
        ("sgd", dict(lr=0.1, weight_decay=0.05), torch.optim.SGD, dict(lr=0.1, weight_decay=0.05)),
        ("adam", dict(lr=0.01, weight_decay=0.1), torch.optim.Adam, dict(lr=0.01, weight_decay=0.1)),
        ("adamw", dict(lr=0.01, weight_decay=0.1), torch.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
    ]

    def test_against_torch(self):
        rng = np.random.default_rng(0)
        w0 = rng.standard_normal((3, 5, 1, 1)).astype(np.float32)
        grads = [rng.standard_normal(w0.shape).astype(np.float32) for _ in range(5)]
        for kind, mine, topt, theirs in self.CASES:
            p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
            opt = topt([p], **theirs)
            for g in grads:
                p.grad = torch.from_numpy(g.copy())
                opt.step()
            for dev in devices():
                with self.subTest(kind=kind, args=mine, device=dev):
                    w = T(w0, dev)
                    slots = [T(np.zeros_like(w0), dev) for _ in range(2)]
                    for step, g in enumerate(grads, 1):
                        polydnn.optimizer_update(w, T(g, dev), slots[0], slots[1], step, kind,
                                                 **mine)
                    np.testing.assert_allclose(w.numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)

    def test_nesterov_without_momentum_is_refused(self):
        w = T(np.zeros((1, 2, 1, 1), np.float32), "/cpu:0")
        with self.assertRaisesRegex(polydnn.Error, "nesterov needs SGD with momentum > 0"):
            polydnn.optimizer_update(w, w, None, None, 1, "sgd", lr=0.1, nesterov=True)


TOOL = os.environ.get("POLYDNN_TOOL")


@unittest.skipUnless(TOOL, "POLYDNN_TOOL (the polydnn tool) is not set")
class Cli(unittest.TestCase):
    """polydnn train --model on a toy .npz set (1 x 6 x 6 images padded to
    the model's 8 x 8 and tiled to its 2 channels)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        torch.manual_seed(0)
        to_onnx(Net(), os.path.join(self.d, "m.onnx"), 8, dropout=0.2)
        rng = np.random.default_rng(1)
        y = rng.integers(0, 2, 96).astype(np.float32)
        x = rng.standard_normal((96, 1, 6, 6)).astype(np.float32) * 0.5
        x[:, 0] += (y * 2 - 1)[:, None, None]
        np.savez(os.path.join(self.d, "toy.npz"), x=x, y=y)

    def tearDown(self):
        self.tmp.cleanup()

    def train(self, *args, check=True):
        cmd = [TOOL, "train", "--model", "m.onnx", "--npz", "toy.npz", "--batch", "8", "--seed", "5"] + list(args)
        r = subprocess.run(cmd, cwd=self.d, capture_output=True, text=True, timeout=600)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        return r

    def test_log_plot_schedule_and_export(self):
        self.train("--epochs", "3", "--val-split", "0.25", "--lr-schedule", "cosine", "--warmup", "2",
                   "--eval-every", "5", "--log", "log.csv", "--plot", "c.svg", "--export", "t.onnx",
                   "--optimizer", "adamw", "--lr", "0.01")
        with open(os.path.join(self.d, "log.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 27)  # 72 training images: 9 steps an epoch
        self.assertEqual([float(r["lr"]) for r in rows[:2]], [0.005, 0.01])  # warm-up
        self.assertLess(float(rows[-1]["lr"]), 1e-4)  # cosine's end
        self.assertLess(np.mean([float(r["loss"]) for r in rows[-3:]]),
                        0.5 * np.mean([float(r["loss"]) for r in rows[:3]]))
        self.assertEqual(sum(1 for r in rows if r["val_accuracy"]), 8)  # every 5 steps and each epoch's end
        with open(os.path.join(self.d, "c.svg")) as f:
            svg = f.read()
        self.assertEqual(svg.count("<polyline"), 3)
        x = np.load(os.path.join(self.d, "toy.npz"))["x"][:8]
        xin = np.zeros((8, 2, 8, 8), np.float32)
        xin[:, :, 1:7, 1:7] = x
        ort = onnxruntime.InferenceSession(os.path.join(self.d, "t.onnx"),
                                           providers=["CPUExecutionProvider"]).run(None, {"x": xin})[0]
        mine = polydnn.load_onnx(os.path.join(self.d, "t.onnx"))(xin, as_numpy=True)
        np.testing.assert_allclose(mine, ort, atol=1e-5, rtol=0)
        jl = self.train("--epochs", "1", "--log", "log.jsonl", "--json", "--val-split", "0.25")
        self.assertIn('"event": "eval"', jl.stdout)
        with open(os.path.join(self.d, "log.jsonl")) as f:
            first = f.readline()
        self.assertRegex(first, r'^\{"step": 1, "epoch": [0-9.]+, "loss": ')

    def test_early_stop_and_bad_flags(self):
        r = self.train("--epochs", "50", "--eval-every", "1", "--early-stop", "3", "--val-split", "0.25",
                       "--optimizer", "sgd", "--lr", "0")
        self.assertIn("early stop", r.stdout)
        self.assertLess(r.stdout.count("validation accuracy"), 10)
        for args, msg in ((["--lr-schedule", "linear"], "expected constant, step or cosine"),
                          (["--fit", "crop"], "expected pad or resize"),
                          (["--val-split", "2"], "--val-split '2'"),
                          (["--optimizer", "rmsprop"], "expected sgd, adam or adamw"),
                          (["--device", "/cpu:0,/cpu:0"], "listed twice"),
                          (["--param-device", "/cpu:0"], "needs towers"),
                          (["--device", "/cpu:0,/gpu:0,/gpu:1"], "does not split evenly over 3 towers")):
            r = self.train(*args, check=False)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(msg, r.stderr)

    def weights(self, name):
        return {i.name: numpy_helper.to_array(i) for i in onnx.load(os.path.join(self.d, name)).graph.initializer}

    def test_towers_take_the_whole_batch_step(self):
        # two towers (the host and the OpenCL device), the gradients averaged:
        # the step of the whole batch on one device, to rounding
        devs = devices()
        if len(devs) < 2:
            self.skipTest("no OpenCL device for a second tower")
        torch.manual_seed(2)
        net = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 8 * 8, 3))
        torch.onnx.export(net, torch.zeros(8, 2, 8, 8), os.path.join(self.d, "p.onnx"), opset_version=13,
                          input_names=["x"], output_names=["y"])
        base = ["train", "--model", "p.onnx", "--npz", "toy.npz", "--batch", "8", "--seed", "5", "--steps", "6",
                "--lr", "0.1", "--momentum", "0.9"]
        for dev, out in ((devs[0], "one.onnx"), (",".join(devs), "two.onnx"), (",".join(devs[::-1]), "owt.onnx")):
            r = subprocess.run([TOOL] + base + ["--device", dev, "--export", out], cwd=self.d, capture_output=True,
                               text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
        w0, one = self.weights("p.onnx"), self.weights("one.onnx")
        for k in one:
            self.assertGreater(np.abs(one[k] - w0[k]).max(), 1e-3, k)  # it trained
            for other in ("two.onnx", "owt.onnx"):
                np.testing.assert_allclose(self.weights(other)[k], one[k], atol=2e-6, rtol=0, err_msg=other + k)

    def test_reduced_precision_trains_batch_norm_clip_and_dropout(self):
        # the toy model (batch norm, ReLU6, Dropout) under --precision fp16 and
        # bf16, on one device and on towers: its loss falls, its export runs
        devs = devices()
        for prec in ("fp16", "bf16"):
            for dev in dict.fromkeys((devs[0], ",".join(devs))):
                r = self.train("--epochs", "3", "--precision", prec, "--device", dev, "--log", "l.csv",
                               "--export", "t.onnx", "--lr", "0.02")
                with open(os.path.join(self.d, "l.csv")) as f:
                    loss = [float(row["loss"]) for row in csv.DictReader(f)]
                self.assertLess(np.mean(loss[-3:]), 0.6 * np.mean(loss[:3]), "%s on %s: %s" % (prec, dev, r.stdout))
                x = np.zeros((8, 2, 8, 8), np.float32)
                x[:, :, 1:7, 1:7] = np.load(os.path.join(self.d, "toy.npz"))["x"][:8]
                ort = onnxruntime.InferenceSession(os.path.join(self.d, "t.onnx"),
                                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
                self.assertTrue(np.isfinite(ort).all())

    def test_towers_batch_norm_statistics_are_the_first_towers(self):
        # tower 0 alone updates the running statistics: after one step they are
        # those of a one-device run on tower 0's rows (lr 0 keeps the weights)
        devs = devices()
        if len(devs) < 2:
            self.skipTest("no OpenCL device for a second tower")
        torch.manual_seed(0)
        to_onnx(Net(), os.path.join(self.d, "m4.onnx"), 4, dropout=0.2)
        common = ["train", "--npz", "toy.npz", "--seed", "5", "--steps", "1", "--lr", "0"]
        for args in (["--model", "m.onnx", "--batch", "8", "--device", ",".join(devs[::-1]), "--save", "a.npz"],
                     ["--model", "m4.onnx", "--batch", "4", "--device", devs[1], "--save", "b.npz"]):
            r = subprocess.run([TOOL] + common + args, cwd=self.d, capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
        a, b = np.load(os.path.join(self.d, "a.npz")), np.load(os.path.join(self.d, "b.npz"))
        stats = [k for k in a.files if "running" in k]
        self.assertEqual(len(stats), 4)
        for k in stats:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        self.assertGreater(np.abs(a["b1.running_mean"]).max(), 1e-3)  # it moved from the initial zeros

    @unittest.skipUnless(os.path.exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"),
                         "no Fashion-MNIST in /usr/share/datasets/fashion-mnist")
    def test_idx_images_are_padded_and_tiled_to_the_model_input(self):
        # a 3 x 32 x 32 model on 28 x 28 gray images: padded by 2, gray in every channel
        torch.manual_seed(1)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2), torch.nn.ReLU(), torch.nn.Flatten(),
                                  torch.nn.Linear(4 * 15 * 15, 10))
        torch.onnx.export(net, torch.zeros(16, 3, 32, 32), os.path.join(self.d, "rgb.onnx"), opset_version=13,
                          input_names=["x"], output_names=["y"])
        for fit in ("pad", "resize"):
            r = subprocess.run([TOOL, "train", "--model", "rgb.onnx", "--batch", "16", "--epochs", "1",
                                "--train-limit", "320", "--test-limit", "160", "--optimizer", "adam", "--lr", "0.003",
                                "--fit", fit, "--log", "l.csv"], cwd=self.d, capture_output=True, text=True,
                               timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            acc = float(re.findall(r"test accuracy ([0-9.]+)", r.stdout)[-1])
            self.assertGreater(acc, 0.4, r.stdout)  # 10 classes: chance is 0.1
        r = subprocess.run([TOOL, "train", "--model", "m.onnx", "--batch", "8", "--steps", "1"], cwd=self.d,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 1)  # a 10-class data set on the toy's 3 classes
        self.assertIn("label", r.stderr)

    def test_resume_after_kill_ends_with_the_same_weights(self):
        args = ["--epochs", "6", "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--nesterov",
                "--lr-schedule", "step", "--val-split", "0.25"]
        self.train(*args, "--save", "whole.npz")
        p = subprocess.Popen([TOOL, "train", "--model", "m.onnx", "--npz", "toy.npz", "--batch", "8", "--seed", "5"]
                             + args + ["--save", "part.npz", "--checkpoint-every", "2"], cwd=self.d,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        part = os.path.join(self.d, "part.npz")
        deadline = time.time() + 300
        while not os.path.exists(part) and p.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        killed = p.poll() is None
        if killed:
            p.send_signal(signal.SIGKILL)
        p.wait()
        step = float(np.load(part)["global_step"][0])
        self.assertTrue(killed and step < 54, "the run ended before it could be killed (step %g)" % step)
        self.train(*args, "--save", "part.npz", "--load", "part.npz")
        a, b = np.load(os.path.join(self.d, "whole.npz")), np.load(part)
        self.assertEqual(sorted(a.files), sorted(b.files))
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k], err_msg="%s (resumed from step %g, killed %s)"
                                          % (k, step, killed))


if __name__ == "__main__":
    unittest.main()
