"""PyTorch <-> dlbridge.

PyTorch 2.15 facts these tests rely on:
- `Tensor.__dlpack__(*, stream=-1, max_version=None, dl_device=None, copy=None, read_only=False)`
  returns `dltensor_versioned` version 1.3 for max_version >= (1, 0), legacy otherwise;
  copy=True copies but forgets IS_COPIED (flags stay 0); `__dlpack_device__` returns an IntEnum;
- exports bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64, complex32,
  complex64, complex128, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
  float8_e8m0fnu (and float4_e2m1fn_x2 as code 17, 4 bits, 2 lanes); refuses quantized and
  bits types, tensors with requires_grad or the conjugate bit (BufferError);
- `torch.from_dlpack` calls `__dlpack__(max_version=(1, 0))` (plus copy/dl_device when given),
  imports the same dtypes except float8_e3m4/float8_e4m3 (BufferError "Unsupported code"),
  ignores READ_ONLY (torch has no read-only tensors) and cannot represent negative strides
  (RuntimeError "Storage size calculation overflowed"): those cases are not sent to torch;
- zero-size tensors are exported with a NULL data pointer and strides as torch has them.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from _frameworks import import_framework
from _gpu import gpu_framework

torch = import_framework("torch", "torch")

import dlbridge
from _helpers import (
    SHAPE_IDS,
    SHAPES,
    collect,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
)

# dlbridge dtype name -> torch dtype, for every dtype torch exchanges over DLPack.
TORCH_DTYPES = {
    "bool": torch.bool,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "uint16": torch.uint16,
    "int32": torch.int32,
    "uint32": torch.uint32,
    "int64": torch.int64,
    "uint64": torch.uint64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "float8_e4m3fnuz": torch.float8_e4m3fnuz,
    "float8_e5m2fnuz": torch.float8_e5m2fnuz,
    "float8_e8m0fnu": torch.float8_e8m0fnu,
}
if hasattr(torch, "complex32"):
    TORCH_DTYPES["complex32"] = torch.complex32


def _torch_source(shape, name):
    """A torch tensor holding the dtype's byte pattern."""
    x = torch.empty(shape, dtype=TORCH_DTYPES[name])
    if x.numel():
        raw = torch.frombuffer(bytearray(pattern_bytes(name, x.numel())), dtype=torch.uint8)
        x.view(-1).view(torch.uint8).copy_(raw)
    return x


def _torch_bytes(x) -> bytes:
    return read_bytes(x.data_ptr(), x.numel() * x.element_size())


# --------------------------------------------------------------------------------------------
# torch -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TORCH_DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_torch_to_dlbridge(shape, name):
    x = _torch_source(shape, name)
    t = dlbridge.from_dlpack(x)
    assert t.dtype == name
    assert t.shape == tuple(x.shape)
    assert t.device == (1, 0)
    assert t.version == (1, 3)
    assert t.readonly is False
    assert t.nbytes == x.numel() * x.element_size()
    if x.numel():
        # Zero-size tensors may carry any strides and a NULL data pointer.
        assert t.strides == tuple(x.stride())
        assert t.data_ptr == x.data_ptr()
        assert read_bytes(t.data_ptr, t.nbytes) == _torch_bytes(x)


def test_torch_float4_x2():
    if not hasattr(torch, "float4_e2m1fn_x2"):
        pytest.skip("this torch has no float4_e2m1fn_x2")
    x = torch.zeros((3, 2), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    t = dlbridge.from_dlpack(x)
    assert t.dtype == "float4_e2m1fnx2"  # code 17, 4 bits, 2 lanes: one byte per element
    assert t.shape == (3, 2) and t.nbytes == 6
    assert t.data_ptr == x.data_ptr()


def test_torch_writes_seen_both_ways():
    x = torch.zeros(4, dtype=torch.float32)
    t = dlbridge.from_dlpack(x)
    x[1] = 5.0
    assert np.asarray(t)[1] == 5.0
    np.asarray(t)[2] = 7.0
    assert x[2].item() == 7.0


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b.t(),
        lambda b: b[::2],
        lambda b: b[:, 1::2],
        lambda b: b[1:, 2:],
        lambda b: b[:, :1],
        lambda b: b[0].expand(3, 6),
        lambda b: b.unsqueeze(1),
    ],
    ids=[
        "transposed",
        "stepped-rows",
        "stepped-cols",
        "offset",
        "size1-col",
        "expanded",
        "unsqueezed",
    ],
)
def test_torch_views_to_dlbridge(make):
    base = torch.arange(36, dtype=torch.float64).reshape(6, 6)
    x = make(base)
    t = dlbridge.from_dlpack(x)
    assert t.shape == tuple(x.shape)
    assert t.strides == tuple(x.stride())
    assert t.data_ptr == x.data_ptr()
    np.testing.assert_array_equal(np.asarray(t), x.numpy())
    np.testing.assert_array_equal(np.asarray(t.copy()), x.numpy())


def test_torch_copy_true():
    x = torch.arange(6, dtype=torch.int32)
    t = dlbridge.from_dlpack(x, copy=True)
    assert t.data_ptr != x.data_ptr()
    x[0] = 100
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4, 5]


def test_torch_copy_false():
    x = torch.arange(6, dtype=torch.int32)
    t = dlbridge.from_dlpack(x, copy=False)
    assert t.data_ptr == x.data_ptr()


def test_torch_keeps_memory_alive_after_deletion():
    x = torch.arange(5, dtype=torch.float32)
    address = x.data_ptr()
    t = dlbridge.from_dlpack(x)
    del x
    gc.collect()
    assert t.data_ptr == address
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.cpp_exception  # torch's BufferError for a sparse tensor is a C++ exception
def test_torch_refusal_propagates_as_buffer_error():
    # A sparse tensor cannot be expressed in DLPack. Pins PyTorch 2.15's behaviour: its
    # exchange table cannot export it either, so dlbridge asks torch.Tensor.__dlpack__, whose
    # BufferError reaches the caller unchanged, on every path (with copy=, and with the
    # exchange API on, which it is for 2.15). (A conjugate tensor is no such case: dlbridge
    # refuses it itself before asking torch, see
    # test_lazy_conjugate_and_negative_views_are_refused.)
    x = torch.eye(3).to_sparse()
    assert hasattr(type(x), "__dlpack_c_exchange_api__")
    with pytest.raises(BufferError) as torch_refusal:
        x.__dlpack__(max_version=(1, 0))
    assert str(torch_refusal.value) == "Can't export tensors with layout other than torch.strided"
    for copy in (None, True, False):
        with pytest.raises(BufferError) as refusal:
            dlbridge.from_dlpack(x, copy=copy)
        assert str(refusal.value) == str(torch_refusal.value), copy


# --------------------------------------------------------------------------------------------
# dlbridge -> torch
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in TORCH_DTYPES if n != "complex32"])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_torch(shape, name):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    x = torch.from_dlpack(t)
    assert x.dtype == TORCH_DTYPES[name]
    assert tuple(x.shape) == shape
    assert x.device.type == "cpu"
    if x.numel():
        assert tuple(x.stride()) == t.strides
        assert x.data_ptr() == t.data_ptr
        assert _torch_bytes(x) == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_torch_writes_seen_both_ways():
    t = dlbridge.zeros((2, 2), dtype="float32")
    x = torch.from_dlpack(t)
    x[0, 1] = 3.0
    assert np.asarray(t)[0, 1] == 3.0
    np.asarray(t)[1, 0] = 4.0
    assert x[1, 0].item() == 4.0


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b.T,
        lambda b: b[::2, 1::2],
        lambda b: b[1:, 2:],
        lambda b: np.lib.stride_tricks.as_strided(b, shape=(5, 1, 6), strides=(48, 999 * 8, 8)),
    ],
    ids=["transposed", "stepped", "offset", "size1-odd-stride"],
)
def test_dlbridge_views_to_torch(make):
    base = np.arange(30, dtype=np.float64).reshape(5, 6)
    view = make(base)
    t = dlbridge.from_dlpack(view)
    x = torch.from_dlpack(t)
    assert tuple(x.shape) == view.shape
    assert x.data_ptr() == np_address(view)
    np.testing.assert_array_equal(x.numpy(), view)
    x[(0,) * x.dim()] = -1.0
    assert view[(0,) * view.ndim] == -1.0


def test_dlbridge_to_torch_copy_true():
    t = dlbridge.arange(4, dtype="int64")
    x = torch.from_dlpack(t, copy=True)
    assert x.data_ptr() != t.data_ptr
    assert x.tolist() == [0, 1, 2, 3]
    x[0] = 9
    assert np.asarray(t)[0] == 0


def test_dlbridge_to_torch_device_cpu():
    t = dlbridge.arange(4, dtype="int64")
    x = torch.from_dlpack(t, device="cpu")
    assert x.data_ptr() == t.data_ptr


def test_tensor_released_after_torch_tensor_dies():
    t = dlbridge.arange(4)
    rc = refcount(t)
    x = torch.from_dlpack(t)
    del x
    collect()
    assert refcount(t) == rc


def test_torch_tensor_outlives_dlbridge_tensor():
    t = dlbridge.arange(5, dtype="float32")
    x = torch.from_dlpack(t)
    del t
    gc.collect()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# --------------------------------------------------------------------------------------------
# numpy -> dlbridge -> torch, numpy deleted first.
# --------------------------------------------------------------------------------------------


def test_numpy_dlbridge_torch_chain_numpy_deleted_first():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    address = np_address(a)
    ref = weakref.ref(a)
    t = dlbridge.from_dlpack(a)
    del a
    gc.collect()
    x = torch.from_dlpack(t)
    del t
    gc.collect()
    assert ref() is not None  # still owned through torch -> dlbridge -> numpy
    assert x.data_ptr() == address
    assert x.sum().item() == 66.0
    x[0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    del x
    gc.collect()
    assert ref() is None


def test_torch_dlbridge_torch_round_trip():
    x = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    y = torch.from_dlpack(dlbridge.from_dlpack(x))
    assert y.data_ptr() == x.data_ptr()
    assert y.dtype == torch.bfloat16
    assert torch.equal(x, y)


# --------------------------------------------------------------------------------------------
# CUDA (only where a GPU is present): device memory is held and passed on, never read.
# --------------------------------------------------------------------------------------------


def cuda_torch():
    """PyTorch with CUDA, or the test skipped as GPU-only (failed on the GPU machine)."""
    return gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())


@pytest.mark.gpu
def test_torch_cuda_to_dlbridge_and_back():
    torch = cuda_torch()
    x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    t = dlbridge.from_dlpack(x)
    assert t.device == (2, x.device.index or 0)
    assert t.data_ptr == x.data_ptr()
    assert t.shape == (3, 4) and t.strides == (4, 1)
    with pytest.raises((BufferError, TypeError)):
        memoryview(t)  # the CPU cannot read device memory
    with pytest.raises(BufferError):
        t.copy()
    # The CPU reaches CUDA memory only through a copy: refused where none is allowed, made
    # (and flagged) where one is.
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 3), dl_device=(1, 0), copy=False)
    host = dlbridge.from_dlpack(t.__dlpack__(max_version=(1, 3), dl_device=(1, 0)))
    assert host.device == (1, 0) and host.flags & dlbridge.FLAG_IS_COPIED
    np.testing.assert_array_equal(np.from_dlpack(host), x.cpu().numpy())
    y = torch.from_dlpack(t)  # torch passes a stream for CUDA: accepted for device memory
    assert y.device == x.device and y.data_ptr() == x.data_ptr()
    y[0, 0] = 100.0
    torch.cuda.synchronize()
    assert x[0, 0].item() == 100.0


@pytest.mark.gpu
def test_torch_cuda_tensor_kept_alive():
    torch = cuda_torch()
    x = torch.arange(6, dtype=torch.int64, device="cuda")
    address = x.data_ptr()
    t = dlbridge.from_dlpack(x)
    del x
    gc.collect()
    y = torch.from_dlpack(t)
    del t
    gc.collect()
    assert y.data_ptr() == address
    assert y.cpu().tolist() == [0, 1, 2, 3, 4, 5]


# --- The C exchange API fast path (DLPack 1.3 `__dlpack_c_exchange_api__`) -----------------


def _forbid_dlpack(monkeypatch):
    """Makes torch's `__dlpack__` fail loudly, so a successful import proves the fast path."""

    def forbidden(self, *args, **kwargs):
        raise AssertionError("__dlpack__ was called: the exchange API was not used")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", forbidden)


def test_exchange_api_fast_path_is_taken_for_torch(monkeypatch):
    assert type(getattr(torch.Tensor, "__dlpack_c_exchange_api__", None)).__name__ == "PyCapsule"
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    _forbid_dlpack(monkeypatch)
    t = dlbridge.from_dlpack(x)
    assert t.data_ptr == x.data_ptr()
    assert (t.shape, t.strides, t.dtype) == ((3, 4), (4, 1), "float32")
    x[0, 0] = 7.0
    assert np.from_dlpack(t)[0, 0] == 7.0


def test_requests_beyond_a_plain_import_use_dlpack(monkeypatch):
    x = torch.arange(4, dtype=torch.float32)
    _forbid_dlpack(monkeypatch)
    for kwargs in [{"copy": True}, {"copy": False}, {"device": (1, 0)}]:
        with pytest.raises(AssertionError, match="__dlpack__ was called"):
            dlbridge.from_dlpack(x, **kwargs)


def test_exchange_api_can_be_switched_off():
    code = (
        "import torch, dlbridge\n"
        "calls = []\n"
        "original = torch.Tensor.__dlpack__\n"
        "def counted(self, *a, **k):\n"
        "    calls.append(1)\n"
        "    return original(self, *a, **k)\n"
        "torch.Tensor.__dlpack__ = counted\n"
        "dlbridge.from_dlpack(torch.ones(3))\n"
        "print(len(calls))\n"
    )
    import os
    import subprocess
    import sys

    for switch, expected in [("1", "1"), ("0", "0")]:
        env = dict(os.environ, DLBRIDGE_NO_EXCHANGE_API=switch)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip().splitlines()[-1] == expected, (switch, out.stderr)


def test_lazy_conjugate_and_negative_views_are_refused():
    # PyTorch's table exports the memory of such views as it is (other values than the
    # tensor's); its __dlpack__ refuses the conjugation bit and exports the negated memory.
    # dlbridge refuses both, with every `copy=`; the resolved tensors import as usual.
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    conj = z.conj()
    assert conj.is_conj()
    neg = torch.tensor([1.0 + 1.0j]).conj().imag
    assert neg.is_neg()
    for copy in (None, True, False):
        with pytest.raises(BufferError, match="conjugation bit"):
            dlbridge.from_dlpack(conj, copy=copy)
        with pytest.raises(BufferError, match="negation bit"):
            dlbridge.from_dlpack(neg, copy=copy)
    with pytest.raises(BufferError, match="conjugate bit"):  # the reference
        conj.__dlpack__()
    assert np.from_dlpack(dlbridge.from_dlpack(conj.resolve_conj())).tolist() == [1 - 2j, 3 + 4j]
    assert np.from_dlpack(dlbridge.from_dlpack(neg.resolve_neg())).tolist() == [-1.0]


_NEGATED_VIEWS = {
    "y": lambda y: y,
    "y.reshape(-1)": lambda y: y.reshape(-1),
    "y[0]": lambda y: y[0],
    "y[0, 0] (one element)": lambda y: y[0, 0],
    "y[:1, :1] (one element)": lambda y: y[:1, :1],
    "y.T": lambda y: y.T,
    "y.unsqueeze(0)": lambda y: y.unsqueeze(0),
    "y.expand(3, 2, 2)": lambda y: y.expand(3, 2, 2),
    "y[:, :1]": lambda y: y[:, :1],
    "y.detach()": lambda y: y.detach(),
    "y.to(y.dtype) (a no-op)": lambda y: y.to(y.dtype),
}


@pytest.mark.parametrize("name", list(_NEGATED_VIEWS))
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_every_public_view_of_a_negated_tensor_is_refused(name, dtype):
    # The negation bit is asked of floating-point tensors only when their layout is not
    # C-contiguous or has one element; these are the views PyTorch's public API can make of
    # `x.conj().imag`, and every one is found and refused, on every path.
    from _kernels import kernels as K

    x = torch.tensor([[1 + 2j, 3 + 4j], [5 + 6j, 7 + 8j]], dtype=dtype)
    view = _NEGATED_VIEWS[name](x.conj().imag)
    assert view.is_neg()
    with pytest.raises(BufferError, match="negation bit"):
        dlbridge.from_dlpack(view)
    with pytest.raises(BufferError, match="negation bit"):
        K.inspect_argument(view)
    expected = view.resolve_neg().numpy()
    np.testing.assert_array_equal(
        np.from_dlpack(dlbridge.from_dlpack(view.resolve_neg())), expected
    )


def test_tensors_requiring_grad_are_refused_as_dlpack_refuses_them():
    # torch's __dlpack__ refuses them, its table exports them: dlbridge gives __dlpack__'s
    # answer; `detach()` shares the memory outside autograd (test_autograd.py has the rest).
    g = torch.ones(3, requires_grad=True)
    with pytest.raises(BufferError, match="requires grad"):
        dlbridge.from_dlpack(g)
    t = dlbridge.from_dlpack(g.detach())
    assert t.data_ptr == g.data_ptr()
    assert np.from_dlpack(t).tolist() == [1.0, 1.0, 1.0]
