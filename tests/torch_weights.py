"""Random weights under which a torchvision model's output depends on its
input, for the checks against ONNX Runtime and PyTorch.

torchvision's initial weights with fresh BatchNorm statistics do not give
that: GoogLeNet's output is then its last bias (the input's share of it
under 1e-6), and MobileNetV2's nearly so once the statistics are random,
so a wrong convolution deep inside would still pass a 1e-4 check."""


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
