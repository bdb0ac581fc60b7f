"""PyTorch autograd on polydnn devices: conv2d, max and average pooling,
batch normalization.

    import torch, polydnn.torch as pt
    pt.set_device("/gpu:0")              # e.g. PoCL or an AMD/Intel card; default: the context's default
    model = torch.nn.Sequential(pt.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), pt.MaxPool2d(2), ...)
    loss = ...; loss.backward()          # the convolutions' forward and backward run on /gpu:0

Functions (torch.autograd.Function): Conv2dFunction, MaxPool2dFunction,
AvgPool2dFunction, BatchNormFunction, with functional forms conv2d,
max_pool2d, avg_pool2d and batch_norm taking torch.nn.functional's
arguments plus device=; nn.Module wrappers Conv2d, MaxPool2d, AvgPool2d
and BatchNorm2d are torch's own modules (same arguments,
same parameter initialisation, state_dict compatible) whose forward runs on
polydnn (polydnn_device= picks the device per module; torch's device= is
still where the parameters live).

Data movement per op, by the polydnn device the op runs on:
  host (/cpu:0)  torch CPU tensors go in and results come out through DLPack
                 with no copy (a CUDA tensor is copied to the host first).
  OpenCL (PoCL, AMD, Intel)
                 torch cannot hold OpenCL memory and polydnn imports only
                 the cl_mem buffers it allocated itself, so each input is
                 uploaded once (forward: input, weight, bias; backward:
                 the output gradient) and each result downloaded once
                 (forward: the output; backward: each gradient asked for).
                 The forward's uploads are kept for the backward. Batch
                 norm's running statistics, updated on the device, are
                 copied back into the torch buffers after each forward.
  CUDA           results leave as torch CUDA tensors without a copy; an
                 input that is a polydnn export is taken without a copy, any
                 other torch CUDA tensor is copied device to device into
                 polydnn memory (polydnn imports only CUDA memory it owns).
                 Backward runs there too, through cuDNN (the CUDA
                 backend's backward ops; GPU runs: bench/results-gpu.md).

fit(module, x, y, ...) trains a whole module on polydnn instead (exported
to ONNX, trained there, its weights loaded back: docs/training.md).

dtype: the ops are float32. Other dtypes (float64 included) are refused
with TypeError rather than converted, so that a float64 model does not
silently lose precision; torch.autograd.gradcheck therefore runs in
float32 with tolerances (eps ~1e-3, atol and rtol ~1e-2). The Functions
are once differentiable (no double backward).
"""

import torch
import torch.nn.functional as F
import torch.utils.dlpack
from torch.autograd.function import once_differentiable

import polydnn as _pd

__all__ = ["set_device", "get_device", "Conv2dFunction", "MaxPool2dFunction", "AvgPool2dFunction",
           "BatchNormFunction", "conv2d", "max_pool2d", "avg_pool2d", "batch_norm", "Conv2d", "MaxPool2d",
           "AvgPool2d", "BatchNorm2d", "fit"]

_device = None  # a polydnn.Device, or None for the default context's default


def set_device(device):
    """Where the ops run when no device is given: a name ('/cpu:0',
    '/gpu:0'), a polydnn.Device, or None for the default context's default
    device. Raises polydnn.Error for a name that is no device."""
    global _device
    _device = None if device is None else _resolve(device)


def get_device():
    """The polydnn.Device the ops run on by default."""
    return _resolve(None)


def _resolve(device):
    if device is None:
        device = _device
    if device is None:
        return _pd.default_context().device()
    if isinstance(device, _pd.Device):
        return device
    if not isinstance(device, str):
        raise TypeError("polydnn.torch: device must be a polydnn device name or polydnn.Device, not %s (%r)"
                        % (type(device).__name__, device))
    return _pd.default_context().device(device)


def _kind(dev):
    return dev.__dlpack_device__()[0]  # 1 host, 2 CUDA, 4 OpenCL


def _checked(t, name):
    """t detached, float32, in a memory order polydnn reads (contiguous or
    channels_last)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("polydnn.torch: %s must be a torch.Tensor, not %s" % (name, type(t).__name__))
    if t.dtype != torch.float32:
        raise TypeError("polydnn.torch: %s is %s; polydnn's ops are float32 (convert with .float())"
                        % (name, t.dtype))
    t = t.detach()
    if t.is_contiguous() or (t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)):
        return t
    return t.contiguous()


def _to_pd(t, dev, role, name):
    """torch tensor t as a polydnn Tensor on dev (see the module docstring
    for when that copies)."""
    t = _checked(t, name)
    kind = _kind(dev)
    if kind == 2 and t.is_cuda:
        try:  # a polydnn export (an earlier op's result): no copy
            x = _pd.from_dlpack(t, role=role, context=dev._ctx)
            if x.device == dev:
                return x
        except _pd.Error:
            pass
        if t.dim() == 4 and role == "filter":
            x = _pd.empty(tuple(t.shape), "OIHW", device=dev, context=dev._ctx)
            t = t.contiguous()
        elif t.dim() == 4:
            cl = not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)
            x = _pd.empty(tuple(t.shape), "NHWC" if cl else "NCHW", device=dev, context=dev._ctx)
        else:
            x = _pd.empty(tuple(t.shape), "X" if t.dim() == 1 else "NCHW", device=dev, context=dev._ctx)
        view = torch.utils.dlpack.from_dlpack(x)  # polydnn's memory seen by torch
        view.copy_(t.reshape(view.shape) if t.dim() != 4 else t)
        torch.cuda.current_stream(view.device).synchronize()  # polydnn's queue must see the copy done
        return x
    x = _pd.from_dlpack(t.cpu(), role=role, context=dev._ctx)  # zero-copy for a CPU tensor
    return x if kind == 1 else x.to(dev)  # the one upload


def _to_torch(y, like):
    """polydnn Tensor y as a torch tensor on like's torch device."""
    if _kind(y.device) not in (1, 2):  # torch cannot read OpenCL memory: the one download
        y = y.to(y._ctx.device("/cpu:0"))
    t = torch.utils.dlpack.from_dlpack(y)
    return t if t.device == like.device else t.to(like.device)


def _pool_args(kernel_size, stride, padding):
    # torch: stride None or [] means kernel_size
    return kernel_size, (kernel_size if stride is None or (hasattr(stride, "__len__") and len(stride) == 0)
                         else stride), padding


class Conv2dFunction(torch.autograd.Function):
    """y = conv2d(input, weight, bias) as torch.nn.functional.conv2d (padding
    also 'same', 'valid' or (top, bottom, left, right)), forward and
    backward on a polydnn device."""

    @staticmethod
    def forward(ctx, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, device=None):
        dev = _resolve(device)
        x = _to_pd(input, dev, "activation", "input")
        w = _to_pd(weight, dev, "filter", "weight")
        b = None if bias is None else _to_pd(bias, dev, "activation", "bias")
        y = _pd.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        ctx.save_for_backward(input, weight)  # for torch's in-place modification check
        ctx.pd = (x, w)  # on dev: the backward uploads only the gradient
        ctx.conf = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        ctx.dev = dev
        return _to_torch(y, input)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        x, w = ctx.pd
        dy = _to_pd(grad_output, ctx.dev, "activation", "grad_output")
        gi = gw = gb = None
        if ctx.needs_input_grad[0]:
            gi = _to_torch(_pd.conv2d_backward_data(x.shape, w, dy, **ctx.conf), input)
        if ctx.needs_input_grad[1]:
            gw = _to_torch(_pd.conv2d_backward_filter(x, w.shape, dy, **ctx.conf), weight)
        if ctx.needs_input_grad[2]:
            gb = _to_torch(_pd.conv2d_backward_bias(dy), weight)
        return gi, gw, gb, None, None, None, None, None


def _pool_forward(ctx, input, mode, kernel_size, stride, padding, ceil_mode, count_include_pad, device):
    dev = _resolve(device)
    x = _to_pd(input, dev, "activation", "input")
    kernel_size, stride, padding = _pool_args(kernel_size, stride, padding)
    conf = dict(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode)
    if mode == "max":
        y = _pd.max_pool2d(x, **conf)
    else:
        conf["count_include_pad"] = count_include_pad
        y = _pd.avg_pool2d(x, **conf)
    ctx.save_for_backward(input)
    ctx.pd, ctx.conf, ctx.mode, ctx.dev = x, conf, mode, dev
    return _to_torch(y, input)


def _pool_backward(ctx, grad_output):
    (input,) = ctx.saved_tensors
    if not ctx.needs_input_grad[0]:
        return None
    dy = _to_pd(grad_output, ctx.dev, "activation", "grad_output")
    bwd = _pd.max_pool2d_backward if ctx.mode == "max" else _pd.avg_pool2d_backward
    return _to_torch(bwd(ctx.pd, dy, **ctx.conf), input)


class MaxPool2dFunction(torch.autograd.Function):
    """max_pool2d as torch.nn.functional.max_pool2d (no dilation, no
    indices), forward and backward on a polydnn device."""

    @staticmethod
    def forward(ctx, input, kernel_size, stride=None, padding=0, ceil_mode=False, device=None):
        return _pool_forward(ctx, input, "max", kernel_size, stride, padding, ceil_mode, True, device)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        return (_pool_backward(ctx, grad_output),) + (None,) * 5


class AvgPool2dFunction(torch.autograd.Function):
    """avg_pool2d as torch.nn.functional.avg_pool2d (no divisor_override),
    forward and backward on a polydnn device."""

    @staticmethod
    def forward(ctx, input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                device=None):
        return _pool_forward(ctx, input, "avg", kernel_size, stride, padding, ceil_mode, count_include_pad, device)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        return (_pool_backward(ctx, grad_output),) + (None,) * 6


class BatchNormFunction(torch.autograd.Function):
    """torch.nn.functional.batch_norm for 4-D input on a polydnn device.
    training: batch statistics, running_mean/running_var (may be None)
    updated in place; the backward runs on the device from the saved batch
    statistics. Otherwise the running statistics normalize, and the
    backward (elementwise: dx = dy * weight / sqrt(running_var + eps)) is
    computed by torch where the tensors are. weight and bias may be None
    (affine=False)."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, training, momentum, eps, device=None):
        dev = _resolve(device)
        if input.dim() != 4:
            raise ValueError("polydnn.torch: batch norm takes 4-D input (N, C, H, W), not %d-D" % input.dim())
        c = input.shape[1]
        ones = None
        if weight is None:
            ones = torch.ones(c, device=input.device)
        x = _to_pd(input, dev, "activation", "input")
        g = _to_pd(weight if weight is not None else ones, dev, "activation", "weight")
        b = _to_pd(bias if bias is not None else torch.zeros(c, device=input.device), dev, "activation", "bias")
        stats = [None if r is None else _to_pd(r, dev, "activation", n)
                 for r, n in ((running_mean, "running_mean"), (running_var, "running_var"))]
        out = _pd.batch_norm(x, g, b, stats[0], stats[1], training=bool(training), momentum=momentum, eps=eps)
        if training:
            y, sm, si = out
            for r, t in zip((running_mean, running_var), stats):
                if r is not None and _kind(dev) != 1:  # an uploaded copy took the update: bring it back
                    r.copy_(_to_torch(t, r))
            ctx.pd = (x, g, sm, si)
        else:
            y = out
            # the statistics the forward used (the buffers may change before the backward)
            ctx.mean = running_mean.detach().clone()
            ctx.inv_std = torch.rsqrt(running_var.detach().double() + eps).float()
        ctx.training, ctx.eps, ctx.dev = bool(training), eps, dev
        ctx.save_for_backward(input, weight if weight is not None else ones)
        return _to_torch(y, input)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        input, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gi = gw = gb = None
        if ctx.training:
            x, g, sm, si = ctx.pd
            # the op takes dy in x's layout (torch may hand it in either)
            fmt = torch.channels_last if x.layout == "NHWC" else torch.contiguous_format
            dy = _to_pd(grad_output.contiguous(memory_format=fmt), ctx.dev, "activation", "grad_output")
            dx, dg, db = _pd.batch_norm_backward(x, dy, g, sm, si, eps=ctx.eps)
            gi = _to_torch(dx, input) if need_x else None
            gw = _to_torch(dg, weight) if need_w else None
            gb = _to_torch(db, weight) if need_b else None
        else:
            shape = (1, -1, 1, 1)
            if need_x:
                gi = grad_output * (weight * ctx.inv_std).view(shape)
            if need_w:
                x_hat = (input - ctx.mean.view(shape)) * ctx.inv_std.view(shape)
                gw = (grad_output * x_hat).sum((0, 2, 3))
            if need_b:
                gb = grad_output.sum((0, 2, 3))
        return gi, gw, gb, None, None, None, None, None, None


# ---- functional forms --------------------------------------------------------


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, device=None):
    """torch.nn.functional.conv2d on a polydnn device (default: set_device's)."""
    return Conv2dFunction.apply(input, weight, bias, stride, padding, dilation, groups, device)


def _no_dilation(dilation, return_indices):
    if dilation not in (1, (1, 1), [1, 1]):
        raise ValueError("polydnn.torch: max pooling with dilation %r is not supported (only 1)" % (dilation,))
    if return_indices:
        raise ValueError("polydnn.torch: max pooling with return_indices=True is not supported")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False,
               device=None):
    """torch.nn.functional.max_pool2d on a polydnn device (dilation 1 only,
    no indices)."""
    _no_dilation(dilation, return_indices)
    return MaxPool2dFunction.apply(input, kernel_size, stride, padding, ceil_mode, device)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None, device=None):
    """torch.nn.functional.avg_pool2d on a polydnn device (no
    divisor_override)."""
    if divisor_override is not None:
        raise ValueError("polydnn.torch: avg_pool2d with divisor_override is not supported")
    return AvgPool2dFunction.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad, device)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5,
               device=None):
    """torch.nn.functional.batch_norm (4-D input) on a polydnn device."""
    return BatchNormFunction.apply(input, weight, bias, running_mean, running_var, training, momentum, eps, device)


# ---- modules -------------------------------------------------------------------


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d (same arguments, parameters and initialisation) whose
    convolution runs on polydnn_device (default: set_device's, looked up at
    each call). padding_mode other than 'zeros' pads in torch first, as
    torch.nn.Conv2d does."""

    def __init__(self, *args, polydnn_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.polydnn_device = polydnn_device

    def forward(self, input):
        padding = self.padding
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        return conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups,
                      self.polydnn_device)


class MaxPool2d(torch.nn.MaxPool2d):
    """torch.nn.MaxPool2d (dilation 1, no indices) on polydnn_device."""

    def __init__(self, *args, polydnn_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        _no_dilation(self.dilation, self.return_indices)
        self.polydnn_device = polydnn_device

    def forward(self, input):
        return max_pool2d(input, self.kernel_size, self.stride, self.padding, 1, self.ceil_mode, False,
                          self.polydnn_device)


class AvgPool2d(torch.nn.AvgPool2d):
    """torch.nn.AvgPool2d (no divisor_override) on polydnn_device."""

    def __init__(self, *args, polydnn_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        if self.divisor_override is not None:
            raise ValueError("polydnn.torch: AvgPool2d with divisor_override is not supported")
        self.polydnn_device = polydnn_device

    def forward(self, input):
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, None, self.polydnn_device)


class BatchNorm2d(torch.nn.BatchNorm2d):
    """torch.nn.BatchNorm2d (same arguments, buffers and state_dict) whose
    normalization runs on polydnn_device. momentum=None (a cumulative
    average) is not supported."""

    def __init__(self, *args, polydnn_device=None, **kwargs):
        super().__init__(*args, **kwargs)
        if self.momentum is None:
            raise ValueError("polydnn.torch: BatchNorm2d with momentum=None (cumulative average) is not supported")
        self.polydnn_device = polydnn_device

    def forward(self, input):
        # torch's _BatchNorm.forward: which statistics, and the batch counter
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                          self.weight, self.bias, use_batch, self.momentum, self.eps, self.polydnn_device)


def fit(module, x, y, epochs=1, batch_size=32, device=None, loss="cross_entropy", optimizer="sgd", lr=None,
        momentum=None, weight_decay=None, nesterov=False, betas=None, eps=None, shuffle=True, seed=0,
        validation_data=None, verbose=False):
    """Trains a torch module a user wrote on polydnn, then puts the trained
    weights back into it: the module is exported to ONNX in training mode
    (torch.onnx.export; batch norm kept apart, Dropout active), imported
    trainable (polydnn.load_onnx(..., trainable=True) with the loss and
    optimizer given here), trained by TrainableOnnxModel.fit on x (N, C,
    H, W) and y, and every parameter and buffer of the module that the
    export named (weights, biases, batch-norm running statistics) is
    loaded back with load_state_dict; num_batches_tracked counts the steps.
    device: the polydnn device (None: set_device's). Returns fit's
    history. The module's own forward must export (no data-dependent
    Python control flow); a parameter that the export renamed or folded
    away raises ValueError naming it, before anything is trained."""
    import os
    import tempfile

    import numpy

    if not isinstance(module, torch.nn.Module):
        raise TypeError("polydnn.torch.fit: module must be a torch.nn.Module, not %s" % (type(module).__name__,))
    x = numpy.ascontiguousarray(numpy.asarray(x.detach().cpu() if torch.is_tensor(x) else x, dtype=numpy.float32))
    y = numpy.asarray(y.detach().cpu() if torch.is_tensor(y) else y)
    if x.ndim != 4:
        raise ValueError("polydnn.torch.fit: x must be (N, C, H, W), not of shape %s" % (x.shape,))
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    was_training = module.training
    dev = _resolve(device)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "module.onnx")
        param = next(module.parameters(), None)
        example = torch.zeros((int(batch_size),) + x.shape[1:], dtype=torch.float32,
                              device=param.device if param is not None else "cpu")
        torch.onnx.export(module.train(), example, path, opset_version=13, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, input_names=["x"], output_names=["y"])
        # Tracing in training mode ran the module once, moving its batch
        # norms' running statistics: the state from before goes back into
        # the module and over the exported initializers.
        module.load_state_dict(state)
        module.train(was_training)
        model = _pd.load_onnx(path, device=dev, trainable=True, loss=loss, optimizer=optimizer, lr=lr,
                              momentum=momentum, weight_decay=weight_decay, nesterov=nesterov, betas=betas, eps=eps,
                              seed=seed)
        trained = model.parameters()
        wanted = [k for k, v in state.items() if not k.endswith("num_batches_tracked") and v.is_floating_point()]
        missing = [k for k in wanted if k not in trained]
        if missing:
            raise ValueError("polydnn.torch.fit: the ONNX export has no initializer named %s (renamed or folded by "
                             "torch.onnx.export), so its trained value could not come back" % (", ".join(missing),))
        model.set_parameters({k: state[k].cpu().numpy() for k in wanted})
        hist = model.fit(x, y, epochs=epochs, shuffle=shuffle, seed=seed, validation_data=validation_data,
                         verbose=verbose)
        trained = model.parameters()
    steps = int(epochs) * (x.shape[0] // int(batch_size))
    new = {}
    for k, v in state.items():
        if k in trained:
            new[k] = torch.from_numpy(numpy.ascontiguousarray(trained[k]).reshape(tuple(v.shape))).to(v.device, v.dtype)
        elif k.endswith("num_batches_tracked"):
            new[k] = v + steps
        else:
            new[k] = v
    module.load_state_dict(new)
    return hist
