"""float16 and bfloat16 from Python (issue 43): dtype names, numpy float16
in from_numpy and numpy()/__array__, bfloat16 refused by numpy with the way
round it, polydnn.cast against numpy's rounding, and torch half and
bfloat16 through DLPack both ways without a copy. Run by test_python.py
(imported there) or alone."""
import unittest

import numpy as np
import torch
import torch.utils.dlpack

import polydnn


class Precision(unittest.TestCase):
    def test_numpy_float16_round_trips_and_computes(self):
        a = (np.arange(-12, 12, dtype=np.float32) / 7).astype(np.float16).reshape(2, 3, 4)
        t = polydnn.from_numpy(a)
        self.assertEqual(t.dtype, "float16")
        self.assertEqual(t.nbytes, a.size * 2)
        self.assertTrue(np.array_equal(np.asarray(t), a))
        y = np.asarray(polydnn.sigmoid(t))
        self.assertEqual(y.dtype, np.float16)
        # the contract: widen, compute in float32, round once
        want = (1 / (1 + np.exp(-a.astype(np.float32)))).astype(np.float16)
        self.assertTrue(np.abs(y.astype(np.float32) - want.astype(np.float32)).max() <= 2 ** -10)

    def test_cast_rounds_as_numpy(self):
        x = np.random.default_rng(43).standard_normal(1031).astype(np.float32) * 3e4
        x[:4] = [65519.99, 65520.0, 1e-8, -0.0]
        h = polydnn.cast(polydnn.from_numpy(x), "float16")
        self.assertEqual(h.dtype, "float16")
        with np.errstate(over="ignore"):
            self.assertTrue(np.array_equal(np.asarray(h).view(np.uint16), x.astype(np.float16).view(np.uint16)))
        back = polydnn.cast(h, "float32")
        self.assertTrue(np.array_equal(np.asarray(back), np.asarray(h).astype(np.float32)))
        with self.assertRaisesRegex(ValueError, "bfloat16"):
            polydnn.cast(h, "float64")

    def test_bfloat16_numpy_refused_by_name(self):
        b = polydnn.cast(polydnn.from_numpy(np.ones((2, 3), np.float32)), "bfloat16")
        self.assertEqual(b.dtype, "bfloat16")
        with self.assertRaisesRegex(TypeError, "no bfloat16.*cast"):
            np.asarray(b)

    def test_torch_half_and_bfloat16_zero_copy_both_ways(self):
        for tdt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
            src = torch.linspace(-3, 3, 60).reshape(3, 4, 5).to(tdt)
            p = polydnn.from_dlpack(src)
            self.assertEqual(p.dtype, name)
            src[0, 0, 0] = 1.5  # shared memory: seen through p
            back = torch.utils.dlpack.from_dlpack(p)
            self.assertEqual(back.dtype, tdt)
            self.assertEqual(back[0, 0, 0].item(), 1.5)
            # an op on the tensor torch lent, against torch's float32 rounded once
            y = torch.utils.dlpack.from_dlpack(polydnn.sigmoid(p))
            want = torch.sigmoid(src.float()).to(tdt)
            ulp = 2.0 ** (-10 if tdt == torch.float16 else -7)
            self.assertLessEqual((y.float() - want.float()).abs().max().item(), ulp)

    def test_conv_and_pool_keep_the_dtype_on_every_device(self):
        rng = np.random.default_rng(5)
        x = rng.standard_normal((2, 3, 8, 8)).astype(np.float16)
        w = rng.standard_normal((4, 3, 3, 3)).astype(np.float16)
        xt, wt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(w.astype(np.float32))
        want_pool = torch.nn.functional.max_pool2d(xt, 2).numpy().astype(np.float16)
        want_conv = torch.nn.functional.conv2d(xt, wt, padding=1).numpy()
        for dev in ("/cpu:0", "/gpu:0"):
            try:
                px = polydnn.from_numpy(x).to(dev)
            except polydnn.Error:
                continue  # no such device
            y = polydnn.max_pool2d(px, 2)
            self.assertEqual(y.dtype, "float16")
            self.assertTrue(np.array_equal(np.asarray(y.to("/cpu:0")), want_pool), dev)
            c = polydnn.conv2d(px, w, padding=1)  # numpy float16 taken as a filter, through DLPack
            self.assertEqual(c.dtype, "float16")
            got = np.asarray(c.to("/cpu:0")).astype(np.float32)
            # float32's sum rounded once: within an ulp of float16 (plus the
            # summation order's float32 difference near zero)
            self.assertLessEqual(np.abs(got - want_conv).max(), 2 ** -10 * (np.abs(want_conv).max() + 1), dev)

    def test_mixed_dtypes_refused_naming_both(self):
        h = polydnn.from_numpy(np.ones(4, np.float16))
        f = polydnn.from_numpy(np.ones(4, np.float32))
        with self.assertRaisesRegex(polydnn.Error, "float16.*float32|float32.*float16"):
            polydnn.add(h, f)

    def test_graph_cast_and_policy(self):
        g = polydnn.Graph()
        with g.device("/cpu:0"):
            x = g.placeholder((2, 3))
            h = g.cast(x, "float16")
            g.set_precision("mixed_float16")
            w = g.constant(np.array([[1.0], [2.0], [3.0]], dtype=np.float32))
            y = g.matmul(x, w)  # the policy casts x and w to float16
        self.assertEqual(y.dtype, "float16")
        with self.assertRaisesRegex(ValueError, "mixed_float16"):
            g.set_precision("float8")
        with self.assertRaisesRegex(ValueError, "'float16' or 'bfloat16'"):
            g.cast(x, "int32")
        v = np.array([[0.1, 70000.0, 1 / 3], [1, 2, 3]], dtype=np.float32)
        with polydnn.Session(g) as sess:
            hv, yv = sess.run([h, y], {x: v})
        with np.errstate(over="ignore"):  # 70000 is float16's infinity
            v16 = v.astype(np.float16)
            want = (v16.astype(np.float32) @ np.array([1, 2, 3], np.float32)).astype(np.float16)
        self.assertTrue(np.array_equal(np.asarray(hv), v16))
        self.assertTrue(np.array_equal(np.asarray(yv).ravel(), want), (np.asarray(yv), want))


if __name__ == "__main__":
    unittest.main()
