"""The backward ops of the Python module against PyTorch, on the host and on an OpenCL
device (PoCL) when there is one. Run by tests/test_python.sh through
tests/test_python.py, or alone with the same environment."""
import unittest

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

import polydnn


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


if __name__ == "__main__":
    unittest.main()
