"""float16 and bfloat16 from Python (issue 43): dtype names, numpy float16
in from_numpy and numpy()/__array__, bfloat16 refused by numpy with the way
round it, polydnn.cast against numpy's rounding, and torch half and
bfloat16 through DLPack both ways without a copy. Run by test_python.py
(imported there) or alone."""
import unittest

import numpy as np
import torch
import torch.nn.functional as F
import torch.utils.dlpack
from torch.nn.grad import conv2d_input, conv2d_weight

import polydnn
from test_torch import back, devices, on, rnd


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


# --- against PyTorch, op by op (issue 43's first "Checked" item) -------------

DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
# machine epsilon, the spacing of the dtype's values in [1, 2): 10 and 7 stored mantissa bits
EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
# polydnn sums in float32 and rounds once to the dtype (the host by
# definition, OpenCL's kernels likewise): within half an ulp of the exact
# result, plus float32's order of summation (~K * 2^-24 of the sum, far
# below an ulp). The float32 reference rounded once is within half an ulp
# too, so the two differ by at most one rounding step, 1 ulp of the element:
# at most EPS times the output's largest magnitude. torch's bfloat16 CPU
# kernels round on the way in places: measured against float32 rounded once
# on these inputs, 2-D matmul 1.35 ulps (1.56 from the exact product),
# average and max pooling's backward 0.80 and 0.52, batch norm's y 0.69 and
# saved inverse std 0.84. So 2 EPS: 2^-9 of the largest magnitude for
# float16, 2^-6 for bfloat16. (Largest errors measured over this grid on
# the host and PoCL: bfloat16 1.35, matmul against torch's; float16 0.82,
# the bias gradient, one rounding step at an element near the largest.)
ULPS = 2
# shape, filter, stride, padding, dilation, groups; every forward with a bias
PREC_CONV_CASES = [
    ((3, 5, 9, 11), (4, 5, 3, 3), 1, 1, 1, 1),
    ((3, 5, 9, 11), (6, 5, 3, 3), 2, (1, 2), 1, 1),  # stride 2, unequal padding
    ((3, 6, 9, 11), (4, 3, 3, 3), 1, 2, 2, 2),  # groups, dilation
    ((3, 5, 9, 11), (5, 1, 3, 3), 2, 1, 1, 5),  # depthwise, stride 2
    ((3, 5, 9, 11), (7, 5, 1, 1), 1, 0, 1, 1),  # 1x1
    ((3, 32, 9, 11), (8, 32, 3, 3), 1, 1, 1, 1),  # sums of 288 products
]
# kernel, stride, padding: overlapping 3x3/2 (padded and not) and 2x2/2
PREC_POOL_CASES = [(3, 2, 1), (3, 2, 0), (2, 2, 0)]


def prec_devices():
    """devices() (the host, the first OpenCL device) and the first CUDA device if there is one."""
    cuda = [d.name for d in polydnn.devices() if d.backend == "cuda"]
    return devices() + cuda[:1]


def torch_ref(dt, f, *ts):
    """f(*ts) for torch tensors ts of dtype dt: torch's own kernel in dt where
    CPU torch has one (torch 1.13: all of these ops in bfloat16, none in
    float16), else f in float32 on the same (dt-rounded) values with each
    result rounded once to dt. f returns a tensor or a tuple of them."""
    try:
        out = f(*ts)
    except RuntimeError as e:
        if "not implemented for" not in str(e):
            raise
        out = f(*[t.float() for t in ts])
        out = out.to(dt) if isinstance(out, torch.Tensor) else tuple(o.to(dt) for o in out)
    return out


def grad_of(fwd, x, dy, *args):
    """dL/dx of y = fwd(x, *args) given dy, by torch's autograd."""
    x = x.detach().requires_grad_()
    return torch.autograd.grad(fwd(x, *args), x, dy)[0]


class TorchPrecision(unittest.TestCase):
    """conv2d (forward; backward data, filter, bias), max and average pooling
    (forward, backward), matmul and batch norm (training and inference
    forward, backward) in float16 and bfloat16 through polydnn's Python API,
    on every device polydnn lists (host, OpenCL, CUDA) and in NCHW and NHWC,
    against PyTorch on the same dtype-rounded inputs. The reference is CPU
    torch in the dtype where it has the kernel (torch 1.13: every op here
    in bfloat16) and otherwise torch in float32 rounded once to the dtype
    (torch 1.13: every op in float16); torch_ref says which. Tolerance:
    ULPS ulps of the dtype at the output's largest magnitude (see ULPS).
    Grouped and depthwise gradients included: every device computes them."""

    def cases(self):
        for dt in DTYPES:
            for dev in prec_devices():
                for cl in (False, True):
                    yield dt, dev, cl

    def check(self, got, want, what, layout=None):
        """got (a polydnn Tensor) equals want (torch, in the dtype) within ULPS."""
        dt = want.dtype
        self.assertEqual(got.dtype, DTYPES[dt], what)
        if layout:
            self.assertEqual(got.layout, layout, what)
        g, w = back(got).float(), want.float()
        if w.dim() == 1:  # a per-channel vector: polydnn's is (C, 1, 1, 1)
            g = g.reshape(-1)
        self.assertEqual(tuple(g.shape), tuple(w.shape), what)
        scale = w.abs().max().item()
        err = (g - w).abs().max().item()
        ulps = err / (EPS[dt] * scale)
        self.assertLessEqual(ulps, ULPS, "%s: max error %.3g is %.2f ulps of %s at the largest magnitude %.3g"
                             % (what, err, ulps, DTYPES[dt], scale))

    def test_conv2d_forward_and_backward(self):
        for dt, dev, cl in self.cases():
            layout = "NHWC" if cl else "NCHW"
            for i, (xs, ws, s, p, d, g) in enumerate(PREC_CONV_CASES):
                with self.subTest(dtype=DTYPES[dt], device=dev, layout=layout, case=i):
                    x, w, b = rnd(xs, i, cl).to(dt), rnd(ws, 10 + i).to(dt), rnd((ws[0],), 20 + i).to(dt)
                    want = torch_ref(dt, lambda x, w, b: F.conv2d(x, w, b, s, p, d, g), x, w, b)
                    dy = rnd(want.shape, 30 + i, cl).to(dt)
                    px, pdy = on(dev, x, dy)
                    pw, pb = on(dev, w, b, role="filter")
                    self.check(polydnn.conv2d(px, pw, pb, s, p, d, g), want, "conv2d", layout)
                    self.check(polydnn.conv2d_backward_data(xs, pw, pdy, s, p, d, g),
                               torch_ref(dt, lambda w, dy: conv2d_input(xs, w, dy, s, p, d, g), w, dy),
                               "conv2d_backward_data", layout)
                    self.check(polydnn.conv2d_backward_filter(px, ws, pdy, s, p, d, g),
                               torch_ref(dt, lambda x, dy: conv2d_weight(x, ws, dy, s, p, d, g), x, dy),
                               "conv2d_backward_filter", "OIHW")
                    self.check(polydnn.conv2d_backward_bias(pdy), torch_ref(dt, lambda dy: dy.sum((0, 2, 3)), dy),
                               "conv2d_backward_bias")

    def test_pooling_forward_and_backward(self):
        for dt, dev, cl in self.cases():
            layout = "NHWC" if cl else "NCHW"
            x = rnd((3, 5, 9, 11), 40, cl).to(dt)
            (px,) = on(dev, x)
            for k, s, p in PREC_POOL_CASES:
                modes = [("max", lambda t: F.max_pool2d(t, k, s, p))]
                for inc in (True, False) if p else (True,):
                    modes.append(("avg" if inc else "avg_exclude_pad",
                                  lambda t, inc=inc: F.avg_pool2d(t, k, s, p, count_include_pad=inc)))
                for mode, fwd in modes:
                    with self.subTest(dtype=DTYPES[dt], device=dev, layout=layout, k=k, s=s, p=p, mode=mode):
                        want = torch_ref(dt, fwd, x)
                        dy = rnd(want.shape, 41 + k + p, cl).to(dt)
                        (pdy,) = on(dev, dy)
                        if mode == "max":
                            y = polydnn.max_pool2d(px, k, s, p)
                            dx = polydnn.max_pool2d_backward(px, pdy, k, s, p)
                        else:
                            y = polydnn.avg_pool2d(px, k, s, p, count_include_pad=mode == "avg")
                            dx = polydnn.avg_pool2d_backward(px, pdy, k, s, p, count_include_pad=mode == "avg")
                        self.check(y, want, mode + "_pool2d", layout)
                        self.check(dx, torch_ref(dt, lambda x, dy: grad_of(fwd, x, dy), x, dy),
                                   mode + "_pool2d_backward", layout)

    def test_matmul(self):
        # matrices have no NCHW/NHWC: the layouts loop is the rank's cases
        # (a C API matrix (m, k, 1, 1) is the same bytes in either layout)
        cases = [((7, 37), (37, 6), False, False), ((2, 1, 7, 37), (3, 37, 6), False, False),  # batch broadcast
                 ((37, 7), (6, 37), True, True), ((7, 37, 1, 1), (37, 6, 1, 1), False, False)]
        for dt in DTYPES:
            for dev in prec_devices():
                for i, (sa, sb, ta, tb) in enumerate(cases):
                    with self.subTest(dtype=DTYPES[dt], device=dev, case=i):
                        a, b = rnd(sa, 50 + i).to(dt), rnd(sb, 60 + i).to(dt)
                        pa, pb = on(dev, a, b)

                        def mm(a, b):
                            if a.dim() == 4 and sa[2:] == (1, 1):  # image-layout matrices
                                return (a.flatten(1) @ b.flatten(1)).reshape(sa[0], sb[1], 1, 1)
                            return (a.transpose(-1, -2) if ta else a) @ (b.transpose(-1, -2) if tb else b)
                        self.check(polydnn.matmul(pa, pb, ta, tb), torch_ref(dt, mm, a, b), "matmul")

    def test_batch_norm_forward_and_backward(self):
        eps = 1e-5
        for dt, dev, cl in self.cases():
            layout = "NHWC" if cl else "NCHW"
            with self.subTest(dtype=DTYPES[dt], device=dev, layout=layout):
                x = (rnd((3, 5, 9, 11), 70, cl) * 3 + 1).to(dt)  # a mean away from 0
                gamma, beta = (rnd((5,), 71) * 0.5 + 1).to(dt), (rnd((5,), 72) * 0.5).to(dt)
                rm0, rv0 = (rnd((5,), 73) * 0.5).to(dt), (rnd((5,), 74) * 0.5 + 1).to(dt)
                dy = rnd(x.shape, 75, cl).to(dt)
                # training: y, the saved statistics and the running ones updated in place
                # (torch's are the tensors passed, or their float32 copies: returned here)
                def train(x, g, b, rm, rv):
                    y, sm, si = torch.native_batch_norm(x, g, b, rm, rv, True, 0.1, eps)
                    return y, sm, si, rm, rv
                y_t, sm_t, si_t, rm_t, rv_t = torch_ref(dt, train, x, gamma, beta, rm0.clone(), rv0.clone())
                px, pdy = on(dev, x, dy)
                prm, prv = on(dev, rm0.clone(), rv0.clone())
                y, sm, si = polydnn.batch_norm(px, gamma, beta, prm, prv, True, 0.1, eps)
                self.check(y, y_t, "batch_norm training", layout)
                self.check(sm, sm_t, "batch_norm saved mean")
                self.check(si, si_t, "batch_norm saved inverse std")
                self.check(prm, rm_t, "batch_norm running mean")
                self.check(prv, rv_t, "batch_norm running variance")
                # inference, from the running statistics
                want = torch_ref(dt, lambda x, g, b, rm, rv: F.batch_norm(x, rm, rv, g, b, False, 0.1, eps),
                                 x, gamma, beta, rm0, rv0)
                prm, prv = on(dev, rm0, rv0)
                self.check(polydnn.batch_norm(px, gamma, beta, prm, prv, training=False, eps=eps), want,
                           "batch_norm inference", layout)
                # backward, from polydnn's saved statistics (in the dtype, as torch's in bfloat16)
                sm_p, si_p = back(sm).reshape(-1), back(si).reshape(-1)
                want = torch_ref(dt, lambda dy, x, g, m, s: torch.ops.aten.native_batch_norm_backward(
                    dy, x, g, None, None, m, s, True, eps, [True, True, True]), dy, x, gamma, sm_p, si_p)
                dx, dg, db = polydnn.batch_norm_backward(px, pdy, gamma, sm, si, eps)
                self.check(dx, want[0], "batch_norm_backward dx", layout)
                self.check(dg, want[1], "batch_norm_backward dgamma")
                self.check(db, want[2], "batch_norm_backward dbeta")


if __name__ == "__main__":
    unittest.main()
