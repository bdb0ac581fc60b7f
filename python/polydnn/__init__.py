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
was installed to by `make install`, then the system's library path.
"""

import ctypes
import ctypes.util
import itertools
import os

__all__ = [
    "Error", "Context", "Device", "Tensor", "default_context", "devices",
    "empty", "from_dlpack", "conv2d", "conv_algorithms", "max_pool2d", "avg_pool2d", "version",
]

# ---- the library -----------------------------------------------------------


def _load():
    tried = []
    cands = []
    if os.environ.get("POLYDNN_LIBRARY"):
        cands.append(os.environ["POLYDNN_LIBRARY"])
    try:
        from . import _build_config  # written by make install
        cands.append(os.path.join(_build_config.LIBDIR, "libpolydnn.so.0"))
    except ImportError:
        pass
    found = ctypes.util.find_library("polydnn")
    if found:
        cands.append(found)
    cands.append("libpolydnn.so.0")
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
                ("tuning", _c_int)]


_GROWTH = {"gradual": 0, "double": 1}


class _DeviceInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 64), ("type", _c_int), ("index", _c_int),
                ("backend", ctypes.c_char * 16), ("vendor", ctypes.c_char * 128),
                ("device_name", ctypes.c_char * 256), ("driver_version", ctypes.c_char * 128),
                ("memory_bytes", _c_uint64), ("max_alloc_bytes", _c_uint64),
                ("compute_units", _c_int)]


class _Desc(ctypes.Structure):
    _fields_ = [("dtype", _c_int), ("layout", _c_int), ("dims", _c_int64 * 4)]


class _ConvParams(ctypes.Structure):
    _fields_ = [(n, _c_int) for n in (
        "stride_h", "stride_w", "dilation_h", "dilation_w", "pad_top", "pad_bottom",
        "pad_left", "pad_right", "groups", "relu", "algorithm")]


class _PoolParams(ctypes.Structure):
    _fields_ = [(n, _c_int) for n in (
        "mode", "window_h", "window_w", "stride_h", "stride_w", "pad_top", "pad_bottom",
        "pad_left", "pad_right", "ceil_mode")]


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
_algo_name = _fn("pdnn_conv_algo_name", _cp, _c_int)
_algo_parse = _fn("pdnn_conv_algo_parse", _c_int, _cp)
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
    (_DLManagedTensorVersioned, "DLManagedTensorVersioned"),
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
                 visible_devices=None, growth_policy="gradual"):
        if growth_policy not in _GROWTH:
            raise ValueError("growth_policy must be 'gradual' or 'double', got %r" % (growth_policy,))
        o = _ContextOptions()
        _options_init(ctypes.byref(o))
        o.allow_growth = int(bool(allow_growth))
        o.growth_policy = _GROWTH[growth_policy]
        o.memory_fraction = float(memory_fraction)
        o.memory_limit = int(memory_limit)
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


class Tensor:
    """A float32 tensor on one device (pdnn_tensor)."""

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
        d = self._desc()
        return (d.dims[0],) if d.layout == _LAYOUT_X else tuple(d.dims)

    @property
    def layout(self):
        return _layout_name(self._desc().layout).decode()

    @property
    def device(self):
        return Device(self._ctx, _tensor_device(self._handle()))

    @property
    def nbytes(self):
        n = 4
        for s in self._desc().dims:
            n *= s
        return n

    def __repr__(self):
        if not self._h:
            return "Tensor(released)"
        return "Tensor(shape=%s, layout=%s, device=%s)" % (self.shape, self.layout, self.device.name)

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
        """A copy on device (a name or Device), through host memory."""
        dev = _resolve_device(device, self._ctx)
        d = self._desc()
        if layout is not None and layout != self.layout:
            raise ValueError("polydnn: Tensor.to() keeps the layout; convert with the producing framework")
        out = _vp()
        _check(_tensor_create(dev._h, ctypes.byref(d), ctypes.byref(out)))
        t = Tensor(self._ctx, out)
        t.write_bytes(self.to_bytes())
        return t

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


def empty(shape, layout="NCHW", device=None, context=None):
    """An uninitialised float32 tensor of logical shape (N, C, H, W)."""
    ctx = context or default_context()
    dev = _resolve_device(device, ctx)
    d = _Desc()
    d.dtype = 0
    lay = _layout_parse(layout.encode())
    if lay < 0:
        raise ValueError("polydnn: unknown layout %r" % (layout,))
    d.layout = lay
    dims = list(shape) + [1] * (4 - len(shape))
    for i in range(4):
        d.dims[i] = int(dims[i])
    h = _vp()
    _check(_tensor_create(dev._h, ctypes.byref(d), ctypes.byref(h)))
    return Tensor(ctx, h)


def from_dlpack(obj, role="activation", context=None):
    """Takes obj (anything with __dlpack__, or a DLPack capsule) without a
    copy. role 'activation' reads a 4-D shape as (N, C, H, W) in NCHW or NHWC
    strides; 'filter' as (O, I, H, W) in OIHW, OHWI or HWIO strides. 1-D
    tensors become vectors (a bias)."""
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


# ---- ops -----------------------------------------------------------------


def _pair(v, what):
    if isinstance(v, int):
        return v, v
    v = tuple(v)
    if len(v) != 2:
        raise ValueError("polydnn: %s must be an int or a pair" % what)
    return int(v[0]), int(v[1])


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


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, relu=False,
           algorithm="auto", out_layout=None):
    """y = relu?(conv(x, w) + bias), on x's device, like
    torch.nn.functional.conv2d. padding: int, (ph, pw), (top, bottom, left,
    right), 'same' or 'valid'. algorithm: "auto" or one of
    conv_algorithms(); a named one runs exactly that algorithm or raises
    Error. The result has x's layout unless out_layout."""
    p = _ConvParams()
    _conv_init(ctypes.byref(p))
    p.stride_h, p.stride_w = _pair(stride, "stride")
    p.dilation_h, p.dilation_w = _pair(dilation, "dilation")
    p.groups = int(groups)
    p.relu = int(bool(relu))
    # The library's names, not a copy here that would go stale.
    algo = _algo_parse(str(algorithm).encode())
    if algo < 0:
        raise ValueError("polydnn: unknown algorithm %r; 'auto' or one of %s" % (algorithm, conv_algorithms()))
    p.algorithm = algo
    dx, dw = x._desc(), w._desc()
    if padding == "same":
        _check(_conv_same(ctypes.byref(p), dx.dims[2], dx.dims[3], dw.dims[2], dw.dims[3]))
    elif padding == "valid":
        pass
    elif isinstance(padding, (tuple, list)) and len(padding) == 4:
        p.pad_top, p.pad_bottom, p.pad_left, p.pad_right = (int(v) for v in padding)
    else:
        ph, pw = _pair(padding, "padding")
        p.pad_top = p.pad_bottom = ph
        p.pad_left = p.pad_right = pw
    od = (_c_int64 * 4)()
    _check(_conv_dims(ctypes.byref(dx), ctypes.byref(dw), ctypes.byref(p), od))
    y = empty(tuple(od), out_layout or x.layout, device=x.device, context=x._ctx)
    _check(_conv_forward(ctypes.byref(p), x._handle(), w._handle(),
                         bias._handle() if bias is not None else None, y._handle()))
    return y


def _pool(x, mode, kernel_size, stride, padding, ceil_mode, out_layout):
    p = _PoolParams()
    _pool_init(ctypes.byref(p))
    p.mode = mode
    p.window_h, p.window_w = _pair(kernel_size, "kernel_size")
    p.stride_h, p.stride_w = _pair(stride if stride is not None else kernel_size, "stride")
    ph, pw = _pair(padding, "padding")
    p.pad_top = p.pad_bottom = ph
    p.pad_left = p.pad_right = pw
    p.ceil_mode = int(bool(ceil_mode))
    dx = x._desc()
    od = (_c_int64 * 4)()
    _check(_pool_dims(ctypes.byref(dx), ctypes.byref(p), od))
    y = empty(tuple(od), out_layout or x.layout, device=x.device, context=x._ctx)
    _check(_pool_forward(ctypes.byref(p), x._handle(), y._handle()))
    return y


def max_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, out_layout=None):
    """Like torch.nn.functional.max_pool2d (stride defaults to kernel_size)."""
    return _pool(x, 0, kernel_size, stride, padding, ceil_mode, out_layout)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               out_layout=None):
    """Like torch.nn.functional.avg_pool2d."""
    return _pool(x, 1 if count_include_pad else 2, kernel_size, stride, padding, ceil_mode, out_layout)
