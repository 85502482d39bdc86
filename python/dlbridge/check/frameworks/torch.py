"""PyTorch, as the checker drives it: its tensors (also on CUDA, with its streams),
`torch.from_dlpack`, and its catalogue.

Findings (torch 2.15, CPU):

- `neg_view` (`torch.tensor([1+2j, 3j]).conj().imag`, `is_neg()` True, values [-2, -3]) is
  exported WITHOUT error and without its negative bit: the capsule describes the memory
  [2, 3] (float32, stride 2 into the complex storage). A consumer silently gets the wrong
  sign. So are the C-contiguous negated views (`x._neg_view()`, of one element or many, real
  or complex, and after `detach()` or `as_strided`), which no layout gives away. The
  conjugate bit, by contrast, is refused (BufferError).
- strided `nested_tensor` raises RuntimeError ("Internal error: NestedTensorImpl doesn't
  support sizes"), not BufferError; jagged nested, sparse COO/CSR raise BufferError ("layout
  other than torch.strided").
- its sub-byte integer "shell" dtypes int1..int7 / uint1..uint7 (one byte per element in
  memory) are exported as plain int8 / uint8 (code 0/1, bits 8): the dtype identity is lost.
  float4_e2m1fn_x2 is exported as code 17 (float4_e2m1fn), bits 4, lanes 2: one byte per
  element (two packed fp4 values). bits8/bits16/bits*x* and bcomplex32 are refused with
  BufferError; all quantized dtypes (qint8, quint8, qint32, quint4x2, quint2x4) too.
  complex32 is exported as (code 5, bits 32).
- zero-size tensors have a NULL data pointer; `flip` copies (positive strides).
- its C exchange table exports tensors its `__dlpack__` refuses (requires grad, the
  conjugate bit): every consumer is fed them (`consumer.producer-refusals`).
"""

from __future__ import annotations

import numpy as np

from .base import kind_list, quiet, quietly

NAME = "torch"
MODULE = "torch"
#: Its C exchange table exports tensors its `__dlpack__` refuses.
TABLE_EXPORTS_REFUSED = True
#: PyTorch aborts building a jagged nested tensor once TensorFlow is loaded (two copies of
#: LLVM register the same command-line options): its tensors are built before.
BUILT_BEFORE = ("tensorflow",)

#: The kinds with the negation bit set (and no conjugation bit): exported by its
#: `__dlpack__` and its exchange table with the values' signs lost, refused by dlbridge.
TORCH_NEGATED_KINDS = (
    "neg_view",
    "neg_view_contiguous",
    "neg_view_scalar",
    "neg_view_detached",
    "neg_view_as_strided",
    "neg_view_complex",
    "neg_view_int64",
)


def make(array):
    """A tensor over a copy of `array`."""
    import torch

    return torch.from_numpy(np.array(array, copy=True))


def consume(obj):
    """`torch.from_dlpack(obj)`."""
    import torch

    return torch.from_dlpack(obj)


def consume_copy(obj):
    """`torch.from_dlpack(obj, copy=True)`."""
    import torch

    return torch.from_dlpack(obj, copy=True)


def to_numpy(result):
    """A result read back, its lazy conjugate and negative bits resolved."""
    return result.detach().resolve_conj().resolve_neg().cpu().numpy()


# ---- CUDA ------------------------------------------------------------------------------------


def make_cuda(array):
    """A tensor on CUDA device 0 holding `array`'s values."""
    import torch

    return torch.from_numpy(np.array(array, copy=True)).to("cuda:0")


def new_cuda_stream():
    """A new stream on device 0: (its handle, the stream)."""
    import torch

    stream = torch.cuda.Stream(device=0)
    return stream.cuda_stream, stream


def current_cuda_stream():
    """The handle of the current stream on device 0."""
    import torch

    return torch.cuda.current_stream(0).cuda_stream


def write_late(tensor, array):
    """About 0.1 s of spinning on the current stream, then `array`'s values into `tensor`."""
    import torch

    source = torch.from_numpy(np.array(array, copy=True)).to("cuda:0")
    torch.cuda._sleep(200_000_000)  # about 0.1 s of spinning on the current stream
    tensor.copy_(source)


# ---- the catalogue ---------------------------------------------------------------------------


def _dtype_maker(torch, dtype):
    """A factory of a (2, 3) tensor of `dtype` with distinct values, or None if torch
    cannot build one."""
    name = str(dtype).split(".")[-1]

    def quantized():
        return torch.quantize_per_tensor(torch.arange(6.0).reshape(2, 3), 0.5, 0, dtype)

    def complex_():
        values = torch.arange(6.0) + 0.5j * torch.arange(6.0).flip(0)
        return values.reshape(2, 3).to(dtype)

    def cast():
        return torch.arange(1, 7).reshape(2, 3).to(dtype)

    def from_bytes():
        size = torch.empty(0, dtype=dtype).element_size()
        raw = torch.arange(1, 6 * size + 1, dtype=torch.uint8)
        return raw.view(dtype).reshape(2, 3)

    if name.startswith("q") and name[1:].startswith(("int", "uint")):
        candidates = [quantized]
    elif dtype.is_complex:
        candidates = [complex_, cast]
    else:
        candidates = [cast, from_bytes]
    for make in candidates:
        if _builds(make):
            return make
    return None


def _builds(make) -> bool:
    """Whether `make()` succeeds (warnings silenced)."""
    try:
        quiet(make)
    except Exception:  # noqa: BLE001 - any failure means "not this way"
        return False
    return True


def kinds() -> list:
    """PyTorch's odd tensors: autograd, sparse, quantized, lazy views, nested, meta, every dtype."""
    import torch

    def requires_grad_leaf():
        return torch.arange(6.0).reshape(2, 3).requires_grad_(True)

    def inference_mode():
        with torch.inference_mode():
            return torch.arange(6.0).reshape(2, 3) * 1

    def quantized_qint8():
        return torch.quantize_per_tensor(torch.arange(6.0).reshape(2, 3), 0.5, 0, torch.qint8)

    entries = [
        (
            "requires_grad_leaf",
            requires_grad_leaf,
            "leaf with requires_grad=True: __dlpack__ refuses (BufferError), the C table exports",
        ),
        (
            "non_leaf",
            lambda: requires_grad_leaf() * 2,
            "non-leaf x*2 of a grad leaf (requires grad, has grad_fn)",
        ),
        (
            "requires_grad_leaf_view",
            lambda: requires_grad_leaf()[0],
            "view x[0] of a grad leaf (a non-leaf view that requires grad)",
        ),
        (
            "non_leaf_view",
            lambda: (requires_grad_leaf() * 2)[:, 1],
            "strided view (x*2)[:, 1] of a non-leaf that requires grad",
        ),
        (
            "parameter",
            lambda: torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)),
            "nn.Parameter (requires grad)",
        ),
        (
            "parameter_no_grad",
            lambda: torch.nn.Parameter(torch.arange(6.0).reshape(2, 3), requires_grad=False),
            "nn.Parameter(requires_grad=False): a Tensor subclass that exports",
        ),
        (
            "sparse_coo",
            lambda: torch.eye(3).to_sparse(),
            "sparse COO layout: refused (BufferError)",
        ),
        (
            "sparse_csr",
            lambda: quiet(lambda: torch.eye(3).to_sparse_csr()),
            "sparse CSR layout: refused (BufferError)",
        ),
        (
            "quantized_qint8",
            lambda: quiet(quantized_qint8),
            "quantize_per_tensor qint8: refused (BufferError), the C table raises RuntimeError",
        ),
        (
            "conj_view",
            lambda: torch.tensor([1 + 2j, 3j]).conj(),
            "complex .conj(): a lazy view with the conjugate bit set, refused (BufferError)",
        ),
        (
            "neg_view",
            lambda: torch.tensor([1 + 2j, 3j]).conj().imag,
            "imag of a conj view: is_neg() True, values [-2, -3]; exported WITHOUT the sign",
        ),
        (
            "neg_view_contiguous",
            lambda: torch.tensor([[1.0, 2.0, 3.0]])._neg_view(),
            (
                "_neg_view() of a float tensor: C-contiguous, is_neg() True, values [-1, -2, -3]; "
                "exported WITHOUT the sign"
            ),
        ),
        (
            "neg_view_scalar",
            lambda: torch.tensor([4.0])._neg_view(),
            "_neg_view() of one element: is_neg() True, value -4; exported WITHOUT the sign",
        ),
        (
            "neg_view_detached",
            lambda: torch.tensor([1.0, 2.0])._neg_view().detach(),
            (
                "detach() keeps the negation bit (and is not a view): values [-1, -2]; exported "
                "WITHOUT the sign"
            ),
        ),
        (
            "neg_view_as_strided",
            lambda: torch.tensor([1 + 2j, 3j]).conj().imag.as_strided((2,), (1,)),
            (
                "as_strided over the imag of a conj view: contiguous, is_neg() True; exported "
                "WITHOUT the sign"
            ),
        ),
        (
            "neg_view_complex",
            lambda: torch.tensor([1 + 2j, 3j])._neg_view(),
            "_neg_view() of a complex tensor: is_neg() True; exported WITHOUT the sign",
        ),
        (
            "neg_view_int64",
            lambda: torch.tensor([1, 2, 3])._neg_view(),
            (
                "_neg_view() of an int64 tensor: is_neg() True (the private API sets the bit on "
                "integers too), values [-1, -2, -3]; exported WITHOUT the sign"
            ),
        ),
        (
            "conj_neg_view",
            lambda: torch.tensor([1 + 2j, 3j]).conj()._neg_view(),
            "both lazy bits on one complex tensor: refused (BufferError, the conjugate bit)",
        ),
        (
            "conj_view_contiguous_real_part",
            lambda: torch.tensor([1 + 2j, 3j]).conj().real,
            "real part of a conj view: no lazy bit (the real part is not negated)",
        ),
        (
            "nested_strided",
            lambda: quiet(lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])),
            "strided nested tensor: refused with RuntimeError (not BufferError)",
        ),
        (
            "nested_jagged",
            lambda: torch.nested.nested_tensor(
                [torch.ones(2, 4), torch.ones(3, 4)], layout=torch.jagged
            ),
            "jagged-layout nested tensor: refused (BufferError)",
        ),
        (
            "meta",
            lambda: torch.empty(2, 3, device="meta"),
            "meta device (no memory): refused (BufferError)",
        ),
        ("zero_size", lambda: torch.empty(0, 3), "shape (0, 3): NULL data pointer"),
        ("zero_dim", lambda: torch.tensor(3.5), "0-d tensor: ndim 0, empty shape and strides"),
        (
            "channels_last",
            lambda: torch.arange(120.0).reshape(2, 3, 4, 5).to(memory_format=torch.channels_last),
            "4-d channels_last: NHWC strides (60, 1, 15, 3)",
        ),
        (
            "expanded",
            lambda: torch.arange(3.0).reshape(3, 1).expand(3, 4),
            "expand of (3, 1) to (3, 4): stride 0",
        ),
        (
            "storage_offset",
            lambda: torch.arange(10.0)[3:],
            "arange(10.)[3:]: storage offset 3, data points past the storage start",
        ),
        (
            "flip",
            lambda: torch.arange(4.0).flip(0),
            "flip(0): torch copies (no negative strides in torch)",
        ),
        (
            "transposed",
            lambda: torch.arange(6.0).reshape(2, 3).t(),
            ".t(): column-major strides (1, 3)",
        ),
        (
            "inference_mode",
            inference_mode,
            "made under torch.inference_mode(): an inference tensor",
        ),
    ]
    dtypes = {}
    for attribute in dir(torch):
        value = getattr(torch, attribute)
        if isinstance(value, torch.dtype):
            dtypes[str(value).split(".")[-1]] = value
    for name in sorted(dtypes):
        make = _dtype_maker(torch, dtypes[name])
        if make is None:
            continue
        entries.append((f"dtype_{name}", quietly(make), f"a (2, 3) tensor of torch.{name}"))
    return kind_list("torch", entries)
