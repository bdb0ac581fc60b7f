"""The backward ops of the Python module and polydnn.torch (autograd
Functions and nn.Modules: conv2d, pooling, batch norm) against PyTorch, on the host and on an OpenCL
device (PoCL) when there is one. Run by tests/test_python.sh through
tests/test_python.py, or alone with the same environment."""
import subprocess
import sys
import unittest
import warnings

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

import polydnn
import polydnn.torch as pt

GC = dict(eps=1e-3, atol=1e-2, rtol=1e-2)  # float32 gradcheck (the ops are float32)


def gradcheck(f, inputs):
    with warnings.catch_warnings():  # it warns about float32 inputs; float32 is the point here
        warnings.filterwarnings("ignore", "Input #\\d+ requires gradient and is not a double", UserWarning)
        return torch.autograd.gradcheck(f, inputs, **GC)


def devices():
    """The host, and the first OpenCL device if there is one."""
    out = ["/cpu:0"]
    for d in polydnn.devices():
        if d.backend == "opencl":
            out.append(d.name)
            break
    return out


def rnd(shape, seed, channels_last=False, grad=False):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(shape, generator=g) * 2 - 1
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last)
    return t.requires_grad_(grad)


def on(dev, *ts, role="activation"):
    """polydnn Tensors of torch tensors ts on dev (a copy off the host)."""
    out = [polydnn.from_dlpack(t, role=role) for t in ts]
    return [x if dev == "/cpu:0" else x.to(dev) for x in out]


def back(y):
    return torch.from_dlpack(y.to("/cpu:0"))


# shape, filter, stride, padding, dilation, groups
CONV_CASES = [
    ((2, 3, 7, 7), (4, 3, 3, 3), 1, 1, 1, 1),
    ((1, 4, 8, 7), (6, 4, 3, 3), 2, 1, 1, 1),
    ((2, 4, 9, 9), (4, 2, 3, 3), 1, 2, 2, 2),  # groups, dilation
    ((1, 6, 6, 6), (6, 1, 3, 3), 2, 0, 1, 6),  # depthwise, stride 2, no padding
    ((3, 2, 5, 5), (3, 2, 1, 1), 1, 0, 1, 1),  # 1x1
]
# kernel, stride, padding, ceil_mode (ceil_mode gives the asymmetric windows)
POOL_CASES = [(2, 2, 0, False), (3, 2, 1, True), (3, 1, 1, False), (2, 3, 1, True)]


class BackwardOps(unittest.TestCase):
    """polydnn.conv2d_backward_* and *_pool2d_backward against torch."""

    def test_conv_against_torch_nn_grad(self):
        for dev in devices():
            for cl in (False, True):
                for i, (xs, ws, s, p, d, g) in enumerate(CONV_CASES):
                    with self.subTest(device=dev, channels_last=cl, case=i):
                        x, dy0 = rnd(xs, i, cl), None
                        w = rnd(ws, 10 + i)
                        ys = F.conv2d(x, w, stride=s, padding=p, dilation=d, groups=g).shape
                        dy0 = rnd(ys, 20 + i, cl)
                        px, pdy = on(dev, x, dy0)
                        (pw,) = on(dev, w, role="filter")
                        dx = polydnn.conv2d_backward_data(xs, pw, pdy, stride=s, padding=p, dilation=d, groups=g)
                        self.assertEqual(dx.device.name, polydnn.default_context().device(dev).name)
                        self.assertEqual(dx.layout, "NHWC" if cl else "NCHW")
                        torch.testing.assert_close(back(dx), conv2d_input(xs, w, dy0, s, p, d, g),
                                                   rtol=1e-4, atol=1e-4)
                        dw = polydnn.conv2d_backward_filter(px, ws, pdy, stride=s, padding=p, dilation=d, groups=g)
                        self.assertEqual(dw.layout, "OIHW")
                        torch.testing.assert_close(back(dw), conv2d_weight(x, ws, dy0, s, p, d, g),
                                                   rtol=1e-4, atol=1e-4)
                        db = polydnn.conv2d_backward_bias(pdy)
                        self.assertEqual(db.shape, (ws[0],))
                        torch.testing.assert_close(back(db), dy0.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)

    def test_conv_algorithm_by_name(self):
        # every backward algorithm that applies (stride 1, ungrouped) gives torch's
        # gradient; a name of the other direction or of none is refused
        x, w = rnd((2, 4, 7, 6), 1), rnd((5, 4, 3, 3), 2)
        dy = rnd((2, 5, 7, 6), 3)
        for dev in devices():
            px, pdy = on(dev, x, dy)
            (pw,) = on(dev, w, role="filter")
            names = ["auto", "direct"] + (["forward_gemm", "implicit_gemm"] if dev != "/cpu:0" else [])
            for name in names:
                with self.subTest(device=dev, algorithm=name):
                    dx = polydnn.conv2d_backward_data(x.shape, pw, pdy, padding=1, algorithm=name)
                    torch.testing.assert_close(back(dx), conv2d_input(x.shape, w, dy, 1, 1, 1, 1),
                                               rtol=1e-4, atol=1e-4)
            for name in ["auto", "direct"] + (["forward_gemm", "split"] if dev != "/cpu:0" else []):
                with self.subTest(device=dev, algorithm=name):
                    dw = polydnn.conv2d_backward_filter(px, w.shape, pdy, padding=1, algorithm=name)
                    torch.testing.assert_close(back(dw), conv2d_weight(x, w.shape, dy, 1, 1, 1, 1),
                                               rtol=1e-4, atol=1e-4)
        with self.assertRaisesRegex(ValueError, "unknown backward data algorithm 'split'"):
            polydnn.conv2d_backward_data(x.shape, w, dy, padding=1, algorithm="split")

    def test_conv_filter_gemm_by_name(self):
        # OpenCL's "gemm" filter gradient: channels-last at stride 2 with
        # padding (a GEMM per tap), and 1x1 channels-first (C = 24, not a
        # multiple of its 16-lane vectors); a shape it does not run is refused
        cases = [((3, 16, 9, 7), (20, 16, 3, 3), 2, 1, True), ((2, 24, 6, 5), (12, 24, 1, 1), 1, 0, False)]
        for dev in devices()[1:]:
            for xs, ws, s, p, cl in cases:
                x = rnd(xs, 1, cl)
                dy = rnd((xs[0], ws[0], (xs[2] + 2 * p - ws[2]) // s + 1, (xs[3] + 2 * p - ws[3]) // s + 1), 3, cl)
                px, pdy = on(dev, x, dy)
                with self.subTest(device=dev, x=xs, w=ws, channels_last=cl):
                    dw = polydnn.conv2d_backward_filter(px, ws, pdy, stride=s, padding=p, algorithm="gemm")
                    torch.testing.assert_close(back(dw), conv2d_weight(x, ws, dy, s, p),
                                               rtol=1e-4, atol=1e-4)
            px, pdy = on(dev, rnd((2, 4, 7, 6), 1), rnd((2, 5, 7, 6), 3))
            with self.assertRaisesRegex(Exception, "gemm"):
                polydnn.conv2d_backward_filter(px, (5, 4, 3, 3), pdy, padding=1, algorithm="gemm")

    def test_conv_nhwc_data_format_and_same_padding(self):
        # TensorFlow's reading: x (N, H, W, C), w (H, W, I, O); shapes given in that order too
        x = rnd((2, 6, 5, 3), 1)  # N H W C
        w = rnd((3, 3, 3, 4), 2)  # H W I O
        dy = rnd((2, 6, 5, 4), 3)
        xt, wt, dyt = x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), dy.permute(0, 3, 1, 2)
        dx = polydnn.conv2d_backward_data(x.shape, w, dy, padding="same", data_format="NHWC")
        self.assertEqual((dx.shape, dx.layout), ((2, 3, 6, 5), "NHWC"))
        torch.testing.assert_close(torch.from_dlpack(dx), conv2d_input(xt.shape, wt, dyt, padding=1),
                                   rtol=1e-4, atol=1e-4)
        dw = polydnn.conv2d_backward_filter(x, w.shape, dy, padding="same", data_format="NHWC")
        self.assertEqual((dw.shape, dw.layout), ((4, 3, 3, 3), "HWIO"))
        torch.testing.assert_close(torch.from_dlpack(dw), conv2d_weight(xt, wt.shape, dyt, padding=1),
                                   rtol=1e-4, atol=1e-4)
        db = polydnn.conv2d_backward_bias(dy, data_format="NHWC")
        torch.testing.assert_close(torch.from_dlpack(db), dy.sum((0, 1, 2)), rtol=1e-4, atol=1e-4)

    def test_pool_against_torch_autograd(self):
        for dev in devices():
            for cl in (False, True):
                for k, s, p, ceil in POOL_CASES:
                    x = rnd((2, 3, 9, 8), k * 7 + s, cl, grad=True)
                    for mode in ("max", "avg_inc", "avg_exc"):
                        with self.subTest(device=dev, channels_last=cl, k=k, s=s, p=p, ceil=ceil, mode=mode):
                            if mode == "max":
                                y = F.max_pool2d(x, k, s, p, ceil_mode=ceil)
                            else:
                                y = F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=mode == "avg_inc")
                            dy = rnd(y.shape, 99, cl)
                            (ref,) = torch.autograd.grad(y, x, dy)
                            px, pdy = on(dev, x.detach(), dy)
                            if mode == "max":
                                dx = polydnn.max_pool2d_backward(px, pdy, k, s, p, ceil_mode=ceil)
                            else:
                                dx = polydnn.avg_pool2d_backward(px, pdy, k, s, p, ceil_mode=ceil,
                                                                 count_include_pad=mode == "avg_inc")
                            self.assertEqual(dx.layout, "NHWC" if cl else "NCHW")
                            torch.testing.assert_close(back(dx), ref, rtol=1e-5, atol=1e-6)

    def test_argument_checks(self):
        x, w, dy = rnd((1, 2, 5, 5), 1), rnd((3, 2, 3, 3), 2), rnd((1, 3, 3, 3), 3)
        with self.assertRaisesRegex(TypeError, "stride must be an integer"):
            polydnn.conv2d_backward_data(x.shape, w, dy, stride=1.5)
        with self.assertRaisesRegex(ValueError, r"padding\[1\] is 4294967297, out of range"):
            polydnn.conv2d_backward_filter(x, w.shape, dy, padding=(0, 2 ** 32 + 1))
        with self.assertRaisesRegex(ValueError, "data_format must be"):
            polydnn.conv2d_backward_data(x.shape, w, dy, data_format="NCWH")
        with self.assertRaisesRegex(ValueError, "input_shape must be a sequence of 4"):
            polydnn.conv2d_backward_data((1, 2, 5), w, dy)
        with self.assertRaisesRegex(TypeError, r"weight_shape\[0\] must be an integer"):
            polydnn.conv2d_backward_filter(x, (3.0, 2, 3, 3), dy)
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):  # dy is not the forward's output
            polydnn.conv2d_backward_data(x.shape, w, rnd((1, 3, 4, 4), 4))
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.max_pool2d_backward(x, rnd((1, 2, 3, 3), 5), 2)  # 5x5 / 2 gives 2x2
        with self.assertRaisesRegex(TypeError, "kernel_size"):
            polydnn.avg_pool2d_backward(x, dy, "2")


def f_conv(dev, s=1, p=1, d=1, g=1):
    return lambda x, w, b: pt.conv2d(x, w, b, s, p, d, g, device=dev)


class Gradcheck(unittest.TestCase):
    """torch.autograd.gradcheck of each Function, in float32."""

    def test_conv2d(self):
        for dev in devices():
            for i, (s, p, d, g) in enumerate(((1, 1, 1, 1), (2, (1, 0), 1, 1), (1, 2, 2, 2))):
                with self.subTest(device=dev, case=i):
                    x = rnd((2, 2, 6, 5), i, grad=True)
                    w = rnd((4, 2 // g, 3, 3), 10 + i, grad=True)
                    b = rnd((4,), 20 + i, grad=True)
                    self.assertTrue(gradcheck(f_conv(dev, s, p, d, g), (x, w, b)))

    def test_conv2d_channels_last(self):
        for dev in devices():
            with self.subTest(device=dev):
                x = rnd((1, 3, 5, 5), 1, channels_last=True, grad=True)
                w = rnd((2, 3, 3, 3), 2, grad=True)
                self.assertTrue(gradcheck(lambda x, w: pt.conv2d(x, w, None, 1, "same", device=dev), (x, w)))

    def test_pools(self):
        for dev in devices():
            for k, s, p, ceil in POOL_CASES:
                with self.subTest(device=dev, k=k, s=s, p=p, ceil=ceil):
                    # distinct values keep max pooling away from ties, where it is not differentiable
                    x = (torch.randperm(2 * 7 * 6, generator=torch.Generator().manual_seed(k + s)).float() / 20)
                    x = x.reshape(1, 2, 7, 6).requires_grad_()
                    self.assertTrue(gradcheck(
                        lambda t: pt.max_pool2d(t, k, s, p, ceil_mode=ceil, device=dev), (x,)))
                    for inc in (True, False):
                        self.assertTrue(gradcheck(
                            lambda t: pt.avg_pool2d(t, k, s, p, ceil, inc, device=dev), (x,)))


class MatchTorchFunctional(unittest.TestCase):
    """Forward and backward through polydnn.torch equal torch.nn.functional's."""

    def test_conv2d_grid(self):
        for dev in devices():
            for cl in (False, True):
                for i, (xs, ws, s, p, d, g) in enumerate(CONV_CASES):
                    for bias in (True, False):
                        with self.subTest(device=dev, channels_last=cl, case=i, bias=bias):
                            x = rnd(xs, i, cl, grad=True)
                            w = rnd(ws, 10 + i, grad=True)
                            b = rnd((ws[0],), 20 + i, grad=True) if bias else None
                            y = pt.conv2d(x, w, b, s, p, d, g, device=dev)
                            ref = F.conv2d(x, w, b, s, p, d, g)
                            torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
                            self.assertEqual(y.is_contiguous(memory_format=torch.channels_last) and xs[1] > 1, cl)
                            dy = rnd(ref.shape, 30 + i)
                            ins = (x, w, b) if bias else (x, w)
                            for a, r in zip(torch.autograd.grad(y, ins, dy), torch.autograd.grad(ref, ins, dy)):
                                torch.testing.assert_close(a, r, rtol=1e-4, atol=1e-4)

    def test_pool_grid(self):
        for dev in devices():
            for cl in (False, True):
                for k, s, p, ceil in POOL_CASES:
                    x = rnd((2, 3, 9, 8), k + 3 * s, cl, grad=True)
                    pairs = [(pt.max_pool2d(x, k, s, p, ceil_mode=ceil, device=dev),
                              F.max_pool2d(x, k, s, p, ceil_mode=ceil))]
                    for inc in (True, False):
                        pairs.append((pt.avg_pool2d(x, k, s, p, ceil, inc, device=dev),
                                      F.avg_pool2d(x, k, s, p, ceil, inc)))
                    for j, (y, ref) in enumerate(pairs):
                        with self.subTest(device=dev, channels_last=cl, k=k, s=s, p=p, ceil=ceil, op=j):
                            torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6)
                            dy = rnd(ref.shape, 40 + j)
                            torch.testing.assert_close(torch.autograd.grad(y, x, dy)[0],
                                                       torch.autograd.grad(ref, x, dy)[0], rtol=1e-5, atol=1e-6)

    def test_only_the_gradients_asked_for(self):
        x, w = rnd((1, 2, 5, 5), 1), rnd((3, 2, 3, 3), 2, grad=True)
        y = pt.conv2d(x, w, None, device="/cpu:0")
        (gw,) = torch.autograd.grad(y.sum(), (w,))  # x needs none: backward_data is not run
        torch.testing.assert_close(gw, torch.autograd.grad(F.conv2d(x, w).sum(), (w,))[0], rtol=1e-4, atol=1e-4)


def chunk(t):
    """The bytes the allocator takes for t's elements (src/core/bfc.c rounds to 256)."""
    return -(-t.numel() * 4 // 256) * 256


class DataMovement(unittest.TestCase):
    def test_host_is_zero_copy(self):
        host = polydnn.default_context().device("/cpu:0")
        x = rnd((2, 3, 8, 8), 1, grad=True)
        w = rnd((4, 3, 3, 3), 2, grad=True)
        before = host.memory_stats()["bytes_in_use"]
        y = pt.conv2d(x, w, None, 1, 1, device="/cpu:0")
        # inputs are imported, not copied: the only new host memory is y's
        self.assertEqual(host.memory_stats()["bytes_in_use"] - before, chunk(y))
        gx, gw = torch.autograd.grad(y, (x, w), torch.ones_like(y))
        self.assertEqual(host.memory_stats()["bytes_in_use"] - before, sum(chunk(t) for t in (y, gx, gw)))

    def test_opencl_keeps_forward_uploads_for_backward(self):
        devs = devices()
        if len(devs) < 2:
            self.skipTest("no OpenCL device")
        gpu = polydnn.default_context().device(devs[1])
        x = rnd((2, 3, 8, 8), 1, grad=True)
        w = rnd((4, 3, 3, 3), 2, grad=True)
        base = gpu.memory_stats()["bytes_in_use"]
        y = pt.conv2d(x, w, None, 1, 1, device=gpu)
        self.assertEqual(y.device, torch.device("cpu"))  # downloaded
        held = gpu.memory_stats()["bytes_in_use"] - base
        self.assertGreaterEqual(held, (x.numel() + w.numel()) * 4)  # the uploads, saved for backward
        gx, gw = torch.autograd.grad(y, (x, w), torch.ones_like(y))
        torch.testing.assert_close(gx, torch.autograd.grad(F.conv2d(x, w, padding=1), x, torch.ones_like(y))[0],
                                   rtol=1e-4, atol=1e-4)
        del y, gx, gw
        self.assertEqual(gpu.memory_stats()["bytes_in_use"], base)  # nothing left once the graph is gone

    def test_dtype_and_device_checks(self):
        with self.assertRaisesRegex(TypeError, "input is torch.float64; polydnn's ops are float32"):
            pt.conv2d(torch.zeros(1, 1, 3, 3, dtype=torch.float64), torch.zeros(1, 1, 1, 1))
        with self.assertRaisesRegex(TypeError, "weight is torch.float16"):
            pt.conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1, dtype=torch.float16))
        with self.assertRaisesRegex(polydnn.Error, "/gpu:99"):
            pt.max_pool2d(torch.zeros(1, 1, 4, 4), 2, device="/gpu:99")
        with self.assertRaisesRegex(polydnn.Error, "/gpu:99"):
            pt.set_device("/gpu:99")
        self.assertEqual(pt.get_device(), polydnn.default_context().device())  # unchanged by the failure
        with self.assertRaisesRegex(TypeError, "device must be"):
            pt.conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1), device=0)
        with self.assertRaisesRegex(ValueError, "dilation"):
            pt.MaxPool2d(2, dilation=2)
        with self.assertRaisesRegex(ValueError, "divisor_override"):
            pt.AvgPool2d(2, divisor_override=3)
        with self.assertRaisesRegex(TypeError, "stride must be an integer"):
            pt.conv2d(torch.zeros(1, 1, 3, 3), torch.zeros(1, 1, 1, 1), stride=1.0)

    def test_non_contiguous_inputs(self):
        x = rnd((2, 8, 3, 6), 1).transpose(1, 2)  # neither contiguous nor channels_last
        w = rnd((4, 3, 3, 3), 2)
        torch.testing.assert_close(pt.conv2d(x, w, device="/cpu:0"), F.conv2d(x, w), rtol=1e-4, atol=1e-4)

    def test_set_device(self):
        devs = devices()
        try:
            for d in devs:
                pt.set_device(d)
                self.assertEqual(pt.get_device().name, polydnn.default_context().device(d).name)
                m = pt.Conv2d(2, 3, 3)
                x = rnd((1, 2, 5, 5), 1)
                torch.testing.assert_close(m(x), F.conv2d(x, m.weight, m.bias), rtol=1e-4, atol=1e-4)
        finally:
            pt.set_device(None)

    def test_polydnn_imports_without_torch(self):
        code = ("import sys, polydnn; assert 'torch' not in sys.modules, 'torch imported';"
                "import polydnn.torch; assert 'torch' in sys.modules")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


class Modules(unittest.TestCase):
    def test_same_parameters_as_torch(self):
        torch.manual_seed(5)
        a = torch.nn.Conv2d(3, 4, (3, 2), stride=2, padding=1, groups=1, bias=True)
        torch.manual_seed(5)
        b = pt.Conv2d(3, 4, (3, 2), stride=2, padding=1, groups=1, bias=True)
        for k, v in a.state_dict().items():
            torch.testing.assert_close(b.state_dict()[k], v, rtol=0, atol=0)
        b.load_state_dict(a.state_dict())
        x = rnd((2, 3, 7, 6), 1)
        torch.testing.assert_close(b(x), a(x), rtol=1e-4, atol=1e-4)

    def test_padding_mode_and_pools(self):
        torch.manual_seed(1)
        a = torch.nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect")
        b = pt.Conv2d(2, 2, 3, padding=1, padding_mode="reflect", polydnn_device="/cpu:0")
        b.load_state_dict(a.state_dict())
        x = rnd((1, 2, 6, 6), 2)
        torch.testing.assert_close(b(x), a(x), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(pt.MaxPool2d(3, 2, 1, ceil_mode=True)(x),
                                   torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)(x))
        torch.testing.assert_close(pt.AvgPool2d(3, 2, 1, True, False)(x), torch.nn.AvgPool2d(3, 2, 1, True, False)(x))

    def test_training_matches_pure_torch(self):
        for dev, bn in [(d, bn) for d in devices() for bn in (False, True)]:
            with self.subTest(device=dev, batch_norm=bn):
                losses = []
                for mod in (torch.nn, pt):
                    kw = {} if mod is torch.nn else {"polydnn_device": dev}
                    torch.manual_seed(0)
                    norm = [mod.BatchNorm2d(4, **kw)] if bn else []
                    model = torch.nn.Sequential(
                        mod.Conv2d(1, 4, 3, padding=1, **kw), *norm, torch.nn.ReLU(), mod.MaxPool2d(2, **kw),
                        mod.Conv2d(4, 8, 3, padding=1, **kw), torch.nn.ReLU(), mod.MaxPool2d(2, **kw),
                        torch.nn.Flatten(), torch.nn.Linear(8 * 3 * 3, 3))
                    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
                    g = torch.Generator().manual_seed(1)
                    data = torch.randn(16, 1, 12, 12, generator=g)
                    labels = torch.randint(0, 3, (16,), generator=g)
                    data[labels == 1, :, :6] += 1.0  # learnable: the label shows in the image
                    data[labels == 2, :, :, :6] -= 1.0
                    curve = []
                    for _ in range(20):
                        opt.zero_grad()
                        loss = F.cross_entropy(model(data), labels)
                        loss.backward()
                        opt.step()
                        curve.append(loss.item())
                    losses.append(curve)
                ref, got = losses
                self.assertLess(ref[-1], 0.7 * ref[0])  # it learns, so the comparison means something
                torch.testing.assert_close(torch.tensor(got), torch.tensor(ref), rtol=1e-3, atol=1e-4)


class BatchNorm(unittest.TestCase):
    def pair(self, dev, **kw):
        torch.manual_seed(3)
        a = torch.nn.BatchNorm2d(3, **kw)
        b = pt.BatchNorm2d(3, polydnn_device=dev, **kw)
        if a.weight is not None:
            with torch.no_grad():
                a.weight.uniform_(0.5, 1.5)
                a.bias.uniform_(-0.5, 0.5)
        b.load_state_dict(a.state_dict())
        return a, b

    def check_step(self, a, b, x, seed):
        x = x.detach().requires_grad_()
        ya, yb = a(x), b(x)
        torch.testing.assert_close(yb, ya, rtol=1e-4, atol=1e-5)
        dy = rnd(ya.shape, seed)
        ins_a = [x] + [p for p in a.parameters()]
        ins_b = [x] + [p for p in b.parameters()]
        for ga, gb in zip(torch.autograd.grad(ya, ins_a, dy), torch.autograd.grad(yb, ins_b, dy)):
            torch.testing.assert_close(gb, ga, rtol=1e-4, atol=1e-4)
        for k, v in a.state_dict().items():  # running statistics and the batch counter
            torch.testing.assert_close(b.state_dict()[k], v, rtol=1e-5, atol=1e-6)

    def test_module_matches_torch(self):
        for dev in devices():
            for cl in (False, True):
                with self.subTest(device=dev, channels_last=cl):
                    a, b = self.pair(dev)
                    for step in range(3):
                        self.check_step(a, b, rnd((4, 3, 5, 6), step, cl) * 3 + 1, 10 + step)
                    a.eval()
                    b.eval()  # running statistics, gradients included
                    self.check_step(a, b, rnd((2, 3, 5, 6), 7, cl) * 3 + 1, 20)

    def test_without_affine_or_running_stats(self):
        for dev in devices():
            for kw in (dict(affine=False), dict(track_running_stats=False)):
                with self.subTest(device=dev, **kw):
                    a, b = self.pair(dev, **kw)
                    self.check_step(a, b, rnd((3, 3, 4, 4), 1) * 2, 2)
                    a.eval()
                    b.eval()
                    self.check_step(a, b, rnd((3, 3, 4, 4), 3) * 2, 4)

    def test_gradcheck_training(self):
        for dev in devices():
            with self.subTest(device=dev):
                x = rnd((3, 2, 3, 3), 1, grad=True)
                w = (rnd((2,), 2) + 2).requires_grad_()
                b = rnd((2,), 3, grad=True)
                f = lambda x, w, b: pt.batch_norm(x, None, None, w, b, True, device=dev)  # noqa: E731
                self.assertTrue(gradcheck(f, (x, w, b)))

    def test_refusals(self):
        with self.assertRaisesRegex(ValueError, "momentum=None"):
            pt.BatchNorm2d(3, momentum=None)
        with self.assertRaisesRegex(TypeError, "float64"):
            pt.BatchNorm2d(3).double()(torch.zeros(2, 3, 2, 2, dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, "4-D input"):
            pt.BatchNorm2d(3)(torch.zeros(2, 3, 4))


if __name__ == "__main__":
    unittest.main()
