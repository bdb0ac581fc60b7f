"""Checks `polydnn run` on ONNX models against ONNX Runtime (CPU).

Builds small graphs with the onnx package, one per supported operator and
attribute form, and exports small torch models; runs each with
`polydnn run --input x.npy --output y.npy` on every device given and
compares with onnxruntime within 1e-4 relative to the output's largest
magnitude. Usage: onnx_check.py POLYDNN_TOOL [--device=D ...] [--python]
[--torchvision-fast | --models [--batch=1]] [-v]. make check runs the
default set; make check-models runs, instead, --torchvision-fast (SqueezeNet
1.1 and MobileNetV2 at batch 1 and 8) and --models (the large torchvision
models at batch 1 and 8 or, with --batch=1, 1 only).
Exit 0 all passed, 1 a failure, 77 when onnx/onnxruntime are missing.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime as ort
except ImportError as e:  # the shell test turns this into a skip
    print(f"SKIP: {e}")
    sys.exit(77)

from torch_weights import export_onnx, input_sensitive_weights, torchvision_model  # noqa: E402 (beside this file)

TOL = 1e-4
rng = np.random.default_rng(7)



def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def rnd(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def model(nodes, x_shape, y_shape, inits=(), opset=13):
    g = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # (no checker: the outputs carry no shape; onnxruntime validates)
    return m


def conv_case(x_shape, k, c_out, bias=True, **attrs):
    c_in = x_shape[1]
    g = attrs.get("group", 1)
    inits = [init("w", rnd(c_out, c_in // g, *k))]
    ins = ["x", "w"]
    if bias:
        inits.append(init("b", rnd(c_out)))
        ins.append("b")
    return model([helper.make_node("Conv", ins, ["y"], **attrs)], x_shape, None, inits)


def pool_case(op, x_shape, **attrs):
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], x_shape, None)


def cases():
    x = [2, 4, 9, 11]
    yield "conv_plain", conv_case(x, (3, 3), 6), x
    yield "conv_nobias_stride_dil", conv_case(x, (3, 3), 5, bias=False, strides=[2, 1], dilations=[2, 1]), x
    yield "conv_pads_asym", conv_case(x, (3, 2), 6, pads=[1, 0, 2, 1]), x
    yield "conv_group", conv_case(x, (3, 3), 8, group=2, pads=[1, 1, 1, 1]), x
    yield "conv_depthwise", conv_case(x, (3, 3), 4, group=4, pads=[1, 1, 1, 1], strides=[2, 2]), x
    for ap in ("SAME_UPPER", "SAME_LOWER", "VALID"):
        yield f"conv_{ap.lower()}", conv_case(x, (4, 4), 3, auto_pad=ap, strides=[2, 2]), x
    yield "maxpool", pool_case("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2]), x
    yield "maxpool_pads_asym", pool_case("MaxPool", x, kernel_shape=[3, 3], pads=[1, 0, 2, 1], strides=[2, 2]), x
    yield "maxpool_ceil", pool_case("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), x
    yield "maxpool_same_upper", pool_case("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_UPPER"), x
    yield "maxpool_same_lower", pool_case("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2], auto_pad="SAME_LOWER"), x
    # ceil_mode where the last window would start in the padding (dropped)
    x9 = [1, 3, 9, 9]
    yield "maxpool_ceil_edge", pool_case("MaxPool", x9, kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1],
                                         ceil_mode=1), x9
    yield "avgpool_ceil_edge", pool_case("AveragePool", x9, kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1],
                                         ceil_mode=1, count_include_pad=1), x9
    yield "avgpool_excl", pool_case("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]), x
    yield "avgpool_incl", pool_case("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                                    count_include_pad=1), x
    yield "avgpool_ceil_incl", pool_case("AveragePool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2],
                                         ceil_mode=1, count_include_pad=1), x
    yield "gap", pool_case("GlobalAveragePool", x), x

    # Conv + BatchNormalization (folded) + Relu + Add + Identity/Dropout
    c = 4
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"], epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("Identity", ["r"], ["i"]),
        helper.make_node("Dropout", ["i"], ["d"]),
        helper.make_node("Add", ["d", "x"], ["y"]),
    ]
    inits = [init("w", rnd(c, c, 3, 3)), init("s", rnd(c)), init("bb", rnd(c)), init("m", rnd(c)),
             init("v", rng.uniform(0.5, 2.0, c).astype(np.float32))]
    yield "conv_bn_relu_add", model(nodes, x, None, inits), x

    # Identity on initializers (torch.onnx.export shares weights this way)
    nodes = [
        helper.make_node("Identity", ["w0"], ["w"]),
        helper.make_node("Identity", ["b0"], ["b"]),
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
    ]
    yield "identity_on_initializers", model(nodes, x, None, [init("w0", rnd(3, 4, 3, 3)), init("b0", rnd(3))]), x

    # Add of a per-channel constant (bias_add)
    yield "add_bias", model([helper.make_node("Add", ["x", "b"], ["y"])], x, None,
                            [init("b", rnd(4, 1, 1))]), x

    # Flatten -> Gemm (transB, alpha, beta) -> Softmax
    m2 = [2, 4 * 9 * 11]
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"]),
        helper.make_node("Gemm", ["f", "w", "b"], ["g"], transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Softmax", ["g"], ["y"], axis=1),
    ]
    yield "flatten_gemm_transb_softmax", model(nodes, x, None, [init("w", rnd(10, m2[1])), init("b", rnd(10))]), x
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "w"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["y"]),
    ]
    yield "reshape_gemm_matmul", model(nodes, x, None, [init("shape", np.array([0, -1], np.int64)),
                                                       init("w", rnd(m2[1], 7)), init("w2", rnd(7, 3))]), x


def activation_cases():
    x = [2, 4, 9, 11]
    # Clip: bounds as constant inputs (opset 11+; one of them absent) and as
    # attributes (opset 6); ReLU6 is torchvision's MobileNetV2 activation.
    yield "clip_relu6", model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"])], x, None,
                              [init("lo", np.float32(0)), init("hi", np.float32(6))]), x
    yield "clip_min_only", model([helper.make_node("Clip", ["x", "lo"], ["y"])], x, None,
                                 [init("lo", np.float32(-0.25))]), x
    yield "clip_max_only", model([helper.make_node("Clip", ["x", "", "hi"], ["y"])], x, None,
                                 [init("hi", np.float32(0.3))]), x
    yield "clip_opset6_attrs", model([helper.make_node("Clip", ["x"], ["y"], min=-0.5, max=0.5)], x, None,
                                     opset=6), x
    # Conv then Clip(0, 6): fused into the convolution's capped relu; a
    # Clip from -1 is not a relu and stays a node of its own.
    for lo, tag in ((0.0, "relu6"), (-1.0, "clip_from_minus_one")):
        nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                 helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]
        yield f"conv_{tag}", model(nodes, x, None, [init("w", rnd(6, 4, 3, 3)), init("b", rnd(6)),
                                                    init("lo", np.float32(lo)), init("hi", np.float32(1.5))]), x
    # torch.onnx.export's order: the bounds are Constant nodes between the
    # Conv and the Clip (the import reads Constant nodes first to fuse).
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Constant", [], ["lo"], value=helper.make_tensor("v0", TensorProto.FLOAT, [], [0.0])),
             helper.make_node("Constant", [], ["hi"], value=helper.make_tensor("v1", TensorProto.FLOAT, [], [6.0])),
             helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]
    yield "conv_relu6_constant_nodes", model(nodes, x, None, [init("w", rnd(6, 4, 3, 3)), init("b", rnd(6))]), x
    yield "leaky_relu", model([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.2)], x, None), x
    yield "leaky_relu_default", model([helper.make_node("LeakyRelu", ["x"], ["y"])], x, None), x
    nodes = [helper.make_node("Mul", ["x", "k"], ["m"]), helper.make_node("Sigmoid", ["m"], ["y"])]
    yield "mul_scalar_sigmoid", model(nodes, x, None, [init("k", np.float32(8.0))]), x
    yield "mul_scalar_first", model([helper.make_node("Mul", ["k", "x"], ["y"])], x, None,
                                    [init("k", np.array([-1.5], np.float32))]), x
    # Concat: SqueezeNet's fire module (two branches along C), and along
    # H, W and N; then a matrix along its columns.
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"]),
        helper.make_node("Conv", ["x", "w3"], ["b"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("Concat", ["ra", "b", "x"], ["y"], axis=1),
    ]
    yield "concat_fire", model(nodes, x, None, [init("w1", rnd(5, 4, 1, 1)), init("w3", rnd(3, 4, 3, 3))]), x
    for axis in (0, 2, -1):
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Concat", ["x", "r", "x"], ["y"], axis=axis)]
        yield f"concat_axis{axis}", model(nodes, x, None), x
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"]),
        helper.make_node("Gemm", ["f", "w"], ["g"]),
        helper.make_node("Concat", ["g", "f"], ["y"], axis=1),
    ]
    yield "concat_matrix", model(nodes, x, None, [init("w", rnd(4 * 9 * 11, 5))]), x


def binary_cases():
    """Add and Mul of two tensors, with NumPy broadcasting of the second."""
    x = [2, 4, 9, 11]
    # Squeeze-and-excitation: x scaled by a per-image, per-channel gate.
    nodes = [
        helper.make_node("GlobalAveragePool", ["x"], ["g"]),
        helper.make_node("Conv", ["g", "w1", "b1"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["s2"]),
        helper.make_node("Sigmoid", ["s2"], ["gate"]),
        helper.make_node("Mul", ["x", "gate"], ["y"]),
    ]
    yield "mul_squeeze_excitation", model(nodes, x, None, [init("w1", rnd(2, 4, 1, 1)), init("b1", rnd(2)),
                                                            init("w2", rnd(4, 2, 1, 1)), init("b2", rnd(4))]), x
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["x", "r"], ["y"])]
    yield "mul_same_shape", model(nodes, x, None), x
    yield "mul_per_channel_const_first", model([helper.make_node("Mul", ["k", "x"], ["y"])], x, None,
                                               [init("k", rnd(4, 1, 1))]), x
    # b of shape {C, H, 1}: NCHW and NHWC lay it out differently.
    yield "add_const_c_h", model([helper.make_node("Add", ["x", "k"], ["y"])], x, None, [init("k", rnd(4, 9, 1))]), x
    yield "mul_const_w", model([helper.make_node("Mul", ["x", "k"], ["y"])], x, None, [init("k", rnd(11))]), x
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"]), helper.make_node("Add", ["x", "g"], ["y"])]
    yield "add_broadcast_activation", model(nodes, x, None), x


def nd_cases():
    """Values of rank other than 4 inside the model (issue 42): a 3-d and a
    5-d Reshape, numpy's batched MatMul and broadcasting Add/Mul on them,
    graph inputs and outputs of rank 3 and 2."""
    x = [2, 4, 9, 11]
    nodes = [helper.make_node("Reshape", ["x", "s3"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])]
    yield "nd_reshape3_matmul", model(nodes, x, None, [init("s3", np.array([2, 36, 11], np.int64)),
                                                      init("w", rnd(11, 5))]), x
    nodes = [helper.make_node("Reshape", ["x", "s3"], ["r"]), helper.make_node("MatMul", ["r", "w"], ["y"])]
    yield "nd_batched_matmul", model(nodes, x, None, [init("s3", np.array([2, 4, 99], np.int64)),
                                                     init("w", rnd(2, 99, 3))]), x
    nodes = [
        helper.make_node("Reshape", ["x", "s5"], ["r"]),
        helper.make_node("Add", ["r", "k"], ["a"]),
        helper.make_node("Mul", ["a", "m"], ["b"]),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Reshape", ["c", "s2"], ["f"]),
        helper.make_node("Gemm", ["f", "w", "bias"], ["y"], transB=1),
    ]
    yield "nd_reshape5_add_mul_gemm", model(nodes, x, None, [
        init("s5", np.array([2, 2, 2, 9, 11], np.int64)), init("k", rnd(2, 1, 9, 1)), init("m", rnd(11)),
        init("s2", np.array([2, -1], np.int64)), init("w", rnd(6, 396)), init("bias", rnd(6))]), x
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["y"])]
    yield "nd_input_rank3", model(nodes, [3, 5, 7], None, [init("w", rnd(7, 2)), init("b", rnd(2))]), [3, 5, 7]


def zoo_op_cases():
    """The ops the rank-4 torchvision families added: standalone
    BatchNormalization, broadcast Sub/Div/Mul, HardSigmoid, HardSwish,
    SiLU and hard swish as exporters write them (fused), Pad before an
    AveragePool, ReduceMean/Max/Sum over H and W."""
    x = [2, 4, 9, 11]
    bn_inits = [init("s", rnd(4)), init("bb", rnd(4)), init("m", rnd(4)),
                init("v", rng.uniform(0.5, 2.0, 4).astype(np.float32))]
    # DenseNet's order: BatchNormalization after a Concat, then Relu
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Concat", ["x", "r"], ["c"], axis=0),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"], epsilon=1e-3),
             helper.make_node("Relu", ["bn"], ["y"])]
    yield "batchnorm_after_concat", model(nodes, x, None, bn_inits), x
    yield "batchnorm_of_input", model([helper.make_node("BatchNormalization", ["x", "s", "bb", "m", "v"], ["y"])],
                                      x, None, bn_inits), x
    # a Conv's output read twice: the BatchNormalization is not folded
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"]),
             helper.make_node("Add", ["bn", "c"], ["y"])]
    yield "batchnorm_shared_conv", model(nodes, x, None, bn_inits + [init("w", rnd(4, 4, 3, 3))]), x
    # squeeze-and-excitation as torchvision writes it: gate * x (the first input broadcast)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"]), helper.make_node("Sigmoid", ["g"], ["s"]),
             helper.make_node("Mul", ["s", "x"], ["y"])]
    yield "mul_gate_first", model(nodes, x, None), x
    # (the mean of sigmoid(x): a divisor far from 0, so that the sums'
    # order does not matter)
    for op in ("Sub", "Div"):
        nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("GlobalAveragePool", ["s"], ["g"]),
                 helper.make_node(op, ["s", "g"], ["y"])]
        yield f"{op.lower()}_second_broadcast", model(nodes, x, None), x
        nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("GlobalAveragePool", ["s"], ["g"]),
                 helper.make_node(op, ["g", "s"], ["y"])]
        yield f"{op.lower()}_first_broadcast", model(nodes, x, None), x
        yield f"{op.lower()}_const_first", model([helper.make_node(op, ["k", "x"], ["y"])], x, None,
                                                 [init("k", rnd(4, 1, 1))]), x
        yield f"{op.lower()}_const_c_h", model([helper.make_node(op, ["x", "k"], ["y"])], x, None,
                                               [init("k", rng.uniform(0.5, 2, (4, 9, 1)).astype(np.float32))]), x
        yield f"{op.lower()}_scalar", model([helper.make_node(op, ["x", "k"], ["y"])], x, None,
                                            [init("k", np.float32(3.0))]), x
    # both sides broadcast: {N,C,H,1} + {N,C,1,W}
    nodes = [helper.make_node("MaxPool", ["x"], ["h"], kernel_shape=[1, 11]),
             helper.make_node("AveragePool", ["x"], ["w"], kernel_shape=[9, 1]),
             helper.make_node("Add", ["h", "w"], ["y"])]
    yield "add_both_broadcast", model(nodes, x, None), x
    yield "hard_sigmoid", model([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.4, beta=0.3)], x, None), x
    yield "hard_sigmoid_default", model([helper.make_node("HardSigmoid", ["x"], ["y"])], x, None), x
    yield "hard_swish_opset14", model([helper.make_node("HardSwish", ["x"], ["y"])], x, None, opset=14), x
    # x * HardSigmoid(x; 1/6, 1/2) (torch's hardswish before opset 14) and
    # x * Sigmoid(x) (SiLU), each fused into one node; in either order.
    for gate, attrs in (("HardSigmoid", {"alpha": 1.0 / 6, "beta": 0.5}), ("Sigmoid", {})):
        for order in (["x", "s"], ["s", "x"]):
            nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                     helper.make_node(gate, ["c"], ["s0"], **attrs), helper.make_node("Mul", ["c", "s0"], ["y"])]
            if order[0] == "s":
                nodes[2] = helper.make_node("Mul", ["s0", "c"], ["y"])
            yield f"{gate.lower()}_gated_{order[0]}_first", model(nodes, x, None, [init("w", rnd(5, 4, 3, 3))]), x
    # the gate read twice: not fused
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["m"]),
             helper.make_node("Add", ["m", "s"], ["y"])]
    yield "sigmoid_gate_shared", model(nodes, x, None), x
    # Pad then AveragePool (torch's avg_pool2d with count_include_pad):
    # pads as an input (opset 11+) and as an attribute (opset 2); pads of 0
    for opset in (13, 10):
        pads = [0, 0, 1, 2, 0, 0, 2, 1]
        pad = (helper.make_node("Pad", ["x", "p"], ["pd"], mode="constant") if opset >= 11 else
               helper.make_node("Pad", ["x"], ["pd"], mode="constant", pads=pads, value=0.0))
        nodes = [pad, helper.make_node("AveragePool", ["pd"], ["y"], kernel_shape=[3, 3], strides=[2, 2])]
        inits = [init("p", np.array(pads, np.int64))] if opset >= 11 else []
        yield f"pad_avgpool_opset{opset}", model(nodes, x, None, inits, opset=opset), x
    # a Pad node of its own: reflect before an AveragePool, edge, and a
    # constant that is not 0 (as an input, opset 11+) before a Relu
    pads = init("p", np.array([0, 0, 1, 3, 0, 0, 2, 1], np.int64))
    nodes = [helper.make_node("Pad", ["x", "p"], ["pd"], mode="reflect"),
             helper.make_node("AveragePool", ["pd"], ["y"], kernel_shape=[3, 3])]
    yield "pad_reflect", model(nodes, x, None, [pads]), x
    yield "pad_edge", model([helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")], x, None, [pads]), x
    nodes = [helper.make_node("Pad", ["x", "p", "v"], ["pd"]), helper.make_node("Relu", ["pd"], ["y"])]
    yield "pad_constant_value", model(nodes, x, None, [pads, init("v", np.float32(0.75))]), x
    yield "pad_channels", model([helper.make_node("Pad", ["x", "p"], ["y"])], x, None,
                                [init("p", np.array([0, 1, 0, 0, 0, 0, 0, 0], np.int64))]), x
    yield "pad_negative_refused", model([helper.make_node("Pad", ["x", "p"], ["y"])], x, None,
                                        [init("p", np.array([0, 0, -1, 0, 0, 0, 0, 0], np.int64))]), x
    yield "reducemean_c", model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[1])], x, None), x
    nodes = [helper.make_node("Pad", ["x", "p"], ["pd"]), helper.make_node("Relu", ["pd"], ["y"])]
    yield "pad_zeros", model(nodes, x, None, [init("p", np.zeros(8, np.int64))]), x
    # ReduceMean/Max/Sum over H, W (MNASNet's head), keepdims 1 and 0
    for op in ("ReduceMean", "ReduceMax", "ReduceSum"):
        for keep in (1, 0):
            if op == "ReduceSum":  # axes as an input from opset 13
                nodes = [helper.make_node(op, ["x", "a"], ["y"], keepdims=keep)]
                inits = [init("a", np.array([-1, 2], np.int64))]
            else:
                nodes = [helper.make_node(op, ["x"], ["y"], axes=[2, -1], keepdims=keep)]
                inits = []
            yield f"{op.lower()}_hw_keep{keep}", model(nodes, x, None, inits), x
    nodes = [helper.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=0)]
    yield "reducemean_opset18_axes_input", model(nodes, x, None, [init("a", np.array([2, 3], np.int64))], opset=18), x
    nodes = [helper.make_node("ReduceMean", ["x"], ["r"], axes=[2, 3], keepdims=0),
             helper.make_node("Gemm", ["r", "w"], ["y"])]
    yield "reducemean_gemm", model(nodes, x, None, [init("w", rnd(4, 3))]), x


def nd_math_cases():
    """Transpose, Softmax/LogSoftmax on any axis, LayerNormalization, the
    unary math, Pow and reductions over any axes (rank-4 and rank-2
    inputs: the graph's inputs take those ranks), and the GELU that
    torch exports (x / sqrt 2, Erf, + 1, * x, * 0.5) in both orders."""
    x = [2, 3, 5, 7]
    for perm in ([0, 2, 3, 1], [3, 1, 0, 2], None):
        kw = {"perm": perm} if perm else {}
        nodes = [helper.make_node("Transpose", ["x"], ["t"], **kw), helper.make_node("Relu", ["t"], ["y"])]
        yield f"transpose_{''.join(map(str, perm)) if perm else 'reversed'}", model(nodes, x, None), x
    for axis in (-1, 1, 2, 0):
        yield f"softmax_axis{axis}", model([helper.make_node("Softmax", ["x"], ["y"], axis=axis)], x, None), x
        yield f"logsoftmax_axis{axis}", model([helper.make_node("LogSoftmax", ["x"], ["y"], axis=axis)], x, None), x
    m = [9, 33]
    yield "logsoftmax_matrix_opset11", model([helper.make_node("LogSoftmax", ["x"], ["y"])], m, None, opset=11), m
    for axis, shape in ((-1, [7]), (1, [3, 5, 7]), (2, [5, 7])):
        nodes = [helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=axis, epsilon=1e-3)]
        yield f"layernorm_axis{axis}", model(nodes, x, None, [init("s", rnd(*shape)), init("b", rnd(*shape))],
                                             opset=17), x
    nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y"])]
    yield "layernorm_matrix_nobias", model(nodes, m, None, [init("s", rnd(33))], opset=17), m
    nodes = [helper.make_node("LayerNormalization", ["x", "s"], ["y", "mean"])]
    yield "layernorm_mean_output_refused", model(nodes, m, None, [init("s", rnd(33))], opset=17), m
    for op in ("Erf", "Tanh", "Sqrt", "Exp", "Log", "Neg", "Reciprocal", "Abs"):
        nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node(op, ["a"], ["y"])] if op in (
            "Sqrt", "Log") else [helper.make_node(op, ["x"], ["y"])]
        yield f"unary_{op.lower()}", model(nodes, x, None), x
    nodes = [helper.make_node("Pow", ["x", "e"], ["y"])]
    yield "pow_scalar", model(nodes, x, None, [init("e", np.float32(3.0))]), x
    nodes = [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Pow", ["a", "e"], ["y"])]
    yield "pow_tensor", model(nodes, x, None, [init("e", rnd(3, 1, 1))]), x
    for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
        # (outputs of rank 2 and 4: load_onnx hands rank 3 back as 4 until
        # Python tensors take any rank)
        for axes, keep in (([1], 1), ([0, 2], 0), ([1, 3], 0), ([0, 3], 1)):
            nodes = [helper.make_node(op, ["x"], ["y"], axes=axes, keepdims=keep)]
            yield f"{op.lower()}_{''.join(map(str, axes))}_keep{keep}", model(nodes, x, None, opset=13 if op != "ReduceSum" else 11), x
    # every axis (keepdims: a rank-0 output is the tool's any-rank work)
    nodes = [helper.make_node("ReduceMax", ["x"], ["y"], keepdims=1)]
    yield "reducemax_all", model(nodes, m, None), m
    # LayerNorm as exporters before opset 17 write it, over the last axis
    # and over the last two (scale and bias on either side of Mul, Add)
    for name, axes, shape in (("layernorm_decomposed_w", [-1], [7]), ("layernorm_decomposed_hw", [2, 3], [5, 7])):
        nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], axes=axes), helper.make_node("Sub", ["x", "mu"], ["d"]),
                 helper.make_node("Pow", ["d", "two"], ["p"]), helper.make_node("ReduceMean", ["p"], ["v"], axes=axes),
                 helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
                 helper.make_node("Div", ["d", "s"], ["nd"]), helper.make_node("Mul", ["w", "nd"], ["m"]),
                 helper.make_node("Add", ["m", "b"], ["y"])]
        yield name, model(nodes, x, None, [init("two", np.float32(2)), init("eps", np.float32(1e-5)),
                                           init("w", rnd(*shape)), init("b", rnd(*shape))]), x
    # GELU as torch writes it: x * 0.5 * (1 + erf(x / sqrt 2)), and (x * (1 + erf(x / sqrt 2))) * 0.5
    r2 = [init("r2", np.float32(np.sqrt(2.0))), init("one", np.float32(1.0)), init("half", np.float32(0.5))]
    nodes = [helper.make_node("Div", ["x", "r2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "half"], ["h"]),
             helper.make_node("Mul", ["h", "a"], ["y"])]
    yield "gelu_half_first", model(nodes, x, None, r2), x
    nodes = [helper.make_node("Div", ["x", "r2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["one", "e"], ["a"]), helper.make_node("Mul", ["x", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    yield "gelu_half_last", model(nodes, x, None, r2), x


# Cases that polydnn must refuse, each with a phrase of the message.
REFUSED_CASES = {
    "layernorm_mean_output_refused": "the Mean and InvStdDev outputs are not supported",
    "pad_negative_refused": "only non-negative pads are supported",
    "dropout_training_refused": "training_mode must be a constant false",
    "einsum_repeated_refused": "an index repeated within one term",
    "einsum_ellipsis_refused": "an ellipsis is not supported",
    "einsum_one_sided_sum_refused": "an index of one operand alone that the output lacks",
}

TORCHVISION_FAST = ("squeezenet1_1", "mobilenet_v2")
TORCHVISION_LARGE = ("resnet18", "googlenet", "resnet50", "vgg16")


def torchvision_cases(tmp, names, batches):
    """torchvision's models with random weights (input_sensitive_weights),
    eval mode (nothing is downloaded), exported with Debian's torch."""
    try:  # only whether they are there: torch_weights imports them
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        print("SKIP: torchvision models (no torchvision)")
        return
    for name in names:
        net = torchvision_model(name)
        input_sensitive_weights(net, 224)
        path = os.path.join(tmp, name + ".onnx")
        export_onnx(net, path, 224)
        m = onnx.load(path)
        for batch in batches:
            yield f"{name}_b{batch}", m, [batch, 3, 224, 224]


def torch_cases(tmp):
    try:
        import torch
        import torch.nn as nn
    except ImportError:
        return
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (self.down(x) if self.down is not None else x))

    class SmallResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            self.l1 = Block(8, 8, 1)
            self.l2 = Block(8, 16, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            x = self.l2(self.l1(self.stem(x)))
            return self.fc(torch.flatten(self.pool(x), 1))

    net = SmallResNet().eval()
    input_sensitive_weights(net, 64)
    path = os.path.join(tmp, "small_resnet.onnx")
    export_onnx(net, path, 64)
    m = onnx.load(path)
    for batch in (1, 3):
        yield f"torch_small_resnet_b{batch}", m, [batch, 3, 64, 64]

    # A symbolic batch through the shape arithmetic torch exports
    # (x.view(x.size(0), -1), interpolate, chunk, slicing, reflect padding,
    # a transposed convolution): folded at import at each batch.
    class Moves(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 8, 3, 1, 1)
            self.t = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
            self.fc = nn.Linear(6 * 32 * 32 + 4 * 16 * 16, 10)

        def forward(self, x):
            y = torch.relu(self.c(x))
            a, b = torch.chunk(y, 2, dim=1)
            a = nn.functional.interpolate(a, scale_factor=2, mode="nearest")
            a = nn.functional.pad(a, (1, 1, 2, 0), mode="reflect")[:, :, 2:, 1:-1]
            t = self.t(b)
            z = torch.relu(t[:, :, ::2, ::2]) + a[:, :1, ::2, ::2]
            return self.fc(torch.cat([t.reshape(t.size(0), -1), z.reshape(x.shape[0], -1)[:, : 4 * 16 * 16]], 1))

    net = Moves().eval()
    path = os.path.join(tmp, "moves.onnx")
    export_onnx(net, path, 16)
    m = onnx.load(path)
    for batch in (1, 5):
        yield f"torch_moves_dynamic_b{batch}", m, [batch, 3, 16, 16]


def move_cases():
    """ConvTranspose (convolution backward data: strides, pads, dilations,
    groups, output_padding, the bias); the data-movement ops; the shape
    arithmetic folded at import; attributes that became inputs, each at an
    old and a new opset."""
    x = [2, 4, 5, 7]
    for tag, cout, g, k, attrs, bias in [
            ("plain", 3, 1, (3, 3), {}, True),
            ("stride2_outpad", 6, 2, (3, 2), dict(strides=[2, 3], pads=[1, 0, 0, 1], output_padding=[1, 2]), True),
            ("dilated_grouped", 4, 4, (2, 3), dict(dilations=[2, 1], group=4, pads=[0, 1, 1, 1]), False)]:
        inits = [init("w", rnd(x[1], cout // g, *k))] + ([init("b", rnd(cout))] if bias else [])
        ins = ["x", "w"] + (["b"] if bias else [])
        if g > 1:
            attrs = dict(attrs, group=g)
        yield f"convtranspose_{tag}", model([helper.make_node("ConvTranspose", ins, ["y"], **attrs)], x, None,
                                            inits), x
    i64 = lambda name, v: init(name, np.array(v, dtype=np.int64))  # noqa: E731
    mk = helper.make_node
    # Slice: negative steps, starts and ends past the ends, as inputs (10+) and attributes (before 10)
    yield "slice_steps_opset13", model([mk("Slice", ["x", "s", "e", "a", "p"], ["y"])], x, None,
                                       [i64("s", [-1, 1, 100]), i64("e", [-100, 5, 0]), i64("a", [3, 2, -3]),
                                        i64("p", [-2, 2, -1])]), x
    yield "slice_attrs_opset9", model([mk("Slice", ["x"], ["y"], starts=[1, -4], ends=[3, 1000], axes=[1, 3])],
                                      x, None, opset=9), x
    # Split: sizes as an input (13+), an attribute (11), num_outputs (18); the parts joined back in another order
    for opset, node, inits in [(13, mk("Split", ["x", "sp"], ["a", "b"], axis=1), [i64("sp", [1, 3])]),
                               (11, mk("Split", ["x"], ["a", "b"], axis=1, split=[3, 1]), []),
                               (18, mk("Split", ["x"], ["a", "b"], axis=2, num_outputs=2), [])]:
        yield f"split_opset{opset}", model([node, mk("Concat", ["b", "a"], ["y"], axis=node.attribute[0].i)],
                                           x, None, inits, opset=opset), x
    yield "gather_axis1", model([mk("Gather", ["x", "i"], ["y"], axis=1)], x, None, [i64("i", [3, -4, 1, 3])]), x
    yield "gather_axis3_negative", model([mk("Gather", ["x", "i"], ["y"], axis=-1)], x, None,
                                         [i64("i", [-1, 0, 6])]), x
    xe = [2, 1, 5, 1]
    yield "expand_ones", model([mk("Expand", ["x", "sh"], ["y"])], xe, None, [i64("sh", [2, 3, 1, 4])]), xe
    mask = rng.uniform(0, 1, (5, 7)) > 0.5
    yield "where_const_mask", model([mk("Relu", ["x"], ["r"]), mk("Where", ["m", "x", "r"], ["y"])], x, None,
                                    [init("m", mask)]), x
    yield "where_const_b", model([mk("Where", ["m", "x", "c"], ["y"])], x, None,
                                 [init("m", rng.uniform(0, 1, (1, 4, 1, 7)) > 0.5), init("c", rnd(1, 4, 1, 1))]), x
    # Pad of every axis (N-d), each mode; pads as an attribute before opset 11
    for mode in ("constant", "reflect", "edge"):
        pads = [0, 1, 2, 3, 1, 2, 1, 0] if mode != "reflect" else [1, 2, 4, 1, 0, 1, 3, 6]
        yield f"pad_nd_{mode}", model([mk("Pad", ["x", "p", "v"], ["y"], mode=mode)], x, None,
                                      [i64("p", pads), init("v", np.array(1.5, dtype=np.float32))]), x
    yield "pad_nd_attr_opset2", model([mk("Pad", ["x"], ["y"], pads=[0, 2, 1, 0, 1, 0, 0, 2], value=-1.0)],
                                      x, None, opset=2), x
    # Resize: nearest and linear; scales (10+) or sizes (11+); Upsample (9)
    f32 = lambda name, v: init(name, np.array(v, dtype=np.float32))  # noqa: E731
    for tag, attrs, scales, sizes in [
            ("nearest_asym_floor", dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                                        nearest_mode="floor"), [1, 1, 2, 3], None),
            ("nearest_half_pixel", dict(mode="nearest"), None, [2, 4, 9, 4]),
            ("nearest_align_ceil", dict(mode="nearest", coordinate_transformation_mode="align_corners",
                                        nearest_mode="round_prefer_ceil"), None, [2, 4, 3, 11]),
            ("linear_half_pixel", dict(mode="linear"), [1, 1, 1.5, 0.5], None),
            ("linear_align_corners", dict(mode="linear", coordinate_transformation_mode="align_corners"), None,
             [2, 4, 8, 10]),
            ("linear_pytorch_half_pixel", dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
             None, [2, 4, 1, 13])]:
        ins = ["x", "", "s"] + (["z"] if sizes else [])
        inits = [f32("s", scales or [])] + ([i64("z", sizes)] if sizes else [])
        yield f"resize_{tag}", model([mk("Resize", ins, ["y"], **attrs)], x, None, inits), x
    yield "resize_opset10_scales", model([mk("Resize", ["x", "s"], ["y"], mode="linear")], x, None,
                                         [f32("s", [1, 1, 2, 2])], opset=10), x
    yield "upsample_opset9", model([mk("Upsample", ["x", "s"], ["y"], mode="nearest")], x, None,
                                   [f32("s", [1, 1, 2, 3])], opset=9), x
    # Squeeze / Unsqueeze: axes as an attribute (11) and an input (13)
    xs = [2, 4, 1, 1]
    yield "squeeze_unsqueeze_opset11", model([mk("Squeeze", ["x"], ["q"], axes=[2, 3]), mk("Relu", ["q"], ["r"]),
                                              mk("Unsqueeze", ["r"], ["y"], axes=[2, 3])], xs, None, opset=11), xs
    yield "squeeze_unsqueeze_opset13", model([mk("Squeeze", ["x", "ax"], ["q"]), mk("Relu", ["q"], ["r"]),
                                              mk("Unsqueeze", ["r", "ax"], ["y"])], xs, None, [i64("ax", [-1, 2])]), xs
    # ReduceMean's axes: an attribute (13), an input (18); Clip's bounds: attributes (6), inputs (11)
    yield "reducemean_opset13", model([mk("ReduceMean", ["x"], ["y"], axes=[2, 3])], x, None), x
    yield "reducemean_opset18", model([mk("ReduceMean", ["x", "ax"], ["y"])], x, None, [i64("ax", [2, 3])],
                                      opset=18), x
    yield "reducesum_opset11", model([mk("ReduceSum", ["x"], ["y"], axes=[2, 3])], x, None, opset=11), x
    yield "reducesum_opset13", model([mk("ReduceSum", ["x", "ax"], ["y"])], x, None, [i64("ax", [2, 3])]), x
    yield "clip_opset6", model([mk("Clip", ["x"], ["y"], min=-0.5, max=0.25)], x, None, opset=6), x
    yield "clip_opset11", model([mk("Clip", ["x", "lo", "hi"], ["y"])], x, None,
                                [f32("lo", -0.5), f32("hi", 0.25)], opset=11), x
    # Shape arithmetic folded at import: torch's x.view(x.size(0), -1); Range, Cast, ConstantOfShape
    nodes = [mk("Shape", ["x"], ["sh"]), mk("Gather", ["sh", "zero"], ["n"], axis=0),
             mk("Unsqueeze", ["n", "zax"], ["n1"]), mk("Concat", ["n1", "minus1"], ["shape"], axis=0),
             mk("Reshape", ["x", "shape"], ["y"])]
    yield "shape_chain_view", model(nodes, x, None, [i64("zero", 0), i64("zax", [0]), i64("minus1", [-1])]), x
    nodes = [mk("Shape", ["x"], ["sh"]), mk("Slice", ["sh", "b", "e"], ["c"]), mk("Range", ["st", "c0", "one"], ["r"]),
             mk("Cast", ["r"], ["rf"], to=TensorProto.FLOAT), mk("Reshape", ["rf", "rs"], ["rr"]),
             mk("ConstantOfShape", ["rs"], ["two"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [2.0])),
             mk("Mul", ["rr", "two"], ["r2"]), mk("Add", ["x", "r2"], ["y"])]
    inits = [i64("b", [1]), i64("e", [2]), i64("st", 0), i64("one", 1), i64("rs", [1, 4, 1, 1])]
    # Range's limit is the channel count taken from the shape (Squeeze of the 1-element slice)
    nodes.insert(2, mk("Squeeze", ["c"], ["c0"]))
    yield "shape_range_cast_constantofshape", model(nodes, x, None, inits), x
    # Swin's window padding: (w - H % w) % w of the shape (Mod, fmod 0: the divisor's sign)
    nodes = [mk("Shape", ["x"], ["sh"]), mk("Mod", ["sh", "w"], ["m"]), mk("Sub", ["w", "m"], ["d"]),
             mk("Mod", ["d", "w"], ["p"]), mk("Mod", ["neg", "w"], ["pn"]), mk("Add", ["p", "pn"], ["q"]),
             mk("Concat", ["zero4", "q"], ["pads"], axis=0), mk("Pad", ["x", "pads"], ["y"])]
    yield "shape_mod_pad", model(nodes, x, None, [i64("w", [1, 3, 4, 4]), i64("neg", [0, -4, 0, -3]),
                                                  i64("zero4", [0, 0, 0, 0])]), x
    # Swin's mask: ScatterND of constants (a row and a block), Not, Cast to float, added to x
    nodes = [mk("ScatterND", ["base", "ix", "up"], ["sc"]), mk("Not", ["bm"], ["nb"]),
             mk("Cast", ["nb"], ["nf"], to=TensorProto.FLOAT), mk("Add", ["sc", "nf"], ["s2"]),
             mk("Add", ["x", "s2"], ["y"])]
    yield "scatternd_not_constants", model(nodes, x, None, [
        init("base", np.zeros((1, 4, 5, 7), np.float32)), i64("ix", [[0, 1, 2], [0, 3, -1]]),
        init("up", rnd(2, 7)), init("bm", rng.uniform(0, 1, (1, 4, 5, 7)) > 0.5)]), x
    # torch's expand(n, -1, ...) of a parameter: Equal and Where on the shape, Expand of a constant
    nodes = [mk("Shape", ["x"], ["sh"]), mk("Equal", ["sh", "pat"], ["eq"]), mk("Where", ["eq", "ones", "sh"], ["w"]),
             mk("Expand", ["cb", "w"], ["e"]), mk("Add", ["x", "e"], ["y"])]
    yield "shape_equal_where_expand", model(nodes, x, None, [i64("pat", [2, 1, 5, 1]), i64("ones", [1, 1, 1, 1]),
                                                             init("cb", rnd(1, 1, 1, 7))]), x


def zoo_nd_cases():
    """What the transformer families of make check-zoo need (issue 42):
    a Gather of a scalar index drops its axis (ViT's x[:, 0]); rank-4
    values held as N-d tensors (a MatMul's, a Transpose's) read by the
    image ops; ConvNeXt's block (permute to channels-last, LayerNorm,
    Linear, permute back, layer scale, residual); Swin's window partition,
    position-bias arithmetic and attention Dropout; Einsum (MaxViT)."""
    i64 = lambda name, v: init(name, np.array(v, dtype=np.int64))  # noqa: E731
    mk = helper.make_node
    x = [2, 4, 5, 7]
    nodes = [mk("Conv", ["x", "dw"], ["c"], group=4, pads=[1, 1, 1, 1]), mk("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
             mk("LayerNormalization", ["t", "s", "b"], ["ln"], epsilon=1e-6), mk("MatMul", ["ln", "w1"], ["m1"]),
             mk("Add", ["m1", "b1"], ["a1"]), mk("Relu", ["a1"], ["r"]), mk("MatMul", ["r", "w2"], ["m2"]),
             mk("Transpose", ["m2"], ["tb"], perm=[0, 3, 1, 2]), mk("Mul", ["tb", "g"], ["ls"]),
             mk("Add", ["ls", "x"], ["res"]), mk("Conv", ["res", "w"], ["y"], pads=[1, 1, 1, 1])]
    yield "convnext_block", model(nodes, x, None, [
        init("dw", rnd(4, 1, 3, 3)), init("s", rnd(4)), init("b", rnd(4)), init("w1", rnd(4, 8)), init("b1", rnd(8)),
        init("w2", rnd(8, 4)), init("g", rnd(4, 1, 1)), init("w", rnd(3, 4, 3, 3))], opset=17), x
    # Swin: window partition (a rank-6 Transpose), the relative-position
    # index (a column plus a row of constants, broadcast), an attention
    # Dropout with training_mode true, ratio 0 and an unread mask
    xs = [1, 8, 8, 4]
    nodes = [mk("Reshape", ["x", "s6"], ["r6"]), mk("Transpose", ["r6"], ["t6"], perm=[0, 1, 3, 2, 4, 5]),
             mk("Reshape", ["t6", "s3"], ["w"]), mk("MatMul", ["w", "wq"], ["q"]),
             mk("Add", ["col", "row"], ["idx"]), mk("Cast", ["idx"], ["fi"], to=TensorProto.FLOAT),
             mk("Mul", ["fi", "k"], ["bias"]), mk("Add", ["q", "bias"], ["a"]),
             mk("Dropout", ["a", "ratio", "train"], ["y", "mask"])]
    yield "swin_window_bias_dropout", model(nodes, xs, None, [
        i64("s6", [1, 2, 4, 2, 4, 4]), i64("s3", [-1, 16, 4]), init("wq", rnd(4, 4)),
        i64("col", np.arange(16).reshape(16, 1)), i64("row", np.arange(4) * 3), init("k", np.float32(0.01)),
        init("ratio", np.float32(0.0)), init("train", np.array(True))]), xs
    nodes = [mk("Dropout", ["x", "ratio", "train"], ["y"])]
    yield "dropout_training_refused", model(nodes, xs, None, [init("ratio", np.float32(0.5)),
                                                              init("train", np.array(True))]), xs
    # Einsum (two operands) as a batched MatMul: MaxViT's attention (q k^T
    # through trans_b, p v), transposes on both sides, merged indices, an
    # outer product, the implicit output
    for tag, eq, shape, other in [
            ("qk", "bhid,bhjd->bhij", [2, 3, 5, 7], None),
            ("pv_upper", "B G I J, B G J D -> B G I D", [2, 3, 5, 7], [2, 3, 7, 4]),
            ("transposes", "ijk,kli->lji", [3, 4, 5], [5, 6, 3]),
            ("merged", "abcd,cde->eba", [2, 3, 4, 5], [4, 5, 6]),
            ("outer", "ab,c->acb", [3, 5], [4]),
            ("implicit", "kj,ij", [4, 6], [3, 6])]:
        ins = ["x", "o"] if other else ["x", "r"]
        nodes = ([] if other else [mk("Relu", ["x"], ["r"])]) + [mk("Einsum", ins, ["y"], equation=eq)]
        yield f"einsum_{tag}", model(nodes, shape, None, [init("o", rnd(*other))] if other else [], opset=12), shape
    for tag, eq in (("repeated", "ii,ij->j"), ("ellipsis", "...ij,...jk->...ik"), ("one_sided_sum", "ij,jk->i")):
        yield f"einsum_{tag}_refused", model([mk("Einsum", ["x", "o"], ["y"], equation=eq)], [3, 3], None,
                                             [init("o", rnd(3, 3))], opset=12), [3, 3]
    # a MatMul's N-d rank-4 result into each image op
    for tag, node, inits in [
            ("conv", mk("Conv", ["m", "w"], ["y"], pads=[0, 1, 1, 0]), [init("w", rnd(3, 4, 2, 2))]),
            ("convtranspose", mk("ConvTranspose", ["m", "w"], ["y"], strides=[2, 2]), [init("w", rnd(4, 3, 2, 2))]),
            ("maxpool", mk("MaxPool", ["m"], ["y"], kernel_shape=[2, 3]), []),
            ("gap", mk("GlobalAveragePool", ["m"], ["y"]), []),
            ("reducemean_hw", mk("ReduceMean", ["m"], ["y"], axes=[2, 3]), []),
            ("batchnorm", mk("BatchNormalization", ["m", "s", "b", "mu", "v"], ["y"]),
             [init("s", rnd(4)), init("b", rnd(4)), init("mu", rnd(4)), init("v", rng.uniform(0.5, 2, 4).astype(np.float32))]),
            ("pad_hw", mk("Pad", ["m", "p"], ["y"], mode="reflect"), [i64("p", [0, 0, 1, 2, 0, 0, 2, 1])])]:
        yield f"nd_into_{tag}", model([mk("MatMul", ["x", "wm"], ["m"]), node], x, None,
                                      [init("wm", rnd(7, 7))] + inits), x
    x3 = [2, 5, 7]
    yield "gather_scalar_rank3_gemm", model([mk("Gather", ["x", "i"], ["g"], axis=1), mk("Gemm", ["g", "w"], ["y"])],
                                            x3, None, [i64("i", 0), init("w", rnd(7, 3))]), x3
    x = [2, 3, 5, 7]
    yield "gather_scalar_rank4_matmul", model([mk("Gather", ["x", "i"], ["g"], axis=1),
                                               mk("MatMul", ["g", "w"], ["y"])], x, None,
                                              [i64("i", -1), init("w", rnd(7, 4))]), x
    m = [3, 9]
    yield "gather_scalar_rank2_negative_axis", model([mk("Gather", ["x", "i"], ["g"], axis=-1),
                                                      mk("Unsqueeze", ["g", "ax"], ["y"])], m, None,
                                                     [i64("i", 4), i64("ax", [1])]), m


def main():
    tool = sys.argv[1]
    devices = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--device=")] or [None]
    verbose = "-v" in sys.argv
    # --python: also run each model through polydnn.load_onnx (the module
    # and library that POLYDNN_LIBRARY and PYTHONPATH name).
    pdnn = None
    if "--python" in sys.argv:
        import polydnn as pdnn
    failed = passed = 0
    with tempfile.TemporaryDirectory(prefix="pdnn-onnx-") as tmp:
        if "--models" in sys.argv:  # make check-models: the large torchvision models only
            batches = (1,) if "--batch=1" in sys.argv else (1, 8)
            all_cases = list(torchvision_cases(tmp, TORCHVISION_LARGE, batches))
        elif "--torchvision-fast" in sys.argv:  # make check-models: the fast ones
            all_cases = list(torchvision_cases(tmp, TORCHVISION_FAST, (1, 8)))
        else:
            # --only=PREFIX: the hand-built cases whose names start with it
            # (a quicker loop while working on some; torch exports only for torch*)
            only = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--only=")]
            all_cases = (list(cases()) + list(activation_cases()) + list(binary_cases()) + list(zoo_op_cases())
                         + list(nd_cases()) + list(nd_math_cases()) + list(move_cases()) + list(zoo_nd_cases())
                         + (list(torch_cases(tmp)) if not only or any(o.startswith("torch") for o in only) else []))
        if os.environ.get("PDNN_ONNX_CASES"):  # a prefix: run only those (while working on them)
            all_cases = [c for c in all_cases if c[0].startswith(os.environ["PDNN_ONNX_CASES"])]
        only = [a.split("=", 1)[1] for a in sys.argv[2:] if a.startswith("--only=")]
        for name, m, x_shape in all_cases:
            if only and not any(name.startswith(o) for o in only):
                continue
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            x = rng.uniform(-1, 1, x_shape).astype(np.float32)
            xp = os.path.join(tmp, name + ".x.npy")
            np.save(xp, x)
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            ref = sess.run(None, {sess.get_inputs()[0].name: x})[0]
            # The residual models once more without fusion (--no-fusion);
            # every model in NHWC too (--layout NHWC), torchvision's on the
            # accelerators only (the plain-C /cpu:0 pass is slow).
            runs = [(dev, []) for dev in devices]
            if "resnet" in name:
                runs += [(dev, ["--no-fusion"]) for dev in devices]
            tv = name.split("_b")[0] in TORCHVISION_FAST + TORCHVISION_LARGE
            runs += [(dev, ["--layout", "NHWC"]) for dev in devices if not (tv and dev == "/cpu:0")]
            for dev, extra in runs:
                yp = os.path.join(tmp, name + ".y.npy")
                cmd = [tool, "run", path, "--input", xp, "--output", yp, "--iters", "1", "--memory-stats"] + extra
                if dev:
                    cmd += ["--device", dev]
                r = subprocess.run(cmd, capture_output=True, text=True)
                tag = f"{name} on {dev or 'default'}" + "".join(" " + e for e in extra)
                if name in REFUSED_CASES:
                    ok = r.returncode == 1 and REFUSED_CASES[name] in r.stdout + r.stderr
                    if not ok or verbose:
                        print(f"{'ok  ' if ok else 'FAIL'} {tag}: refused ({r.returncode}): {(r.stdout + r.stderr)[-300:]}")
                    passed += ok
                    failed += not ok
                    continue
                if r.returncode != 0:
                    print(f"FAIL {tag}: polydnn run exited {r.returncode}\n{r.stdout}{r.stderr}")
                    failed += 1
                    continue
                # Memory planning: the allocator's peak within 1.2x of the
                # largest live set on every device that ran nodes, for
                # sets of 1 MiB and more (below, 256-byte rounding and the
                # ops' small workspaces weigh more than the tensors).
                plans = [ln for ln in r.stdout.splitlines() if ln.startswith("plan ")]
                for ln in plans:
                    ratio = float(ln.rsplit("(", 1)[1].rstrip("x)"))
                    live = int(ln.split("largest live set ")[1].split(" ")[0])
                    if live >= 1 << 20 and not ratio <= 1.2:
                        print(f"FAIL {tag}: {ln} (over 1.2x)")
                        failed += 1
                if not plans:
                    print(f"FAIL {tag}: --memory-stats printed no plan line\n{r.stdout}")
                    failed += 1
                # A decomposed LayerNorm must become one node (no Sqrt left).
                if name.startswith("layernorm_decomposed") and not extra:
                    pr = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
                    if pr.returncode != 0 or "| Sqrt |" in pr.stdout or "| LayerNormalization |" not in pr.stdout:
                        print(f"FAIL {tag}: the LayerNorm pattern was not fused\n{pr.stdout}{pr.stderr}")
                        failed += 1
                # ConvNeXt's block: the permutes to channels-last and back
                # are views where the layout allows (NHWC: none copies, only
                # the model's input and output are transformed), and no
                # layout transform runs in NCHW.
                if name == "convnext_block":
                    pr = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
                    rows = [ln.split("|")[2].strip() for ln in pr.stdout.splitlines() if ln.count("|") == 11]
                    want = {"Transpose": 2, "TransposeNd": 0} if "NHWC" in extra else {"Transpose": 0, "TransposeNd": 2}
                    if pr.returncode != 0 or any(rows.count(op) != k for op, k in want.items()):
                        print(f"FAIL {tag}: the profile's transposes are not {want}\n{pr.stdout}{pr.stderr}")
                        failed += 1
                # torch's GELU must become one Gelu node (no Erf left).
                if name.startswith("gelu") and not extra:
                    pr = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
                    if pr.returncode != 0 or "| Erf |" in pr.stdout or "| Gelu |" not in pr.stdout:
                        print(f"FAIL {tag}: the GELU pattern was not fused\n{pr.stdout}{pr.stderr}")
                        failed += 1
                # Conv + Clip(0, c) must fuse (no Clip node in the profile)
                # unless --no-fusion, which keeps the Clip.
                if name.startswith("conv_relu6") and not extra:
                    pr = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
                    if pr.returncode != 0 or "| Clip |" in pr.stdout:
                        print(f"FAIL {tag}: the Clip was not fused into the Conv\n{pr.stdout}{pr.stderr}")
                        failed += 1
                    # --warmup: the untimed runs it asks for, and at least one.
                    wr = subprocess.run(cmd + ["--warmup", "3"], capture_output=True, text=True)
                    if wr.returncode != 0 or "(mean of 1 after 3 warm-up runs)" not in wr.stdout:
                        print(f"FAIL {tag} --warmup 3: exited {wr.returncode}\n{wr.stdout}{wr.stderr}")
                        failed += 1
                    # The spread: min <= median <= p90 <= p99, the mean within [min, p99].
                    sr = subprocess.run(cmd + ["--iters", "12"], capture_output=True, text=True)
                    m = re.search(r"time per run: ([0-9.]+) ms \(mean of 12 after 1 warm-up run\), min ([0-9.]+), "
                                  r"median ([0-9.]+), p90 ([0-9.]+), p99 ([0-9.]+) ms", sr.stdout)
                    v = [float(g) for g in m.groups()] if m else None
                    if sr.returncode != 0 or not v or not (v[1] <= v[2] <= v[3] <= v[4] and v[1] <= v[0] <= v[4]):
                        print(f"FAIL {tag} --iters 12: no consistent min/median/p90/p99\n{sr.stdout}{sr.stderr}")
                        failed += 1
                    # --json: one object with the same top-5 and the times.
                    jr = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
                    try:
                        j = json.loads(jr.stdout.splitlines()[0]) if jr.returncode == 0 else None
                    except (ValueError, IndexError):
                        j = None
                    first = re.search(r"^image 0 top-\d+: (\d+) ", sr.stdout, re.M)
                    if (not j or not first or j["top"][0][0][0] != int(first.group(1)) or
                            not j["min_ms"] <= j["median_ms"] <= j["p90_ms"] <= j["p99_ms"]):
                        print(f"FAIL {tag} --json: {jr.returncode}\n{jr.stdout}{jr.stderr}")
                        failed += 1
                    wr = subprocess.run(cmd + ["--warmup", "0"], capture_output=True, text=True)
                    if wr.returncode != 2 or "--warmup must be at least 1" not in wr.stderr:
                        print(f"FAIL {tag} --warmup 0: exited {wr.returncode}, not a usage error\n{wr.stderr}")
                        failed += 1
                # x * Sigmoid(x) and x * HardSigmoid(x; 1/6, 1/2) must fuse
                # into one SiLU or HardSwish node; a shared gate must not.
                if "_gated_" in name or name == "sigmoid_gate_shared":
                    pr = subprocess.run(cmd + ["--profile"], capture_output=True, text=True)
                    want = ("| Silu |" if name.startswith("sigmoid") else "| HardSwish |") if "_gated_" in name \
                        else "| Sigmoid |"
                    if pr.returncode != 0 or want not in pr.stdout or ("_gated_" in name and "| Mul |" in pr.stdout):
                        print(f"FAIL {tag}: the profile lacks {want} or holds a Mul\n{pr.stdout}{pr.stderr}")
                        failed += 1
                results = [(tag, np.load(yp))]
                if pdnn is not None:
                    model = pdnn.load_onnx(path, device=dev, batch=x_shape[0], fusion="--no-fusion" not in extra,
                                           data_format="NHWC" if "NHWC" in extra else "NCHW")
                    results.append((tag + " (load_onnx)", model(x, as_numpy=True)))
                for rtag, y in results:
                    if y.shape != ref.shape:
                        print(f"FAIL {rtag}: shape {y.shape}, onnxruntime {ref.shape}")
                        failed += 1
                        continue
                    scale = max(float(np.abs(ref).max()), 1e-30)
                    err = float(np.abs(y - ref).max()) / scale
                    ok = err <= TOL
                    if not ok or verbose:
                        print(f"{'ok  ' if ok else 'FAIL'} {rtag}: max error {err:.2e} of the largest |y| {scale:.3g}")
                    passed += ok
                    failed += not ok
        # The symbolic batch with random inputs at any -n, imported once per run.
        dyn = os.path.join(tmp, "torch_moves_dynamic_b1.onnx")
        for n in ("3", "7") if os.path.exists(dyn) else ():
            r = subprocess.run([tool, "run", dyn, "-n", n, "--iters", "1"], capture_output=True, text=True)
            ok = r.returncode == 0 and f"output 'y' {n}x10" in r.stdout
            if not ok or verbose:
                print(f"{'ok  ' if ok else 'FAIL'} polydnn run -n {n} on a symbolic batch: {r.returncode}\n"
                      f"{r.stdout[-300:]}{r.stderr[-300:]}")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
