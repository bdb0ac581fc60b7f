"""Random weights under which a torchvision model's output depends on its
input, for the checks against ONNX Runtime and PyTorch.

torchvision's initial weights with fresh BatchNorm statistics do not give
that: GoogLeNet's output is then its last bias (the input's share of it
under 1e-6), and MobileNetV2's nearly so once the statistics are random,
so a wrong convolution deep inside would still pass a 1e-4 check.

Also the one way the checks and benchmarks build a torchvision model and
export a model to ONNX (tests/onnx_check.py, bench/bench_onnx_models.py,
bench/gpu_models.py)."""


def input_sensitive_weights(net, size):
    """He-normal convolution weights; each BatchNorm's statistics from a
    random batch of size x size images (so they are not the identity and
    folding them is really exercised), then a random scale and shift.
    Leaves net in eval mode."""
    import torch
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(mod.weight, nonlinearity="relu")
            elif isinstance(mod, torch.nn.BatchNorm2d):
                mod.reset_running_stats()
                mod.momentum = None  # a plain average over the batch
        net.train()
        net(torch.randn(4, 3, size, size))
        net.eval()
        for mod in net.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)


def torchvision_model(name):
    """torchvision's `name` with random initial weights (seed 0; nothing is
    downloaded), in eval mode; GoogLeNet without its auxiliary heads."""
    import torch
    import torchvision
    torch.manual_seed(0)
    kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    return getattr(torchvision.models, name)(weights=None, **kw).eval()


def export_onnx(net, path, size):
    """net to ONNX (opset 13) at path: input "x" of 1 x 3 x size x size and
    output "y", both with a symbolic batch. Uses the TorchScript exporter,
    which these models were checked with: PyTorch 2.9 and later default to
    the dynamo exporter (dynamo=True), which emits other graphs; older ones
    lack the flag."""
    import inspect
    import torch
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(net, torch.randn(1, 3, size, size), path, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, opset_version=13, **legacy)
