"""Type stubs for dlbridge (checked against the built extension by `make stubtest`)."""

import sys
from collections.abc import Sequence
from typing import Any, ClassVar, SupportsIndex, final

__all__ = [
    "DLPACK_VERSION",
    "FLAG_IS_COPIED",
    "FLAG_IS_SUBBYTE_TYPE_PADDED",
    "FLAG_READ_ONLY",
    "Tensor",
    "arange",
    "empty",
    "explain",
    "from_dlpack",
    "zeros",
]

__version__: str

DLPACK_VERSION: tuple[int, int]
FLAG_READ_ONLY: int
FLAG_IS_COPIED: int
FLAG_IS_SUBBYTE_TYPE_PADDED: int

# Type aliases of the stubs only (private: the module has no such names at run time).
_Device = tuple[int, int]
_Shape = int | Sequence[int]

@final
class Tensor:
    """A tensor held by dlbridge, imported zero-copy from any DLPack producer or created in
    Rust memory."""

    __dlpack_c_exchange_api__: ClassVar[Any]
    """DLPack 1.3's C exchange table of the type: a PyCapsule named `dlpack_exchange_api`."""
    __dlbridge_writability__: ClassVar[Any]
    """dlbridge's writability hook for other dlbridge-pyo3 modules: a PyCapsule named
    `dlbridge_writability_v2` (the descriptor and its writability in one answer)."""

    def __dlpack__(
        self,
        *,
        stream: Any | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: _Device | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> _Device: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> _Device: ...
    @property
    def readonly(self) -> bool:
        """Flagged READ_ONLY, or imported from a legacy capsule (which cannot say that its
        memory may be written)."""
    @property
    def data_ptr(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def version(self) -> tuple[int, int] | None: ...
    @property
    def flags(self) -> int: ...
    def copy(self) -> Tensor: ...
    def __copy__(self) -> Tensor:
        """`copy.copy`: as `copy()`, an independent, writable, C-contiguous copy."""
    def __deepcopy__(self, memo: Any, /) -> Tensor:
        """`copy.deepcopy`: as `copy()`."""
    def __reduce_ex__(self, protocol: SupportsIndex, /) -> tuple[Any, ...]:
        """Pickling: from protocol 5 on the bytes go out-of-band as a `pickle.PickleBuffer`
        over the tensor's memory (no copy of a C-contiguous tensor), before it in-band as a
        copy; dtype, shape, read-only-ness and sub-byte padding travel, strides do not (the
        tensor comes back C-contiguous). A tensor the host cannot read raises `TypeError`.
        Unpickled from protocol 5, the tensor is a view of the buffer handed back (read-only
        when that buffer is, as Ray's object store's are), copied only when the buffer is
        misaligned or strided."""
    if sys.version_info >= (3, 12):
        # The buffer protocol (PEP 688): a Python-level method from 3.12 on.
        def __buffer__(self, flags: int, /) -> memoryview: ...

def from_dlpack(
    x: Any,
    /,
    *,
    device: _Device | None = None,
    copy: bool | None = None,
    stream: int | None = None,
    legacy_writable: bool = False,
) -> Tensor:
    """Imports any DLPack producer or capsule, zero-copy where it can. `legacy_writable=True`
    is the caller's promise that the producer allows writes to the memory of a legacy
    capsule (which cannot say so itself, and is read-only in dlbridge otherwise), as MXNet's
    `to_dlpack_for_write` does; versioned tensors keep what their flags say."""

def empty(shape: _Shape, dtype: str = "float32") -> Tensor: ...
def zeros(shape: _Shape, dtype: str = "float32") -> Tensor: ...
def arange(n: int, dtype: str = "int64") -> Tensor: ...
def explain(
    x: Any,
    /,
    *,
    device: _Device | None = None,
    copy: bool | None = None,
    stream: int | None = None,
    legacy_writable: bool = False,
) -> dict[str, Any]:
    """What dlbridge does with `x`: `type`; `import`, what `from_dlpack(x, device=device,
    copy=copy, stream=stream)` does (done for real, released at once): `path`, `negotiation`,
    `copied`, `copied_by`, `version`, `dtype`, `shape`, `strides`, `device`, `read_only`,
    `ready_stream`, `writability` (why it is writable or read-only); `argument` and
    `writable_argument`, how a kernel's typed arguments read it; `rebuilt`, for a Tensor
    rebuilt from a pickle or a frame (Ray, Dask), `from`, `shared` (a view of the buffer it
    arrived in, or a copy) and `reason`, else None.
    Each entry is `{"refused": "ExceptionType: message"}` where that step raises."""
