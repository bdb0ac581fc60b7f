"""Writes the seed corpus of the ONNX importer's fuzz target
(tests/fuzz/onnx-corpus): one small model per supported operator and
attribute form, with tiny weights so that mutations reach the structure.
Needs the onnx package (Debian: python3-onnx). Usage:
    python3 tests/fuzz/make-onnx-corpus.py [DIR]"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1)


def w(name, *shape):
    return numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)


def model(nodes, x_shape, y_shape, inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def cases():
    n = helper.make_node
    yield "conv", model([n("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 2], strides=[2, 1], dilations=[1, 2])],
                        [1, 2, 5, 5], [1, 3, 3, 3], [w("w", 3, 2, 3, 3), w("b", 3)])
    yield "conv_group_same", model([n("Conv", ["x", "w"], ["y"], group=2, auto_pad="SAME_LOWER", strides=[2, 2])],
                                   ["n", 4, 5, 5], ["n", 4, 3, 3], [w("w", 4, 2, 3, 3)])
    yield "conv_bn_relu", model([n("Conv", ["x", "w"], ["c"]),
                                 n("BatchNormalization", ["c", "s", "bb", "m", "v"], ["bn"]),
                                 n("Relu", ["bn"], ["y"])], [1, 2, 4, 4], [1, 2, 2, 2],
                                [w("w", 2, 2, 3, 3), w("s", 2), w("bb", 2), w("m", 2),
                                 numpy_helper.from_array(np.ones(2, np.float32), "v")])
    yield "pools", model([n("MaxPool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                          n("AveragePool", ["a"], ["b"], kernel_shape=[2, 2], ceil_mode=1, count_include_pad=1),
                          n("GlobalAveragePool", ["b"], ["y"])], [1, 2, 7, 7], [1, 2, 1, 1])
    yield "add_residual", model([n("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), n("Add", ["c", "x"], ["y"])],
                                [1, 2, 3, 3], [1, 2, 3, 3], [w("w", 2, 2, 3, 3)])
    yield "head", model([n("Flatten", ["x"], ["f"]), n("Gemm", ["f", "gw", "gb"], ["g"], transB=1, alpha=0.5),
                         n("Dropout", ["g"], ["d"]), n("Identity", ["d"], ["s"]), n("Softmax", ["s"], ["y"])],
                        [2, 2, 2, 2], [2, 3], [w("gw", 3, 8), w("gb", 3)])
    shape = numpy_helper.from_array(np.array([2, 8], np.int64), "shape")
    yield "reshape_matmul", model([n("Reshape", ["x", "shape"], ["r"]), n("MatMul", ["r", "mw"], ["y"])],
                                  [2, 2, 2, 2], [2, 4], [shape, w("mw", 8, 4)])
    yield "constant", model([n("Constant", [], ["k"], value=w("kv", 1, 2, 1, 1)), n("Add", ["x", "k"], ["y"])],
                            [1, 2, 2, 2], [1, 2, 2, 2])

    lo = numpy_helper.from_array(np.float32(0), "lo")
    hi = numpy_helper.from_array(np.float32(6), "hi")
    k = numpy_helper.from_array(np.float32(0.5), "k")
    yield "activations", model([n("Clip", ["x", "lo", "hi"], ["a"]), n("LeakyRelu", ["a"], ["b"], alpha=0.1),
                                n("Mul", ["b", "k"], ["c"]), n("Sigmoid", ["c"], ["y"])],
                               [1, 2, 3, 3], [1, 2, 3, 3], [lo, hi, k])
    yield "concat", model([n("Relu", ["x"], ["r"]), n("Concat", ["x", "r"], ["y"], axis=1)],
                          [1, 2, 3, 3], [1, 4, 3, 3])
    # the rank-4 torchvision families' ops: a standalone BatchNormalization,
    # a squeeze-and-excitation gate (broadcast Mul) over SiLU and hard
    # swish as exporters write them, Sub/Div, Pad into an AveragePool and
    # on its own, ReduceMean
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "p")
    yield "zoo_ops", model([n("BatchNormalization", ["x", "s", "bb", "m", "v"], ["bn"]),
                            n("Sigmoid", ["bn"], ["sg"]), n("Mul", ["bn", "sg"], ["si"]),
                            n("HardSigmoid", ["si"], ["hs"], alpha=1.0 / 6, beta=0.5), n("Mul", ["si", "hs"], ["hw"]),
                            n("GlobalAveragePool", ["hw"], ["g"]), n("Mul", ["g", "hw"], ["se"]),
                            n("Sub", ["se", "g"], ["d0"]), n("Div", ["d0", "k"], ["d1"]),
                            n("Pad", ["d1", "p"], ["pd"]), n("AveragePool", ["pd"], ["ap"], kernel_shape=[3, 3]),
                            n("Pad", ["ap", "p"], ["pr"], mode="reflect"),
                            n("ReduceMean", ["pr"], ["y"], axes=[2, 3], keepdims=0)],
                           [1, 2, 3, 3], [1, 2], [w("s", 2), w("bb", 2), w("m", 2),
                                                  numpy_helper.from_array(np.ones(2, np.float32), "v"), k, pads])


def regressions():
    # Found by the fuzzer: a Conv whose only reader has no op_type (the
    # BatchNormalization fold compared the reader's op_type, a NULL string).
    m = model([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])],
              [1, 1, 3, 3], [1, 1, 1, 1], [w("w", 1, 1, 3, 3)])
    m.graph.node[1].ClearField("op_type")
    yield "regression_reader_without_op_type", m


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "onnx-corpus")
    os.makedirs(out, exist_ok=True)
    for name, m in list(cases()) + list(regressions()):
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())
    # Not a model, and an empty one: the refusals are seeds too.
    with open(os.path.join(out, "garbage.onnx"), "wb") as f:
        f.write(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with open(os.path.join(out, "empty.onnx"), "wb") as f:
        f.write(b"")


if __name__ == "__main__":
    main()
