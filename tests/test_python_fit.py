"""Python training of a user's model: TrainableOnnxModel.fit (Keras's fit
for a fixed-batch model) against a loop of train_step, and
polydnn.torch.fit (a torch module exported, trained on polydnn, its
weights loaded back) against torch.optim on the same batches.
Needs numpy, torch, onnx and onnxruntime."""
import copy
import os
import sys
import tempfile
import unittest

import numpy as np
import torch

import polydnn
import polydnn.torch as pt


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.b1 = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = torch.max_pool2d(torch.relu(self.b1(self.c1(x))), 2)
        return self.fc(torch.flatten(y, 1))


def data(n, seed):
    r = np.random.default_rng(seed)
    y = r.integers(0, 3, n).astype(np.int64)
    x = r.normal(0, 1, (n, 2, 8, 8)).astype(np.float32)
    x[:, 0, :, :4] += y[:, None, None] - 1.0  # learnable: class in the left half's level
    return x, y


class Fit(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        torch.manual_seed(2)
        self.net = Net()
        with torch.no_grad():  # batch-norm parameters away from 1 and 0
            self.net.b1.weight.uniform_(0.5, 1.5)
            self.net.b1.bias.uniform_(-0.5, 0.5)
        self.path = os.path.join(self.tmp.name, "net.onnx")
        torch.onnx.export(self.net.train(), torch.zeros(8, 2, 8, 8), self.path, opset_version=13,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["y"])

    def tearDown(self):
        self.tmp.cleanup()

    def load(self):
        return polydnn.load_onnx(self.path, device="/cpu:0", trainable=True, lr=0.1, momentum=0.9)

    def test_fit_is_train_step_in_the_drawn_order(self):
        x, y = data(20, 1)
        a, b = self.load(), self.load()
        hist = a.fit(x, y, epochs=2, seed=7, validation_data=(x[:11], y[:11]))
        losses = []
        for e in range(2):
            order = np.random.default_rng([7, e]).permutation(20)
            ep = [b.train_step(x[order[k * 8:(k + 1) * 8]], y[order[k * 8:(k + 1) * 8]]) for k in range(2)]
            losses.append(float(np.mean(ep)))
        pa, pb = a.parameters(), b.parameters()
        self.assertEqual(sorted(pa), sorted(pb))
        for k in pa:
            np.testing.assert_array_equal(pa[k], pb[k], err_msg=k)
        np.testing.assert_allclose(hist["loss"], losses, rtol=1e-6)
        self.assertEqual(sorted(hist), ["accuracy", "loss", "val_accuracy", "val_loss"])
        self.assertTrue(all(len(v) == 2 for v in hist.values()))
        # accuracy and val_loss against the model's own outputs, the last batch padded
        out = np.concatenate([b.evaluate(np.concatenate([x[:8]]))[:8], b.evaluate(np.concatenate([x[8:11]] +
                                                                                                 [x[10:11]] * 5))[:3]])
        self.assertAlmostEqual(hist["val_accuracy"][-1], float(np.mean(out.argmax(1) == y[:11])))
        z = out.astype(np.float64) - out.max(1, keepdims=True)
        ce = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(11), y[:11]])
        self.assertAlmostEqual(hist["val_loss"][-1], ce, places=5)
        self.assertAlmostEqual(a.accuracy(x[:11], y[:11]), hist["val_accuracy"][-1])

    def test_fit_refuses_bad_data(self):
        m = self.load()
        x, y = data(20, 1)
        with self.assertRaisesRegex(ValueError, "as many labels"):
            m.fit(x, y[:5])
        with self.assertRaisesRegex(ValueError, "per image"):
            m.fit(x[:, :1], y)
        with self.assertRaisesRegex(ValueError, "make no batch of 8"):
            m.fit(x[:5], y[:5])
        with self.assertRaisesRegex(KeyError, "no variable named 'nope'"):
            m.set_parameters({"nope": np.zeros(3)})
        w = m.parameters()["fc.weight"]
        m.set_parameters({"fc.weight": w + 1})
        np.testing.assert_array_equal(m.parameters()["fc.weight"], w + 1)

    def test_torch_fit_equals_torch_optim(self):
        x, y = data(16, 3)
        ref = copy.deepcopy(self.net).train()
        opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for k in range(2):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x[k * 8:(k + 1) * 8])),
                                                     torch.from_numpy(y[k * 8:(k + 1) * 8]))
            loss.backward()
            opt.step()
        self.net.eval()  # fit keeps the module's mode
        hist = pt.fit(self.net, x, y, epochs=1, batch_size=8, device="/cpu:0", lr=0.1, momentum=0.9, shuffle=False)
        self.assertFalse(self.net.training)
        self.assertEqual(len(hist["loss"]), 1)
        got, want = self.net.state_dict(), ref.state_dict()
        for k in want:
            if k.endswith("num_batches_tracked"):
                self.assertEqual(int(got[k]), int(want[k]), k)
            else:
                np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)

    def test_torch_fit_trains_and_refuses(self):
        x, y = data(64, 4)
        before = float(torch.nn.functional.cross_entropy(self.net.eval()(torch.from_numpy(x)), torch.from_numpy(y)))
        pt.fit(self.net, torch.from_numpy(x), torch.from_numpy(y), epochs=5, batch_size=8, device="/cpu:0", lr=0.05,
               momentum=0.9)
        after = float(torch.nn.functional.cross_entropy(self.net.eval()(torch.from_numpy(x)), torch.from_numpy(y)))
        self.assertLess(after, before * 0.8)
        with self.assertRaisesRegex(TypeError, "torch.nn.Module"):
            pt.fit(lambda t: t, x, y)
        with self.assertRaisesRegex(ValueError, r"\(N, C, H, W\)"):
            pt.fit(self.net, x[0], y)


class DwNet(torch.nn.Module):
    """Net with a depthwise convolution, whose filter an NHWC import holds
    as HWIO (a plain one as OHWI)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(2, 4, 3, padding=1)
        self.b1 = torch.nn.BatchNorm2d(4)
        self.dw = torch.nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.fc = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return self.fc(torch.flatten(torch.max_pool2d(self.dw(y), 2), 1))


class Nhwc(unittest.TestCase):
    def test_nhwc_training_equals_nchw_and_exports_oihw(self):
        import onnx
        from onnx import numpy_helper
        with tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(5)
            path = os.path.join(tmp, "dw.onnx")
            torch.onnx.export(DwNet().train(), torch.zeros(8, 2, 8, 8), path, opset_version=13,
                              training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
            x, y = data(8, 6)
            for dev in ("/cpu:0", polydnn.default_context().device().name):
                got = {}
                for df in ("NCHW", "NHWC"):
                    m = polydnn.load_onnx(path, device=dev, trainable=True, lr=0.1, momentum=0.9, data_format=df)
                    losses = [m.train_step(x, y) for _ in range(3)]
                    out = os.path.join(tmp, df + ".onnx")
                    m.export(out)
                    inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer}
                    got[df] = (losses, m.parameters(), inits)
                np.testing.assert_allclose(got["NHWC"][0], got["NCHW"][0], rtol=1e-5, err_msg=dev)
                for k, v in got["NCHW"][1].items():
                    self.assertEqual(got["NHWC"][1][k].shape, v.shape, k)
                    np.testing.assert_allclose(got["NHWC"][1][k], v, rtol=1e-4, atol=1e-5, err_msg=dev + " " + k)
                for k, v in got["NCHW"][2].items():
                    np.testing.assert_allclose(got["NHWC"][2][k], v, rtol=1e-4, atol=1e-5, err_msg=dev + " " + k)
                # set_parameters takes OIHW under NHWC too
                m.set_parameters({"dw.weight": got["NCHW"][1]["dw.weight"] * 2})
                np.testing.assert_allclose(m.parameters()["dw.weight"], got["NCHW"][1]["dw.weight"] * 2, rtol=1e-6)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
