"""A catalogue of the odd tensors each framework can produce; what the framework's own
`__dlpack__` hands out for each of them is read by `capsules.reference`, without dlbridge.

It drives differential tests (dlbridge's fast import paths against the framework's
`__dlpack__`) and rules of `dlbridge check`.

- `kinds(framework)` lists `Kind`s: a name, a factory that builds a fresh tensor object
  each call, and a one-line note. It imports the framework (and nothing else of the
  others): TensorFlow and PaddlePaddle crash when imported into one process, so run one
  framework's kinds per process.
- `python -m dlbridge.check.catalogue FRAMEWORK` prints the kind -> result table.

Nothing but the standard library and `capsules` is imported at module level.

Findings (torch 2.15, numpy 2.4, jax 0.10.2, tensorflow 2.21, paddle 3.3.1, pyarrow 26.0.1;
all on CPU):

- torch `neg_view` (`torch.tensor([1+2j, 3j]).conj().imag`, `is_neg()` True, values
  [-2, -3]) is exported WITHOUT error and without its negative bit: the capsule describes
  the memory [2, 3] (float32, stride 2 into the complex storage). A consumer silently gets
  the wrong sign. So are the C-contiguous negated views (`x._neg_view()`, of one element
  or many, real or complex, and after `detach()` or `as_strided`), which no layout gives
  away. The conjugate bit, by contrast, is refused (BufferError).
- torch strided `nested_tensor` raises RuntimeError ("Internal error: NestedTensorImpl
  doesn't support sizes"), not BufferError; jagged nested, sparse COO/CSR raise BufferError
  ("layout other than torch.strided").
- torch exports its sub-byte integer "shell" dtypes int1..int7 / uint1..uint7 (one byte per
  element in memory) as plain int8 / uint8 (code 0/1, bits 8): the dtype identity is lost.
  float4_e2m1fn_x2 is exported as code 17 (float4_e2m1fn), bits 4, lanes 2: one byte per
  element (two packed fp4 values). bits8/bits16/bits*x* and bcomplex32 are refused with
  BufferError; all quantized dtypes (qint8, quint8, qint32, quint4x2, quint2x4) too.
  complex32 is exported as (code 5, bits 32).
- torch zero-size tensors have a NULL data pointer; torch `flip` copies (positive strides).
- numpy masked arrays export their data with the mask ignored (masked slots come through
  as ordinary values); np.matrix exports as a plain 2-d array; the unaligned float64 view
  exports a data pointer that is not 8-byte aligned (address % 8 == 1).
  A field of packed (i4, f8) records (byte stride 12) is refused: numpy only exports
  strides that are a multiple of the itemsize.
  Read-only and broadcast arrays carry READ_ONLY on the versioned path and are refused
  (BufferError) on the legacy path. Zero-size arrays come with strides (0, 0); 0-d ones with
  NULL shape and strides. numpy writes version 1.0.
- jax always returns a legacy `dltensor` (even for max_version=(1, 3)). int4/uint4 are
  refused with `JaxRuntimeError` ("UNIMPLEMENTED: XLA type S4 has no DLPack equivalent"),
  not BufferError. float4_e2m1fn is exported as (17, 4, 1) over PACKED memory (two values
  per byte, low nibble first) in a legacy capsule. jax `x.T` is materialized (compact).
- tensorflow returns legacy capsules; zero-size tensors have a NULL data pointer. float8 and
  int4 are refused with `InvalidArgumentError` (not BufferError). `tf.Variable` has no
  `__dlpack__` at all (AttributeError); its `.value()` does. `__dlpack__` on a string tensor
  aborts the process (TF CHECK failure), so no string tensor is catalogued.
- paddle's `__dlpack_device__` returns `device_id=None` for CPU; the capsule says 0. A
  strided view is exported with byte_offset 0 and `data` pointing at its first element.
  Zero-size tensors: NULL data and strides (0, 3) for shape (0, 3). Tensors that require
  gradients are refused with BufferError.
- pyarrow arrays are always exported READ_ONLY, tensors from writable numpy arrays are not.
  Arrays with nulls, boolean (bit-packed) arrays and non-numeric types are refused with
  `ArrowTypeError`, which is a subclass of TypeError: a consumer following the protocol
  reads it as "old producer" and retries without max_version, gets the same error again
  (and pyarrow warns DeprecationWarning on every legacy export). An array whose nulls were
  sliced away exports fine. `ChunkedArray` has no `__dlpack__`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .capsules import reference

#: The NumPy dtypes catalogued as one kind each (`dtype_<name>`).
NUMPY_DTYPES = (
    "bool",
    *(f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)),
    *("float16", "float32", "float64", "complex64", "complex128"),
)

FRAMEWORKS = ("torch", "numpy", "jax", "tensorflow", "paddle", "pyarrow", "dlbridge")

#: PyTorch's kinds with the negation bit set (and no conjugation bit): exported by its
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


@dataclass(frozen=True)
class Kind:
    """One odd tensor of a framework.

    `make()` builds a fresh tensor object on every call; `note` says in one line what it is
    and why it is interesting.
    """

    framework: str
    name: str
    make: Callable[[], object]
    note: str


# --------------------------------------------------------------------------------------------
# The catalogue.
# --------------------------------------------------------------------------------------------


def kinds(framework: str) -> list:
    """The catalogued kinds of `framework` (one of FRAMEWORKS); imports that framework.

    Raises ValueError for an unknown framework name.
    """
    try:
        factory = _FACTORIES[framework]
    except KeyError:
        raise ValueError(
            f"unknown framework {framework!r} (known: {', '.join(FRAMEWORKS)})"
        ) from None
    return factory()


def _kind_list(framework: str, entries) -> list:
    return [Kind(framework, name, make, note) for name, make, note in entries]


# -- torch ------------------------------------------------------------------------------------


def _torch_dtype_maker(torch, dtype):
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
        _quiet(make)
    except Exception:  # noqa: BLE001 - any failure means "not this way"
        return False
    return True


def _torch_kinds() -> list:
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
            lambda: _quiet(lambda: torch.eye(3).to_sparse_csr()),
            "sparse CSR layout: refused (BufferError)",
        ),
        (
            "quantized_qint8",
            lambda: _quiet(quantized_qint8),
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
            lambda: _quiet(lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])),
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
        make = _torch_dtype_maker(torch, dtypes[name])
        if make is None:
            continue
        entries.append((f"dtype_{name}", _quietly(make), f"a (2, 3) tensor of torch.{name}"))
    return _kind_list("torch", entries)


def _quiet(make):
    """`make()` with warnings (beta/prototype/deprecation notices) silenced."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


def _quietly(make):
    return lambda: _quiet(make)


# -- numpy ------------------------------------------------------------------------------------


def _numpy_kinds() -> list:
    import numpy as np

    def read_only():
        a = np.arange(6.0).reshape(2, 3)
        a.flags.writeable = False
        return a

    def structured():
        return np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])

    def unaligned():
        buffer = b"\x00" + np.arange(4.0).tobytes()
        return np.frombuffer(buffer, dtype=np.float64, count=4, offset=1)

    entries = [
        (
            "read_only",
            read_only,
            "writeable=False: READ_ONLY on the versioned path, refused on the legacy path",
        ),
        (
            "byte_swapped",
            lambda: np.arange(6, dtype=">f4").reshape(2, 3),
            "big-endian '>f4': refused (BufferError, native byte order only)",
        ),
        ("structured", structured, "structured dtype: refused (BufferError)"),
        (
            "object",
            lambda: np.array([1, "a", None], dtype=object),
            "object dtype: refused (BufferError)",
        ),
        ("negative_strides", lambda: np.arange(5.0)[::-1], "a[::-1]: stride -1"),
        (
            "broadcast",
            lambda: np.broadcast_to(np.arange(3.0), (4, 3)),
            "np.broadcast_to: stride 0 and read-only",
        ),
        ("zero_size", lambda: np.empty((0, 3)), "shape (0, 3): numpy sends strides (0, 0)"),
        ("zero_dim", lambda: np.array(3.5), "0-d array: NULL shape and strides"),
        (
            "longdouble",
            lambda: np.arange(3, dtype=np.longdouble),
            "longdouble (x87 80-bit in 16 bytes): refused (BufferError)",
        ),
        (
            "datetime64",
            lambda: np.arange(3).astype("datetime64[s]"),
            "datetime64: refused (BufferError)",
        ),
        ("unicode", lambda: np.array(["ab", "c"]), "unicode '<U2': refused (BufferError)"),
        (
            "masked_array",
            lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
            "np.ma masked array: exports its data, the mask is ignored",
        ),
        (
            "matrix",
            lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
            "np.matrix subclass: exports as a plain 2-d array",
        ),
        (
            "recarray",
            lambda: structured().view(np.recarray),
            "recarray view of a structured array: refused (BufferError)",
        ),
        (
            "recarray_field",
            lambda: structured().view(np.recarray).b,
            "float64 field of packed (i4, f8) records: byte stride 12, refused (BufferError)",
        ),
        (
            "recarray_field_aligned",
            lambda: np.rec.fromarrays([np.arange(3.0), np.arange(3.0) + 10], names="a,b").b,
            "float64 field of (f8, f8) records: stride 2 (elements), data 8 bytes in",
        ),
        (
            "unaligned_float64",
            unaligned,
            "float64 from a bytes buffer at offset 1: misaligned data, read-only (bytes)",
        ),
        (
            "fortran_order",
            lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
            "Fortran-ordered (2, 3): strides (1, 2)",
        ),
        (
            "noncontiguous_slice",
            lambda: np.arange(20.0).reshape(4, 5)[::2, 1:4],
            "a[::2, 1:4] of (4, 5): strides (10, 1), data past the buffer start",
        ),
    ]
    for name in NUMPY_DTYPES:

        def make(name=name):
            values = np.arange(1, 7).reshape(2, 3)
            if name.startswith("complex"):
                values = values + 0.5j * values[::-1, ::-1]
            return values.astype(name)

        entries.append((f"dtype_{name}", make, f"a (2, 3) array of {name}"))
    return _kind_list("numpy", entries)


# -- jax --------------------------------------------------------------------------------------


def _jax_kinds() -> list:
    import jax.numpy as jnp

    entries = [
        (
            "float32_2d",
            lambda: jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3),
            "(2, 3) float32: jax always returns a legacy capsule (read-only by default)",
        ),
        (
            "bfloat16",
            lambda: jnp.arange(6.0).astype(jnp.bfloat16).reshape(2, 3),
            "bfloat16 (code 4)",
        ),
        ("zero_dim", lambda: jnp.array(3.5, dtype=jnp.float32), "0-d: NULL shape and strides"),
        (
            "zero_size",
            lambda: jnp.zeros((0, 3), dtype=jnp.float32),
            "shape (0, 3): non-NULL data, strides (3, 1)",
        ),
        ("bool", lambda: jnp.array([True, False, True]), "bool (code 6, bits 8)"),
        ("int8", lambda: jnp.arange(6, dtype=jnp.int8).reshape(2, 3), "int8"),
        (
            "transposed",
            lambda: jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3).T,
            "x.T: jax materializes it, compact (3, 2)",
        ),
        ("complex64", lambda: (jnp.arange(3.0) + 0.5j).astype(jnp.complex64), "complex64"),
    ]
    for name, note in [
        ("float8_e4m3fn", "float8_e4m3fn (code 10)"),
        ("float8_e5m2", "float8_e5m2 (code 12)"),
        ("float4_e2m1fn", "float4_e2m1fn: (17, 4, 1) over packed memory, legacy capsule"),
        ("int4", "int4: refused with JaxRuntimeError (not BufferError)"),
    ]:
        dtype = getattr(jnp, name, None)
        if dtype is None:
            continue

        def make(dtype=dtype, name=name):
            if name.startswith("float"):
                return jnp.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0]).astype(dtype)
            return jnp.arange(6).astype(dtype)

        entries.append((name, make, note))
    return _kind_list("jax", entries)


# -- tensorflow -------------------------------------------------------------------------------


def _tensorflow_kinds() -> list:
    import tensorflow as tf

    # Never a string tensor here: __dlpack__ on one aborts the process (a TF CHECK failure).
    entries = [
        (
            "float32_2d",
            lambda: tf.reshape(tf.range(6.0), (2, 3)),
            "(2, 3) float32: tensorflow returns a legacy capsule",
        ),
        ("zero_dim", lambda: tf.constant(3.5), "0-d: NULL shape and strides"),
        ("zero_size", lambda: tf.zeros((0, 3)), "shape (0, 3): NULL data pointer"),
        ("bool", lambda: tf.constant([True, False, True]), "bool"),
        ("int64", lambda: tf.range(6, dtype=tf.int64), "int64"),
        ("bfloat16", lambda: tf.cast(tf.range(6.0), tf.bfloat16), "bfloat16 (code 4)"),
        (
            "variable_value",
            lambda: tf.Variable([[1.0, 2.0], [3.0, 4.0]]).value(),
            "tf.Variable(...).value(): an EagerTensor over the variable's buffer",
        ),
        (
            "variable",
            lambda: tf.Variable([[1.0, 2.0], [3.0, 4.0]]),
            "tf.Variable itself: no __dlpack__ at all (AttributeError)",
        ),
        (
            "transposed",
            lambda: tf.transpose(tf.reshape(tf.range(6.0), (2, 3))),
            "tf.transpose: materialized, compact",
        ),
        ("complex64", lambda: tf.complex(tf.range(3.0), tf.range(3.0) + 0.5), "complex64"),
        ("uint64", lambda: tf.constant([1, 2, 3], dtype=tf.uint64), "uint64"),
    ]
    experimental = getattr(tf.dtypes, "experimental", None)
    for name, note in [
        ("float8_e4m3fn", "float8_e4m3fn: refused with InvalidArgumentError (not BufferError)"),
        ("int4", "int4: refused with InvalidArgumentError (not BufferError)"),
    ]:
        dtype = getattr(experimental, name, None) if experimental is not None else None
        if dtype is None:
            continue

        def make(dtype=dtype, name=name):
            return tf.cast(tf.range(6.0) if name.startswith("float") else tf.range(6), dtype)

        entries.append((name, make, note))
    return _kind_list("tensorflow", entries)


# -- paddle -----------------------------------------------------------------------------------


def _paddle_kinds() -> list:
    import paddle

    def grad_leaf():
        x = paddle.arange(6, dtype="float32").reshape([2, 3])
        x.stop_gradient = False
        return x

    def int_grad():
        x = paddle.arange(6)
        x.stop_gradient = False
        return x

    entries = [
        (
            "stop_gradient_false_leaf",
            grad_leaf,
            "leaf with stop_gradient=False: refused (BufferError)",
        ),
        ("non_leaf", lambda: grad_leaf() * 2, "x*2 of a grad leaf: refused (BufferError)"),
        (
            "plain",
            lambda: paddle.arange(6, dtype="float32").reshape([2, 3]),
            "(2, 3) float32; __dlpack_device__ says device_id None",
        ),
        (
            "strided_view",
            lambda: paddle.arange(12, dtype="float32").reshape([3, 4])[:, 1:3],
            "x[:, 1:3]: strides (4, 1), data points at the first element",
        ),
        ("zero_size", lambda: paddle.zeros([0, 3]), "shape (0, 3): NULL data, strides (0, 3)"),
        ("zero_dim", lambda: paddle.to_tensor(3.5), "0-d"),
        (
            "bfloat16",
            lambda: paddle.arange(6, dtype="float32").astype("bfloat16"),
            "bfloat16 (code 4)",
        ),
        ("bool", lambda: paddle.to_tensor([True, False, True]), "bool"),
        ("complex64", lambda: paddle.to_tensor([1 + 2j, 3j], dtype="complex64"), "complex64"),
        ("int64", lambda: paddle.arange(6), "int64"),
        (
            "int64_stop_gradient_false",
            int_grad,
            (
                "an int64 tensor with stop_gradient=False (PaddlePaddle allows it, unlike "
                "PyTorch for integer tensors): refused (BufferError)"
            ),
        ),
        (
            "transposed",
            lambda: paddle.arange(6, dtype="float32").reshape([2, 3]).t(),
            ".t(): a strided view with strides (1, 3)",
        ),
        (
            "float8_e4m3fn",
            lambda: paddle.arange(6, dtype="float32").astype("float8_e4m3fn"),
            "float8_e4m3fn (code 10)",
        ),
    ]
    return _kind_list("paddle", entries)


# -- pyarrow ----------------------------------------------------------------------------------


def _pyarrow_kinds() -> list:
    import numpy as np
    import pyarrow as pa

    entries = [
        (
            "float64",
            lambda: pa.array([1.0, 2.0, 3.0]),
            "pa.array float64 without nulls: always READ_ONLY",
        ),
        ("int32", lambda: pa.array([1, 2, 3], type=pa.int32()), "pa.array int32"),
        (
            "with_nulls",
            lambda: pa.array([1.0, None, 3.0]),
            "an array with nulls: refused with ArrowTypeError (a TypeError subclass)",
        ),
        (
            "tensor",
            lambda: pa.Tensor.from_numpy(np.arange(6.0).reshape(2, 3)),
            "pa.Tensor over a writable numpy array: no READ_ONLY",
        ),
        (
            "tensor_transposed",
            lambda: pa.Tensor.from_numpy(np.arange(6.0).reshape(2, 3).T),
            "pa.Tensor over a Fortran-ordered view: strides (1, 3)",
        ),
        (
            "tensor_read_only",
            lambda: pa.Tensor.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3))),
            "pa.Tensor over a broadcast (read-only, stride 0) numpy view",
        ),
        (
            "bool",
            lambda: pa.array([True, False, True]),
            "bit-packed boolean array: refused with ArrowTypeError",
        ),
        (
            "sliced",
            lambda: pa.array([1.0, 2.0, 3.0, 4.0, 5.0]).slice(2),
            "slice(2): an array offset, data points past the buffer start",
        ),
        (
            "nulls_sliced_away",
            lambda: pa.array([None, 1.0, 2.0]).slice(1),
            "a slice without the null of an array with a validity bitmap: exports",
        ),
        ("empty", lambda: pa.array([], type=pa.float64()), "length 0: NULL data"),
        ("string", lambda: pa.array(["a", "b"]), "string array: refused with ArrowTypeError"),
        (
            "chunked_array",
            lambda: pa.chunked_array([[1.0, 2.0], [3.0]]),
            "ChunkedArray: no __dlpack__ (AttributeError)",
        ),
    ]
    return _kind_list("pyarrow", entries)


def _dlbridge_kinds() -> list:
    import numpy as np

    import dlbridge

    def read_only():
        array = np.arange(6.0).reshape(2, 3)
        array.flags.writeable = False
        return dlbridge.from_dlpack(array)

    entries = [
        ("rust_owned", lambda: dlbridge.arange(6, "float32"), "Rust-owned memory: writable"),
        (
            "from_numpy",
            lambda: dlbridge.from_dlpack(np.arange(6.0).reshape(2, 3)),
            "a NumPy array imported zero-copy: writable",
        ),
        (
            "from_read_only_numpy",
            read_only,
            "a read-only NumPy array imported: READ_ONLY on re-export, never writable",
        ),
        (
            "from_legacy_capsule",
            lambda: dlbridge.from_dlpack(np.arange(4.0).__dlpack__()),
            (
                "imported from a legacy capsule (which cannot say its memory may be written): "
                "read-only"
            ),
        ),
        (
            "negative_strides",
            lambda: dlbridge.from_dlpack(np.arange(5.0)[::-1]),
            "a reversed NumPy view: stride -1",
        ),
        ("zero_size", lambda: dlbridge.zeros((0, 3)), "no elements"),
        ("zero_dim", lambda: dlbridge.from_dlpack(np.array(3.0)), "0-d"),
        ("bfloat16", lambda: dlbridge.arange(4, "bfloat16"), "bfloat16 (no buffer format)"),
        ("float8_e4m3fn", lambda: dlbridge.arange(4, "float8_e4m3fn"), "float8"),
    ]
    return _kind_list("dlbridge", entries)


_FACTORIES = {
    "torch": _torch_kinds,
    "numpy": _numpy_kinds,
    "jax": _jax_kinds,
    "tensorflow": _tensorflow_kinds,
    "paddle": _paddle_kinds,
    "pyarrow": _pyarrow_kinds,
    "dlbridge": _dlbridge_kinds,
}
assert tuple(_FACTORIES) == FRAMEWORKS


# --------------------------------------------------------------------------------------------
# The table (`python -m dlbridge.check.catalogue FRAMEWORK`).
# --------------------------------------------------------------------------------------------


def table(framework: str, *, max_version=(1, 3)) -> list:
    """[(kind name, one-line result)] for every kind of `framework` (builds and reads each)."""
    rows = []
    for kind in kinds(framework):
        try:
            obj = kind.make()
        except Exception as error:  # noqa: BLE001
            rows.append((kind.name, f"BUILD FAILED {type(error).__name__}: {error}"))
            continue
        result = reference(obj, max_version=max_version)
        line = result.summary()
        if result.first_error:
            line += f"  [retried after {result.first_error.splitlines()[0][:60]}]"
        rows.append((kind.name, line))
        del obj, result
    return rows


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m dlbridge.check.catalogue",
        description="Build every catalogued kind of one framework and read its __dlpack__.",
    )
    parser.add_argument("framework", choices=FRAMEWORKS)
    parser.add_argument("--legacy", action="store_true", help="ask for a legacy capsule")
    args = parser.parse_args(argv)
    rows = table(args.framework, max_version=None if args.legacy else (1, 3))
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
