"""Tensors of every rank through the Python module (issue 42): 0-d to 6-d
numpy arrays and torch tensors round-trip through every public call that
takes them, with their rank and shape as given. Run in tests/test_python.py's
process (imported there)."""
import unittest

import numpy as np
import torch

import polydnn

SHAPES = [(), (5,), (3, 4), (2, 3, 5), (2, 1, 3, 4), (2, 3, 1, 2, 3), (1, 2, 3, 1, 2, 2)]


def data(shape, seed):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


def devices():
    return [polydnn.default_context().device("/cpu:0")] + [d for d in polydnn.devices() if d.backend == "opencl"][:1]


class Ranks(unittest.TestCase):
    def test_tensor_attributes_and_round_trips(self):
        for i, shape in enumerate(SHAPES):
            a = data(shape, i)
            with self.subTest(shape=shape):
                for t in (polydnn.from_numpy(a), polydnn.from_dlpack(torch.from_numpy(a.copy())),
                          polydnn.from_dlpack(a.copy())):
                    self.assertEqual(t.shape, shape)
                    self.assertEqual(t.ndim, len(shape))
                    self.assertEqual(t.size, a.size)
                    self.assertEqual(t.nbytes, 4 * a.size)
                    self.assertIn("dtype=float32", repr(t))
                    if shape:
                        self.assertEqual(len(t), shape[0])
                    else:
                        with self.assertRaises(TypeError):
                            len(t)
                    np.testing.assert_array_equal(np.asarray(t), a)
                    np.testing.assert_array_equal(t.numpy(), a)
                    back = torch.from_dlpack(t)
                    self.assertEqual(tuple(back.shape), shape)
                    np.testing.assert_array_equal(back.numpy(), a)
                    for dev in devices():
                        d = t.to(dev)
                        self.assertEqual(d.shape, shape)
                        np.testing.assert_array_equal(np.asarray(d), a)  # a copy for a device tensor
                e = polydnn.empty(shape)
                self.assertEqual((e.shape, e.layout), (shape, "X" if len(shape) == 1 else
                                                       "NCHW" if len(shape) == 4 else "ND"))

    def test_zero_copy_both_ways(self):
        a = torch.zeros(2, 3, 5)
        t = polydnn.from_dlpack(a)
        a[1, 2, 4] = 7.0
        self.assertEqual(t.numpy()[1, 2, 4], 7.0)
        b = torch.from_dlpack(t)
        b[0, 0, 0] = -1.0
        self.assertEqual(a[0, 0, 0].item(), -1.0)

    def test_ops_take_and_give_every_rank(self):
        for dev in devices():
            for i, shape in enumerate(SHAPES):
                a, b = data(shape, 10 + i), data(shape[1:], 20 + i)  # b broadcasts from the right
                with self.subTest(device=dev.name, shape=shape):
                    x = polydnn.from_numpy(a, device=dev)
                    for got, want in ((polydnn.relu(x), np.maximum(a, 0)),
                                      (polydnn.sigmoid(x), 1 / (1 + np.exp(-a))),
                                      (polydnn.clip(x, -1, 1), np.clip(a, -1, 1)),
                                      (polydnn.add(x, x), a + a),
                                      (polydnn.reshape(x, (a.size,)), a.reshape(-1))):
                        self.assertEqual(got.shape, want.shape)
                        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
                    if shape:
                        c = polydnn.concat([x, x], axis=-1)
                        np.testing.assert_array_equal(np.asarray(c), np.concatenate([a, a], axis=-1))
                    y = polydnn.reshape(polydnn.from_numpy(a.reshape(-1), device=dev), shape)
                    self.assertEqual(y.shape, shape)
                    np.testing.assert_array_equal(np.asarray(y), a)

    def test_matmul_is_numpys(self):
        cases = [((3,), (3,)), ((4,), (4, 5)), ((5, 4), (4,)), ((7, 4), (4, 5)), ((2, 7, 4), (4, 5)),
                 ((2, 7, 4), (2, 4, 5)), ((3, 1, 7, 4), (2, 4, 5)), ((2, 1, 3, 1, 5, 4), (2, 1, 3, 4, 3))]
        for dev in devices():
            for i, (sa, sb) in enumerate(cases):
                a, b = data(sa, 30 + i), data(sb, 40 + i)
                with self.subTest(device=dev.name, a=sa, b=sb):
                    c = polydnn.matmul(polydnn.from_numpy(a, device=dev), polydnn.from_numpy(b, device=dev))
                    want = np.matmul(a, b)
                    self.assertEqual(c.shape, want.shape)
                    np.testing.assert_allclose(np.asarray(c), want, rtol=1e-4, atol=1e-5)
        a, b = data((2, 4, 7), 50), data((2, 5, 4), 51)
        c = polydnn.matmul(a, b, transpose_a=True, transpose_b=True)
        np.testing.assert_allclose(np.asarray(c), np.matmul(a.transpose(0, 2, 1), b.transpose(0, 2, 1)), rtol=1e-4,
                                   atol=1e-5)

    def test_graph_and_session_keep_ranks(self):
        for i, shape in enumerate(SHAPES):
            with self.subTest(shape=shape):
                g = polydnn.Graph()
                x = g.placeholder(shape)
                k = g.constant(data(shape, 60 + i))
                y = g.relu(g.add(x, k))
                r = g.reshape(y, (int(np.prod(shape, dtype=np.int64)),))
                v = g.variable(shape=shape, initializer="glorot_uniform", seed=3)
                self.assertEqual((x.shape, y.shape, v.shape), (shape, shape, shape))
                s = polydnn.Session(g)
                a = data(shape, 70 + i)
                got, flat = s.run([y, r], {x: a}, as_numpy=True)
                want = np.maximum(a + data(shape, 60 + i), 0)
                self.assertEqual(got.shape, shape)
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(flat, want.reshape(-1), rtol=1e-6, atol=1e-6)
                self.assertEqual(s.run(v).shape, shape)
                s.close()

    def test_version(self):
        self.assertRegex(polydnn.__version__, r"^\d+\.\d+\.\d+$")
        self.assertEqual(polydnn.__version__, polydnn.version())


if __name__ == "__main__":
    unittest.main()
