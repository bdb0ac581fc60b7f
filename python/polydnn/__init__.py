"""polydnn for Python: devices, tensors that speak DLPack, conv2d and pooling.

A thin ctypes layer over the installed libpolydnn (no compiler needed).
Tensors move between polydnn and other frameworks (PyTorch, NumPy, CuPy,
JAX) through DLPack without a copy:

    import torch, polydnn
    x = polydnn.from_dlpack(torch.randn(1, 3, 8, 8))    # same memory
    w = polydnn.from_dlpack(torch.randn(4, 3, 3, 3), role="filter")
    y = polydnn.conv2d(x, w, padding=1)
    t = torch.from_dlpack(y)                             # same memory

A tensor's shape is always logical (N, C, H, W) or (O, I, H, W); its layout
(NCHW, NHWC, ...) is how it lies in memory, which DLPack strides carry, so a
PyTorch channels_last tensor arrives as NHWC. Host tensors (kDLCPU) live on
/device:CPU:0; use Tensor.to() to copy one to an accelerator and back.

The library is found through, in order: $POLYDNN_LIBRARY, the libdir it
was installed to by `make install`, then the system's library path
(docs/python.md, "Installing").
"""

# The release this module belongs to: configure.ac's AC_INIT version, which
# pyproject.toml reads from here (tests/test_pip_install.sh checks both and
# version(), the library's).
__version__ = "0.1.0"

import contextlib
import ctypes
import ctypes.util
import itertools
import numbers
import operator
import os
import sys

__all__ = [
    "__version__", "Error", "Context", "Device", "Tensor", "default_context", "devices",
    "empty", "from_dlpack", "from_numpy", "conv2d", "conv_algorithms", "max_pool2d", "avg_pool2d", "version",
    "matmul", "add", "add_n", "bias_add", "relu", "softmax", "reshape", "flatten",
    "transpose", "log_softmax", "layer_norm", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "erf",
    "gelu", "tanh", "sqrt", "neg", "exp", "log", "reciprocal", "abs", "pow",
    "clip", "leaky_relu", "sigmoid", "concat", "transform",
    "Graph", "Node", "Session",
    "batch_norm", "batch_norm_backward",
    "relu_backward", "softmax_cross_entropy", "optimizer_update", "SGD", "Adam",
    "load_onnx", "OnnxModel", "TrainableOnnxModel", "AdamW",
]
__all__ += ["cast"]  # float16 and bfloat16 (docs/precision.md)

# ---- the library -----------------------------------------------------------


def _load():
    tried = []
    cands = []
    if os.environ.get("POLYDNN_LIBRARY"):
        cands.append(os.environ["POLYDNN_LIBRARY"])
    try:
        from . import _build_config  # written by make install
        cands.append(os.path.join(_build_config.LIBDIR, "libpolydnn.so.1"))
    except ImportError:
        pass
    found = ctypes.util.find_library("polydnn")
    if found:
        cands.append(found)
    cands.append("libpolydnn.so.1")
    for c in cands:
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            tried.append("%s (%s)" % (c, e))
    raise ImportError("polydnn: cannot load libpolydnn; tried " + "; ".join(tried) +
                      ". Install it (make install) or set POLYDNN_LIBRARY.")


_lib = _load()

_c_int, _c_int64, _c_uint64, _c_double = ctypes.c_int, ctypes.c_int64, ctypes.c_uint64, ctypes.c_double
_vp, _cp = ctypes.c_void_p, ctypes.c_char_p


class _ContextOptions(ctypes.Structure):
    # Must match pdnn_context_options field for field: the library's
    # options_init writes every field of the C struct.
    _fields_ = [("allow_growth", _c_int), ("growth_policy", _c_int),
                ("memory_fraction", _c_double), ("memory_limit", _c_uint64),
                ("log_device_placement", _c_int), ("visible_devices", _cp),
                ("tuning", _c_int), ("enable_tensor_float_32_execution", _c_int)]


_GROWTH = {"gradual": 0, "double": 1}
# pdnn_tuning_mode's values, by the names POLYDNN_TUNING takes.
_TUNING = {"cached": 0, "off": 1, "search": 2, "force": 3}


class _DeviceInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 64), ("type", _c_int), ("index", _c_int),
                ("backend", ctypes.c_char * 16), ("vendor", ctypes.c_char * 128),
                ("device_name", ctypes.c_char * 256), ("driver_version", ctypes.c_char * 128),
                ("memory_bytes", _c_uint64), ("max_alloc_bytes", _c_uint64),
                ("compute_units", _c_int)]


class _Desc(ctypes.Structure):
    _fields_ = [("dtype", _c_int), ("layout", _c_int), ("dims", _c_int64 * 8), ("rank", _c_int)]


class _ConvParams(ctypes.Structure):
    _fields_ = [(n, _c_int) for n in (
        "stride_h", "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_bottom",
        "pad_left", "pad_right", "groups", "relu", "algorithm", "bwd_data_algorithm", "bwd_filter_algorithm")] + [
        ("relu_cap", ctypes.c_float), ("workspace_limit", ctypes.c_size_t)]


class _PoolParams(ctypes.Structure):
    _fields_ = [(n, _c_int) for n in (
        "mode", "window_h", "window_w", "stride_h", "stride_w", "pad_top", "pad_bottom",
        "pad_left", "pad_right", "ceil_mode")]


class _BatchNormParams(ctypes.Structure):
    _fields_ = [("training", _c_int), ("epsilon", ctypes.c_float), ("momentum", ctypes.c_float)]


class _OptimizerParams(ctypes.Structure):
    _fields_ = [("kind", _c_int), ("learning_rate", ctypes.c_float), ("momentum", ctypes.c_float),
                ("weight_decay", ctypes.c_float), ("beta1", ctypes.c_float), ("beta2", ctypes.c_float),
                ("epsilon", ctypes.c_float), ("nesterov", _c_int)]


class _MemoryStats(ctypes.Structure):
    _fields_ = [(n, _c_uint64) for n in (
        "bytes_in_use", "peak_bytes_in_use", "bytes_reserved", "peak_bytes_reserved",
        "num_allocs", "largest_alloc", "num_regions", "largest_free_chunk", "limit")]


# DLPack 1.1 (see polydnn_dlpack.h).
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", _c_int), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", _vp), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(_c_int64)),
                ("strides", ctypes.POINTER(_c_int64)), ("byte_offset", _c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, _vp)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", _vp), ("deleter", _Deleter)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", _vp), ("deleter", _Deleter),
                ("flags", _c_uint64), ("dl_tensor", _DLTensor)]


_LogFn = ctypes.CFUNCTYPE(None, _vp, _cp)


class _SessionConfig(ctypes.Structure):
    _fields_ = [("context", _vp), ("options", _ContextOptions), ("log_device_placement", _c_int),
                ("allow_soft_placement", _c_int), ("log", _LogFn), ("log_user", _vp),
                ("profile", _c_int), ("distributed", _c_int), ("mpi_comm", _vp),
                ("allreduce_bucket_bytes", _c_int64), ("allreduce_overlap", _c_int),
                ("collective_timeout", ctypes.c_double)]


_ONNX_MAX_IO = 16


class _OnnxOptions(ctypes.Structure):
    _fields_ = [("batch", _c_int64), ("base_dir", _cp), ("device", _cp), ("no_fusion", _c_int), ("layout", _c_int),
                ("trainable", _c_int), ("seed", _c_uint64), ("distributed", _c_int), ("precision", _c_int)]


class _OnnxIO(ctypes.Structure):
    _fields_ = [("n_inputs", _c_int), ("inputs", _c_int * _ONNX_MAX_IO), ("input_rank", _c_int * _ONNX_MAX_IO),
                ("n_outputs", _c_int), ("outputs", _c_int * _ONNX_MAX_IO),
                ("output_rank", _c_int * _ONNX_MAX_IO)]


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_P = ctypes.POINTER
_last_error = _fn("pdnn_last_error", _cp)
_status_string = _fn("pdnn_status_string", _cp, _c_int)
_version = _fn("pdnn_version", _cp)
_options_init = _fn("pdnn_context_options_init", None, _P(_ContextOptions))
_context_create = _fn("pdnn_context_create", _c_int, _P(_ContextOptions), _P(_vp))
_context_destroy = _fn("pdnn_context_destroy", None, _vp)
_context_tf32 = _fn("pdnn_context_tensor_float_32_enabled", _c_int, _vp)
_device_count = _fn("pdnn_device_count", _c_int, _vp)
_device_get = _fn("pdnn_device_get", _c_int, _vp, _c_int, _P(_vp))
_device_find = _fn("pdnn_device_find", _c_int, _vp, _cp, _P(_vp))
_device_default = _fn("pdnn_device_default", _c_int, _vp, _P(_vp))
_device_info = _fn("pdnn_device_get_info", _c_int, _vp, _P(_DeviceInfo))
_device_stats = _fn("pdnn_device_get_memory_stats", _c_int, _vp, _P(_MemoryStats))
_device_to_dlpack = _fn("pdnn_device_to_dlpack", _c_int, _vp, _P(_DLDevice))
_tensor_create = _fn("pdnn_tensor_create", _c_int, _vp, _P(_Desc), _P(_vp))
_tensor_write = _fn("pdnn_tensor_write", _c_int, _vp, _vp, ctypes.c_size_t)
_tensor_read = _fn("pdnn_tensor_read", _c_int, _vp, _vp, ctypes.c_size_t)
_tensor_desc = _fn("pdnn_tensor_get_desc", _c_int, _vp, _P(_Desc))
_tensor_device = _fn("pdnn_tensor_device", _vp, _vp)
_tensor_release = _fn("pdnn_tensor_release", None, _vp)
_to_dlpack = _fn("pdnn_tensor_to_dlpack", _c_int, _vp, _P(_P(_DLManagedTensor)))
_to_dlpack_v = _fn("pdnn_tensor_to_dlpack_versioned", _c_int, _vp, _P(_P(_DLManagedTensorVersioned)))
_from_dlpack = _fn("pdnn_tensor_from_dlpack", _c_int, _vp, _vp, _c_int, _P(_vp))
_from_dlpack_v = _fn("pdnn_tensor_from_dlpack_versioned", _c_int, _vp, _vp, _c_int, _P(_vp))
_layout_name = _fn("pdnn_layout_name", _cp, _c_int)
_layout_parse = _fn("pdnn_layout_parse", _c_int, _cp)
_conv_init = _fn("pdnn_conv2d_params_init", None, _P(_ConvParams))
_conv_same = _fn("pdnn_conv2d_set_padding_same", _c_int, _P(_ConvParams), _c_int64, _c_int64, _c_int64, _c_int64)
_conv_dims = _fn("pdnn_conv2d_output_dims", _c_int, _P(_Desc), _P(_Desc), _P(_ConvParams), _P(_c_int64))
_conv_forward = _fn("pdnn_conv2d_forward", _c_int, _P(_ConvParams), _vp, _vp, _vp, _vp)
_pool_init = _fn("pdnn_pool2d_params_init", None, _P(_PoolParams))
_pool_dims = _fn("pdnn_pool2d_output_dims", _c_int, _P(_Desc), _P(_PoolParams), _P(_c_int64))
_pool_forward = _fn("pdnn_pool2d_forward", _c_int, _P(_PoolParams), _vp, _vp)
_bn_init = _fn("pdnn_batch_norm_params_init", None, _P(_BatchNormParams))
_bn_forward = _fn("pdnn_batch_norm_forward", _c_int, _P(_BatchNormParams), _vp, _vp, _vp, _vp, _vp, _vp, _vp, _vp)
_bn_backward = _fn("pdnn_batch_norm_backward", _c_int, _P(_BatchNormParams), _vp, _vp, _vp, _vp, _vp, _vp, _vp,
                   _vp)
_algo_name = _fn("pdnn_conv_algo_name", _cp, _c_int)
_algo_parse = _fn("pdnn_conv_algo_parse", _c_int, _cp)
_bwd_algo_parse = _fn("pdnn_conv_bwd_algo_parse", _c_int, _c_int, _cp)
_bwd_algo_count = _fn("pdnn_conv_bwd_algo_count", _c_int, _c_int)
_bwd_algo_name = _fn("pdnn_conv_bwd_algo_name", _cp, _c_int, _c_int)
_add = _fn("pdnn_add", _c_int, _vp, _vp, _vp)
_add_n = _fn("pdnn_add_n", _c_int, _P(_vp), _c_int, _vp)
_bias_add = _fn("pdnn_bias_add", _c_int, _vp, _vp, _vp)
_relu = _fn("pdnn_relu", _c_int, _vp, _vp)
_cast = _fn("pdnn_cast", _c_int, _vp, _vp)
_activation = _fn("pdnn_activation_forward", _c_int, _vp, _c_int, ctypes.c_float, ctypes.c_float, _vp)
_concat = _fn("pdnn_concat", _c_int, _P(_vp), _c_int, _c_int, _vp)
_transform = _fn("pdnn_transform", _c_int, _vp, _vp)
_softmax = _fn("pdnn_softmax", _c_int, _vp, _vp)
_transpose = _fn("pdnn_transpose", _c_int, _vp, _P(_c_int), _vp)
_softmax_axis = _fn("pdnn_softmax_axis", _c_int, _vp, _c_int, _c_int, _vp)
_layer_norm = _fn("pdnn_layer_norm", _c_int, _vp, _c_int, ctypes.c_float, _vp, _vp, _vp)
_reduce = _fn("pdnn_reduce", _c_int, _vp, _P(_c_int), _c_int, _c_int, _vp)
_matmul = _fn("pdnn_matmul", _c_int, _vp, _vp, _c_int, _c_int, _vp)
_reshape = _fn("pdnn_reshape", _c_int, _vp, _vp)
_relu_backward = _fn("pdnn_relu_backward", _c_int, _vp, _vp, _vp)
_softmax_xent = _fn("pdnn_softmax_cross_entropy", _c_int, _vp, _vp, _vp, _vp)
_optimizer_init = _fn("pdnn_optimizer_params_init", None, _P(_OptimizerParams), _c_int)
_optimizer_update = _fn("pdnn_optimizer_update", _c_int, _P(_OptimizerParams), _c_int64, _vp, _vp, _vp, _vp)
_graph_create = _fn("pdnn_graph_create", _c_int, _P(_vp))
_graph_destroy = _fn("pdnn_graph_destroy", None, _vp)
_graph_node_count = _fn("pdnn_graph_node_count", _c_int, _vp)
_graph_node_name = _fn("pdnn_graph_node_name", _cp, _vp, _c_int)
_graph_node_op = _fn("pdnn_graph_node_op", _cp, _vp, _c_int)
_graph_node_desc = _fn("pdnn_graph_node_desc", _c_int, _vp, _c_int, _P(_Desc))
_graph_find = _fn("pdnn_graph_find", _c_int, _vp, _cp, _P(_c_int))
_graph_placeholder = _fn("pdnn_graph_placeholder", _c_int, _vp, _cp, _cp, _P(_Desc), _P(_c_int))
_graph_constant = _fn("pdnn_graph_constant", _c_int, _vp, _cp, _cp, _P(_Desc), _vp, _P(_c_int))
_graph_conv2d = _fn("pdnn_graph_conv2d", _c_int, _vp, _cp, _cp, _c_int, _c_int, _c_int, _P(_ConvParams),
                    _P(_c_int))
_graph_pool2d = _fn("pdnn_graph_pool2d", _c_int, _vp, _cp, _cp, _c_int, _P(_PoolParams), _P(_c_int))
_graph_matmul = _fn("pdnn_graph_matmul", _c_int, _vp, _cp, _cp, _c_int, _c_int, _c_int, _c_int, _P(_c_int))
_graph_add = _fn("pdnn_graph_add", _c_int, _vp, _cp, _cp, _c_int, _c_int, _P(_c_int))
_graph_add_n = _fn("pdnn_graph_add_n", _c_int, _vp, _cp, _cp, _P(_c_int), _c_int, _P(_c_int))
_graph_bias_add = _fn("pdnn_graph_bias_add", _c_int, _vp, _cp, _cp, _c_int, _c_int, _P(_c_int))
_graph_relu = _fn("pdnn_graph_relu", _c_int, _vp, _cp, _cp, _c_int, _P(_c_int))
_graph_softmax = _fn("pdnn_graph_softmax", _c_int, _vp, _cp, _cp, _c_int, _P(_c_int))
_graph_reshape = _fn("pdnn_graph_reshape", _c_int, _vp, _cp, _cp, _c_int, _P(_c_int64), _P(_c_int))
_graph_reshape_nd = _fn("pdnn_graph_reshape_nd", _c_int, _vp, _cp, _cp, _c_int, _c_int, _P(_c_int64), _P(_c_int))
_tensor_view = _fn("pdnn_tensor_view", _c_int, _vp, _P(_Desc), _P(_vp))
_graph_cast = _fn("pdnn_graph_cast", _c_int, _vp, _cp, _cp, _c_int, _c_int, _P(_c_int))
_graph_set_precision = _fn("pdnn_graph_set_precision", _c_int, _vp, _c_int)
_graph_set_loss_scale = _fn("pdnn_graph_set_loss_scale", _c_int, _vp, ctypes.c_float, _c_int)
_graph_flatten = _fn("pdnn_graph_flatten", _c_int, _vp, _cp, _cp, _c_int, _P(_c_int))
_session_config_init = _fn("pdnn_session_config_init", None, _P(_SessionConfig))
_session_create = _fn("pdnn_session_create", _c_int, _vp, _P(_SessionConfig), _P(_vp))
_onnx_options_init = _fn("pdnn_onnx_options_init", None, _P(_OnnxOptions))
_graph_import_onnx = _fn("pdnn_graph_import_onnx", _c_int, _cp, _vp, ctypes.c_size_t, _P(_OnnxOptions), _P(_vp),
                         _P(_OnnxIO))
_graph_set_batch = _fn("pdnn_graph_set_batch", _c_int, _vp, ctypes.c_int64)


class _OnnxTraining(ctypes.Structure):
    _fields_ = [("targets", _c_int), ("loss", _c_int), ("train_op", _c_int), ("training", _c_int),
                ("learning_rate", _c_int), ("n_params", _c_int)]


_graph_add_training = _fn("pdnn_graph_add_training", _c_int, _vp, _P(_OnnxIO), _c_int, _P(_OptimizerParams),
                          _P(_OnnxTraining))
_MAX_TOWERS = 8


class _TrainingTowers(ctypes.Structure):
    _fields_ = [("n", _c_int), ("devices", _cp * _MAX_TOWERS), ("param_device", _cp)]


_graph_add_training_towers = _fn("pdnn_graph_add_training_towers", _c_int, _vp, _P(_OnnxIO), _P(_TrainingTowers),
                                 _c_int, _P(_OptimizerParams), _P(_OnnxTraining))
_session_export_onnx = _fn("pdnn_session_export_onnx", _c_int, _vp, _cp, _cp, _P(_c_int))
_session_destroy = _fn("pdnn_session_destroy", None, _vp)
_session_node_device = _fn("pdnn_session_node_device", _c_int, _vp, _c_int, _P(_vp))
_session_run = _fn("pdnn_session_run", _c_int, _vp, _P(_c_int), _P(_vp), _c_int, _P(_c_int), _c_int, _P(_vp))
_graph_variable = _fn("pdnn_graph_variable", _c_int, _vp, _cp, _cp, _P(_Desc), _c_int, ctypes.c_uint64, _vp,
                      _P(_c_int))
_graph_xent = _fn("pdnn_graph_softmax_cross_entropy", _c_int, _vp, _cp, _cp, _c_int, _c_int, _P(_c_int))
_graph_gradients = _fn("pdnn_graph_gradients", _c_int, _vp, _c_int, _P(_c_int), _c_int, _P(_c_int))
_graph_apply_gradients = _fn("pdnn_graph_apply_gradients", _c_int, _vp, _cp, _P(_OptimizerParams), _P(_c_int),
                             _P(_c_int), _c_int, _P(_c_int))
_session_variable_read = _fn("pdnn_session_variable_read", _c_int, _vp, _c_int, _vp, ctypes.c_size_t)
_session_variable_assign = _fn("pdnn_session_variable_assign", _c_int, _vp, _c_int, _vp, ctypes.c_size_t)
# Newer libraries say how many algorithm ids there are; older ones are
# asked id by id until the name is "unknown" (conv_algorithms).
_algo_count = _fn("pdnn_conv_algo_count", _c_int) if hasattr(_lib, "pdnn_conv_algo_count") else None

# ---- the structs above against the library's ------------------------------

# Every ctypes mirror of a C struct, with the struct's C name. A mirror
# that disagrees with the library would make calls read and write the
# wrong bytes, silently: the module refuses to load instead.
_MIRRORS = [
    (_ContextOptions, "pdnn_context_options"), (_DeviceInfo, "pdnn_device_info"),
    (_Desc, "pdnn_tensor_desc"), (_ConvParams, "pdnn_conv2d_params"),
    (_PoolParams, "pdnn_pool2d_params"), (_MemoryStats, "pdnn_memory_stats"),
    (_DLDevice, "DLDevice"), (_DLDataType, "DLDataType"), (_DLTensor, "DLTensor"),
    (_DLManagedTensor, "DLManagedTensor"), (_DLPackVersion, "DLPackVersion"),
    (_DLManagedTensorVersioned, "DLManagedTensorVersioned"), (_SessionConfig, "pdnn_session_config"),
    (_BatchNormParams, "pdnn_batch_norm_params"),
    (_OptimizerParams, "pdnn_optimizer_params"),
    (_OnnxOptions, "pdnn_onnx_options"), (_OnnxIO, "pdnn_onnx_io"),
]


def _check_struct_layout(cls, c_name):
    """Raises ImportError unless the ctypes class cls has the size, and each
    of its fields the offset and size, of the struct c_name in the library
    (pdnn_struct_layout)."""
    if not hasattr(_lib, "pdnn_struct_layout"):
        raise ImportError("polydnn: %s has no pdnn_struct_layout: the library is older than this "
                          "module, whose structs cannot be checked against it" % (_lib._name,))
    layout = _fn("pdnn_struct_layout", _c_int, _cp, _cp, _P(ctypes.c_size_t), _P(ctypes.c_size_t))
    off, size = ctypes.c_size_t(), ctypes.c_size_t()

    def ask(field):
        st = layout(c_name.encode(), field.encode() if field else None, ctypes.byref(off),
                    ctypes.byref(size))
        if st != 0:
            raise ImportError("polydnn: the module mirrors %s%s, which %s does not know (%s): the module "
                              "and the library are from different versions"
                              % (c_name, "." + field if field else "", _lib._name, _last_error().decode()))
        return off.value, size.value

    _, c_size = ask(None)
    if ctypes.sizeof(cls) != c_size:
        raise ImportError("polydnn: struct %s is %d bytes in %s but %d in the module's ctypes mirror %s: "
                          "the module and the library are from different versions"
                          % (c_name, c_size, _lib._name, ctypes.sizeof(cls), cls.__name__))
    for name, _ in cls._fields_:
        c_off, c_fsize = ask(name)
        f = getattr(cls, name)
        if (f.offset, f.size) != (c_off, c_fsize):
            raise ImportError("polydnn: %s.%s is at offset %d (%d bytes) in %s but at offset %d (%d bytes) "
                              "in the module's ctypes mirror %s: the module and the library are from "
                              "different versions"
                              % (c_name, name, c_off, c_fsize, _lib._name, f.offset, f.size, cls.__name__))


for _cls, _c_name in _MIRRORS:
    _check_struct_layout(_cls, _c_name)
del _cls, _c_name

_ACTIVATION, _FILTER = 0, 1
_LAYOUT_X = 5
_ND = 6
_MAX_RANK = 8
_LAYOUT_ND = _ND
_FLOAT32, _INT32 = 0, 3
_FLOAT16, _BFLOAT16 = 1, 2
_DTYPE_NAMES = {_FLOAT32: "float32", _FLOAT16: "float16", _BFLOAT16: "bfloat16", _INT32: "int32"}
_DTYPE_SIZE = {_FLOAT32: 4, _FLOAT16: 2, _BFLOAT16: 2, _INT32: 4}
_KDLCPU = 1
_KDLOPENCL = 4


class Error(RuntimeError):
    """A polydnn call failed; .status is the pdnn_status name."""

    def __init__(self, status, message):
        super().__init__("%s: %s" % (status, message))
        self.status = status


def _check(st):
    if st != 0:
        raise Error(_status_string(st).decode(), _last_error().decode())


def version():
    return _version().decode()


# ---- arguments on their way to C ---------------------------------------------

# The C types integer arguments end in, with what they hold. ctypes stores a
# Python int in a C field modulo 2**bits, so 2**32 + 1 would reach the
# library as 1: every integer goes through _int first.
_INT_TYPES = {
    "int": (-2 ** 31, 2 ** 31 - 1, "a C int"),
    "int64": (-2 ** 63, 2 ** 63 - 1, "int64_t"),
    "uint64": (0, 2 ** 64 - 1, "uint64_t"),
    "size_t": (0, 2 ** (8 * ctypes.sizeof(ctypes.c_size_t)) - 1, "size_t"),
}


def _int(value, name, ctype="int"):
    """value as a Python int that the C type ctype ("int", "int64",
    "uint64", "size_t") holds exactly. TypeError for what is not an integer
    (a float, a string; a bool too, as in PyTorch), ValueError for a value
    out of the type's range; both name the argument."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError("polydnn: %s must be an integer, not %s (%r)" % (name, type(value).__name__, value))
    v = operator.index(value)
    lo, hi, cname = _INT_TYPES[ctype]
    if v < lo and lo == 0:
        raise ValueError("polydnn: %s is %d; it cannot be negative (the library takes %s)" % (name, v, cname))
    if not lo <= v <= hi:
        raise ValueError("polydnn: %s is %d, out of range: the library takes %s, %d to %d"
                         % (name, v, cname, lo, hi))
    return v


def _ints(value, n, name, ctype="int"):
    """n integers from one integer (repeated) or a sequence of n, each
    through _int."""
    if isinstance(value, (str, bytes)) or not (hasattr(value, "__len__") or hasattr(type(value), "__index__")):
        raise TypeError("polydnn: %s must be an integer or a sequence of %d, not %s (%r)"
                        % (name, n, type(value).__name__, value))
    if not hasattr(value, "__len__"):
        return (_int(value, name, ctype),) * n
    if len(value) != n:
        raise ValueError("polydnn: %s must be an integer or a sequence of %d, not %d values (%r)"
                         % (name, n, len(value), value))
    return tuple(_int(v, "%s[%d]" % (name, i), ctype) for i, v in enumerate(value))


def _padding(padding, name="padding"):
    """'same', 'valid' or (top, bottom, left, right) from an integer, (ph,
    pw), (top, bottom, left, right) or ((top, bottom), (left, right)): what
    conv2d and the pools accept."""
    if isinstance(padding, str):
        if padding.lower() in ("same", "valid"):
            return padding.lower()
        raise ValueError("polydnn: %s must be 'same', 'valid', an integer or a sequence, not %r" % (name, padding))
    if hasattr(padding, "__len__") and len(padding) == 2 and all(hasattr(p, "__len__") for p in padding):
        (t, b), (l, r) = (_ints(p, 2, "%s[%d]" % (name, i)) for i, p in enumerate(padding))
        return (t, b, l, r)
    if hasattr(padding, "__len__") and len(padding) == 4:
        return _ints(padding, 4, name)
    ph, pw = _ints(padding, 2, name)
    return (ph, ph, pw, pw)


def _real(value, name):
    """value as a float; TypeError for what is not a real number (or a bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("polydnn: %s must be a number, not %s (%r)" % (name, type(value).__name__, value))
    return float(value)


# ---- capsules (DLPack's Python protocol) -------------------------------------

_capi = ctypes.pythonapi
# Names must outlive the capsules that point at them: module constants.
_NAME_V = ctypes.c_char_p(b"dltensor_versioned")
_NAME_L = ctypes.c_char_p(b"dltensor")
_USED_V = ctypes.c_char_p(b"used_dltensor_versioned")
_USED_L = ctypes.c_char_p(b"used_dltensor")
_capsule_valid = ctypes.PYFUNCTYPE(_c_int, ctypes.py_object, _cp)(("PyCapsule_IsValid", _capi))
_capsule_ptr = ctypes.PYFUNCTYPE(_vp, ctypes.py_object, _cp)(("PyCapsule_GetPointer", _capi))
_capsule_set_name = ctypes.PYFUNCTYPE(_c_int, ctypes.py_object, _cp)(("PyCapsule_SetName", _capi))
_py_decref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_DecRef", _capi))
# The library makes our capsules, with a destructor in C: one written here
# (ctypes) cannot run while a consumer that refused the capsule drops it
# with its exception pending (NumPy on device memory), and would leak the
# export and turn that error into a SystemError. PYFUNCTYPE: it needs the GIL.
_to_capsule = ctypes.PYFUNCTYPE(_c_int, _vp, _c_int, _P(_vp))(("pdnn_tensor_to_dlpack_capsule", _lib))


# ---- context and devices ---------------------------------------------------


class Context:
    """Options and devices (pdnn_context). Tensors keep their context alive
    (the library counts references), so Python may finalize a context
    before its tensors, in a reference cycle or at exit."""

    def __init__(self, allow_growth=True, memory_fraction=0.0, memory_limit=0,
                 visible_devices=None, growth_policy="gradual", log_device_placement=False,
                 allow_soft_placement=False, tuning=None, enable_tensor_float_32_execution=True):
        """allow_growth is True here, 0 in C's pdnn_context_options_init and
        the tool (the whole limit reserved on first use): docs/python.md,
        "Context defaults", says why. log_device_placement: sessions on this context print where each
        node runs. allow_soft_placement: the default of Session's; a node
        pinned to a device that does not exist runs elsewhere. tuning:
        'off', 'cached' (the library's default), 'search' or 'force' (see
        docs/tuning.md; POLYDNN_TUNING overrides).
        enable_tensor_float_32_execution: TensorFlow's option and default;
        float32 convolutions and matmuls on CUDA may use TF32 tensor cores
        (host and OpenCL ignore it; POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION
        overrides)."""
        if growth_policy not in _GROWTH:
            raise ValueError("growth_policy must be 'gradual' or 'double', got %r" % (growth_policy,))
        if tuning is not None and tuning not in _TUNING:
            raise ValueError("polydnn: tuning must be one of %s, got %r" % (sorted(_TUNING), tuning))
        o = _ContextOptions()
        _options_init(ctypes.byref(o))
        o.allow_growth = int(bool(allow_growth))
        o.growth_policy = _GROWTH[growth_policy]
        o.memory_fraction = _real(memory_fraction, "memory_fraction")
        o.memory_limit = _int(memory_limit, "memory_limit", "uint64")
        o.log_device_placement = int(bool(log_device_placement))
        if tuning is not None:
            o.tuning = _TUNING[tuning]
        o.enable_tensor_float_32_execution = int(bool(enable_tensor_float_32_execution))
        self.allow_soft_placement = bool(allow_soft_placement)
        self._visible = visible_devices.encode() if visible_devices else None
        o.visible_devices = self._visible
        h = _vp()
        _check(_context_create(ctypes.byref(o), ctypes.byref(h)))
        self._h = h

    def __del__(self, _destroy=_context_destroy):  # bound now: module globals may be gone at exit
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _destroy(h)  # the creator's reference; live tensors and exports hold their own

    @property
    def tensor_float_32_enabled(self):
        """Whether float32 work on CUDA may use TF32 tensor cores: the
        enable_tensor_float_32_execution option after the environment's
        override (POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION)."""
        return bool(_context_tf32(self._h))

    def devices(self):
        out = []
        for i in range(_device_count(self._h)):
            d = _vp()
            _check(_device_get(self._h, i, ctypes.byref(d)))
            out.append(Device(self, d))
        return out

    def device(self, name=None):
        """The device named name ('/cpu:0', '/device:GPU:1'), or the default."""
        d = _vp()
        if name is None:
            _check(_device_default(self._h, ctypes.byref(d)))
        else:
            _check(_device_find(self._h, str(name).encode(), ctypes.byref(d)))
        return Device(self, d)

    def _device_for_dlpack(self, dl_type, dl_id):
        for d in self.devices():
            if d.__dlpack_device__() == (dl_type, dl_id):
                return d
        return None


_default = None


def default_context():
    """A shared context with allow_growth on, created on first use."""
    global _default
    if _default is None:
        _default = Context()
    return _default


def devices():
    return default_context().devices()


class Device:
    def __init__(self, ctx, handle):
        self._ctx = ctx
        self._h = _vp(handle.value if isinstance(handle, _vp) else handle)
        info = _DeviceInfo()
        _check(_device_info(self._h, ctypes.byref(info)))
        self.name = info.name.decode()
        self.type = "GPU" if info.type == 1 else "CPU"
        self.backend = info.backend.decode()
        self.vendor = info.vendor.decode()
        self.device_name = info.device_name.decode()
        self.memory_bytes = info.memory_bytes

    def __repr__(self):
        return "Device(%r, backend=%r, %r)" % (self.name, self.backend, self.device_name)

    def __eq__(self, other):
        return isinstance(other, Device) and self._h.value == other._h.value

    def __hash__(self):
        return hash(self._h.value)

    def __dlpack_device__(self):
        d = _DLDevice()
        _check(_device_to_dlpack(self._h, ctypes.byref(d)))
        return (d.device_type, d.device_id)

    def memory_stats(self):
        s = _MemoryStats()
        _check(_device_stats(self._h, ctypes.byref(s)))
        return {n: getattr(s, n) for n, _ in _MemoryStats._fields_}


def _resolve_device(device, ctx):
    if isinstance(device, Device):
        return device
    return ctx.device(device)


# ---- tensors -----------------------------------------------------------------


def _shape_of(d):
    """The shape a descriptor means to the user: an ND tensor's rank-many
    dims, (length,) for a vector (X), (N, C, H, W) / (O, I, H, W) for the
    image layouts."""
    if d.layout == _ND:
        return tuple(d.dims[:d.rank])
    return (d.dims[0],) if d.layout == _LAYOUT_X else tuple(d.dims[:4])


def _desc_for(shape, layout=None, dtype=_FLOAT32, name="shape"):
    """A descriptor of shape as given (0 to 8 dims): layout None means
    NCHW for 4 dims, X for 1, ND otherwise; an image layout name with
    fewer than 4 dims pads them with 1 (the C API's matrices)."""
    dims = _nd_dims(shape, name)
    d = _Desc()
    d.dtype = dtype
    if layout is None:
        d.layout = 0 if len(dims) == 4 else _LAYOUT_X if len(dims) == 1 else _ND
    else:
        lay = _layout_parse(_cname(layout, "layout"))
        if lay < 0:
            raise ValueError("polydnn: unknown layout %r" % (layout,))
        d.layout = lay
    if d.layout == _ND:
        d.rank = len(dims)
        d.dims[:len(dims)] = dims
    else:
        if not 1 <= len(dims) <= 4:
            raise ValueError("polydnn: %s has %d dims; a %s tensor has 1 to 4" % (name, len(dims), layout))
        d.rank = 4
        d.dims[:4] = dims + [1] * (4 - len(dims))
    for i in range(d.rank if d.layout == _ND else 4, _MAX_RANK):
        d.dims[i] = 1
    return d


class Tensor:
    """A tensor on one device (pdnn_tensor): float32, or int32 (labels).
    Its shape is the one it was made with: 0 to 8 dims (PDNN_ND), or the
    logical (N, C, H, W) of an image layout."""

    def __init__(self, ctx, handle):
        self._ctx = ctx  # keeps the context alive as long as the tensor
        self._h = handle

    def __del__(self, _release=_tensor_release):  # bound now: module globals may be gone at exit
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            _release(h)

    def release(self):
        """Gives the memory back now (or when the last DLPack export dies)."""
        self.__del__()

    def _handle(self):
        if not self._h:
            raise ValueError("polydnn: the tensor was released")
        return self._h

    def _desc(self):
        d = _Desc()
        _check(_tensor_desc(self._handle(), ctypes.byref(d)))
        return d

    @property
    def shape(self):
        return _shape_of(self._desc())

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        """The number of elements."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(t): a host tensor's memory (shared), another
        device's copied to the host."""
        a = self.numpy()
        return a if dtype is None else a.astype(dtype, copy=False)

    @property
    def layout(self):
        return _layout_name(self._desc().layout).decode()

    @property
    def dtype(self):
        """'float32', 'float16', 'bfloat16' or 'int32'."""
        d = self._desc().dtype
        return _DTYPE_NAMES.get(d, "dtype %d" % d)

    @property
    def device(self):
        return Device(self._ctx, _tensor_device(self._handle()))

    @property
    def nbytes(self):
        d = self._desc()
        n = _DTYPE_SIZE.get(d.dtype, 4)
        for s in d.dims:  # canonical: the dims past the rank are 1
            n *= s
        return n

    def __repr__(self):
        if not self._h:
            return "Tensor(released)"
        return "Tensor(shape=%s, dtype=%s, layout=%s, device=%s)" % (self.shape, self.dtype, self.layout,
                                                                     self.device.name)

    def data_ptr(self):
        """Address of the first element on the host; for other devices the
        DLPack (data, byte_offset) pair, data being e.g. the cl_mem."""
        m = _P(_DLManagedTensor)()
        _check(_to_dlpack(self._handle(), ctypes.byref(m)))
        t = m.contents.dl_tensor
        r = t.data if t.device.device_type == _KDLCPU else (t.data, t.byte_offset)
        m.contents.deleter(ctypes.addressof(m.contents))
        return r

    def to_bytes(self):
        """The elements in memory (layout) order, copied to the host."""
        buf = ctypes.create_string_buffer(self.nbytes)
        _check(_tensor_read(self._handle(), buf, self.nbytes))
        return buf.raw

    def write_bytes(self, data):
        """Overwrites the tensor from bytes in its layout order (a copy)."""
        data = bytes(data)
        if len(data) != self.nbytes:
            raise ValueError("polydnn: %d bytes given, the tensor holds %d" % (len(data), self.nbytes))
        _check(_tensor_write(self._handle(), data, len(data)))

    def to(self, device, layout=None):
        """A copy on device (a name or Device), through host memory (one
        transfer when this tensor or the copy is on the host)."""
        dev = _resolve_device(device, self._ctx)
        d = self._desc()
        if layout is not None and layout != self.layout:
            raise ValueError("polydnn: Tensor.to() keeps the layout; convert with the producing framework")
        out = _vp()
        _check(_tensor_create(dev._h, ctypes.byref(d), ctypes.byref(out)))
        t = Tensor(self._ctx, out)
        # One copy when either end is host memory (dense in layout order):
        # the transfer reads or writes it in place.
        if self.device.backend == "host":
            _check(_tensor_write(t._handle(), self.data_ptr(), self.nbytes))
        elif dev.backend == "host":
            _check(_tensor_read(self._handle(), t.data_ptr(), self.nbytes))
        else:
            t.write_bytes(self.to_bytes())
        return t

    def numpy(self):
        """The tensor as a numpy array of its shape (an image layout's
        logical (N, C, H, W), strides carrying the layout). A host tensor's
        array shares its memory (writes go both ways) and keeps it alive,
        even after release(); another device's is a copy."""
        if self.device.backend != "host":
            return self.to(self._ctx.device("/cpu:0")).numpy()
        np = _numpy("Tensor.numpy()")
        return np.asarray(_HostView(self))

    # -- DLPack producer
    def __dlpack_device__(self):
        return self.device.__dlpack_device__()

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory. The device's queue
        is finished first, so stream is not needed (any value is accepted).
        With max_version >= (1, 0) the capsule is 'dltensor_versioned',
        else the legacy 'dltensor'. A tensor in OpenCL memory (kDLOpenCL,
        e.g. /gpu:0 on PoCL) goes only to a consumer that asks with
        max_version >= (1, 0) or dl_device naming it: a plain legacy call is
        how NumPy 1.x and PyTorch 1.x ask, and neither can read a cl_mem
        (BufferError; copy to the host with Tensor.to('/cpu:0'))."""
        if copy:
            raise BufferError("polydnn: __dlpack__(copy=True) is not supported; use Tensor.to()")
        here = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != here:
            raise BufferError("polydnn: the tensor is on %s, not %s" % (here, dl_device))
        versioned = max_version is not None and max_version[0] >= 1
        if here[0] == _KDLOPENCL and not versioned and dl_device is None:
            raise BufferError("polydnn: the tensor is on %s, in OpenCL memory (kDLOpenCL), which legacy DLPack "
                              "consumers such as NumPy and PyTorch cannot read; copy it to the host first "
                              "(tensor.to('/cpu:0')), or ask with dl_device=%r if the consumer takes OpenCL buffers"
                              % (self.device.name, here))
        raw = _vp()
        _check(_to_capsule(self._handle(), int(versioned), ctypes.byref(raw)))
        cap = ctypes.cast(raw, ctypes.py_object).value  # a second reference...
        _py_decref(cap)  # ...and the library's new one dropped: cap owns the only one
        return cap


def _numpy(what):
    try:
        import numpy
    except ImportError as e:
        raise ImportError("polydnn: %s needs numpy (apt-get install python3-numpy)" % (what,)) from e
    return numpy


class _HostView:
    """What a numpy array of a host tensor's memory holds on to: a DLPack
    export of the tensor, which keeps the memory (and context) alive until
    the array is gone, whatever happens to the Tensor."""

    def __init__(self, tensor):
        m = _P(_DLManagedTensor)()
        _check(_to_dlpack(tensor._handle(), ctypes.byref(m)))
        self._m = m
        t = m.contents.dl_tensor
        if t.dtype.code == 4:  # kDLBfloat: numpy has no bfloat16
            self.__del__()
            raise TypeError("polydnn: numpy has no bfloat16; cast the tensor to float32 first "
                            "(polydnn.cast(t, 'float32')), or take it through DLPack (torch.from_dlpack)")
        es = t.dtype.bits // 8
        self.__array_interface__ = {
            "version": 3,
            "typestr": ("<" if sys.byteorder == "little" else ">") + ("i" if t.dtype.code == 0 else "f") + str(es),
            "shape": tuple(t.shape[i] for i in range(t.ndim)),
            "strides": tuple(es * t.strides[i] for i in range(t.ndim)),
            "data": (t.data + t.byte_offset, False),
        }

    def __del__(self):
        if getattr(self, "_m", None):
            self._m.contents.deleter(ctypes.addressof(self._m.contents))
            self._m = None


def _dims(shape, name):
    """The four int64 dims of a shape of 1 to 4 integers (missing trailing
    dims are 1)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise TypeError("polydnn: %s must be a sequence of 1 to 4 integers, not %s (%r)"
                        % (name, type(shape).__name__, shape))
    if not 1 <= len(shape) <= 4:
        raise ValueError("polydnn: %s has %d dims; polydnn tensors have 1 to 4" % (name, len(shape)))
    dims = [_int(v, "%s[%d]" % (name, i), "int64") for i, v in enumerate(shape)]
    return dims + [1] * (4 - len(dims))


def _nd_dims(shape, name):
    """The int64 dims of a shape of 0 to 8 integers."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__"):
        raise TypeError("polydnn: %s must be a sequence of 0 to %d integers, not %s (%r)"
                        % (name, _MAX_RANK, type(shape).__name__, shape))
    if len(shape) > _MAX_RANK:
        raise ValueError("polydnn: %s has %d dims; polydnn tensors have 0 to %d" % (name, len(shape), _MAX_RANK))
    return [_int(v, "%s[%d]" % (name, i), "int64") for i, v in enumerate(shape)]


def empty(shape, layout=None, device=None, context=None, dtype="float32"):
    """An uninitialised tensor of shape (0 to 8 dims, as given); layout
    None: NCHW for 4 dims, X (a vector) for 1, ND (row-major) otherwise;
    an image layout names how 4 logical dims (N, C, H, W) lie. dtype
    'float32', 'float16', 'bfloat16' or 'int32' (labels)."""
    ctx = context or default_context()
    dev = _resolve_device(device, ctx)
    codes = {v: k for k, v in _DTYPE_NAMES.items()}
    if dtype not in codes:
        raise ValueError("polydnn: dtype must be 'float32', 'float16', 'bfloat16' or 'int32', not %r" % (dtype,))
    d = _desc_for(shape, layout, codes[dtype])
    h = _vp()
    _check(_tensor_create(dev._h, ctypes.byref(d), ctypes.byref(h)))
    return Tensor(ctx, h)


def from_numpy(array, device=None, context=None):
    """A copy of a numpy array (anything numpy.asarray takes) as a tensor
    of its shape, 0 to 8 dims, on device (default: the host): float16
    stays float16, anything else becomes float32."""
    np = _numpy("from_numpy")
    half = getattr(array, "dtype", None) == np.float16
    a = np.array(array, dtype=np.float16 if half else np.float32, order="C")  # a copy (0-d stays 0-d)
    t = empty(a.shape, device=device if device is not None else "/cpu:0", context=context,
              dtype="float16" if half else "float32")
    t.write_bytes(a.tobytes())
    return t


def from_dlpack(obj, role="activation", context=None):
    """Takes obj (anything with __dlpack__, or a DLPack capsule) without a
    copy. role 'activation' reads a 4-D shape as (N, C, H, W) in NCHW or NHWC
    strides; 'filter' as (O, I, H, W) in OIHW, OHWI or HWIO strides. 1-D
    tensors become vectors (a bias); any other rank (0, 2, 3, 5 to 8) an
    ND tensor of that shape, which must be C-contiguous."""
    ctx = context or default_context()
    if role not in ("activation", "filter"):
        raise ValueError("polydnn: role must be 'activation' or 'filter', not %r" % (role,))
    r = _FILTER if role == "filter" else _ACTIVATION
    cap = obj
    if hasattr(obj, "__dlpack__"):
        try:
            cap = obj.__dlpack__(max_version=(1, 1))
        except TypeError:  # a producer from before DLPack 1.0
            cap = obj.__dlpack__()
    out = _vp()
    if _capsule_valid(cap, _NAME_V):
        ptr = _capsule_ptr(cap, _NAME_V)
        major = _DLManagedTensorVersioned.from_address(ptr).version.major
        st = _from_dlpack_v(ctx._h, ptr, r, ctypes.byref(out))
        # polydnn owns it now; after a major-version mismatch it deleted it.
        if st == 0 or major != 1:
            _capsule_set_name(cap, _USED_V)
    elif _capsule_valid(cap, _NAME_L):
        st = _from_dlpack(ctx._h, _capsule_ptr(cap, _NAME_L), r, ctypes.byref(out))
        if st == 0:
            _capsule_set_name(cap, _USED_L)
    else:
        raise ValueError("polydnn.from_dlpack: expected an object with __dlpack__ or an unconsumed DLPack "
                         "capsule ('dltensor' or 'dltensor_versioned'); a 'used_' capsule was consumed already")
    _check(st)
    return Tensor(ctx, out)


# ---- arguments that are tensors ------------------------------------------------

_DATA_FORMATS = ("NCHW", "NHWC")
# Where polydnn's logical axes (N, C, H, W) / (O, I, H, W) are in a 4-D
# array read with data_format="NHWC": TensorFlow's (N, H, W, C) images and
# (H, W, I, O) filters.
_NHWC_AXES = {_ACTIVATION: (0, 3, 1, 2), _FILTER: (3, 2, 0, 1)}


def _data_format(data_format):
    if data_format is None:
        return None
    if not isinstance(data_format, str) or data_format.upper() not in _DATA_FORMATS:
        raise ValueError("polydnn: data_format must be 'NCHW' or 'NHWC', not %r" % (data_format,))
    return data_format.upper()


def _import(obj, role, data_format, ctx):
    """A Tensor of obj: anything with __dlpack__ (shared, no copy), or what
    numpy.asarray takes (nested lists; copied to float32). An array of any
    rank but 4 keeps its shape (ND); a 4-D one's shape is read as (N, C, H, W) or
    (O, I, H, W), or with data_format 'NHWC' as (N, H, W, C) or (H, W, I,
    O), its strides then giving the layout."""
    if not hasattr(obj, "__dlpack__"):
        if isinstance(obj, (str, bytes)) or not hasattr(obj, "__len__"):
            raise TypeError("polydnn: expected a polydnn.Tensor, an array with __dlpack__ or nested lists of "
                            "numbers, not %s" % (type(obj).__name__,))
        np = _numpy("a list as a tensor")
        obj = np.asarray(obj, dtype=np.float32)
    try:
        cap = obj.__dlpack__(max_version=(1, 1))
    except TypeError:  # a producer from before DLPack 1.0
        cap = obj.__dlpack__()
    dl = None
    if _capsule_valid(cap, _NAME_V):
        m = _DLManagedTensorVersioned.from_address(_capsule_ptr(cap, _NAME_V))
        dl = m.dl_tensor if m.version.major == 1 else None  # else from_dlpack refuses it
    elif _capsule_valid(cap, _NAME_L):
        dl = _DLManagedTensor.from_address(_capsule_ptr(cap, _NAME_L)).dl_tensor
    axes = None
    if dl is not None and dl.ndim == 4 and data_format == "NHWC":
        axes = _NHWC_AXES[role]
    if axes is None:
        return from_dlpack(cap, role="filter" if role == _FILTER else "activation", context=ctx)
    # The library reads shape and strides only while it imports: show it
    # the logical order for that call, then give the producer its own
    # arrays back (it may free them through them).
    n = dl.ndim
    shape = [dl.shape[i] for i in range(n)]
    strides = [dl.strides[i] for i in range(n)] if dl.strides else None
    if strides is None:
        strides = [1] * n
        for i in range(n - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
    new_shape = (_c_int64 * 4)(*[shape[a] if a is not None else 1 for a in axes])
    new_strides = (_c_int64 * 4)(*[strides[a] if a is not None else 1 for a in axes])
    saved = (dl.ndim, dl.shape, dl.strides)
    dl.ndim, dl.shape, dl.strides = 4, new_shape, new_strides
    try:
        return from_dlpack(cap, role="filter" if role == _FILTER else "activation", context=ctx)
    finally:
        dl.ndim, dl.shape, dl.strides = saved


def _as_tensor(x, role, data_format, ctx, device, name):
    """x as a Tensor: a Tensor as it is (its layout must be data_format's
    when one is given), anything else imported (_import) and copied to
    device when it lands elsewhere."""
    if isinstance(x, Tensor):
        if data_format and role == _ACTIVATION and x.layout in _DATA_FORMATS and x.layout != data_format:
            raise ValueError("polydnn: %s is an %s tensor but data_format is %r; a Tensor's shape is always "
                             "(N, C, H, W) and its layout says how it lies in memory" % (name, x.layout, data_format))
        return x
    t = _import(x, role, data_format, ctx)
    if device is not None and t.device != device:
        t = t.to(device)
    return t


def _placement(*xs):
    """The context and device of an op's first Tensor argument; the default
    context and wherever the first argument lands without one."""
    for x in xs:
        if isinstance(x, Tensor):
            return x._ctx, x.device
    return default_context(), None


def _view(t, desc):
    """t's memory under another descriptor of its element count (no copy)."""
    h = _vp()
    _check(_tensor_view(t._handle(), ctypes.byref(desc), ctypes.byref(h)))
    return Tensor(t._ctx, h)


def _empty_like(t, ctx, dims=None, layout=None, desc=None):
    d = desc if desc is not None else t._desc()
    if dims is not None:
        d.dims[:4] = dims
    if layout is not None:
        d.layout = layout
    h = _vp()
    _check(_tensor_create(_tensor_device(t._handle()), ctypes.byref(d), ctypes.byref(h)))
    return Tensor(ctx, h)


# ---- ops -----------------------------------------------------------------


def conv_algorithms():
    """The names of the convolution algorithms this library has, as conv2d's
    algorithm argument takes them (besides "auto", which picks among them),
    in the library's id order. Which of them runs a given convolution
    depends on the device and the shape; conv2d says when one does not."""
    if _algo_count is None:  # an older library: ids are dense there
        names = []
        for i in itertools.count(1):
            name = _algo_name(i).decode()
            if name == "unknown":
                return names
            names.append(name)
    # An id with no algorithm in this build (vendor without CUDA) is
    # named "unknown": skip it.
    names = (_algo_name(i).decode() for i in range(1, _algo_count()))
    return [n for n in names if n != "unknown"]


def _conv_params(xdims, wdims, stride, padding, dilation, groups, relu, algorithm):
    p = _ConvParams()
    _conv_init(ctypes.byref(p))
    p.stride_h, p.stride_w = _ints(stride, 2, "stride")
    p.dilation_h, p.dilation_w = _ints(dilation, 2, "dilation")
    p.groups = _int(groups, "groups")
    p.relu = int(bool(relu))
    # The library's names, not a copy here that would go stale.
    algo = _algo_parse(str(algorithm).encode())
    if algo < 0:
        raise ValueError("polydnn: unknown algorithm %r; 'auto' or one of %s" % (algorithm, conv_algorithms()))
    p.algorithm = algo
    pad = _padding(padding)
    if pad == "same":
        _check(_conv_same(ctypes.byref(p), xdims[2], xdims[3], wdims[2], wdims[3]))
    elif pad != "valid":
        p.pad_top, p.pad_bottom, p.pad_left, p.pad_right = pad
    return p


def _pool_params(xdims, mode, kernel_size, stride, padding, ceil_mode):
    p = _PoolParams()
    _pool_init(ctypes.byref(p))
    p.mode = mode
    window = _ints(kernel_size, 2, "kernel_size")
    strides = _ints(kernel_size if stride is None else stride, 2, "stride")
    p.window_h, p.window_w = window
    p.stride_h, p.stride_w = strides
    pad = _padding(padding)
    if pad == "valid":
        pad = (0, 0, 0, 0)
    elif pad == "same":
        # TensorFlow's SAME: ceil(in / stride) outputs, the odd pixel of
        # padding at the bottom/right (as pdnn_conv2d_set_padding_same).
        pad = []
        for n, k, s in zip(xdims[2:], window, strides):
            total = max((-(-n // s) - 1) * s + k - n, 0) if k >= 1 and s >= 1 else 0
            pad += [total // 2, total - total // 2]
    p.pad_top, p.pad_bottom, p.pad_left, p.pad_right = pad
    p.ceil_mode = int(bool(ceil_mode))
    return p


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, relu=False,
           algorithm="auto", out_layout=None, data_format=None):
    """y = relu?(conv(x, w) + bias), on x's device, like
    torch.nn.functional.conv2d. x, w and bias are Tensors or arrays (anything
    with __dlpack__, or nested lists), imported without a copy where they
    can be.

    data_format: how an array's shape is read. None or 'NCHW' (the default,
    as PyTorch): x is (N, C, H, W), w (O, I, H, W), and the strides say
    whether memory is NCHW or NHWC (a channels_last tensor is NHWC).
    'NHWC' (as TensorFlow): x is (N, H, W, C) and w (H, W, I, O). A
    Tensor's shape is always logical (N, C, H, W); with a data_format its
    layout must match it.

    padding: an integer, (ph, pw), (top, bottom, left, right),
    ((top, bottom), (left, right)), 'same' or 'valid'. algorithm: "auto" or
    one of conv_algorithms(); a named one runs exactly that algorithm or
    raises Error. The result has x's layout unless out_layout."""
    df = _data_format(data_format)
    ctx, dev = _placement(x, w, bias)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    w = _as_tensor(w, _FILTER, df, ctx, x.device, "w")
    bias = None if bias is None else _as_tensor(bias, _ACTIVATION, None, ctx, x.device, "bias")
    dx, dw = x._desc(), w._desc()
    p = _conv_params(tuple(dx.dims[:4]), tuple(dw.dims[:4]), stride, padding, dilation, groups, relu, algorithm)
    od = (_c_int64 * 4)()
    _check(_conv_dims(ctypes.byref(dx), ctypes.byref(dw), ctypes.byref(p), od))
    y = empty(tuple(od), out_layout or x.layout, device=x.device, context=x._ctx, dtype=x.dtype)
    _check(_conv_forward(ctypes.byref(p), x._handle(), w._handle(),
                         bias._handle() if bias is not None else None, y._handle()))
    return y


def _pool(x, mode, kernel_size, stride, padding, ceil_mode, out_layout, data_format):
    df = _data_format(data_format)
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    dx = x._desc()
    p = _pool_params(tuple(dx.dims[:4]), mode, kernel_size, stride, padding, ceil_mode)
    od = (_c_int64 * 4)()
    _check(_pool_dims(ctypes.byref(dx), ctypes.byref(p), od))
    y = empty(tuple(od), out_layout or x.layout, device=x.device, context=x._ctx, dtype=x.dtype)
    _check(_pool_forward(ctypes.byref(p), x._handle(), y._handle()))
    return y


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, out_layout=None, data_format=None):
    """Like torch.nn.functional.max_pool2d (stride defaults to kernel_size).
    padding and data_format as conv2d's ('same' is TensorFlow's SAME)."""
    return _pool(x, 0, kernel_size, stride, padding, ceil_mode, out_layout, data_format)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               out_layout=None, data_format=None):
    """Like torch.nn.functional.avg_pool2d; padding and data_format as
    conv2d's. TensorFlow's avg_pool with 'same' is count_include_pad=False."""
    return _pool(x, 1 if count_include_pad else 2, kernel_size, stride, padding, ceil_mode, out_layout,
                 data_format)


# ---- backward ops (training) ---------------------------------------------------
# Each takes the forward's arguments in the forward's forms and returns a new
# Tensor; the argument order follows torch.nn.grad.conv2d_input/_weight.

_conv_bwd_data = _fn("pdnn_conv2d_backward_data", _c_int, _P(_ConvParams), _vp, _vp, _vp)
_conv_bwd_filter = _fn("pdnn_conv2d_backward_filter", _c_int, _P(_ConvParams), _vp, _vp, _vp)
_conv_bwd_bias = _fn("pdnn_conv2d_backward_bias", _c_int, _vp, _vp)
_pool_backward = _fn("pdnn_pool2d_backward", _c_int, _P(_PoolParams), _vp, _vp, _vp)
__all__ += ["conv2d_backward_data", "conv2d_backward_filter", "conv2d_backward_bias",
            "max_pool2d_backward", "avg_pool2d_backward"]


def _shape_dims(shape, role, data_format, name):
    """The logical dims (N, C, H, W) / (O, I, H, W) of a 4-D shape given in
    data_format's order (conv2d's reading of an array's shape)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 4:
        raise ValueError("polydnn: %s must be a sequence of 4 integers, not %r" % (name, shape))
    dims = [_int(v, "%s[%d]" % (name, i), "int64") for i, v in enumerate(shape)]
    if data_format == "NHWC":
        dims = [dims[a] for a in _NHWC_AXES[role]]
    return dims


def _bwd_algorithm(direction, algorithm):
    """The id of a backward algorithm name (direction 0 data, 1 filter)."""
    algo = _bwd_algo_parse(direction, str(algorithm).encode())
    if algo < 0:
        names = [_bwd_algo_name(direction, i).decode() for i in range(_bwd_algo_count(direction))]
        raise ValueError("polydnn: unknown backward %s algorithm %r; one of %s"
                         % ("data" if direction == 0 else "filter", algorithm, ", ".join(names)))
    return algo


def conv2d_backward_data(input_shape, w, dy, stride=1, padding=0, dilation=1, groups=1, out_layout=None,
                         data_format=None, algorithm="auto"):
    """dx = dL/dx of y = conv2d(x, w, ...) given dy = dL/dy, for an x of
    input_shape (as torch.nn.grad.conv2d_input). input_shape, w and dy are
    read as conv2d reads x, w and y (data_format); stride, padding ('same'
    included), dilation and groups are the forward's. dx is on dy's device,
    in dy's layout unless out_layout. algorithm: "auto" or a backward-data
    algorithm's name (C's pdnn_conv_bwd_algo_name)."""
    df = _data_format(data_format)
    ctx, dev = _placement(dy, w)
    dy = _as_tensor(dy, _ACTIVATION, df, ctx, dev, "dy")
    w = _as_tensor(w, _FILTER, df, ctx, dy.device, "w")
    xdims = _shape_dims(input_shape, _ACTIVATION, df, "input_shape")
    p = _conv_params(tuple(xdims), tuple(w._desc().dims[:4]), stride, padding, dilation, groups, False, "auto")
    p.bwd_data_algorithm = _bwd_algorithm(0, algorithm)
    dx = empty(tuple(xdims), out_layout or dy.layout, device=dy.device, context=dy._ctx, dtype=dy.dtype)
    _check(_conv_bwd_data(ctypes.byref(p), dy._handle(), w._handle(), dx._handle()))
    return dx


def conv2d_backward_filter(x, weight_shape, dy, stride=1, padding=0, dilation=1, groups=1, out_layout=None,
                           data_format=None, algorithm="auto"):
    """dw = dL/dw of y = conv2d(x, w, ...) given dy, for a w of weight_shape
    (as torch.nn.grad.conv2d_weight); arguments as conv2d_backward_data's.
    dw is on x's device, OIHW (HWIO with data_format 'NHWC') unless
    out_layout."""
    df = _data_format(data_format)
    ctx, dev = _placement(x, dy)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    dy = _as_tensor(dy, _ACTIVATION, df, ctx, x.device, "dy")
    wdims = _shape_dims(weight_shape, _FILTER, df, "weight_shape")
    p = _conv_params(tuple(x._desc().dims[:4]), tuple(wdims), stride, padding, dilation, groups, False, "auto")
    p.bwd_filter_algorithm = _bwd_algorithm(1, algorithm)
    dw = empty(tuple(wdims), out_layout or ("HWIO" if df == "NHWC" else "OIHW"), device=x.device, context=x._ctx,
               dtype=x.dtype)
    _check(_conv_bwd_filter(ctypes.byref(p), x._handle(), dy._handle(), dw._handle()))
    return dw


def conv2d_backward_bias(dy, data_format=None):
    """db[k] = the sum of dy over N, H, W for channel k: a vector (K,) on
    dy's device. dy is read as conv2d's y (data_format); a matrix (N, K)
    works too."""
    df = _data_format(data_format)
    ctx, dev = _placement(dy)
    dy = _as_tensor(dy, _ACTIVATION, df, ctx, dev, "dy")
    db = empty((dy._desc().dims[1],), "X", device=dy.device, context=dy._ctx, dtype=dy.dtype)
    _check(_conv_bwd_bias(dy._handle(), db._handle()))
    return db


def _pool_backward_op(x, dy, mode, kernel_size, stride, padding, ceil_mode, out_layout, data_format):
    df = _data_format(data_format)
    ctx, dev = _placement(x, dy)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    dy = _as_tensor(dy, _ACTIVATION, df, ctx, x.device, "dy")
    d = x._desc()
    p = _pool_params(tuple(d.dims[:4]), mode, kernel_size, stride, padding, ceil_mode)
    dx = empty(tuple(d.dims[:4]), out_layout or x.layout, device=x.device, context=x._ctx, dtype=x.dtype)
    _check(_pool_backward(ctypes.byref(p), x._handle(), dy._handle(), dx._handle()))
    return dx


def max_pool2d_backward(x, dy, kernel_size, stride=None, padding=0, ceil_mode=False, out_layout=None,
                        data_format=None):
    """dx = dL/dx of y = max_pool2d(x, ...) given dy: each window's gradient
    goes to its (first) maximum in x. Arguments as max_pool2d's; dx is on
    x's device, in x's layout unless out_layout."""
    return _pool_backward_op(x, dy, 0, kernel_size, stride, padding, ceil_mode, out_layout, data_format)


def avg_pool2d_backward(x, dy, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                        out_layout=None, data_format=None):
    """dx = dL/dx of y = avg_pool2d(x, ...) given dy (x gives only the
    shape; its values are not read). Arguments as avg_pool2d's."""
    return _pool_backward_op(x, dy, 1 if count_include_pad else 2, kernel_size, stride, padding, ceil_mode,
                             out_layout, data_format)


# A matrix is a 2-D tensor (ND), or as in the C API an image-layout tensor
# of shape (rows, cols, 1, 1).


def _matmul_shape(a, b, ta, tb):
    """numpy's matmul shape of op(a) @ op(b) (ops transposing the last two
    dims), an image-layout (rows, cols, 1, 1) operand counting as 2-D."""
    sa, sb = [list(t.shape) for t in (a, b)]
    for t, sh in ((a, sa), (b, sb)):
        if t.layout in _DATA_FORMATS and len(sh) == 4 and sh[2:] == [1, 1]:
            del sh[2:]
    if not sa or not sb:
        raise ValueError("polydnn: matmul takes no 0-d operand (shapes %s, %s)" % (a.shape, b.shape))
    ra, rb = len(sa), len(sb)
    am = [1] + sa if ra == 1 else sa[-2:]
    bm = sb + [1] if rb == 1 else sb[-2:]
    m = am[1] if ta else am[0]
    n = bm[0] if tb else bm[1]
    ba, bb = sa[:-2], sb[:-2]
    k = max(len(ba), len(bb))
    ba, bb = [1] * (k - len(ba)) + ba, [1] * (k - len(bb)) + bb
    return [max(x, y) for x, y in zip(ba, bb)] + ([m] if ra > 1 else []) + ([n] if rb > 1 else [])


def matmul(a, b, transpose_a=False, transpose_b=False):
    """c = op(a) @ op(b), op transposing the last two dims where asked (as
    tf.linalg.matmul), numpy's matmul for any rank (a batch that
    broadcasts, a 1-D operand a row or a column); c on a's device. Image-
    layout (m, k, 1, 1) operands (the C API's matrices) give (m, n, 1, 1)."""
    ctx, dev = _placement(a, b)
    a = _as_tensor(a, _ACTIVATION, None, ctx, dev, "a")
    b = _as_tensor(b, _ACTIVATION, None, ctx, a.device, "b")
    if a.layout in _DATA_FORMATS and b.layout in _DATA_FORMATS:
        da, db = a._desc().dims, b._desc().dims
        m = da[1] if transpose_a else da[0]
        n = db[0] if transpose_b else db[1]
        c = _empty_like(a, ctx, (m, n, 1, 1), 0)
    else:
        c = _empty_like(a, ctx, desc=_desc_for(_matmul_shape(a, b, transpose_a, transpose_b), "ND", a._desc().dtype))
    _check(_matmul(a._handle(), b._handle(), int(bool(transpose_a)), int(bool(transpose_b)), c._handle()))
    return c


def add(a, b):
    """a + b; both of the same shape and layout."""
    ctx, dev = _placement(a, b)
    a = _as_tensor(a, _ACTIVATION, None, ctx, dev, "a")
    b = _as_tensor(b, _ACTIVATION, None, ctx, a.device, "b")
    y = _empty_like(a, ctx)
    _check(_add(a._handle(), b._handle(), y._handle()))
    return y


def add_n(inputs):
    """The sum of a list of tensors of one shape and layout (tf.add_n)."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("polydnn: add_n needs at least one input")
    ctx, dev = _placement(*inputs)
    ts = []
    for i, x in enumerate(inputs):
        ts.append(_as_tensor(x, _ACTIVATION, None, ctx, dev, "inputs[%d]" % i))
        dev = dev or ts[0].device
    y = _empty_like(ts[0], ctx)
    _check(_add_n((_vp * len(ts))(*[t._handle() for t in ts]), len(ts), y._handle()))
    return y


def bias_add(x, bias):
    """x + bias over the channels (C; a matrix's columns): bias is a vector
    of length C (tf.nn.bias_add; x + bias.view(1, -1, 1, 1) in PyTorch)."""
    ctx, dev = _placement(x, bias)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    bias = _as_tensor(bias, _ACTIVATION, None, ctx, x.device, "bias")
    y = _empty_like(x, ctx)
    _check(_bias_add(x._handle(), bias._handle(), y._handle()))
    return y


def _float_dtype(dtype, what):
    codes = {"float32": _FLOAT32, "float16": _FLOAT16, "bfloat16": _BFLOAT16}
    if dtype not in codes:
        raise ValueError("polydnn: %s's dtype must be 'float32', 'float16' or 'bfloat16', not %r" % (what, dtype))
    return codes[dtype]


def cast(x, dtype):
    """x converted to dtype ('float32', 'float16', 'bfloat16'), a new
    tensor of x's shape and layout on x's device; narrowing rounds to
    nearest even (numpy's astype), widening is exact (pdnn_cast)."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    d = x._desc()
    d.dtype = _float_dtype(dtype, "cast")
    y = _empty_like(x, ctx, desc=d)
    _check(_cast(x._handle(), y._handle()))
    return y


def relu(x):
    """max(x, 0); NaN stays NaN."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    y = _empty_like(x, ctx)
    _check(_relu(x._handle(), y._handle()))
    return y


def _activation_op(x, mode, alpha, beta):
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    y = _empty_like(x, ctx)
    _check(_activation(x._handle(), mode, alpha, beta, y._handle()))
    return y


def clip(x, min=None, max=None):
    """min(max(x, min), max) elementwise (torch.clamp; ONNX's Clip; ReLU6 is
    clip(x, 0, 6)); None leaves that side open. NaN stays NaN."""
    lo = float("-inf") if min is None else float(min)
    hi = float("inf") if max is None else float(max)
    return _activation_op(x, 0, lo, hi)


def leaky_relu(x, negative_slope=0.01):
    """x where x >= 0, else negative_slope * x (torch.nn.functional.leaky_relu)."""
    return _activation_op(x, 1, float(negative_slope), 0.0)


def sigmoid(x):
    """1 / (1 + exp(-x)) elementwise."""
    return _activation_op(x, 2, 0.0, 0.0)


def concat(inputs, axis=1):
    """The tensors joined along axis (0 N, 1 C, 2 H, 3 W of an image; any
    axis of an N-d tensor, negative from the last), as torch.cat: one
    layout and equal dims but along axis."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("polydnn: concat needs at least one input")
    axis = _int(axis, "axis", "int")
    ctx, dev = _placement(*inputs)
    ts = []
    for i, x in enumerate(inputs):
        ts.append(_as_tensor(x, _ACTIVATION, None, ctx, dev, "inputs[%d]" % i))
        dev = dev or ts[0].device
    d = ts[0]._desc()
    if axis < 0:
        axis += len(_shape_of(d))
    if 0 <= axis < _MAX_RANK:
        d.dims[axis] = sum(t._desc().dims[axis] for t in ts)
    y = _empty_like(ts[0], ctx, desc=d)
    _check(_concat((_vp * len(ts))(*[t._handle() for t in ts]), len(ts), axis, y._handle()))
    return y


def transform(x, layout):
    """x's values in another memory order: layout "NCHW" or "NHWC" for images
    (TensorFlow's transpose between them), or a filter layout; same shape."""
    code = _layout_parse(_cname(layout, "layout"))
    if code < 0:
        raise ValueError("polydnn: unknown layout %r" % (layout,))
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    y = _empty_like(x, ctx, None, code)
    _check(_transform(x._handle(), y._handle()))
    return y


def softmax(x, axis=None):
    """Softmax over the channels (dim 1: a matrix's columns), as
    torch.softmax(x, dim=1); or along axis (torch.softmax(x, dim=axis),
    max-subtracted; a negative axis counts from the end)."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    y = _empty_like(x, ctx)
    if axis is None:
        _check(_softmax(x._handle(), y._handle()))
    else:
        _check(_softmax_axis(x._handle(), _int(axis, "axis"), 0, y._handle()))
    return y


# ---- N-d math: the axes are the tensor's logical ones (an image's N, C, H, W)


def log_softmax(x, axis=-1):
    """torch.log_softmax(x, dim=axis): x - max - log(sum(exp(x - max)))."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    y = _empty_like(x, ctx)
    _check(_softmax_axis(x._handle(), _int(axis, "axis"), 1, y._handle()))
    return y


def _rank(t):
    d = t._desc()
    return d.rank if d.layout == _LAYOUT_ND else 1 if d.layout == _LAYOUT_X else 4


def transpose(x, perm=None):
    """x with its axes permuted (numpy.transpose, torch's permute): axis k
    of the result is x's axis perm[k] (None reverses them); the result
    keeps x's layout, so an NCHW x with perm (0, 2, 3, 1) gives an NCHW
    tensor of dims (N, H, W, C)."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    r = _rank(x)
    perm = list(range(r - 1, -1, -1)) if perm is None else _ints(perm, r, "perm")
    d = x._desc()
    dims = [d.dims[p] if 0 <= p < r else 0 for p in perm]
    y = _empty_like(x, ctx, dims + list(d.dims[r:4]) if r <= 4 else None)
    _check(_transpose(x._handle(), (_c_int * max(r, 1))(*perm), y._handle()))
    return y


def layer_norm(x, weight, bias=None, axis=-1, eps=1e-5):
    """ONNX's LayerNormalization (torch.nn.functional.layer_norm over the
    dims from axis on): (x - mean) / sqrt(var + eps) * weight + bias,
    weight and bias one value per element of a normalized row."""
    ctx, dev = _placement(x, weight, bias)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    w = _as_tensor(weight, _ACTIVATION, None, ctx, x.device, "weight")
    b = None if bias is None else _as_tensor(bias, _ACTIVATION, None, ctx, x.device, "bias")
    y = _empty_like(x, ctx)
    _check(_layer_norm(x._handle(), _int(axis, "axis"), _real(eps, "eps"), w._handle(),
                       None if b is None else b._handle(), y._handle()))
    return y


def _reduction(x, axes, keepdims, op):
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    r = _rank(x)
    axes = [] if axes is None else [axes] if isinstance(axes, int) else list(axes)
    axes = [_int(a, "axes") for a in axes]
    red = {a + r if a < 0 else a for a in axes} if axes else set(range(r))
    d = x._desc()
    if keepdims:
        y = _empty_like(x, ctx, [1 if k in red else d.dims[k] for k in range(4)] if r <= 4 else None)
        if r > 4:
            for k in red:
                d.dims[k] = 1
            y = _empty_from(x, ctx, d)
    else:
        kept = [d.dims[k] for k in range(r) if k not in red]
        nd = _Desc(d.dtype, _LAYOUT_ND, (_c_int64 * 8)(*(kept + [1] * (8 - len(kept)))), len(kept))
        y = _empty_from(x, ctx, nd)
    _check(_reduce(x._handle(), (_c_int * max(len(axes), 1))(*axes), len(axes), op, y._handle()))
    return y


def _empty_from(t, ctx, d):
    h = _vp()
    _check(_tensor_create(_tensor_device(t._handle()), ctypes.byref(d), ctypes.byref(h)))
    return Tensor(ctx, h)


def _reduction_fn(name, op, what):
    def fn(x, axes=None, keepdims=True):
        return _reduction(x, axes, keepdims, op)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = ("The %s over axes (None: all), ONNX's %s (keepdims: the reduced dims stay as 1s; else an "
                  "N-d tensor without them)." % (what, "Reduce" + name[len("reduce_"):].capitalize()))
    return fn


reduce_sum = _reduction_fn("reduce_sum", 0, "sum")
reduce_mean = _reduction_fn("reduce_mean", 1, "mean")
reduce_max = _reduction_fn("reduce_max", 2, "largest (NaN wins)")
reduce_min = _reduction_fn("reduce_min", 3, "smallest (NaN wins)")


def _unary_fn(name, mode, doc):
    def fn(x):
        return _activation_op(x, mode, 0.0, 0.0)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


erf = _unary_fn("erf", 6, "The error function elementwise (torch.erf).")
tanh = _unary_fn("tanh", 9, "tanh elementwise.")
sqrt = _unary_fn("sqrt", 10, "The square root elementwise (NaN below 0).")
neg = _unary_fn("neg", 11, "-x elementwise.")
exp = _unary_fn("exp", 12, "e^x elementwise.")
log = _unary_fn("log", 13, "The natural logarithm elementwise (NaN below 0, -inf at 0).")
reciprocal = _unary_fn("reciprocal", 14, "1 / x elementwise.")
abs = _unary_fn("abs", 15, "|x| elementwise (the module's, as numpy.abs).")  # noqa: A001


def gelu(x, approximate="none"):
    """torch.nn.functional.gelu: x / 2 (1 + erf(x / sqrt 2)), or with
    approximate="tanh" x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    if approximate not in ("none", "tanh"):
        raise ValueError("polydnn: gelu's approximate is 'none' or 'tanh', not %r" % (approximate,))
    return _activation_op(x, 7 if approximate == "none" else 8, 0.0, 0.0)


def pow(x, exponent):  # noqa: A001 (the module's pow, as numpy.power's scalar form)
    """x ** exponent elementwise, exponent a number (C's pow: NaN for a
    negative x and a fractional exponent)."""
    return _activation_op(x, 16, _real(exponent, "exponent"), 0.0)


def reshape(x, shape):
    """x's elements in memory order as a tensor of a new shape (0 to 8
    dims, as given; 4 dims are NCHW), same element count: torch.reshape
    for an NCHW or N-d x; an NHWC x's elements come in H, W, C order
    (TensorFlow's)."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    d = _desc_for(shape)
    d.dtype = x._desc().dtype
    y = _empty_like(x, ctx, desc=d)
    _check(_reshape(x._handle(), y._handle()))
    return y


def flatten(x):
    """(N, rest): a matrix with one row per image (or per index of the
    first dim), in memory order."""
    ctx, dev = _placement(x)
    x = _as_tensor(x, _ACTIVATION, None, ctx, dev, "x")
    shape = x.shape
    n = shape[0] if shape else 1
    return reshape(x, (n, x.size // n))


# ---- training ops -----------------------------------------------------------------


def relu_backward(y, dy):
    """relu's gradient: dy where y > 0, else 0 (y is relu's output or input)."""
    ctx, dev = _placement(y, dy)
    y = _as_tensor(y, _ACTIVATION, None, ctx, dev, "y")
    dy = _as_tensor(dy, _ACTIVATION, None, ctx, y.device, "dy")
    dx = _empty_like(y, ctx)
    _check(_relu_backward(y._handle(), dy._handle(), dx._handle()))
    return dx


def _labels(labels, ctx, device):
    """labels as an int32 vector Tensor on device: a Tensor as it is; an
    int32 array with __dlpack__ shared; other integer arrays and lists
    copied to int32 (values outside int32 refused)."""
    if isinstance(labels, Tensor):
        return labels
    np = _numpy("labels as a tensor")
    if not hasattr(labels, "__dlpack__") or str(getattr(labels, "dtype", "")).split(".")[-1] != "int32":
        if hasattr(labels, "detach"):  # a torch tensor of another integer type
            labels = labels.detach().cpu().numpy()
        a = np.asarray(labels)
        if a.dtype.kind not in "iu":
            raise TypeError("polydnn: labels must be integers, not %s" % (a.dtype,))
        if a.size and (a.min() < -2 ** 31 or a.max() >= 2 ** 31):
            raise ValueError("polydnn: labels do not fit in int32")
        labels = np.ascontiguousarray(a.reshape(-1), dtype=np.int32)
    t = from_dlpack(labels, context=ctx)
    if device is not None and t.device != device:
        t = t.to(device)
    return t


def softmax_cross_entropy(logits, labels):
    """The batch mean of -log softmax(logits)[label] and its gradient, fused
    (tf.nn.sparse_softmax_cross_entropy_with_logits + reduce_mean;
    torch.nn.functional.cross_entropy): logits (N, K) (a matrix (N, K, 1,
    1)), labels N integers in [0, K). Returns (loss, dlogits): loss a
    Tensor of shape (1,), dlogits logits' shape."""
    ctx, dev = _placement(logits)
    logits = _as_tensor(logits, _ACTIVATION, None, ctx, dev, "logits")
    lab = _labels(labels, ctx, logits.device)
    loss = _empty_like(logits, ctx, (1, 1, 1, 1), _LAYOUT_X)
    dlogits = _empty_like(logits, ctx)
    _check(_softmax_xent(logits._handle(), lab._handle(), loss._handle(), dlogits._handle()))
    return loss, dlogits


_OPTIMIZER_KINDS = {"sgd": 0, "adam": 1, "adamw": 2}


def _optimizer_params(kind, lr, momentum, weight_decay, beta1, beta2, epsilon, nesterov=False):
    if kind not in _OPTIMIZER_KINDS:
        raise ValueError("polydnn: optimizer kind must be 'sgd', 'adam' or 'adamw', not %r" % (kind,))
    p = _OptimizerParams()
    _optimizer_init(ctypes.byref(p), _OPTIMIZER_KINDS[kind])
    p.nesterov = 1 if nesterov else 0
    for name, v in (("learning_rate", lr), ("momentum", momentum), ("weight_decay", weight_decay),
                    ("beta1", beta1), ("beta2", beta2), ("epsilon", epsilon)):
        if v is not None:
            setattr(p, name, _real(v, name))
    return p


def optimizer_update(w, g, slot1=None, slot2=None, step=1, kind="sgd", lr=None, momentum=None,
                     weight_decay=None, beta1=None, beta2=None, epsilon=None, nesterov=False):
    """One optimizer step on the Tensor w in place (pdnn_optimizer_update):
    SGD (slot1 the velocity, needed with momentum; nesterov for Nesterov's),
    Adam or AdamW (decoupled weight decay) (slot1 m, slot2 v); slots are Tensors of w's shape that start at zero; step counts
    updates from 1. Unset hyperparameters take the C defaults (SGD lr
    0.01; Adam lr 0.001, betas 0.9, 0.999, epsilon 1e-8)."""
    if not isinstance(w, Tensor):
        raise TypeError("polydnn: optimizer_update updates a polydnn.Tensor in place; w is %s" % (type(w).__name__,))
    p = _optimizer_params(kind, lr, momentum, weight_decay, beta1, beta2, epsilon, nesterov)
    g = _as_tensor(g, _ACTIVATION, None, w._ctx, w.device, "g")
    slots = [s._handle() if isinstance(s, Tensor) else None for s in (slot1, slot2)]
    for s, name in ((slot1, "slot1"), (slot2, "slot2")):
        if s is not None and not isinstance(s, Tensor):
            raise TypeError("polydnn: %s must be a polydnn.Tensor (it is updated in place)" % (name,))
    _check(_optimizer_update(ctypes.byref(p), _int(step, "step", "int64"), w._handle(), g._handle(), slots[0],
                             slots[1]))


class _Optimizer:
    """Steps a list of Tensors in place, keeping their slots (zeroed
    Tensors on each parameter's device) and the step count."""

    def __init__(self, params, kind, n_slots, **hyper):
        self.params = list(params)
        self.kind = kind
        self.hyper = hyper
        self.step_count = 0
        _optimizer_params(kind, **hyper)  # refuse a bad value now, not at the first step
        self.slots = []
        for w in self.params:
            ss = []
            for _ in range(n_slots):
                s = _empty_like(w, w._ctx)
                s.write_bytes(bytes(s.nbytes))
                ss.append(s)
            self.slots.append(ss + [None] * (2 - n_slots))

    def step(self, grads):
        """Applies one update with grads (one per parameter, same order)."""
        grads = list(grads)
        if len(grads) != len(self.params):
            raise ValueError("polydnn: %d gradients for %d parameters" % (len(grads), len(self.params)))
        self.step_count += 1
        for w, g, (s1, s2) in zip(self.params, grads, self.slots):
            optimizer_update(w, g, s1, s2, self.step_count, self.kind, **self.hyper)


class SGD(_Optimizer):
    """torch.optim.SGD's update (momentum, Nesterov, L2 weight_decay) over polydnn Tensors."""

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0, nesterov=False):
        super().__init__(params, "sgd", 1 if momentum else 0, lr=lr, momentum=momentum,
                         weight_decay=weight_decay, beta1=None, beta2=None, epsilon=None, nesterov=nesterov)


class Adam(_Optimizer):
    """torch.optim.Adam's update (L2 weight_decay) over polydnn Tensors."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, "adam", 2, lr=lr, momentum=None, weight_decay=weight_decay, beta1=betas[0],
                         beta2=betas[1], epsilon=eps)


class AdamW(_Optimizer):
    """torch.optim.AdamW's update (decoupled weight_decay) over polydnn Tensors."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, "adamw", 2, lr=lr, momentum=None, weight_decay=weight_decay, beta1=betas[0],
                         beta2=betas[1], epsilon=eps)


# ---- graphs and sessions (TensorFlow 1.x style) ---------------------------------


# ---- batch normalization ---------------------------------------------------


def _bn_params(training, momentum, eps):
    p = _BatchNormParams()
    _bn_init(ctypes.byref(p))
    p.training = 1 if training else 0
    p.epsilon = _real(eps, "eps")
    p.momentum = _real(momentum, "momentum")
    return p


def _bn_vector(v, ctx, dev, name, in_place=False):
    """A per-channel vector as a Tensor on dev. One updated in place (the
    running statistics) must already be there: a copy would take the
    update and drop it."""
    t = _as_tensor(v, _ACTIVATION, None, ctx, None if in_place else dev, name)
    if in_place and t.device != dev:
        raise ValueError("polydnn: %s is on %s but x is on %s; the running statistics are updated in place, so "
                         "they must be on x's device" % (name, t.device.name, dev.name))
    return t


def batch_norm(x, gamma, beta, running_mean=None, running_var=None, training=True, momentum=0.1, eps=1e-5,
               data_format=None):
    """Batch normalization over N, H, W per channel, as
    torch.nn.functional.batch_norm(x, running_mean, running_var, gamma, beta,
    training, momentum, eps). gamma, beta and the running statistics are
    vectors of length C (Tensors or arrays) in x's dtype, as are the saved
    statistics returned (float16/bfloat16 x: computed in float32, stored
    rounded). training: normalizes with the
    batch's statistics and updates running_mean/running_var in place when
    given (they must then live on x's device: a host array imported without
    a copy, or a Tensor there), the variance with the unbiased batch
    variance as PyTorch does; returns (y, saved_mean, saved_inv_std), the
    last two for batch_norm_backward. Otherwise normalizes with the running
    statistics (required) and returns y. data_format as conv2d's."""
    df = _data_format(data_format)
    ctx, dev = _placement(x, gamma, beta, running_mean, running_var)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    dev = x.device
    gamma = _bn_vector(gamma, ctx, dev, "gamma")
    beta = _bn_vector(beta, ctx, dev, "beta")
    rm = None if running_mean is None else _bn_vector(running_mean, ctx, dev, "running_mean", in_place=training)
    rv = None if running_var is None else _bn_vector(running_var, ctx, dev, "running_var", in_place=training)
    p = _bn_params(training, momentum, eps)
    y = _empty_like(x, ctx)
    sm = si = None
    if training:
        c = x.shape[1]
        # in x's dtype, as the C call takes one dtype (the statistics are computed in float32)
        sm = empty((c, 1, 1, 1), "X", device=dev, context=ctx, dtype=x.dtype)
        si = empty((c, 1, 1, 1), "X", device=dev, context=ctx, dtype=x.dtype)
    h = lambda t: t._handle() if t is not None else None  # noqa: E731
    _check(_bn_forward(ctypes.byref(p), x._handle(), gamma._handle(), beta._handle(), h(rm), h(rv), h(sm), h(si),
                       y._handle()))
    return (y, sm, si) if training else y


def batch_norm_backward(x, dy, gamma, saved_mean, saved_inv_std, eps=1e-5, data_format=None):
    """The training-mode gradient of batch_norm: (dx, dgamma, dbeta) from x,
    dy = dL/dy (x's shape) and the saved statistics batch_norm returned."""
    df = _data_format(data_format)
    ctx, dev = _placement(x, dy)
    x = _as_tensor(x, _ACTIVATION, df, ctx, dev, "x")
    dev = x.device
    dy = _as_tensor(dy, _ACTIVATION, df, ctx, dev, "dy")
    gamma = _bn_vector(gamma, ctx, dev, "gamma")
    sm = _bn_vector(saved_mean, ctx, dev, "saved_mean")
    si = _bn_vector(saved_inv_std, ctx, dev, "saved_inv_std")
    p = _bn_params(True, 0.1, eps)
    dx = _empty_like(x, ctx)
    c = x.shape[1]
    dg = empty((c, 1, 1, 1), "X", device=dev, context=ctx, dtype=x.dtype)
    db = empty((c, 1, 1, 1), "X", device=dev, context=ctx, dtype=x.dtype)
    _check(_bn_backward(ctypes.byref(p), x._handle(), dy._handle(), gamma._handle(), sm._handle(), si._handle(),
                        dx._handle(), dg._handle(), db._handle()))
    return dx, dg, db


def _cname(name, what):
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError("polydnn: %s must be a string, not %s (%r)" % (what, type(name).__name__, name))
    return name.encode()


class Node:
    """A node of a Graph, standing for the value its op produces (a tf.Tensor
    of a TensorFlow 1.x graph): pass it to other ops of the graph, fetch it
    or feed it (a placeholder) in Session.run."""

    def __init__(self, graph, index):
        self.graph = graph
        self.index = index

    def _desc(self):
        d = _Desc()
        _check(_graph_node_desc(self.graph._h, self.index, ctypes.byref(d)))
        return d

    @property
    def name(self):
        return _graph_node_name(self.graph._h, self.index).decode()

    @property
    def op(self):
        """The op type: "Placeholder", "Const", "Conv2D", "MatMul", ..."""
        return _graph_node_op(self.graph._h, self.index).decode()

    @property
    def shape(self):
        return _shape_of(self._desc())

    @property
    def layout(self):
        return _layout_name(self._desc().layout).decode()

    @property
    def dtype(self):
        """'float32', 'float16', 'bfloat16' or 'int32' (inferred: docs/precision.md)."""
        d = self._desc().dtype
        return _DTYPE_NAMES.get(d, "dtype %d" % d)

    @property
    def device(self):
        """The device asked for ("" for the session's choice)."""
        return self.graph._meta[self.index][0]

    def __eq__(self, other):
        return isinstance(other, Node) and other.graph is self.graph and other.index == self.index

    def __hash__(self):
        return hash((id(self.graph), self.index))

    def __repr__(self):
        return "Node(%r, op=%r, shape=%s, device=%r)" % (self.name, self.op, self.shape, self.device)


class Graph:
    """A graph of ops (pdnn_graph), built as in TensorFlow 1.x and run by a
    Session:

        g = polydnn.Graph()
        with g.device("/gpu:0"):
            x = g.placeholder((2, 3))
            y = g.relu(g.matmul(x, [[1.0], [2.0], [3.0]]))
        with polydnn.Session(g) as sess:
            print(sess.run(y, {x: [[1, 2, 3], [4, 5, 6]]}).numpy())

    Ops take Nodes, or values (Tensors, arrays, nested lists), which become
    constants. name: None for TensorFlow's generated names ("MatMul",
    "MatMul_1"); device: None for the innermost `with g.device(...)` scope,
    else a full or partial device name ("/gpu:1", "/device:GPU:*"). Shapes
    are checked as nodes are added."""

    def __init__(self):
        h = _vp()
        _check(_graph_create(ctypes.byref(h)))
        self._h = h
        self._scopes = []
        self._meta = {}  # node index -> (requested device, data_format)

    def __del__(self):
        if getattr(self, "_h", None):
            _graph_destroy(self._h)
            self._h = None

    def __len__(self):
        return _graph_node_count(self._h)

    @property
    def nodes(self):
        return [Node(self, i) for i in range(len(self))]

    def find(self, name):
        """The node named name; Error (PDNN_ERR_NOT_FOUND) if none is."""
        i = _c_int()
        _check(_graph_find(self._h, _cname(name, "name"), ctypes.byref(i)))
        return Node(self, i.value)

    @contextlib.contextmanager
    def device(self, name):
        """Nodes added inside `with g.device(name):` ask for that device
        (a name or a Device; None: the session's choice), as
        tf.device."""
        if isinstance(name, Device):
            name = name.name
        _cname(name, "device")
        self._scopes.append(name or "")
        try:
            yield self
        finally:
            self._scopes.pop()

    def _add(self, fn, name, device, data_format, *args):
        if device is None:
            device = self._scopes[-1] if self._scopes else ""
        elif isinstance(device, Device):
            device = device.name
        out = _c_int()
        _check(fn(self._h, _cname(name, "name"), _cname(device, "device") or None, *args, ctypes.byref(out)))
        self._meta[out.value] = (device, data_format)
        return Node(self, out.value)

    def _input(self, v, role, data_format, what):
        if isinstance(v, Node):
            if v.graph is not self:
                raise ValueError("polydnn: %s is node '%s' of another graph" % (what, v.name))
            if data_format and role == _ACTIVATION and v.layout in _DATA_FORMATS and v.layout != data_format:
                raise ValueError("polydnn: %s is node '%s', %s, but data_format is %r"
                                 % (what, v.name, v.layout, data_format))
            return v.index
        return self.constant(v, role="filter" if role == _FILTER else "activation", data_format=data_format).index

    def placeholder(self, shape, name=None, device=None, data_format=None, dtype="float32"):
        """A value fed at run time: shape (N, C, H, W), or (N, H, W, C)
        with data_format 'NHWC' (an NHWC placeholder); (rows, cols) for a
        matrix; (length,) for a vector. dtype 'int32' (labels) needs a
        vector shape (N,)."""
        if dtype not in ("float32", "int32"):
            raise ValueError("polydnn: dtype must be 'float32' or 'int32', not %r" % (dtype,))
        if dtype == "int32":
            if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) != 1:
                raise ValueError("polydnn: an int32 placeholder holds labels: its shape is (N,), not %r" % (shape,))
            d = _Desc()
            d.dtype, d.layout = _INT32, _LAYOUT_X
            d.dims[:4] = _dims(shape, "shape")
            return self._add(_graph_placeholder, name, device, None, ctypes.byref(d))
        df = _data_format(data_format) or "NCHW"
        dims = _nd_dims(shape, "shape")
        if len(dims) == 4 and df == "NHWC":
            dims = [dims[a] for a in _NHWC_AXES[_ACTIVATION]]
        d = _desc_for(dims, df if len(dims) == 4 else None)
        return self._add(_graph_placeholder, name, device, df, ctypes.byref(d))

    def constant(self, value, name=None, device=None, role="activation", data_format=None):
        """A constant: a Tensor, an array or nested lists (read as
        conv2d reads them; role 'filter' for convolution weights), copied
        into the graph."""
        if role not in ("activation", "filter"):
            raise ValueError("polydnn: role must be 'activation' or 'filter', not %r" % (role,))
        r = _FILTER if role == "filter" else _ACTIVATION
        t = value if isinstance(value, Tensor) else _import(value, r, _data_format(data_format), default_context())
        d = t._desc()
        data = ctypes.create_string_buffer(t.to_bytes())
        return self._add(_graph_constant, name, device, None, ctypes.byref(d), data)

    def conv2d(self, x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, relu=False,
               algorithm="auto", data_format=None, name=None, device=None):
        """As polydnn.conv2d; the output has x's layout."""
        df = _data_format(data_format)
        xi = self._input(x, _ACTIVATION, df, "x")
        wi = self._input(w, _FILTER, df, "w")
        bi = -1 if bias is None else self._input(bias, _ACTIVATION, None, "bias")
        xd, wd = Node(self, xi)._desc(), Node(self, wi)._desc()
        p = _conv_params(tuple(xd.dims[:4]), tuple(wd.dims[:4]), stride, padding, dilation, groups, relu, algorithm)
        return self._add(_graph_conv2d, name, device, df, xi, wi, bi, ctypes.byref(p))

    def _pool(self, x, mode, kernel_size, stride, padding, ceil_mode, data_format, name, device):
        df = _data_format(data_format)
        xi = self._input(x, _ACTIVATION, df, "x")
        p = _pool_params(tuple(Node(self, xi)._desc().dims[:4]), mode, kernel_size, stride, padding, ceil_mode)
        return self._add(_graph_pool2d, name, device, df, xi, ctypes.byref(p))

    def max_pool2d(self, x, kernel_size, stride=None, padding=0, ceil_mode=False, data_format=None, name=None,
                   device=None):
        """As polydnn.max_pool2d (op type "MaxPool")."""
        return self._pool(x, 0, kernel_size, stride, padding, ceil_mode, data_format, name, device)

    def avg_pool2d(self, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                   data_format=None, name=None, device=None):
        """As polydnn.avg_pool2d (op type "AvgPool")."""
        return self._pool(x, 1 if count_include_pad else 2, kernel_size, stride, padding, ceil_mode, data_format,
                          name, device)

    def matmul(self, a, b, transpose_a=False, transpose_b=False, name=None, device=None):
        """As polydnn.matmul."""
        ai, bi = self._input(a, _ACTIVATION, None, "a"), self._input(b, _ACTIVATION, None, "b")
        return self._add(_graph_matmul, name, device, None, ai, bi, int(bool(transpose_a)), int(bool(transpose_b)))

    def add(self, a, b, name=None, device=None):
        ai, bi = self._input(a, _ACTIVATION, None, "a"), self._input(b, _ACTIVATION, None, "b")
        return self._add(_graph_add, name, device, None, ai, bi)

    def add_n(self, inputs, name=None, device=None):
        """The sum of a list of nodes of one shape (op type "AddN")."""
        idx = [self._input(v, _ACTIVATION, None, "inputs[%d]" % i) for i, v in enumerate(inputs)]
        return self._add(_graph_add_n, name, device, None, (_c_int * len(idx))(*idx), len(idx))

    def bias_add(self, x, bias, name=None, device=None):
        xi, bi = self._input(x, _ACTIVATION, None, "x"), self._input(bias, _ACTIVATION, None, "bias")
        return self._add(_graph_bias_add, name, device, None, xi, bi)

    def relu(self, x, name=None, device=None):
        return self._add(_graph_relu, name, device, None, self._input(x, _ACTIVATION, None, "x"))

    def cast(self, x, dtype, name=None, device=None):
        """x in dtype ('float32', 'float16', 'bfloat16'; pdnn_graph_cast):
        round to nearest even; its gradient casts back."""
        return self._add(_graph_cast, name, device, None, self._input(x, _ACTIVATION, None, "x"),
                         _float_dtype(dtype, "cast"))

    def set_precision(self, policy):
        """Keras's mixed precision policy for the nodes added after it:
        'mixed_float16', 'mixed_bfloat16' or 'float32' (none; the default).
        Variables stay float32; each op casts what it reads
        (pdnn_graph_set_precision, docs/precision.md)."""
        codes = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16", "float32": "float32"}
        if policy not in codes:
            raise ValueError("polydnn: the policy must be 'mixed_float16', 'mixed_bfloat16' or 'float32', not %r"
                             % (policy,))
        _check(_graph_set_precision(self._h, _float_dtype(codes[policy], "set_precision")))

    def set_loss_scale(self, initial_scale=32768.0, growth_interval=2000):
        """Dynamic loss scaling for the gradients and updates added after
        it (TensorFlow's LossScaleOptimizer; pdnn_graph_set_loss_scale):
        variables 'loss_scale' and 'loss_scale/good_steps'."""
        _check(_graph_set_loss_scale(self._h, float(initial_scale), _int(growth_interval, "growth_interval", "int")))

    def softmax(self, x, name=None, device=None):
        """Softmax over the channels (a matrix's columns)."""
        return self._add(_graph_softmax, name, device, None, self._input(x, _ACTIVATION, None, "x"))

    def reshape(self, x, shape, name=None, device=None):
        """As polydnn.reshape: 4 dims NCHW, any other count (0 to 8) N-d."""
        xi = self._input(x, _ACTIVATION, None, "x")
        dims = _nd_dims(shape, "shape")
        if len(dims) == 4:
            return self._add(_graph_reshape, name, device, None, xi, (_c_int64 * 4)(*dims))
        return self._add(_graph_reshape_nd, name, device, None, xi, len(dims), (_c_int64 * max(len(dims), 1))(*dims))

    def flatten(self, x, name=None, device=None):
        """(N, C*H*W, 1, 1), as polydnn.flatten (op type "Reshape")."""
        return self._add(_graph_flatten, name, device, None, self._input(x, _ACTIVATION, None, "x"))


    _INITIALIZERS = {"zeros": 0, "he_normal": 2, "glorot_uniform": 3}

    def variable(self, initial_value=None, shape=None, initializer="zeros", seed=0, name=None, device=None,
                 role="activation", data_format=None):
        """A variable (pdnn_graph_variable, op "VariableV2"): its value
        lives in each Session and persists across runs. Either
        initial_value (a Tensor, an array or nested lists, read as
        constant() reads them; e.g. np.load of a .npy file), or shape with
        initializer 'zeros', 'he_normal' or 'glorot_uniform' drawn from
        seed (the same numbers on every platform): shape (O, I, H, W) with
        role 'filter' (OIHW), (rows, cols) a matrix, (length,) a vector,
        else (N, C, H, W)."""
        if initial_value is not None:
            r = _FILTER if role == "filter" else _ACTIVATION
            t = initial_value if isinstance(initial_value, Tensor) else _import(
                initial_value, r, _data_format(data_format), default_context())
            d = t._desc()
            data = ctypes.create_string_buffer(t.to_bytes())
            return self._add(_graph_variable, name, device, None, ctypes.byref(d), 1, 0, data)
        if initializer not in self._INITIALIZERS:
            raise ValueError("polydnn: initializer must be one of %s, not %r"
                             % (", ".join(sorted(self._INITIALIZERS)), initializer))
        if shape is None:
            raise ValueError("polydnn: a variable needs initial_value, or a shape")
        dims = _nd_dims(shape, "shape")
        d = _desc_for(dims, "OIHW" if (len(dims) == 4 and role == "filter") else None)
        return self._add(_graph_variable, name, device, None, ctypes.byref(d), self._INITIALIZERS[initializer],
                         _int(seed, "seed", "uint64"), None)

    def softmax_cross_entropy(self, logits, labels, name=None, device=None):
        """The batch-mean softmax cross-entropy loss (1,) of logits (N, K)
        with int32 labels (N,) (a placeholder(..., dtype='int32'))."""
        li = self._input(logits, _ACTIVATION, None, "logits")
        if not isinstance(labels, Node) or labels.graph is not self:
            raise TypeError("polydnn: labels must be an int32 node of this graph (a placeholder)")
        return self._add(_graph_xent, name, device, None, li, labels.index)

    def gradients(self, loss, xs):
        """tf.gradients: the nodes computing d(sum of loss)/dx for each x in
        xs (a Node or a list), None where loss does not depend on x.
        Gradient nodes are named "gradients/..." and run where their
        forward op runs."""
        single = isinstance(xs, Node)
        xl = [xs] if single else list(xs)
        idx = [self._input(x, _ACTIVATION, None, "xs[%d]" % i) for i, x in enumerate(xl)]
        if not isinstance(loss, Node) or loss.graph is not self:
            raise TypeError("polydnn: loss must be a node of this graph")
        out = (_c_int * len(idx))()
        _check(_graph_gradients(self._h, loss.index, (_c_int * len(idx))(*idx), len(idx), out))
        res = [Node(self, out[i]) if out[i] >= 0 else None for i in range(len(idx))]
        for n in res:
            if n is not None:
                self._meta.setdefault(n.index, ("", None))
        for i in range(len(self)):
            self._meta.setdefault(i, ("", None))
        return res[0] if single else res

    def apply_gradients(self, grads_and_vars, kind="sgd", lr=None, momentum=None, weight_decay=None, beta1=None,
                        beta2=None, epsilon=None, name=None):
        """An optimizer step (pdnn_graph_apply_gradients) over a list of
        (gradient, variable) pairs, as tf.train.Optimizer.apply_gradients:
        adds the slot variables ("<var>/Momentum", "<var>/Adam",
        "<var>/Adam_1"), "global_step" and returns the train op; running it
        (Session.run) updates the variables in place and returns None."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("polydnn: apply_gradients needs at least one (gradient, variable) pair")
        p = _optimizer_params(kind, lr, momentum, weight_decay, beta1, beta2, epsilon)
        gi = [self._input(g, _ACTIVATION, None, "gradient %d" % i) for i, (g, _v) in enumerate(pairs)]
        vi = [self._input(v, _ACTIVATION, None, "variable %d" % i) for i, (_g, v) in enumerate(pairs)]
        out = _c_int()
        _check(_graph_apply_gradients(self._h, _cname(name, "name"), ctypes.byref(p), (_c_int * len(vi))(*vi),
                                      (_c_int * len(gi))(*gi), len(vi), ctypes.byref(out)))
        for i in range(len(self)):
            self._meta.setdefault(i, ("", None))
        return Node(self, out.value)


class Session:
    """Runs a Graph on a context's devices (pdnn_session; tf.Session):
    placement happens here, once, for the graph as it is now (nodes added
    later are not in the session).

    context: the Context whose devices run it (default_context() if None).
    log_device_placement: print the device mapping and each node's device
    (TensorFlow's format) to stderr, or to log(line) if log is given; also
    on when the context's is. allow_soft_placement: a node pinned to a
    device that does not exist, or lacks its op, runs on another; None
    takes the context's."""

    def __init__(self, graph, context=None, log_device_placement=False, allow_soft_placement=None, log=None):
        if not isinstance(graph, Graph):
            raise TypeError("polydnn: Session needs a polydnn.Graph, not %s" % (type(graph).__name__,))
        ctx = context or default_context()
        if allow_soft_placement is None:
            allow_soft_placement = getattr(ctx, "allow_soft_placement", False)
        cfg = _SessionConfig()
        _session_config_init(ctypes.byref(cfg))
        cfg.context = ctx._h
        cfg.log_device_placement = int(bool(log_device_placement))
        cfg.allow_soft_placement = int(bool(allow_soft_placement))
        if log is not None:
            # Kept with the session: the library may log while it lives.
            self._log = _LogFn(lambda _user, line: log(line.decode(errors="replace")))
            cfg.log = self._log
        h = _vp()
        _check(_session_create(graph._h, ctypes.byref(cfg), ctypes.byref(h)))
        self._h = h
        self._ctx = ctx
        self.graph = graph
        self._count = len(graph)

    def close(self):
        if getattr(self, "_h", None):
            _session_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise ValueError("polydnn: the session was closed")
        return self._h

    def _node(self, n, what):
        if isinstance(n, str):
            n = self.graph.find(n)
        if not isinstance(n, Node):
            raise TypeError("polydnn: %s must be a Node or a node's name, not %s" % (what, type(n).__name__))
        if n.graph is not self.graph:
            raise ValueError("polydnn: %s is node '%s' of another graph" % (what, n.name))
        if n.index >= self._count:
            raise ValueError("polydnn: %s is node '%s', added to the graph after this session was created"
                             % (what, n.name))
        return n

    def device_of(self, node):
        """The Device node (a Node or a name) was placed on."""
        n = self._node(node, "node")
        d = _vp()
        _check(_session_node_device(self._handle(), n.index, ctypes.byref(d)))
        return Device(self._ctx, d)

    def variable(self, node):
        """A variable's current value as a float32 numpy array in its
        memory order, shaped as the node when that order is the logical
        one (NCHW, OIHW, vectors), else flat."""
        np = _numpy("reading a variable")
        n = self._node(node, "node")
        a = np.empty(int(np.prod(n.shape)), dtype=np.float32)
        _check(_session_variable_read(self._handle(), n.index, a.ctypes.data_as(_vp), a.nbytes))
        return a.reshape(n.shape) if n.layout in ("NCHW", "OIHW", "X") else a

    def assign(self, node, value):
        """Replaces a variable's value (float32 values in its memory order;
        any shape with as many elements)."""
        np = _numpy("assigning a variable")
        n = self._node(node, "node")
        a = np.ascontiguousarray(np.asarray(value, dtype=np.float32).reshape(-1))
        _check(_session_variable_assign(self._handle(), n.index, a.ctypes.data_as(_vp), a.nbytes))

    def _feed(self, n, value):
        if isinstance(value, Tensor):
            return value
        df = self.graph._meta[n.index][1]
        t = _as_tensor(value, _ACTIVATION, df, self._ctx, None, "the value fed to '%s'" % n.name)
        want = n.layout
        if t.layout != want and t.shape == n.shape and {t.layout, want} <= set(_DATA_FORMATS):
            # An array whose strides say the other layout: copied into the
            # placeholder's, as TensorFlow copies every feed.
            a = t.numpy()
            y = empty(n.shape, want, device="/cpu:0", context=self._ctx)
            order = (0, 1, 2, 3) if want == "NCHW" else (0, 2, 3, 1)
            y.write_bytes(_numpy("a feed").ascontiguousarray(a.transpose(order)).tobytes())
            t = y
        return t

    def run(self, fetches, feed_dict=None, as_numpy=False):
        """Runs what fetches need. fetches: a Node (or its name), or a list
        or tuple of them; feed_dict: {placeholder: value}, a value being a
        Tensor (any device), an array or nested lists, read in the
        placeholder's data_format. Returns a Tensor for each fetch, on the
        device of its node (numpy arrays with as_numpy), in fetches'
        shape: one, or a list."""
        h = self._handle()
        single = isinstance(fetches, (Node, str))
        fl = [self._node(f, "fetches[%d]" % i) for i, f in enumerate([fetches] if single else list(fetches))]
        if not fl:
            raise ValueError("polydnn: run needs at least one fetch")
        nodes, values = [], []
        for k, v in (feed_dict or {}).items():
            n = self._node(k, "a feed_dict key")
            nodes.append(n.index)
            values.append(self._feed(n, v))
        out = (_vp * len(fl))()
        _check(_session_run(h, (_c_int * len(nodes))(*nodes), (_vp * len(values))(*[t._handle() for t in values]),
                            len(nodes), (_c_int * len(fl))(*[n.index for n in fl]), len(fl), out))
        # A train op has no value: None.
        res = [Tensor(self._ctx, _vp(out[i])) if out[i] else None for i in range(len(fl))]
        if as_numpy:
            res = [t.numpy() if t is not None else None for t in res]
        return res[0] if single else res


# ---- ONNX models -------------------------------------------------------------


class OnnxModel:
    """An ONNX model imported into a Graph (pdnn_graph_import_onnx) with a
    Session that runs it; made by load_onnx. Calling it feeds the model's
    inputs (positionally in the file's order, or by their ONNX names) and
    returns its outputs: Tensors on the devices of the output nodes (numpy
    arrays with as_numpy=True), one, or a list when the model has several.

    Inputs are Tensors (any device), arrays or anything DLPack-capable
    (numpy, torch), NCHW as in the file; a matrix input may be given 2-D.
    Outputs keep the file's rank (a matrix output is a (rows, cols) Tensor,
    a view of the graph's {rows, cols, 1, 1} node). The graph, the session and their placements are
    those of Graph and Session: log_device_placement and
    allow_soft_placement work as there.

    A model exported with a symbolic batch runs at any batch: an input
    whose first dim differs from the graph's moves the graph to that batch
    (pdnn_graph_set_batch, without importing the file again) and runs it in
    a session for that batch (the last few are kept)."""

    _KEPT_SESSIONS = 4

    def __init__(self, graph, io, session, session_args=None):
        self.graph = graph
        self.session = session
        self._session_args = session_args or {}
        self._batch = None
        self._sessions = {}
        self.inputs = [Node(graph, io.inputs[i]) for i in range(io.n_inputs)]
        self.outputs = [Node(graph, io.outputs[i]) for i in range(io.n_outputs)]
        self._in_rank = [io.input_rank[i] for i in range(io.n_inputs)]
        self._out_rank = [io.output_rank[i] for i in range(io.n_outputs)]

    @property
    def input_names(self):
        return [n.name for n in self.inputs]

    @property
    def output_names(self):
        return [n.name for n in self.outputs]

    def _value(self, i, v):
        if self._in_rank[i] == 2 and isinstance(v, Tensor) and v.layout == "ND" and v.ndim == 2:
            return _view(v, _desc_for(v.shape, "NCHW"))  # the placeholder's {rows, cols, 1, 1}
        if self._in_rank[i] == 2 and not isinstance(v, Tensor):
            np = _numpy("a matrix input")
            a = np.asarray(v, dtype=np.float32)
            if a.ndim == 2:
                return a.reshape(a.shape + (1, 1))
        return v

    def __call__(self, *inputs, as_numpy=False, **named):
        if len(inputs) > len(self.inputs):
            raise ValueError("polydnn: the model takes %d input(s) (%s), not %d"
                             % (len(self.inputs), ", ".join(self.input_names), len(inputs)))
        feed = {}
        for i, v in enumerate(inputs):
            feed[i] = v
        names = self.input_names
        for k, v in named.items():
            if k not in names:
                raise ValueError("polydnn: the model has no input '%s' (its inputs: %s)" % (k, ", ".join(names)))
            i = names.index(k)
            if i in feed:
                raise ValueError("polydnn: input '%s' is given twice" % (k,))
            feed[i] = v
        missing = [names[i] for i in range(len(names)) if i not in feed]
        if missing:
            raise ValueError("polydnn: no value for the model's input(s) %s" % (", ".join(missing),))
        if 0 in feed and self._in_rank[0] > 0:
            self._to_batch(feed[0])
        out = self.session.run(self.outputs, {self.inputs[i]: self._value(i, v) for i, v in feed.items()})
        # The file's rank: the importer holds ranks 1 to 3 in image-layout nodes
        # (a matrix as {rows, cols, 1, 1}); a view gives them their shape.
        out = [_view(t, _desc_for(t.shape[:r], "ND")) if t.layout in _DATA_FORMATS and r != 4 else t
               for t, r in zip(out, self._out_rank)]
        if as_numpy:
            out = [t.numpy() for t in out]
        return out[0] if len(out) == 1 else out

    @staticmethod
    def _batch_of(v):
        # An input's first dim (None for a scalar): the batch.
        shape = getattr(v, "shape", None)
        if shape is None:
            shape = _numpy("an input").shape(v)
        return int(shape[0]) if len(shape) else None

    def _to_batch(self, v):
        # The first input's first dim is the batch; another one than the
        # graph's moves the graph, and the session is the one for that batch.
        b, cur = self._batch_of(v), self.inputs[0].shape[0]
        if b is None or b == cur:
            return
        if self._batch is None:
            self._batch = cur
            self._sessions[cur] = self.session
        _check(_graph_set_batch(self.graph._h, b))
        sess = self._sessions.pop(b, None)
        if sess is None:
            sess = Session(self.graph, **self._session_args)
        self._sessions[b] = sess  # the newest last: the first is dropped when too many
        while len(self._sessions) > self._KEPT_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        self.session = sess

    def __repr__(self):
        return "OnnxModel(inputs=%s, outputs=%s)" % (self.input_names, self.output_names)


class TrainableOnnxModel(OnnxModel):
    """An ONNX model imported trainable (load_onnx(..., trainable=True)):
    its Conv/Gemm/BatchNormalization initializers are variables, trained by
    train_step with the loss and optimizer given to load_onnx."""

    def __init__(self, graph, io, session, training, path, loss_kind, towers=None):
        # towers: (io array, training array) of pdnn_graph_add_training_towers
        super().__init__(graph, io, session)
        self._t = training
        self._t_loss = loss_kind
        self._path = path
        self.loss = Node(graph, training.loss)
        self.labels = Node(graph, training.targets)
        self._flag = Node(graph, training.training)
        self._lr = Node(graph, training.learning_rate)
        n = len(towers[0]) if towers else 1
        self._tower_inputs = [Node(graph, towers[0][t].inputs[0]) for t in range(n)] if towers else [self.inputs[0]]
        self._tower_labels = [Node(graph, towers[1][t].targets) for t in range(n)] if towers else [self.labels]
        self._tower_losses = [Node(graph, towers[1][t].loss) for t in range(n)] if towers else [self.loss]

    @property
    def towers(self):
        """How many towers train_step and fit split each batch over (1: none)."""
        return len(self._tower_inputs)

    def _to_batch(self, v):
        # A session for another batch would start from the initial
        # variables: the trained model keeps the batch it was loaded with.
        b = self._batch_of(v)
        if b is not None and b != self.inputs[0].shape[0]:
            raise ValueError("polydnn: a trainable model runs at the batch it was loaded with (%d), not %d; "
                             "load_onnx(..., batch=N) sets it" % (self.inputs[0].shape[0], b))

    def parameters(self):
        """{initializer name: numpy array} of the model's variables: its
        weights and biases, and its batch norms' running statistics (not
        the optimizer's slots or step)."""
        out = {}
        for i in range(len(self.graph)):
            n = Node(self.graph, i)
            if n.op == "VariableV2" and n.name not in ("global_step", "polydnn/training", "learning_rate") \
                    and not n.name.endswith(("/Momentum", "/Adam", "/Adam_1")):
                out[n.name] = self._onnx_order(n, self.session.variable(n))
        return out

    # An NHWC import holds filters in the NHWC kernels' orders (OHWI;
    # depthwise HWIO): parameters() and set_parameters() speak ONNX's OIHW.
    _TO_OIHW = {"OHWI": (0, 3, 1, 2), "HWIO": (3, 2, 0, 1)}

    def _onnx_order(self, n, a):
        perm = self._TO_OIHW.get(n.layout)
        if perm is None:
            return a
        o, i, h, w = n.shape
        mem = (o, h, w, i) if n.layout == "OHWI" else (h, w, i, o)
        return _numpy("parameters").ascontiguousarray(a.reshape(mem).transpose(perm))

    def _memory_order(self, n, a):
        np = _numpy("set_parameters")
        if n.layout not in self._TO_OIHW:
            return a
        a = np.asarray(a, dtype=np.float32)
        if a.size != int(np.prod(n.shape)):
            return a  # the size error comes from assign, naming the variable
        a = a.reshape(n.shape)  # OIHW
        return np.ascontiguousarray(a.transpose((0, 2, 3, 1)) if n.layout == "OHWI" else a.transpose((2, 3, 1, 0)))

    def set_parameters(self, values):
        """Replaces variables by name ({name: array}, parameters()'s names;
        each array as many elements as the variable, in its memory order):
        Keras's set_weights, torch's load_state_dict. An unknown name
        raises KeyError, a wrong size polydnn.Error; nothing is replaced
        unless every name is known."""
        have = self.parameters()
        unknown = [k for k in values if k not in have]
        if unknown:
            raise KeyError("polydnn: the model has no variable named %s" % (", ".join(map(repr, unknown)),))
        for k, v in values.items():
            n = self.graph.find(k)
            self.session.assign(n, self._memory_order(n, v))

    def _labels(self, y):
        np = _numpy("labels")
        if self._t_loss == 0:
            return np.ascontiguousarray(np.asarray(y, dtype=np.int32).reshape(-1))
        return np.ascontiguousarray(np.asarray(y, dtype=np.float32).reshape(self.labels.shape))

    def set_learning_rate(self, lr):
        self.session.assign(self._lr, [lr])

    def train_step(self, x, y):
        """One optimizer step on the batch (x, y); returns the loss (float).
        With towers, x holds towers x the model's batch rows: tower t takes
        the t-th share, and the loss is the towers' mean."""
        self.session.assign(self._flag, [1.0])
        n = len(self._tower_inputs)
        if n == 1:
            loss, _ = self.session.run([self.loss, Node(self.graph, self._t.train_op)],
                                       {self.inputs[0]: self._value(0, x), self.labels: self._labels(y)},
                                       as_numpy=True)
            return float(loss.reshape(-1)[0])
        np = _numpy("train_step")
        x = np.asarray(x, dtype=np.float32)
        y = np.asarray(y)
        b = self.inputs[0].shape[0]
        if x.shape[:1] != (n * b,) or len(y) != n * b:
            raise ValueError("polydnn: train_step over %d towers of %d rows takes %d rows and labels, not %s and %d"
                             % (n, b, n * b, x.shape[:1], len(y)))
        feed = {}
        for t in range(n):
            feed[self._tower_inputs[t]] = np.ascontiguousarray(x[t * b:(t + 1) * b])
            feed[self._tower_labels[t]] = self._labels(y[t * b:(t + 1) * b])
        out = self.session.run(self._tower_losses + [Node(self.graph, self._t.train_op)], feed, as_numpy=True)
        return float(np.mean([o.reshape(-1)[0] for o in out[:n]]))

    def evaluate(self, x, y=None):
        """The outputs in inference mode (running statistics, no dropout);
        with y also the loss: (outputs, loss)."""
        self.session.assign(self._flag, [0.0])
        try:
            feed = {self.inputs[0]: self._value(0, x)}
            if y is None:
                return self(x, as_numpy=True)
            feed[self.labels] = self._labels(y)
            out, loss = self.session.run([self.outputs[0], self.loss], feed, as_numpy=True)
            if self._out_rank[0] == 2:
                out = out.reshape(out.shape[:2])
            return out, float(loss.reshape(-1)[0])
        finally:
            self.session.assign(self._flag, [1.0])

    def fit(self, x, y, epochs=1, shuffle=True, seed=0, validation_data=None, lr_schedule=None, verbose=False):
        """Trains on the arrays x (N, C, H, W) and y (N labels, or targets for
        "mse") for `epochs` passes, Keras's fit for a model whose batch is
        fixed (with towers, batch is the towers' rows together): each epoch
        takes N // batch full batches in an order drawn
        from (seed, epoch) when shuffle (the rest of that epoch's order is
        left out; another epoch's order uses it). lr_schedule: a function
        (global batch index) -> learning rate, set before each step.
        validation_data (xv, yv) is evaluated after each epoch. Returns the
        history, {"loss": [mean loss per epoch], "accuracy": [...]} (and
        "val_loss", "val_accuracy"); accuracy for cross_entropy only."""
        np = _numpy("fit")
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
        b = self.inputs[0].shape[0] * len(self._tower_inputs)  # a step's rows: every tower's
        if x.ndim < 1 or len(y) != x.shape[0]:
            raise ValueError("polydnn: fit needs as many labels as images: x has %s, y %d"
                             % (x.shape[:1], len(y)))
        if tuple(x.shape[1:]) != tuple(self.inputs[0].shape[1:]):
            raise ValueError("polydnn: fit: the model's input is %s per image, x gives %s"
                             % (tuple(self.inputs[0].shape[1:]), tuple(x.shape[1:])))
        if x.shape[0] < b:
            raise ValueError("polydnn: fit: %d images make no batch of %d (the model's batch)" % (x.shape[0], b))
        if int(epochs) < 0:
            raise ValueError("polydnn: fit: epochs must be at least 0, not %r" % (epochs,))
        y = np.asarray(y)
        hist = {"loss": [], "accuracy": []} if self._t_loss == 0 else {"loss": []}
        step = 0
        for e in range(int(epochs)):
            order = np.random.default_rng([int(seed), e]).permutation(x.shape[0]) if shuffle \
                else np.arange(x.shape[0])
            losses = []
            for k in range(x.shape[0] // b):
                idx = order[k * b:(k + 1) * b]
                if lr_schedule is not None:
                    self.set_learning_rate(float(lr_schedule(step)))
                losses.append(self.train_step(x[idx], y[idx]))
                step += 1
            hist["loss"].append(float(np.mean(losses)))
            if self._t_loss == 0:
                hist["accuracy"].append(self.accuracy(x, y))
            if validation_data is not None:
                xv, yv = validation_data
                loss, acc = self._eval_all(np.asarray(xv, dtype=np.float32), np.asarray(yv))
                hist.setdefault("val_loss", []).append(loss)
                if acc is not None:
                    hist.setdefault("val_accuracy", []).append(acc)
            if verbose:
                print("epoch %d/%d: %s" % (e + 1, int(epochs), ", ".join("%s %.4f" % (k, v[-1]) for k, v in
                                                                         hist.items())))
        return hist

    def _eval_all(self, x, y):
        # In model-sized batches, the last padded by repeating its last row.
        np = _numpy("evaluate")
        b = self.inputs[0].shape[0]
        n = x.shape[0]
        if n == 0:
            raise ValueError("polydnn: no images to evaluate")
        total, hits = 0.0, 0
        for k in range(0, n, b):
            part = np.arange(k, min(k + b, n))
            idx = np.concatenate([part, np.full(b - len(part), part[-1])])
            out, loss = self.evaluate(x[idx], y[idx])
            if len(part) < b:  # the padded rows left out of the loss: computed here, in float64
                o = out[:len(part)].reshape(len(part), -1).astype(np.float64)
                if self._t_loss == 0:
                    z = o - o.max(1, keepdims=True)
                    lse = np.log(np.exp(z).sum(1))
                    loss = float(np.mean(lse - z[np.arange(len(part)), y[part].reshape(-1).astype(np.int64)]))
                else:
                    loss = float(np.mean((o - y[part].reshape(len(part), -1)) ** 2))
            total += loss * len(part)
            if self._t_loss == 0:
                hits += int((out[:len(part)].reshape(len(part), -1).argmax(1) == y[part].reshape(-1)).sum())
        return total / n, (hits / n if self._t_loss == 0 else None)

    def accuracy(self, x, y):
        """The fraction of x whose largest output is its label y, in
        inference mode (running statistics, no dropout)."""
        np = _numpy("accuracy")
        return self._eval_all(np.ascontiguousarray(np.asarray(x, dtype=np.float32)), np.asarray(y))[1]

    def export(self, path):
        """Writes the model with its trained initializers (pdnn_session_export_onnx)."""
        if self._path is None:
            raise ValueError("polydnn: export needs the model loaded from a path")
        n = _c_int()
        _check(_session_export_onnx(self.session._handle(), _cname(self._path, "model"),
                                    _cname(os.fspath(path), "path"), ctypes.byref(n)))
        return n.value


_LOSSES = {"cross_entropy": 0, "mse": 1}


def load_onnx(model, device=None, batch=None, context=None, base_dir=None, log_device_placement=False,
              allow_soft_placement=None, log=None, fusion=True, data_format="NCHW", trainable=False,
              loss="cross_entropy", optimizer="sgd", lr=None, momentum=None, weight_decay=None, nesterov=False,
              betas=None, eps=None, seed=0, precision=None, param_device=None):
    """Imports an ONNX model and returns an OnnxModel that runs it.

    model: a path (str or os.PathLike) or the file's bytes; base_dir: where
    a model given as bytes reads external data from (None: such a model is
    refused); a path reads it from its own folder. device: every node's
    requested device (None: the session places them); batch: the first
    dim of every input (None: the file's; a symbolic one becomes 1; a
    model with a symbolic batch then runs at any batch it is called with);
    fusion=False keeps each Relu a node of its own (debugging);
    data_format="NHWC" runs the network in NHWC inside (inputs and
    outputs stay NCHW, as in the file).
    context, log_device_placement, allow_soft_placement and log: as for
    Session. A malformed file or an unsupported operator raises Error
    naming it.
    trainable=True returns a TrainableOnnxModel: loss "cross_entropy"
    (int32 labels) or "mse", optimizer "sgd" (momentum, nesterov), "adam"
    or "adamw" with lr, weight_decay, betas, eps; seed: Dropout masks.
    Towers (trainable only): device a list of 2 to 8 devices trains one
    copy of the network per device on its share of each batch, the
    gradients averaged on param_device (default "/cpu:0", which holds the
    variables): pdnn_graph_add_training_towers. batch (else the file's) is
    then the whole step's rows and must split evenly; the model's inputs
    are tower 0's, which evaluate and accuracy run.
    precision "float16" or "bfloat16": computes under that mixed precision
    policy, inputs and outputs float32 (keep_io_types; docs/precision.md)."""
    opts = _OnnxOptions()
    _onnx_options_init(ctypes.byref(opts))
    if precision is not None:
        opts.precision = _float_dtype(precision, "load_onnx precision")
    opts.trainable = 1 if trainable else 0
    opts.seed = _int(seed, "seed", "int64") & 0xFFFFFFFFFFFFFFFF
    if batch is not None:
        opts.batch = _int(batch, "batch", "int64")
        if opts.batch < 1:
            raise ValueError("polydnn: batch must be at least 1, not %d" % (opts.batch,))
    towers = None
    if isinstance(device, (list, tuple)):
        towers = [d.name if isinstance(d, Device) else d for d in device]
        if not trainable:
            raise ValueError("polydnn: a list of devices (towers) needs trainable=True")
        if not 1 <= len(towers) <= _MAX_TOWERS:
            raise ValueError("polydnn: towers take 1 to %d devices, not %d" % (_MAX_TOWERS, len(towers)))
        if any(not isinstance(d, str) for d in towers):
            raise TypeError("polydnn: each tower's device is a name or a Device")
        device = towers[0] if len(towers) == 1 else None  # the towers' devices are set by add_training_towers
        if len(towers) == 1:
            towers = None
    if param_device is not None and towers is None:
        raise ValueError("polydnn: param_device needs towers (device a list of at least 2 devices)")
    if isinstance(device, Device):
        device = device.name
    if isinstance(param_device, Device):
        param_device = param_device.name
    opts.device = _cname(device, "device")
    opts.base_dir = _cname(os.fspath(base_dir) if base_dir is not None else None, "base_dir")
    opts.no_fusion = 0 if fusion else 1
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError("polydnn: data_format must be 'NCHW' or 'NHWC', not %r" % (data_format,))
    opts.layout = 1 if data_format == "NHWC" else 0
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        buf = ctypes.create_string_buffer(data, len(data))
        args = (None, ctypes.cast(buf, _vp), len(data))
    else:
        try:
            path = os.fspath(model)
        except TypeError:
            raise TypeError("polydnn: load_onnx takes a path or bytes, not %s" % (type(model).__name__,)) from None
        args = (_cname(path, "the model's path"), None, 0)

    def imported():
        h, io = _vp(), _OnnxIO()
        _check(_graph_import_onnx(*args, ctypes.byref(opts), ctypes.byref(h), ctypes.byref(io)))
        g = Graph.__new__(Graph)
        g._h = h
        g._scopes = []
        return g, h, io

    g, h, io = imported()
    if towers:
        # The step's rows (batch, else the file's) split over the towers:
        # each tower's copy is imported at its share.
        whole = opts.batch if batch is not None else Node(g, io.inputs[0]).shape[0]
        if whole % len(towers):
            raise ValueError("polydnn: a batch of %d does not split evenly over %d towers" % (whole, len(towers)))
        opts.batch = whole // len(towers)
        del g
        g, h, io = imported()
    training = None
    tower_arrays = None
    if trainable:
        if loss not in _LOSSES:
            raise ValueError("polydnn: loss must be 'cross_entropy' or 'mse', not %r" % (loss,))
        b = betas or (None, None)
        p = _optimizer_params(optimizer, lr, momentum, weight_decay, b[0], b[1], eps, nesterov)
        if towers:
            n = len(towers)
            ios, outs = (_OnnxIO * n)(), (_OnnxTraining * n)()
            ios[0] = io
            tw = _TrainingTowers()
            tw.n = n
            for t, d in enumerate(towers):
                tw.devices[t] = _cname(d, "device")
            tw.param_device = _cname(param_device, "param_device")
            _check(_graph_add_training_towers(h, ios, ctypes.byref(tw), _LOSSES[loss], ctypes.byref(p), outs))
            io, training, tower_arrays = ios[0], outs[0], (ios, outs)
        else:
            training = _OnnxTraining()
            _check(_graph_add_training(h, ctypes.byref(io), _LOSSES[loss], ctypes.byref(p),
                                       ctypes.byref(training)))
    g._meta = {i: (device or "", None) for i in range(len(g))}
    session_args = dict(context=context, log_device_placement=log_device_placement,
                        allow_soft_placement=allow_soft_placement, log=log)
    sess = Session(g, **session_args)
    if trainable:
        path = None if isinstance(model, (bytes, bytearray, memoryview)) else os.fspath(model)
        return TrainableOnnxModel(g, io, sess, training, path, _LOSSES[loss], tower_arrays)
    return OnnxModel(g, io, sess, session_args)
