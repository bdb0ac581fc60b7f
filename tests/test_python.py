"""The polydnn Python module against PyTorch: zero-copy DLPack both ways,
conv2d and pooling results on both layouts, the capsule protocol, and
tensors that outlive the framework that made them."""
import ctypes
import gc
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np

import torch
import torch.nn.functional as F
import torch.utils.dlpack

import polydnn

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype = ctypes.c_char_p
_name.argtypes = [ctypes.py_object]


def host_in_use(ctx=None):
    ctx = ctx or polydnn.default_context()
    return ctx.device("/cpu:0").memory_stats()["bytes_in_use"]


def run_python(code):
    """Runs code in a fresh interpreter (same library and module): for
    what may abort the process on a regression, and for interpreter exit."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=600)


def opencl_device():
    for d in polydnn.devices():
        if d.backend == "opencl":
            return d
    return None


def torch_input(shape, channels_last, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.rand(shape, generator=g) * 2 - 1
    return t.contiguous(memory_format=torch.channels_last) if channels_last else t


class Devices(unittest.TestCase):
    def test_listing(self):
        devs = polydnn.devices()
        self.assertGreaterEqual(len(devs), 1)
        self.assertEqual(devs[0].name, "/device:CPU:0")
        self.assertEqual(devs[0].backend, "host")
        self.assertEqual(devs[0].__dlpack_device__(), (1, 0))
        for d in devs[1:]:
            if d.backend == "opencl":
                self.assertEqual(d.__dlpack_device__()[0], 4)
        self.assertRegex(polydnn.version(), r"^\d+\.\d+\.\d+$")


class ZeroCopy(unittest.TestCase):
    def test_torch_tensor_enters_without_copy(self):
        t = torch_input((2, 3, 5, 5), False, 1)
        x = polydnn.from_dlpack(t)
        self.assertEqual(x.data_ptr(), t.data_ptr())
        self.assertEqual(x.shape, (2, 3, 5, 5))
        self.assertEqual(x.layout, "NCHW")
        t[0, 0, 0, 0] = 123.0  # seen through polydnn: the memory is shared
        self.assertEqual(x.to_bytes()[:4], torch.tensor([123.0]).numpy().tobytes())

    def test_channels_last_is_nhwc(self):
        t = torch_input((2, 3, 5, 5), True, 2)
        x = polydnn.from_dlpack(t)
        self.assertEqual(x.layout, "NHWC")
        self.assertEqual(x.shape, (2, 3, 5, 5))
        self.assertEqual(x.data_ptr(), t.data_ptr())

    def test_result_leaves_without_copy(self):
        x = polydnn.from_dlpack(torch_input((1, 2, 4, 4), False, 3))
        y = polydnn.max_pool2d(x, 2)
        yt = torch.from_dlpack(y)
        self.assertEqual(yt.data_ptr(), y.data_ptr())
        self.assertEqual(tuple(yt.shape), (1, 2, 2, 2))


class OpsMatchTorch(unittest.TestCase):
    CASES = [
        # shape, filter, stride, padding, dilation, groups
        ((2, 3, 9, 9), (4, 3, 3, 3), 1, 1, 1, 1),
        ((1, 5, 8, 7), (6, 5, 3, 3), 2, 1, 1, 1),
        ((3, 4, 10, 10), (4, 2, 3, 3), 1, 2, 2, 2),
        ((2, 6, 7, 7), (6, 1, 5, 5), 1, 2, 1, 6),  # depthwise
        ((17, 3, 6, 6), (5, 3, 1, 1), 1, 0, 1, 1),  # batch 17, 1x1
        ((1, 1, 1, 1), (2, 1, 1, 1), 1, 0, 1, 1),  # 1x1 image
    ]

    def test_conv2d_both_layouts(self):
        for cl in (False, True):
            for i, (xs, ws, s, p, d, g) in enumerate(self.CASES):
                with self.subTest(channels_last=cl, case=i):
                    t = torch_input(xs, cl, 10 + i)
                    w = torch_input(ws, False, 20 + i)
                    b = torch_input((ws[0],), False, 30 + i)
                    ref = F.conv2d(t, w, b, stride=s, padding=p, dilation=d, groups=g)
                    y = polydnn.conv2d(polydnn.from_dlpack(t), polydnn.from_dlpack(w, role="filter"),
                                       bias=polydnn.from_dlpack(b), stride=s, padding=p, dilation=d, groups=g)
                    if xs[1] > 1 and xs[2] * xs[3] > 1:  # else both layouts are the same memory
                        self.assertEqual(y.layout, "NHWC" if cl else "NCHW")
                    out = torch.from_dlpack(y)
                    self.assertEqual(out.data_ptr(), y.data_ptr())
                    if cl:
                        self.assertTrue(out.is_contiguous(memory_format=torch.channels_last))
                    self.assertEqual(out.shape, ref.shape)
                    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)

    def test_relu_and_same_padding(self):
        t = torch_input((2, 3, 7, 7), True, 5)
        w = torch_input((4, 3, 3, 3), False, 6)
        y = polydnn.conv2d(polydnn.from_dlpack(t), polydnn.from_dlpack(w, role="filter"), padding="same",
                           relu=True)
        torch.testing.assert_close(torch.from_dlpack(y), F.relu(F.conv2d(t, w, padding=1)), rtol=1e-4,
                                   atol=1e-5)

    def test_pooling_both_layouts(self):
        for cl in (False, True):
            for ks, st, pad, ceil in ((2, 2, 0, False), (3, 2, 1, True), (3, 1, 1, False), (2, 3, 1, True)):
                with self.subTest(channels_last=cl, k=ks, s=st, p=pad, ceil=ceil):
                    t = torch_input((17, 3, 9, 8), cl, ks * 7 + st)
                    x = polydnn.from_dlpack(t)
                    m = torch.from_dlpack(polydnn.max_pool2d(x, ks, st, pad, ceil_mode=ceil))
                    torch.testing.assert_close(m, F.max_pool2d(t, ks, st, pad, ceil_mode=ceil))
                    for inc in (True, False):
                        a = torch.from_dlpack(polydnn.avg_pool2d(x, ks, st, pad, ceil_mode=ceil,
                                                                 count_include_pad=inc))
                        ref = F.avg_pool2d(t, ks, st, pad, ceil_mode=ceil, count_include_pad=inc)
                        torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-6)

    def test_accelerator_round_trip(self):
        gpus = [d for d in polydnn.devices() if d.backend != "host"]
        if not gpus:
            self.skipTest("no accelerator device")
        for cl in (False, True):
            t = torch_input((2, 3, 12, 12), cl, 40)
            w = torch_input((8, 3, 3, 3), False, 41)
            x = polydnn.from_dlpack(t).to(gpus[0])
            self.assertEqual(x.__dlpack_device__(), gpus[0].__dlpack_device__())
            y = polydnn.max_pool2d(polydnn.conv2d(x, polydnn.from_dlpack(w, role="filter").to(gpus[0]),
                                                  padding=1), 2)
            out = torch.from_dlpack(y.to("/cpu:0"))
            torch.testing.assert_close(out, F.max_pool2d(F.conv2d(t, w, padding=1), 2), rtol=1e-4, atol=1e-4)


class Capsules(unittest.TestCase):
    def test_consumed_capsule_is_renamed_and_not_reused(self):
        t = torch_input((1, 1, 2, 2), False, 7)
        cap = torch.utils.dlpack.to_dlpack(t)
        self.assertEqual(_name(cap), b"dltensor")
        x = polydnn.from_dlpack(cap)
        self.assertEqual(_name(cap), b"used_dltensor")
        with self.assertRaisesRegex(ValueError, "consumed"):
            polydnn.from_dlpack(cap)
        del cap
        gc.collect()
        self.assertEqual(x.data_ptr(), t.data_ptr())  # the capsule's death did not free it

    def test_exported_capsule_freed_once_whether_consumed_or_not(self):
        base = host_in_use()
        y = polydnn.empty((1, 2, 3, 3), device="/cpu:0")
        unused = y.__dlpack__()
        self.assertEqual(_name(unused), b"dltensor")
        used = y.__dlpack__()
        yt = torch.utils.dlpack.from_dlpack(used)
        self.assertEqual(_name(used), b"used_dltensor")
        y.release()
        self.assertGreater(host_in_use(), base)  # both exports still hold it
        del unused  # never consumed: its destructor calls the deleter
        gc.collect()
        self.assertGreater(host_in_use(), base)  # PyTorch still holds it
        del used
        gc.collect()
        self.assertGreater(host_in_use(), base)
        del yt
        gc.collect()
        self.assertEqual(host_in_use(), base, "every export returned the memory exactly once")

    def test_versioned_capsule(self):
        x = polydnn.from_dlpack(torch_input((1, 3, 4, 4), True, 8))
        cap = x.__dlpack__(max_version=(1, 1))
        self.assertEqual(_name(cap), b"dltensor_versioned")
        x2 = polydnn.from_dlpack(cap)
        self.assertEqual(_name(cap), b"used_dltensor_versioned")
        self.assertEqual(x2.data_ptr(), x.data_ptr())
        self.assertEqual(x2.layout, "NHWC")
        # a legacy consumer asking with no max_version gets 'dltensor'
        self.assertEqual(_name(x.__dlpack__()), b"dltensor")
        with self.assertRaises(BufferError):
            x.__dlpack__(copy=True)


class Options(unittest.TestCase):
    def test_growth_policies(self):
        for policy in ("gradual", "double"):
            ctx = polydnn.Context(growth_policy=policy)
            t = torch_input((1, 3, 5, 5), False, 12)
            w = torch_input((2, 3, 3, 3), False, 13)
            y = polydnn.conv2d(polydnn.from_dlpack(t, context=ctx), polydnn.from_dlpack(w, "filter", context=ctx))
            torch.testing.assert_close(torch.from_dlpack(y), F.conv2d(t, w), rtol=1e-4, atol=1e-5)
            del y, ctx
            gc.collect()
        with self.assertRaises(ValueError):
            polydnn.Context(growth_policy="triple")

    def test_tensor_float_32_option_and_its_environment_override(self):
        var = "POLYDNN_ENABLE_TENSOR_FLOAT_32_EXECUTION"
        saved = os.environ.pop(var, None)  # make check sets it false
        try:
            self.assertTrue(polydnn.Context().tensor_float_32_enabled)  # TensorFlow's default
            self.assertFalse(polydnn.Context(enable_tensor_float_32_execution=False).tensor_float_32_enabled)
            os.environ[var] = "false"
            self.assertFalse(polydnn.Context(enable_tensor_float_32_execution=True).tensor_float_32_enabled)
            os.environ[var] = "maybe"
            with self.assertRaisesRegex(polydnn.Error, var):
                polydnn.Context()
        finally:
            os.environ.pop(var, None)
            if saved is not None:
                os.environ[var] = saved


class Lifetimes(unittest.TestCase):
    def test_torch_keeps_result_after_polydnn_is_gone(self):
        ctx = polydnn.Context()
        t = torch_input((2, 3, 6, 6), False, 9)
        w = torch_input((4, 3, 3, 3), False, 10)
        y = polydnn.conv2d(polydnn.from_dlpack(t, context=ctx), polydnn.from_dlpack(w, "filter", context=ctx))
        out = torch.from_dlpack(y)
        expect = out.clone()
        del y, ctx  # tensor and context released while PyTorch holds the data
        gc.collect()
        torch.testing.assert_close(out, expect, rtol=0, atol=0)
        torch.testing.assert_close(out, F.conv2d(t, w), rtol=1e-4, atol=1e-5)
        del out
        gc.collect()

    def test_polydnn_keeps_input_after_torch_is_gone(self):
        t = torch_input((1, 2, 3, 3), False, 11)
        expect = t.clone()
        x = polydnn.from_dlpack(t)
        del t
        gc.collect()
        got = torch.frombuffer(bytearray(x.to_bytes()), dtype=torch.float32).reshape(1, 2, 3, 3)
        torch.testing.assert_close(got, expect, rtol=0, atol=0)


    def assert_clean_run(self, r):
        self.assertEqual(r.returncode, 0, "stdout:\n%s\nstderr:\n%s" % (r.stdout, r.stderr))
        self.assertEqual(r.stdout.split(), ["ok"], r.stdout)
        # No finalizer failed, nothing warned about live objects.
        self.assertNotIn("Exception ignored", r.stderr)
        self.assertNotIn("polydnn:", r.stderr)

    def test_context_finalized_before_its_tensors(self):
        # The repro (the collector finalizes the cycle in its own
        # order), then the context's finalizer first on purpose, on every
        # device: the tensors keep the library's context alive.
        self.assert_clean_run(run_python("""
            import gc, polydnn
            c = polydnn.Context(); t = polydnn.empty((1,1,4,4), device="/cpu:0", context=c); l = [c, t]
            l.append(l); del c, t, l; gc.collect()
            c = polydnn.Context()
            ts = [polydnn.empty((1, 2, 4, 4), device=d, context=c) for d in c.devices()]
            exports = [t.__dlpack__(max_version=(1, 0)) for t in ts]
            c.__del__()  # what the collector may do first
            data = bytes(range(128))
            for t in ts:
                t.write_bytes(data)
                assert t.to_bytes() == data, t
                assert t.device.memory_stats()["bytes_in_use"] > 0
            y = polydnn.max_pool2d(ts[-1], 2)  # ops still run on the devices
            assert y.shape == (1, 2, 2, 2)
            d = ts[0].device
            del ts, y
            gc.collect()
            assert d.memory_stats()["bytes_in_use"] > 0  # the exports hold it
            del exports
            gc.collect()
            print("ok")
            """))

    def test_interpreter_exit_in_any_order(self):
        # Left for interpreter exit: a cycle with a context and its tensors,
        # unconsumed capsules, an export PyTorch consumed and holds, tensors
        # of the default context. Exit clears module globals in definition
        # order: once with the context's name first, once last.
        code = """
            import polydnn, torch
            def build():
                c = polydnn.Context()
                t_host = polydnn.empty((1, 2, 4, 4), device="/cpu:0", context=c)
                t_dev = polydnn.empty((1, 2, 4, 4), device=c.devices()[-1], context=c)
                cycle = [c, t_host, t_dev]
                cycle.append(cycle)
                caps = [t_dev.__dlpack__(max_version=(1, 0)), t_host.__dlpack__()]
                held = torch.from_dlpack(t_host)
                d = polydnn.empty((2, 2, 2, 2), device="/cpu:0")
                return [("c", c), ("t_host", t_host), ("t_dev", t_dev), ("cycle", cycle), ("caps", caps),
                        ("held", held), ("d", d)]
            objs = build()
            for name, obj in (objs if %s else objs[::-1]):
                globals()[name] = obj
            del objs, name, obj
            print("ok")
            """
        for first in (True, False):
            with self.subTest(context_first=first):
                self.assert_clean_run(run_python(code % first))


class DLPackEdges(unittest.TestCase):
    def test_torch_from_dlpack_of_an_opencl_tensor_does_not_abort(self):
        if opencl_device() is None:
            self.skipTest("no OpenCL device")
        r = run_python("""
            import gc, polydnn, torch.utils.dlpack
            gpu = polydnn.default_context().device("/gpu:0")
            t = polydnn.empty((1, 1, 4, 4), device="/gpu:0")
            base = gpu.memory_stats()["bytes_in_use"]
            try:
                torch.utils.dlpack.from_dlpack(t)  # a legacy request: refused before anything is exported
                raise SystemExit("accepted")
            except BufferError as e:
                assert "OpenCL memory" in str(e) and "to('/cpu:0')" in str(e), e
            # Asked for explicitly, the capsule reaches PyTorch 1.13, which
            # calls the deleter as it fails and leaves the capsule's name.
            cap = t.__dlpack__(dl_device=t.__dlpack_device__())
            try:
                torch.utils.dlpack.from_dlpack(cap)
            except RuntimeError:
                pass
            del cap
            gc.collect()
            assert gpu.memory_stats()["bytes_in_use"] == base
            t.release()
            assert gpu.memory_stats()["bytes_in_use"] == 0, gpu.memory_stats()
            print("ok")
            """)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split(), ["ok"], r.stdout + r.stderr)

    def test_a_deleter_called_by_a_failing_consumer_runs_once(self):
        # PyTorch 1.13's failure path, on the host, by hand: the consumer
        # calls the deleter and does not rename the capsule; the capsule's
        # destructor must not call it again (a double free aborted here).
        r = run_python("""
            import ctypes, gc, polydnn
            host = polydnn.default_context().device("/cpu:0")
            for versioned in (False, True):
                t = polydnn.empty((1, 1, 4, 4), device="/cpu:0")
                cap = t.__dlpack__(max_version=(1, 0) if versioned else None)
                name = b"dltensor_versioned" if versioned else b"dltensor"
                get = ctypes.pythonapi.PyCapsule_GetPointer
                get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
                m = (polydnn._DLManagedTensorVersioned if versioned else polydnn._DLManagedTensor).from_address(
                    get(cap, name))
                m.deleter(ctypes.addressof(m))
                t.release()
                assert host.memory_stats()["bytes_in_use"] == 0  # the deleter gave the memory back
                del m, cap
                gc.collect()
            print("ok")
            """)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.split(), ["ok"], r.stdout + r.stderr)

    def test_numpy_from_dlpack_of_an_opencl_tensor_raises_buffer_error_and_leaks_nothing(self):
        dev = opencl_device()
        if dev is None:
            self.skipTest("no OpenCL device")
        t = polydnn.empty((1, 1, 4, 4), device=dev)
        base = dev.memory_stats()["bytes_in_use"]
        with self.assertRaisesRegex(BufferError, r"OpenCL memory \(kDLOpenCL\), which legacy DLPack consumers such "
                                                 r"as NumPy and PyTorch cannot read"):
            np.from_dlpack(t)

        # A capsule NumPy is given anyway: it refuses it and drops it with its
        # error pending, which the capsule's destructor must leave alone.
        class Explicit:
            def __dlpack__(self, stream=None):
                return t.__dlpack__(dl_device=t.__dlpack_device__())

            def __dlpack_device__(self):
                return t.__dlpack_device__()
        with self.assertRaisesRegex(RuntimeError, "Unsupported device in DLTensor"):
            np.from_dlpack(Explicit())
        gc.collect()
        self.assertEqual(dev.memory_stats()["bytes_in_use"], base, "no export leaked")
        t.release()
        self.assertEqual(dev.memory_stats()["bytes_in_use"], 0, "the tensor's memory came back")
        # Our own consumer asks for the versioned protocol and takes it.
        t = polydnn.empty((1, 1, 4, 4), device=dev)
        t2 = polydnn.from_dlpack(t)
        self.assertEqual(t2.data_ptr(), t.data_ptr())
        del t, t2
        gc.collect()
        self.assertEqual(dev.memory_stats()["bytes_in_use"], 0)

    def test_numpy_consumes_a_host_capsule_once(self):
        base = host_in_use()
        t = polydnn.empty((1, 2, 3, 3), device="/cpu:0")
        t.write_bytes(bytes(range(72)))
        a = np.from_dlpack(t)  # consumed: NumPy holds the export
        self.assertEqual(a.ctypes.data, t.data_ptr())
        t.release()
        gc.collect()
        self.assertGreater(host_in_use(), base)
        self.assertEqual(a.tobytes(), bytes(range(72)))
        del a
        gc.collect()
        self.assertEqual(host_in_use(), base, "NumPy called the deleter once; the capsule did not again")


class BadInput(unittest.TestCase):
    def test_refusals(self):
        with self.assertRaisesRegex(polydnn.Error, r"strides \[1,4,12\] of shape \[4,3,2\] are not compact"):
            polydnn.from_dlpack(torch.zeros(2, 3, 4).permute(2, 1, 0))
        with self.assertRaisesRegex(polydnn.Error, "code 0, bits 16"):  # int32 is taken (labels)
            polydnn.from_dlpack(torch.zeros(1, 1, 2, 2, dtype=torch.int16))
        with self.assertRaisesRegex(polydnn.Error, "describe none of NCHW, NHWC"):
            polydnn.from_dlpack(torch.zeros(1, 2, 3, 4).transpose(2, 3))
        with self.assertRaisesRegex(polydnn.Error, "zero-size"):
            polydnn.from_dlpack(torch.zeros(1, 0, 2, 2))
        with self.assertRaisesRegex(ValueError, "__dlpack__"):
            polydnn.from_dlpack(object())
        with self.assertRaisesRegex(ValueError, "role"):
            polydnn.from_dlpack(torch.zeros(1, 1, 1, 1), role="bias")
        with self.assertRaisesRegex(polydnn.Error, "not found|NOT_FOUND"):
            polydnn.empty((1, 1, 1, 1), device="/gpu:99")
        # a refused tensor stays usable by its owner
        t = torch.zeros(2, 3, 4)
        try:
            polydnn.from_dlpack(t)
        except polydnn.Error:
            pass
        t += 1
        self.assertEqual(float(t.sum()), 24.0)


class StructLayouts(unittest.TestCase):
    def test_every_mirror_matches_the_library(self):
        # The import already checked them; this says which were checked.
        names = {c_name for _, c_name in polydnn._MIRRORS}
        self.assertGreaterEqual(len(polydnn._MIRRORS), 13)
        self.assertLessEqual({"pdnn_tensor_desc", "pdnn_conv2d_params", "DLManagedTensorVersioned",
                              "pdnn_session_config"}, names)
        for cls, c_name in polydnn._MIRRORS:
            with self.subTest(struct=c_name):
                polydnn._check_struct_layout(cls, c_name)

    def test_wrong_mirrors_are_refused(self):
        # dims as int32, no rank: the struct is 8 + 16 bytes, not 8 + 64 + 4 (+ 4 of padding)
        class ShortDims(ctypes.Structure):
            _fields_ = [("dtype", ctypes.c_int), ("layout", ctypes.c_int), ("dims", ctypes.c_int32 * 4)]
        with self.assertRaisesRegex(ImportError, r"struct pdnn_tensor_desc is 80 bytes in .* but 24 in "
                                                 r"the module's ctypes mirror ShortDims"):
            polydnn._check_struct_layout(ShortDims, "pdnn_tensor_desc")

        # the same size, two fields swapped: only the offsets tell
        fields = [n for n, _ in polydnn._PoolParams._fields_]
        fields[0], fields[1] = fields[1], fields[0]

        class Swapped(ctypes.Structure):
            _fields_ = [(n, ctypes.c_int) for n in fields]
        self.assertEqual(ctypes.sizeof(Swapped), ctypes.sizeof(polydnn._PoolParams))
        with self.assertRaisesRegex(ImportError, r"pdnn_pool2d_params\.window_h is at offset 4 \(4 bytes\) "
                                                 r"in .* but at offset 0 \(4 bytes\) in the module's ctypes "
                                                 r"mirror Swapped"):
            polydnn._check_struct_layout(Swapped, "pdnn_pool2d_params")

        # a field the library's struct does not have
        class Extra(ctypes.Structure):
            _fields_ = [("major", ctypes.c_uint32), ("patch", ctypes.c_uint32)]
        with self.assertRaisesRegex(ImportError, r"mirrors DLPackVersion\.patch, which .* does not know .*"
                                                 r"no member 'patch'"):
            polydnn._check_struct_layout(Extra, "DLPackVersion")
        with self.assertRaisesRegex(ImportError, r"mirrors pdnn_no_such_struct, which"):
            polydnn._check_struct_layout(Extra, "pdnn_no_such_struct")

    def test_import_refuses_a_wrong_mirror(self):
        # The whole module, one mirror edited as a stale copy would be.
        import os
        import subprocess
        import tempfile
        with open(polydnn.__file__) as f:
            src = f.read()
        stale = src.replace('("dims", _c_int64 * 8)', '("dims", _c_int64 * 7)')
        self.assertNotEqual(stale, src)
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "polydnn"))
            with open(os.path.join(d, "polydnn", "__init__.py"), "w") as f:
                f.write(stale)
            r = subprocess.run([sys.executable, "-c", "import polydnn"], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=d))
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"ImportError: polydnn: struct pdnn_tensor_desc is 80 bytes in .* but 72 in "
                                   r"the module's ctypes mirror _Desc")


class Algorithms(unittest.TestCase):
    def test_names_come_from_the_library(self):
        names = polydnn.conv_algorithms()
        self.assertEqual(names[0], "direct")
        self.assertIn("implicit_gemm", names)  # the name Python's own list lacked
        self.assertNotIn("auto", names)
        self.assertNotIn("unknown", names)
        self.assertEqual(len(names), len(set(names)))
        # With pdnn_conv_algo_count (newer libraries) and without it (ids
        # asked until "unknown"), the same list.
        saved = polydnn._algo_count
        try:
            polydnn._algo_count = None
            self.assertEqual(polydnn.conv_algorithms(), names)
            polydnn._algo_count = lambda: len(names) + 1  # AUTO counts
            self.assertEqual(polydnn.conv_algorithms(), names)
        finally:
            polydnn._algo_count = saved

    def test_every_algorithm_is_accepted(self):
        # Each name reaches the library: it runs and matches PyTorch, or the
        # library refuses it for this device or shape (polydnn.Error), never
        # a ValueError from Python. direct runs everywhere.
        t = torch_input((1, 4, 9, 9), False, 50)
        w = torch_input((8, 4, 3, 3), False, 51)
        ref = F.conv2d(t, w, padding=1)
        ran = {}
        for dev in polydnn.devices():
            x = polydnn.from_dlpack(t).to(dev)
            pw = polydnn.from_dlpack(w, role="filter").to(dev)
            for name in ["auto", "AUTO"] + polydnn.conv_algorithms():
                with self.subTest(device=dev.name, algorithm=name):
                    try:
                        y = polydnn.conv2d(x, pw, padding=1, algorithm=name)
                    except polydnn.Error as e:
                        self.assertEqual(e.status, "PDNN_ERR_UNSUPPORTED")
                        continue
                    torch.testing.assert_close(torch.from_dlpack(y.to("/cpu:0")), ref, rtol=1e-4, atol=1e-4)
                    ran.setdefault(dev.backend, set()).add(name)
        self.assertIn("direct", ran["host"])
        if "opencl" in ran:
            self.assertIn("implicit_gemm", ran["opencl"])

    def test_unknown_name_lists_the_library_s(self):
        x = polydnn.from_dlpack(torch.zeros(1, 1, 3, 3))
        w = polydnn.from_dlpack(torch.zeros(1, 1, 3, 3), role="filter")
        with self.assertRaisesRegex(ValueError, r"unknown algorithm 'fastest'; 'auto' or one of .*'implicit_gemm'"):
            polydnn.conv2d(x, w, algorithm="fastest")


def accelerators():
    return [d for d in polydnn.devices() if d.backend != "host"]


def every_device():
    return polydnn.devices()


class IntegerArguments(unittest.TestCase):
    """Integers are checked against their C type before ctypes, which would
    store them modulo 2**bits (stride 2**32 + 1 ran as stride 1)."""

    def setUp(self):
        self.x = polydnn.from_dlpack(torch_input((1, 2, 9, 9), False, 60))
        self.w = polydnn.from_dlpack(torch_input((3, 2, 3, 3), False, 61), role="filter")

    def test_out_of_range_is_a_value_error_naming_the_argument(self):
        cases = [
            (lambda: polydnn.conv2d(self.x, self.w, stride=2 ** 32 + 1), r"stride is 4294967297"),
            (lambda: polydnn.conv2d(self.x, self.w, stride=(1, 2 ** 32 + 1)), r"stride\[1\] is 4294967297"),
            (lambda: polydnn.conv2d(self.x, self.w, padding=2 ** 32), r"padding is 4294967296"),
            (lambda: polydnn.conv2d(self.x, self.w, padding=(0, 0, 0, -2 ** 31 - 1)), r"padding\[3\]"),
            (lambda: polydnn.conv2d(self.x, self.w, dilation=2 ** 31), r"dilation is 2147483648"),
            (lambda: polydnn.conv2d(self.x, self.w, groups=2 ** 32 + 1), r"groups is 4294967297"),
            (lambda: polydnn.max_pool2d(self.x, 2 ** 32 + 2), r"kernel_size is 4294967298"),
            (lambda: polydnn.avg_pool2d(self.x, 2, stride=2 ** 32 + 1), r"stride is 4294967297"),
            (lambda: polydnn.max_pool2d(self.x, 2, padding=((0, 2 ** 32), (0, 0))), r"padding\[0\]\[1\]"),
            (lambda: polydnn.empty((2 ** 64 + 1, 1, 1, 1)), r"shape\[0\] is 18446744073709551617"),
            (lambda: polydnn.empty((1, 2 ** 63)), r"shape\[1\]"),
            (lambda: polydnn.empty((1,) * 9), r"shape has 9 dims"),
            (lambda: polydnn.reshape(self.x, (2 ** 63, 1)), r"shape\[0\]"),
            (lambda: polydnn.Context(memory_limit=-1), r"memory_limit is -1; it cannot be negative"),
            (lambda: polydnn.Context(memory_limit=2 ** 64), r"memory_limit is 18446744073709551616"),
            (lambda: polydnn.Graph().placeholder((1, 2 ** 64, 1, 1)), r"shape\[1\]"),
        ]
        for i, (call, msg) in enumerate(cases):
            with self.subTest(case=i, msg=msg):
                with self.assertRaisesRegex(ValueError, msg):
                    call()

    def test_non_integers_are_type_errors(self):
        cases = [
            (lambda: polydnn.conv2d(self.x, self.w, stride=2.0), "stride"),
            (lambda: polydnn.conv2d(self.x, self.w, stride=(1, 1.5)), r"stride\[1\]"),
            (lambda: polydnn.conv2d(self.x, self.w, stride=True), "stride must be an integer, not bool"),
            (lambda: polydnn.conv2d(self.x, self.w, padding=1.0), "padding"),
            (lambda: polydnn.conv2d(self.x, self.w, groups="1"), "groups"),
            (lambda: polydnn.max_pool2d(self.x, 2.0), "kernel_size"),
            (lambda: polydnn.empty((1, 2.0, 1, 1)), r"shape\[1\]"),
            (lambda: polydnn.Context(memory_limit=1.5), "memory_limit"),
            (lambda: polydnn.Context(memory_fraction="0.5"), "memory_fraction"),
        ]
        for i, (call, msg) in enumerate(cases):
            with self.subTest(case=i, msg=msg):
                with self.assertRaisesRegex(TypeError, msg):
                    call()

    def test_integer_types_that_are_not_int_are_taken(self):
        # numpy integers have __index__, as PyTorch takes them
        import numpy as np
        t = torch_input((1, 2, 9, 9), False, 60)
        w = torch_input((3, 2, 3, 3), False, 61)
        y = polydnn.conv2d(self.x, self.w, stride=np.int64(2), padding=(np.int32(1), 1))
        torch.testing.assert_close(torch.from_dlpack(y), F.conv2d(t, w, stride=2, padding=1), rtol=1e-4, atol=1e-5)
        self.assertEqual(polydnn.empty((np.int64(2), 3)).shape, (2, 3))


def to_matrix(t):
    """A (rows, cols) or (rows, cols, 1, 1) polydnn result as a 2-D torch tensor."""
    return torch.from_dlpack(t.to("/cpu:0")).reshape(t.shape[0], t.shape[1])


class NewOpsMatchTorch(unittest.TestCase):
    def test_matmul_with_transposes_on_every_device(self):
        for dev in every_device():
            for ta in (False, True):
                for tb in (False, True):
                    with self.subTest(device=dev.name, transpose_a=ta, transpose_b=tb):
                        a = torch_input((5, 7) if ta else (7, 5), False, 70)
                        b = torch_input((3, 5) if tb else (5, 3), False, 71)
                        pa = polydnn.from_dlpack(a.reshape(*a.shape, 1, 1)).to(dev)
                        c = polydnn.matmul(pa, b, transpose_a=ta, transpose_b=tb)  # b: a 2-D array
                        self.assertEqual(c.device, dev)
                        self.assertEqual(c.shape, (7, 3))  # b is 2-D: numpy's matmul, 2-D
                        ref = (a.T if ta else a) @ (b.T if tb else b)
                        torch.testing.assert_close(to_matrix(c), ref, rtol=1e-4, atol=1e-5)

    def test_elementwise_ops_on_both_layouts(self):
        for dev in every_device():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    a = torch_input((2, 3, 4, 5), cl, 72)
                    b = torch_input((2, 3, 4, 5), cl, 73)
                    bias = torch_input((3,), False, 74)
                    a[0, 0, 0, 0] = float("nan")
                    pa, pb = polydnn.from_dlpack(a).to(dev), polydnn.from_dlpack(b).to(dev)
                    for got, ref in ((polydnn.add(pa, pb), a + b),
                                     (polydnn.add_n([pa, pb, pa]), a + b + a),
                                     (polydnn.bias_add(pa, bias), a + bias.view(1, -1, 1, 1)),
                                     (polydnn.relu(pa), F.relu(a)),
                                     (polydnn.softmax(pb), torch.softmax(b, dim=1))):
                        self.assertEqual(got.layout, "NHWC" if cl else "NCHW")
                        self.assertEqual(got.device, dev)
                        torch.testing.assert_close(torch.from_dlpack(got.to("/cpu:0")), ref, rtol=1e-5, atol=1e-6,
                                                   equal_nan=True)
                    self.assertTrue(torch.isnan(torch.from_dlpack(polydnn.relu(pa).to("/cpu:0"))[0, 0, 0, 0]))

    def test_activations_concat_and_transform_on_every_device(self):
        for dev in every_device():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    a = torch_input((2, 3, 4, 5), cl, 77) * 8
                    b = torch_input((2, 5, 4, 5), cl, 78)
                    a[0, 0, 0, 0] = float("nan")
                    pa, pb = polydnn.from_dlpack(a).to(dev), polydnn.from_dlpack(b).to(dev)
                    try:
                        acts = [(polydnn.clip(pa, 0, 6), torch.clamp(a, 0, 6)),
                                (polydnn.clip(pa, max=0.5), torch.clamp(a, max=0.5)),
                                (polydnn.clip(pa, -1.5, 2), torch.clamp(a, -1.5, 2)),
                                (polydnn.sigmoid(pa), torch.sigmoid(a)),
                                (polydnn.leaky_relu(pa, 0.2), F.leaky_relu(a, 0.2)),
                                (polydnn.leaky_relu(pa, 1.5), F.leaky_relu(a, 1.5))]
                    except polydnn.Error as e:
                        self.fail(str(e))
                    for got, ref in acts + [(polydnn.concat([pa, pb, pa], axis=1), torch.cat([a, b, a], 1)),
                                            (polydnn.concat([pb, pb], axis=-1), torch.cat([b, b], 3))]:
                        self.assertEqual(got.layout, "NHWC" if cl else "NCHW")
                        torch.testing.assert_close(torch.from_dlpack(got.to("/cpu:0")), ref, rtol=1e-6, atol=1e-6,
                                                   equal_nan=True)
                    t = polydnn.transform(pb, "NCHW" if cl else "NHWC")
                    self.assertEqual(t.layout, "NCHW" if cl else "NHWC")
                    torch.testing.assert_close(torch.from_dlpack(t.to("/cpu:0")), b, rtol=0, atol=0)
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.clip(torch.ones(1, 2, 3, 3), 1, 0)
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.concat([torch.ones(1, 2, 3, 3), torch.ones(1, 2, 4, 3)], axis=1)
        with self.assertRaisesRegex(ValueError, "at least one"):
            polydnn.concat([])
        with self.assertRaisesRegex(ValueError, "unknown layout"):
            polydnn.transform(torch.ones(1, 2, 3, 3), "NCWH")

    def test_softmax_of_a_matrix_is_over_its_columns(self):
        m = torch_input((4, 10), False, 75) * 5
        torch.testing.assert_close(to_matrix(polydnn.softmax(m)), torch.softmax(m, dim=1), rtol=1e-5, atol=1e-6)

    def test_nd_math_matches_torch(self):
        """transpose, softmax/log_softmax on an axis, layer_norm, the
        reductions (keepdims) and the unary math on rank-4 NCHW tensors
        (any rank is the N-d tensors' work), on every device."""
        t = torch_input((2, 3, 4, 5), False, 81) * 3
        w, b = torch_input((5,), False, 82), torch_input((5,), False, 83)
        for dev in every_device():
            x = polydnn.from_dlpack(t).to(dev)

            def back(y):
                return torch.from_dlpack(y.to("/cpu:0"))
            with self.subTest(device=dev):
                tr = polydnn.transpose(x, (0, 2, 3, 1))
                self.assertEqual(tr.shape, (2, 4, 5, 3))
                torch.testing.assert_close(back(tr), t.permute(0, 2, 3, 1).contiguous(), rtol=0, atol=0)
                torch.testing.assert_close(back(polydnn.transpose(x)), t.permute(3, 2, 1, 0).contiguous(),
                                           rtol=0, atol=0)
                for axis in (1, -1, 2):
                    torch.testing.assert_close(back(polydnn.softmax(x, axis=axis)), torch.softmax(t, axis),
                                               rtol=1e-5, atol=1e-6)
                    torch.testing.assert_close(back(polydnn.log_softmax(x, axis)), torch.log_softmax(t, axis),
                                               rtol=1e-5, atol=1e-5)
                torch.testing.assert_close(back(polydnn.layer_norm(x, w, b)), F.layer_norm(t, (5,), w, b),
                                           rtol=1e-5, atol=1e-5)
                for name, ref in (("reduce_sum", torch.sum), ("reduce_mean", torch.mean),
                                  ("reduce_max", torch.amax), ("reduce_min", torch.amin)):
                    got = getattr(polydnn, name)(x, (1, 3))
                    self.assertEqual(got.shape, (2, 1, 4, 1))
                    torch.testing.assert_close(back(got), ref(t, (1, 3), keepdim=True), rtol=1e-5, atol=1e-5)
                a = t.abs() + 0.1
                pa = polydnn.from_dlpack(a).to(dev)
                for got, ref in ((polydnn.erf(x), torch.erf(t)), (polydnn.gelu(x), F.gelu(t)),
                                 (polydnn.gelu(x, "tanh"), F.gelu(t, approximate="tanh")),
                                 (polydnn.tanh(x), torch.tanh(t)), (polydnn.sqrt(pa), torch.sqrt(a)),
                                 (polydnn.neg(x), -t), (polydnn.exp(x), torch.exp(t)), (polydnn.log(pa), torch.log(a)),
                                 (polydnn.reciprocal(pa), 1 / a), (polydnn.abs(x), t.abs()),
                                 (polydnn.pow(x, 3), t ** 3)):
                    torch.testing.assert_close(back(got), ref, rtol=1e-5, atol=1e-5)
        with self.assertRaisesRegex(polydnn.Error, "perm must hold each"):
            polydnn.transpose(t, (0, 0, 1, 2))
        with self.assertRaisesRegex(ValueError, "approximate"):
            polydnn.gelu(t, "fast")

    def test_reshape_and_flatten(self):
        t = torch_input((2, 3, 4, 5), False, 76)
        x = polydnn.from_dlpack(t)
        y = polydnn.reshape(x, (6, 20))
        self.assertEqual(y.shape, (6, 20))
        torch.testing.assert_close(torch.from_dlpack(y).reshape(6, 20), t.reshape(6, 20), rtol=0, atol=0)
        f = polydnn.flatten(x)
        self.assertEqual(f.shape, (2, 60))
        torch.testing.assert_close(to_matrix(f), torch.flatten(t, 1), rtol=0, atol=0)
        # NHWC keeps its memory order: H, W, C (TensorFlow's flatten)
        tc = t.contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(to_matrix(polydnn.flatten(polydnn.from_dlpack(tc))),
                                   torch.flatten(t.permute(0, 2, 3, 1), 1), rtol=0, atol=0)
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.reshape(x, (7, 20))

    def test_bad_operands_are_refused(self):
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.matmul(torch.ones(2, 3), torch.ones(2, 3))
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            polydnn.add(torch.ones(2, 3), torch.ones(3, 2))
        with self.assertRaisesRegex(TypeError, "nested lists"):
            polydnn.relu("x")
        with self.assertRaisesRegex(ValueError, "at least one"):
            polydnn.add_n([])


def cuda_gap(dev, err):
    """CUDA has no fused cross-entropy and no Adam (docs/c-api.md): refused there."""
    return dev.backend == "cuda" and "UNSUPPORTED" in str(err)


class TrainingOpsMatchTorch(unittest.TestCase):
    def test_relu_backward_matches_autograd(self):
        for dev in every_device():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    x = torch_input((3, 4, 5, 6), cl, 80)
                    x[0, 0, 0, :3] = 0.0  # exactly 0: no gradient (as torch)
                    dy = torch_input((3, 4, 5, 6), cl, 81)
                    xg = x.clone().requires_grad_(True)
                    F.relu(xg).backward(dy)
                    y = polydnn.relu(polydnn.from_dlpack(x).to(dev))
                    dx = polydnn.relu_backward(y, polydnn.from_dlpack(dy).to(dev))
                    self.assertEqual(dx.layout, "NHWC" if cl else "NCHW")
                    torch.testing.assert_close(torch.from_dlpack(dx.to("/cpu:0")), xg.grad, rtol=0, atol=0)

    def test_softmax_cross_entropy_matches_autograd(self):
        for dev in every_device():
            for n, k, scale in ((1, 1, 1.0), (17, 10, 3.0), (5, 1000, 1.0), (17, 10, 1e4)):
                with self.subTest(device=dev.name, n=n, k=k, scale=scale):
                    logits = torch_input((n, k), False, 82 + k) * scale
                    labels = torch.randint(0, k, (n,), generator=torch.Generator().manual_seed(n + k))
                    lg = logits.clone().requires_grad_(True)
                    ref = F.cross_entropy(lg, labels)  # mean over the batch
                    ref.backward()
                    x = polydnn.from_dlpack(logits.reshape(n, k, 1, 1)).to(dev)
                    try:
                        loss, dlogits = polydnn.softmax_cross_entropy(x, labels)  # int64 labels: converted
                    except polydnn.Error as e:
                        if cuda_gap(dev, e):
                            continue
                        raise
                    self.assertEqual(loss.shape, (1,))
                    got = torch.from_dlpack(loss.to("/cpu:0"))[0]
                    torch.testing.assert_close(got, ref.detach(), rtol=1e-5, atol=1e-5 * scale)
                    torch.testing.assert_close(to_matrix(dlogits), lg.grad, rtol=1e-4, atol=1e-6)

    def test_int32_labels_round_trip_and_bad_labels(self):
        lab = polydnn.from_dlpack(torch.tensor([2, 0, 1], dtype=torch.int32))
        self.assertEqual(lab.dtype, "int32")
        self.assertEqual(lab.numpy().tolist(), [2, 0, 1])
        self.assertEqual(torch.from_dlpack(lab).dtype, torch.int32)
        self.assertEqual(polydnn.empty((3,), "X", dtype="int32").dtype, "int32")
        logits = torch_input((3, 4), False, 90)
        loss, _ = polydnn.softmax_cross_entropy(logits, lab)
        torch.testing.assert_close(torch.from_dlpack(loss)[0], F.cross_entropy(logits, torch.tensor([2, 0, 1])))
        for dev in every_device():
            with self.subTest(device=dev.name):
                try:
                    with self.assertRaisesRegex(polydnn.Error, r"labels\[1\] is 4"):
                        polydnn.softmax_cross_entropy(polydnn.from_dlpack(logits.reshape(3, 4, 1, 1)).to(dev),
                                                      [0, 4, -1])
                except polydnn.Error as e:
                    if not cuda_gap(dev, e):
                        raise
        with self.assertRaisesRegex(TypeError, "integers"):
            polydnn.softmax_cross_entropy(logits, [0.5, 1.0, 2.0])
        with self.assertRaisesRegex(ValueError, "dtype"):
            polydnn.empty((3,), "X", dtype="int8")

    def _compare_optimizer(self, dev, make_torch, make_polydnn, steps=5):
        w0 = torch_input((4, 3, 3, 3), False, 91)
        grads = [torch_input((4, 3, 3, 3), False, 92 + i) for i in range(steps)]
        p = torch.nn.Parameter(w0.clone())
        opt = make_torch([p])
        w = polydnn.from_dlpack(w0.clone()).to(dev)
        popt = make_polydnn([w])
        for g in grads:
            p.grad = g.clone()
            opt.step()
            popt.step([polydnn.from_dlpack(g).to(dev)])
        torch.testing.assert_close(torch.from_dlpack(w.to("/cpu:0")), p.detach(), rtol=1e-5, atol=1e-6)

    def test_sgd_matches_torch_optim(self):
        for dev in every_device():
            for mom, wd in ((0.0, 0.0), (0.9, 0.0), (0.9, 0.01), (0.0, 0.1)):
                with self.subTest(device=dev.name, momentum=mom, weight_decay=wd):
                    self._compare_optimizer(
                        dev, lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=mom, weight_decay=wd),
                        lambda ps: polydnn.SGD(ps, lr=0.05, momentum=mom, weight_decay=wd))

    def test_adam_matches_torch_optim(self):
        for dev in every_device():
            for lr, wd in ((0.001, 0.0), (0.01, 0.01)):
                with self.subTest(device=dev.name, lr=lr, weight_decay=wd):
                    try:
                        self._compare_optimizer(dev, lambda ps: torch.optim.Adam(ps, lr=lr, weight_decay=wd),
                                                lambda ps: polydnn.Adam(ps, lr=lr, weight_decay=wd))
                    except polydnn.Error as e:
                        if not cuda_gap(dev, e):
                            raise

    def test_optimizer_update_checks_its_arguments(self):
        w = polydnn.from_dlpack(torch.zeros(3))
        with self.assertRaisesRegex(polydnn.Error, "slot1 is NULL"):
            polydnn.optimizer_update(w, torch.ones(3), momentum=0.9)
        with self.assertRaisesRegex(ValueError, "'sgd', 'adam' or 'adamw'"):
            polydnn.optimizer_update(w, torch.ones(3), kind="rmsprop")
        with self.assertRaisesRegex(TypeError, "in place"):
            polydnn.optimizer_update(torch.zeros(3), torch.ones(3))
        polydnn.optimizer_update(w, torch.ones(3), lr=0.5)  # plain SGD: w -= 0.5 g
        self.assertEqual(w.numpy().tolist(), [-0.5, -0.5, -0.5])


class DataFormat(unittest.TestCase):
    def test_nhwc_arrays_are_read_as_nhwc(self):
        import numpy as np
        rng = np.random.default_rng(80)
        x = rng.standard_normal((2, 7, 6, 3), dtype=np.float32)   # N, H, W, C
        w = rng.standard_normal((3, 3, 3, 4), dtype=np.float32)   # H, W, I, O
        b = rng.standard_normal(4, dtype=np.float32)
        tx, tw = torch.from_numpy(x).permute(0, 3, 1, 2), torch.from_numpy(w).permute(3, 2, 0, 1)
        y = polydnn.conv2d(x, w, b, padding="same", data_format="NHWC")
        self.assertEqual(y.layout, "NHWC")
        self.assertEqual(y.shape, (2, 4, 7, 6))
        torch.testing.assert_close(torch.from_dlpack(y), F.conv2d(tx, tw, torch.from_numpy(b), padding=1),
                                   rtol=1e-4, atol=1e-4)
        m = polydnn.max_pool2d(x, 2, data_format="NHWC")
        self.assertEqual((m.layout, m.shape), ("NHWC", (2, 3, 3, 3)))
        torch.testing.assert_close(torch.from_dlpack(m), F.max_pool2d(tx, 2))
        a = polydnn.avg_pool2d(x, 3, 1, 1, data_format="nhwc")
        torch.testing.assert_close(torch.from_dlpack(a), F.avg_pool2d(tx, 3, 1, 1), rtol=1e-5, atol=1e-6)
        # no copy on the way in
        xt = polydnn._import(x, polydnn._ACTIVATION, "NHWC", polydnn.default_context())
        self.assertEqual(xt.data_ptr(), x.ctypes.data)
        self.assertEqual((xt.layout, xt.shape), ("NHWC", (2, 3, 7, 6)))

    def test_the_default_is_nchw_as_torch(self):
        x = torch_input((1, 5, 6, 3), False, 81)   # an NHWC-shaped array, read as NCHW: C = 5
        w = torch_input((2, 5, 1, 1), False, 82)
        for df in (None, "NCHW"):
            y = polydnn.conv2d(x, w, data_format=df)
            self.assertEqual((y.layout, y.shape), ("NCHW", (1, 2, 6, 3)))
            torch.testing.assert_close(torch.from_dlpack(y), F.conv2d(x, w), rtol=1e-4, atol=1e-5)
        # a channels_last tensor is NHWC memory of an (N, C, H, W) shape
        xc = x.contiguous(memory_format=torch.channels_last)
        self.assertEqual(polydnn.conv2d(xc, w).layout, "NHWC")

    def test_a_tensor_keeps_its_layout(self):
        x = polydnn.from_dlpack(torch_input((1, 2, 4, 4), False, 83))
        with self.assertRaisesRegex(ValueError, "x is an NCHW tensor but data_format is 'NHWC'"):
            polydnn.max_pool2d(x, 2, data_format="NHWC")
        with self.assertRaisesRegex(ValueError, "data_format must be 'NCHW' or 'NHWC'"):
            polydnn.max_pool2d(x, 2, data_format="NCWH")


def pad_inf(t, lrtb):
    return F.pad(t, lrtb, value=float("-inf"))


class Padding(unittest.TestCase):
    def test_pools_take_what_conv2d_takes(self):
        t = torch_input((2, 3, 9, 8), False, 90)
        x = polydnn.from_dlpack(t)
        ones = torch.ones_like(t)
        for pad in ((1, 0, 2, 1), ((1, 0), (2, 1)), [0, 2, 1, 0]):
            with self.subTest(padding=pad):
                top, bottom, left, right = (pad[0][0], pad[0][1], pad[1][0], pad[1][1]) if isinstance(pad[0], tuple) \
                    else tuple(pad)
                lrtb = (left, right, top, bottom)
                torch.testing.assert_close(torch.from_dlpack(polydnn.max_pool2d(x, 3, 2, pad)),
                                           F.max_pool2d(pad_inf(t, lrtb), 3, 2))
                inc = torch.from_dlpack(polydnn.avg_pool2d(x, 3, 2, pad))
                torch.testing.assert_close(inc, F.avg_pool2d(F.pad(t, lrtb), 3, 2), rtol=1e-5, atol=1e-6)
                exc = torch.from_dlpack(polydnn.avg_pool2d(x, 3, 2, pad, count_include_pad=False))
                ref = F.avg_pool2d(F.pad(t, lrtb), 3, 2) / F.avg_pool2d(F.pad(ones, lrtb), 3, 2)
                torch.testing.assert_close(exc, ref, rtol=1e-5, atol=1e-6)
                # conv2d takes the same four sides
                w = torch_input((4, 3, 3, 3), False, 91)
                y = polydnn.conv2d(x, polydnn.from_dlpack(w, role="filter"), padding=pad)
                torch.testing.assert_close(torch.from_dlpack(y), F.conv2d(F.pad(t, lrtb), w), rtol=1e-4, atol=1e-5)

    def test_same_and_valid_pools_are_tensorflow_s(self):
        for (h, w), k, s in (((9, 8), 3, 2), ((7, 7), 2, 2), ((6, 5), 3, 1), ((5, 9), 4, 3)):
            with self.subTest(size=(h, w), k=k, s=s):
                t = torch_input((2, 3, h, w), False, 92 + h)
                x = polydnn.from_dlpack(t)
                # TensorFlow: ceil(in / stride) outputs, the odd pixel of padding bottom/right
                lrtb = []
                for n in (w, h):
                    total = max((-(-n // s) - 1) * s + k - n, 0)
                    lrtb += [total // 2, total - total // 2]
                m = torch.from_dlpack(polydnn.max_pool2d(x, k, s, "same"))
                self.assertEqual(m.shape[2:], (-(-h // s), -(-w // s)))
                torch.testing.assert_close(m, F.max_pool2d(pad_inf(t, tuple(lrtb)), k, s))
                a = torch.from_dlpack(polydnn.avg_pool2d(x, k, s, "SAME", count_include_pad=False))
                ref = F.avg_pool2d(F.pad(t, lrtb), k, s) / F.avg_pool2d(F.pad(torch.ones_like(t), lrtb), k, s)
                torch.testing.assert_close(a, ref, rtol=1e-5, atol=1e-6)
                v = torch.from_dlpack(polydnn.max_pool2d(x, k, s, "valid"))
                torch.testing.assert_close(v, F.max_pool2d(t, k, s))

    def test_bad_padding(self):
        x = polydnn.from_dlpack(torch.zeros(1, 1, 4, 4))
        with self.assertRaisesRegex(ValueError, "'same', 'valid'"):
            polydnn.max_pool2d(x, 2, padding="full")
        with self.assertRaisesRegex(ValueError, "sequence of 2, not 3 values"):
            polydnn.max_pool2d(x, 2, padding=(1, 1, 1))
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):  # the library: pad < window
            polydnn.max_pool2d(x, 2, padding=(2, 0, 0, 0))


class NumpyArrays(unittest.TestCase):
    def test_host_tensor_shares_its_memory(self):
        import numpy as np
        base = host_in_use()
        t = torch_input((2, 3, 4, 5), True, 100)
        y = polydnn.relu(t)  # a new NHWC host tensor
        a = y.numpy()
        self.assertIsInstance(a, np.ndarray)
        self.assertEqual(a.shape, (2, 3, 4, 5))
        np.testing.assert_array_equal(a, F.relu(t).numpy())
        self.assertEqual(a.__array_interface__["data"][0], y.data_ptr())
        a[1, 2, 3, 4] = 42.0  # seen by the tensor
        self.assertEqual(torch.from_dlpack(y)[1, 2, 3, 4].item(), 42.0)
        y.write_bytes(bytes(y.nbytes))  # and the other way
        self.assertEqual(float(np.abs(a).sum()), 0.0)
        y.release()
        del y
        gc.collect()
        self.assertGreater(host_in_use(), base)  # the array keeps the memory
        a[0, 0, 0, 0] = 1.0
        self.assertEqual(float(a.sum()), 1.0)
        del a
        gc.collect()
        self.assertEqual(host_in_use(), base)

    def test_device_tensor_is_copied(self):
        gpus = accelerators()
        if not gpus:
            self.skipTest("no accelerator device")
        t = torch_input((1, 2, 3, 3), False, 101)
        g = polydnn.from_dlpack(t).to(gpus[0])
        a = g.numpy()
        np_ref = t.numpy()
        self.assertTrue((a == np_ref).all())
        a[0, 0, 0, 0] = 5.0
        self.assertEqual(torch.from_dlpack(g.to("/cpu:0"))[0, 0, 0, 0].item(), t[0, 0, 0, 0].item())


class ContextOptions(unittest.TestCase):
    def test_tuning_reaches_the_c_enum(self):
        seen = []
        real = polydnn._context_create

        def spy(opts, out):
            seen.append(opts._obj.tuning)
            return real(opts, out)
        polydnn._context_create = spy
        try:
            for name in ("cached", "off", "search", "force", None):
                polydnn.Context(tuning=name)
        finally:
            polydnn._context_create = real
        # pdnn_tuning_mode: CACHED 0, OFF 1, SEARCH 2, FORCE 3; None leaves the library's default
        self.assertEqual(seen, [0, 1, 2, 3, 0])
        with self.assertRaisesRegex(ValueError, "tuning must be one of"):
            polydnn.Context(tuning="fast")

    def test_placement_options(self):
        g = polydnn.Graph()
        with g.device("/gpu:99"):
            y = g.relu([[1.0, -1.0]])
        with self.assertRaisesRegex(polydnn.Error, "explicitly assigned to /gpu:99"):
            polydnn.Session(g)
        lines = []
        ctx = polydnn.Context(allow_soft_placement=True, log_device_placement=True)
        with polydnn.Session(g, context=ctx, log=lines.append) as s:
            self.assertEqual(s.run(y, as_numpy=True).tolist(), [[1.0, 0.0]])
        self.assertTrue(any(line.startswith("Relu: (Relu): /job:localhost") for line in lines), lines)
        self.assertTrue(any("oft placement" in line for line in lines), lines)
        lines.clear()
        with polydnn.Session(g, context=ctx, allow_soft_placement=True, log=lines.append):
            pass
        self.assertTrue(lines)
        quiet = polydnn.Context(allow_soft_placement=True)
        lines.clear()
        polydnn.Session(g, context=quiet, log=lines.append).close()
        self.assertTrue(lines)  # the soft placements are always said
        self.assertFalse([line for line in lines if "(Relu): /job" in line or "Device mapping" in line], lines)


class Graphs(unittest.TestCase):
    def test_towers(self):
        g = polydnn.Graph()
        towers = []
        for i in range(2):
            with g.device("/gpu:%d" % i):
                towers.append(g.matmul([[1, 2, 3], [4, 5, 6]], [[1, 2], [3, 4], [5, 6]]))
        with g.device("/cpu:0"):
            total = g.add_n(towers)
        self.assertEqual([n.op for n in g.nodes], ["Const", "Const", "MatMul"] * 2 + ["AddN"])
        self.assertEqual((towers[1].name, towers[1].device, total.shape), ("MatMul_1", "/gpu:1", (2, 2)))
        with polydnn.Session(g, allow_soft_placement=True, log=lambda line: None) as s:
            out = s.run(total)
            self.assertEqual(out.device.name, "/device:CPU:0")
            self.assertEqual(out.numpy().tolist(), [[44, 56], [98, 128]])
            gpus = accelerators()
            if gpus:
                self.assertEqual(s.device_of(towers[0]), gpus[0])
                self.assertEqual(s.device_of("MatMul_1"), gpus[1] if len(gpus) > 1 else gpus[0])

    def cnn(self, g, device=None):
        """cmd_example.c's cnn: (conv 3x3 + bias, relu, 2x2 max pool) twice,
        flatten, matmul, softmax; weights as torch tensors."""
        gen = torch.Generator().manual_seed(110)
        ws = [(torch.rand(8, 3, 3, 3, generator=gen) - 0.5) * 0.6, (torch.rand(16, 8, 3, 3, generator=gen) - 0.5) * 0.6]
        bs = [(torch.rand(8, generator=gen) - 0.5) * 0.2, (torch.rand(16, generator=gen) - 0.5) * 0.2]
        fc = (torch.rand(256, 10, generator=gen) - 0.5) * 0.1
        with g.device(device):
            x = g.placeholder((2, 3, 16, 16), name="images")
            h = x
            for w, b in zip(ws, bs):
                h = g.max_pool2d(g.relu(g.conv2d(h, w, b, padding=1)), 2)
            y = g.softmax(g.matmul(g.flatten(h), fc))

        def ref(t):
            for w, b in zip(ws, bs):
                t = F.max_pool2d(F.relu(F.conv2d(t, w, b, padding=1)), 2)
            return torch.softmax(torch.flatten(t, 1) @ fc, dim=1)
        return x, y, ref

    def test_cnn_matches_torch(self):
        t = torch_input((2, 3, 16, 16), False, 111)
        for device in [None, "/cpu:0"] + [d.name for d in accelerators()]:
            with self.subTest(device=device):
                g = polydnn.Graph()
                x, y, ref = self.cnn(g, device)
                self.assertEqual([n.op for n in g.nodes if n.op != "Const"],
                                 ["Placeholder", "Conv2D", "Relu", "MaxPool"] * 1 +
                                 ["Conv2D", "Relu", "MaxPool", "Reshape", "MatMul", "Softmax"])
                with polydnn.Session(g) as s:
                    for feed in (t, t.numpy(), polydnn.from_dlpack(t),
                                 t.contiguous(memory_format=torch.channels_last)):  # copied into NCHW
                        got = s.run([y], {x: feed})[0]
                        self.assertEqual(got.shape, (2, 10))
                        torch.testing.assert_close(to_matrix(got), ref(t), rtol=1e-4, atol=1e-5)

    def test_nhwc_placeholder_and_graph_ops(self):
        import numpy as np
        rng = np.random.default_rng(112)
        xv = rng.standard_normal((2, 6, 5, 3), dtype=np.float32)  # N, H, W, C
        wv = rng.standard_normal((3, 3, 3, 4), dtype=np.float32)  # H, W, I, O
        tx, tw = torch.from_numpy(xv).permute(0, 3, 1, 2), torch.from_numpy(wv).permute(3, 2, 0, 1)
        g = polydnn.Graph()
        x = g.placeholder((2, 6, 5, 3), data_format="NHWC")
        self.assertEqual((x.shape, x.layout), ((2, 3, 6, 5), "NHWC"))
        c = g.conv2d(x, wv, padding="same", data_format="NHWC", name="conv")
        p = g.avg_pool2d(c, 2, padding="same", count_include_pad=False, data_format="NHWC")
        self.assertEqual((p.name, p.op, p.shape), ("AvgPool", "AvgPool", (2, 4, 3, 3)))
        fc = rng.standard_normal((6, 4), dtype=np.float32)
        m = g.matmul(g.reshape(c, (6, 40)), g.constant(fc), transpose_a=True)
        r = g.bias_add(g.add(m, m), [1.0, 2.0, 3.0, 4.0])
        with polydnn.Session(g) as s:  # on the default device: an accelerator where there is one
            cv, pv, rv = (t.to("/cpu:0") for t in s.run([c, "AvgPool", r], {"Placeholder": xv}))
        ref_c = F.conv2d(tx, tw, padding=1)
        self.assertEqual(cv.layout, "NHWC")
        torch.testing.assert_close(torch.from_dlpack(cv), ref_c, rtol=1e-4, atol=1e-4)
        pad_ones = F.pad(torch.ones_like(ref_c), (0, 1, 0, 0))
        torch.testing.assert_close(torch.from_dlpack(pv), F.avg_pool2d(F.pad(ref_c, (0, 1, 0, 0)), 2) /
                                   F.avg_pool2d(pad_ones, 2), rtol=1e-4, atol=1e-4)
        # the reshape reads NHWC memory: H, W, C order
        mm = ref_c.permute(0, 2, 3, 1).reshape(6, 40).T @ torch.from_numpy(fc)
        torch.testing.assert_close(to_matrix(rv), mm + mm + torch.tensor([1.0, 2.0, 3.0, 4.0]), rtol=1e-4,
                                   atol=1e-3)

    def test_mistakes_are_named(self):
        g, other = polydnn.Graph(), polydnn.Graph()
        x = g.placeholder((2, 3))
        y = g.relu(x)
        with self.assertRaisesRegex(ValueError, "another graph"):
            other.relu(x)
        with self.assertRaisesRegex(polydnn.Error, "inner dims must be equal"):
            g.matmul(x, x)
        with self.assertRaisesRegex(polydnn.Error, "already has a node named 'Relu'"):
            g.relu(x, name="Relu")
        with self.assertRaisesRegex(ValueError, "shape has 9 dims"):
            g.placeholder((1,) * 9)
        s = polydnn.Session(g)
        late = g.softmax(y)
        with self.assertRaisesRegex(ValueError, "after this session was created"):
            s.run(late, {x: [[1, 2, 3], [4, 5, 6]]})
        with self.assertRaisesRegex(polydnn.Error, "no node named 'nope'"):
            s.run("nope")
        with self.assertRaisesRegex(polydnn.Error, "placeholder 'Placeholder' is"):
            s.run(y, {x: [[1, 2], [3, 4]]})
        with self.assertRaisesRegex(polydnn.Error, "INVALID_ARGUMENT"):
            s.run(y)  # not fed
        self.assertEqual(s.run(y, {x: [[1, -2, 3], [-4, 5, -6]]}, as_numpy=True).tolist(),
                         [[1, 0, 3], [0, 5, 0]])
        s.close()
        with self.assertRaisesRegex(ValueError, "closed"):
            s.run(y)


class TrainingGraphs(unittest.TestCase):
    """Graph.variable/gradients/softmax_cross_entropy/apply_gradients
    against torch autograd and torch.optim.SGD."""

    def test_gradients_and_sgd_steps_match_torch(self):
        gen = torch.Generator().manual_seed(7)
        w0 = (torch.rand(4, 2, 3, 3, generator=gen) - 0.5) * 0.8
        b0 = (torch.rand(4, generator=gen) - 0.5) * 0.2
        fc0 = (torch.rand(64, 5, generator=gen) - 0.5) * 0.4
        x = torch.rand(3, 2, 8, 8, generator=gen) - 0.5
        labels = np.array([1, 4, 0], dtype=np.int32)
        g = polydnn.Graph()
        xp = g.placeholder((3, 2, 8, 8), name="x")
        lp = g.placeholder((3,), name="labels", dtype="int32")
        w = g.variable(w0.numpy(), name="conv1/w", role="filter")
        b = g.variable(b0.numpy(), name="conv1/b")
        fc = g.variable(fc0.numpy().reshape(64, 5, 1, 1), name="fc/w")
        h = g.max_pool2d(g.relu(g.conv2d(xp, w, b, padding=1)), 2)
        loss = g.softmax_cross_entropy(g.matmul(g.flatten(h), fc), lp, name="loss")
        grads = g.gradients(loss, [w, b, fc, xp])
        self.assertEqual(grads[0].name, "gradients/Conv2D_grad/Conv2DBackpropFilter")
        self.assertIsNone(g.gradients(loss, g.variable(shape=(3,), name="unused")))
        train = g.apply_gradients(list(zip(grads[:3], [w, b, fc])), kind="sgd", lr=0.1, momentum=0.9)
        self.assertEqual(g.find("conv1/w/Momentum").op, "VariableV2")
        tw, tb, tfc = (t.clone().requires_grad_(True) for t in (w0, b0, fc0))
        tx = x.clone().requires_grad_(True)

        def torch_loss():
            th = F.max_pool2d(F.relu(F.conv2d(tx, tw, tb, padding=1)), 2)
            return F.cross_entropy(th.reshape(3, -1) @ tfc, torch.from_numpy(labels).long())

        with polydnn.Session(g, log=lambda line: None) as s:
            feed = {xp: x.numpy(), lp: labels}
            got = s.run(grads, feed, as_numpy=True)
            ref = torch_loss()
            ref.backward()
            for a, t in zip(got, (tw.grad, tb.grad, tfc.grad, tx.grad)):
                np.testing.assert_allclose(a.reshape(-1), t.numpy().reshape(-1), rtol=1e-4, atol=1e-5)
            self.assertAlmostEqual(float(s.run(loss, feed, as_numpy=True).reshape(-1)[0]), float(ref), places=5)
            opt = torch.optim.SGD([tw, tb, tfc], lr=0.1, momentum=0.9)
            for _ in range(3):
                self.assertIsNone(s.run(train, feed))
                opt.zero_grad()
                torch_loss().backward()
                opt.step()
            np.testing.assert_allclose(s.variable(w), tw.detach().numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(s.variable(fc).reshape(64, 5), tfc.detach().numpy(), rtol=1e-4, atol=1e-5)
            self.assertEqual(s.variable("global_step").tolist(), [3.0])
            s.assign(b, [0, 0, 0, 0])
            self.assertEqual(s.variable(b).tolist(), [0, 0, 0, 0])
            with self.assertRaisesRegex(polydnn.Error, "not a variable"):
                s.variable(xp)

    def test_initializers_are_seeded(self):
        g = polydnn.Graph()
        a = g.variable(shape=(8, 4, 3, 3), initializer="he_normal", seed=3, role="filter")
        b = g.variable(shape=(8, 4, 3, 3), initializer="he_normal", seed=3, role="filter")
        c = g.variable(shape=(100, 50), initializer="glorot_uniform", seed=3)
        with self.assertRaisesRegex(ValueError, "initializer"):
            g.variable(shape=(3,), initializer="ones")
        with polydnn.Session(g) as s:
            np.testing.assert_array_equal(s.variable(a), s.variable(b))
            self.assertLessEqual(np.abs(s.variable(c)).max(), np.sqrt(6 / 150))


class BatchNorm(unittest.TestCase):
    """batch_norm and batch_norm_backward against torch's batch_norm and
    autograd, on the host and on an OpenCL device, in both layouts."""

    def devices(self):
        devs = [polydnn.devices()[0]]
        if opencl_device() is not None:
            devs.append(opencl_device())
        return devs

    @staticmethod
    def back(t):
        host = polydnn.devices()[0]
        return torch.from_dlpack(t if t.device == host else t.to(host)).clone()

    def test_training_and_running_statistics_match_torch(self):
        for dev in self.devices():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    c = 5
                    g, b = torch_input((c,), False, 1), torch_input((c,), False, 2)
                    rm_t, rv_t = torch.zeros(c), torch.ones(c)
                    rm = polydnn.from_dlpack(torch.zeros(c)).to(dev)
                    rv = polydnn.from_dlpack(torch.ones(c)).to(dev)
                    for step in range(3):  # the running statistics after several calls
                        x = torch_input((6, c, 4, 7), cl, 10 + step) * 3 + 10 * step
                        want = F.batch_norm(x, rm_t, rv_t, g, b, True, 0.2, 1e-3)
                        y, sm, si = polydnn.batch_norm(polydnn.from_dlpack(x).to(dev), g, b, rm, rv, training=True,
                                                       momentum=0.2, eps=1e-3)
                        self.assertEqual(y.layout, "NHWC" if cl else "NCHW")
                        torch.testing.assert_close(self.back(y), want, rtol=1e-5, atol=1e-5)
                        mean = x.mean(dim=(0, 2, 3))
                        var = x.var(dim=(0, 2, 3), unbiased=False)
                        torch.testing.assert_close(self.back(sm), mean, rtol=1e-5, atol=1e-5)
                        torch.testing.assert_close(self.back(si), 1 / torch.sqrt(var + 1e-3), rtol=1e-5, atol=1e-6)
                    torch.testing.assert_close(self.back(rm), rm_t, rtol=1e-5, atol=1e-5)
                    torch.testing.assert_close(self.back(rv), rv_t, rtol=1e-5, atol=1e-5)

    def test_host_running_statistics_update_torch_tensors_in_place(self):
        x, g, b = torch_input((3, 4, 5, 5), False, 3), torch.ones(4), torch.zeros(4)
        rm, rv = torch.zeros(4), torch.ones(4)
        rm_t, rv_t = torch.zeros(4), torch.ones(4)
        polydnn.batch_norm(x, g, b, rm, rv)
        F.batch_norm(x, rm_t, rv_t, g, b, True)
        torch.testing.assert_close(rm, rm_t)
        torch.testing.assert_close(rv, rv_t)
        if opencl_device() is not None:  # a copy to the device would drop the update: refused
            xd = polydnn.from_dlpack(x).to(opencl_device())
            with self.assertRaisesRegex(ValueError, "running_mean is on /device:CPU:0 but x is on"):
                polydnn.batch_norm(xd, g, b, rm, rv)

    def test_inference_matches_torch(self):
        for dev in self.devices():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    x = torch_input((5, 3, 6, 2), cl, 4)
                    g, b = torch_input((3,), False, 5), torch_input((3,), False, 6)
                    rm, rv = torch_input((3,), False, 7), torch_input((3,), False, 8).abs() + 0.5
                    want = F.batch_norm(x, rm, rv, g, b, False, 0.1, 1e-5)
                    y = polydnn.batch_norm(polydnn.from_dlpack(x).to(dev), g, b, rm, rv, training=False)
                    torch.testing.assert_close(self.back(y), want, rtol=1e-5, atol=1e-5)

    def test_backward_matches_autograd(self):
        for dev in self.devices():
            for cl in (False, True):
                with self.subTest(device=dev.name, channels_last=cl):
                    x = torch_input((7, 6, 3, 5), cl, 9).requires_grad_()
                    g = torch_input((6,), False, 10).requires_grad_()
                    b = torch_input((6,), False, 11).requires_grad_()
                    dy = torch_input((7, 6, 3, 5), cl, 12)
                    F.batch_norm(x, None, None, g, b, True, 0.1, 1e-5).backward(dy)
                    xd = polydnn.from_dlpack(x.detach()).to(dev)
                    _, sm, si = polydnn.batch_norm(xd, g.detach(), b.detach())
                    dx, dg, db = polydnn.batch_norm_backward(xd, polydnn.from_dlpack(dy).to(dev), g.detach(), sm, si)
                    self.assertEqual(dx.layout, "NHWC" if cl else "NCHW")
                    torch.testing.assert_close(self.back(dx), x.grad, rtol=1e-4, atol=1e-5)
                    torch.testing.assert_close(self.back(dg), g.grad, rtol=1e-4, atol=1e-5)
                    torch.testing.assert_close(self.back(db), b.grad, rtol=1e-4, atol=1e-5)

    def test_mistakes_are_named(self):
        x, g, b = torch_input((2, 3, 2, 2), False, 13), torch.ones(3), torch.zeros(3)
        with self.assertRaisesRegex(polydnn.Error, "epsilon is 0"):
            polydnn.batch_norm(x, g, b, eps=0)
        with self.assertRaisesRegex(polydnn.Error, "momentum is 2"):
            polydnn.batch_norm(x, g, b, torch.zeros(3), torch.ones(3), momentum=2)
        with self.assertRaisesRegex(polydnn.Error, "gamma"):
            polydnn.batch_norm(x, torch.ones(4), b)
        with self.assertRaisesRegex(polydnn.Error, "running_mean"):
            polydnn.batch_norm(x, g, b, training=False)
        with self.assertRaisesRegex(TypeError, "eps must be a number"):
            polydnn.batch_norm(x, g, b, eps="small")


class OnnxModels(unittest.TestCase):
    """load_onnx: a model built with the onnx package, fed torch tensors
    through DLPack on the host and an OpenCL device, against torch's own
    ops; and the mistakes."""

    def model_bytes(self, w, fw, fb):
        try:
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            self.skipTest("no onnx package (apt-get install python3-onnx)")
        nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                 helper.make_node("Relu", ["c"], ["r"]), helper.make_node("Flatten", ["r"], ["f"]),
                 helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
        g = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 9, 9])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])],
                              [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (fw, "fw"), (fb, "fb"))])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()

    def test_runs_torch_tensors_like_torch(self):
        gen = torch.Generator().manual_seed(7)
        w = torch.rand((4, 3, 3, 3), generator=gen) - 0.5
        fw, fb = torch.rand((5, 4 * 5 * 5), generator=gen) - 0.5, torch.rand(5, generator=gen) - 0.5
        data = self.model_bytes(w.numpy(), fw.numpy(), fb.numpy())
        x = torch.rand((3, 3, 9, 9), generator=gen) - 0.5
        want = F.linear(torch.flatten(F.relu(F.conv2d(x, w, stride=2, padding=1)), 1), fw, fb)
        devs = [None, "/cpu:0"] + (["/gpu:0"] if opencl_device() is not None else [])
        for dev in devs:
            with self.subTest(device=dev):
                model = polydnn.load_onnx(data, device=dev, batch=3)
                self.assertEqual(model.input_names, ["x"])
                self.assertEqual(model.output_names, ["y"])
                y = model(x)
                self.assertEqual(y.shape, (3, 5))  # the file's rank
                got = torch.from_numpy(model(x=x, as_numpy=True))
                self.assertEqual(tuple(got.shape), (3, 5))
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
                if dev == "/cpu:0":
                    self.assertEqual(model.session.device_of(model.outputs[0]).name, "/device:CPU:0")

    def test_mistakes_are_named(self):
        with self.assertRaisesRegex(polydnn.Error, "not a valid ONNX model"):
            polydnn.load_onnx(b"not a model")
        with self.assertRaisesRegex(polydnn.Error, "no_such.onnx"):
            polydnn.load_onnx("/nonexistent/no_such.onnx")
        with self.assertRaisesRegex(TypeError, "path or bytes"):
            polydnn.load_onnx(12)
        with self.assertRaisesRegex(ValueError, "batch must be at least 1"):
            polydnn.load_onnx(b"x", batch=0)
        z = torch.zeros
        model = polydnn.load_onnx(self.model_bytes(z((4, 3, 3, 3)).numpy(), z((5, 100)).numpy(), z(5).numpy()))
        x = z((1, 3, 9, 9))
        with self.assertRaisesRegex(ValueError, "takes 1 input"):
            model(x, x)
        with self.assertRaisesRegex(ValueError, "no value for the model's input"):
            model()
        with self.assertRaisesRegex(ValueError, "no input 'z'"):
            model(z=x)
        with self.assertRaisesRegex(ValueError, "given twice"):
            model(x, x=x)
        with self.assertRaises(polydnn.Error):
            model(z((1, 3, 8, 8)))  # the wrong image size for the placeholder


# README.md's and docs/'s Python blocks run each alone, with their expected
# output, in tests/test_docs.sh (tests/doc_blocks.py).


# polydnn.torch and the backward ops: their own file, run in this one's process and summary
from test_torch import (BackwardOps, BatchNorm, DataMovement, Gradcheck,  # noqa: E402,F401
                        MatchTorchFunctional, Modules)
# Tensors of every rank (issue 42): their own file, run here too
from test_python_nd import Ranks  # noqa: E402,F401
# float16 and bfloat16 (issue 43): their own file, run here too
from test_python_precision import Precision, TorchPrecision  # noqa: E402,F401

if __name__ == "__main__":
    result = unittest.main(exit=False).result
    gc.collect()
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    # the same summary line as tests/test_cli.sh, which CI adds up
    print("%d passed, %d failed, %d skipped" % (result.testsRun - failed - skipped, failed, skipped))
    sys.exit(0 if result.wasSuccessful() else 1)
