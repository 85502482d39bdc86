"""Type stubs for dlbridge."""

from collections.abc import Sequence
from typing import Any

DLPACK_VERSION: tuple[int, int]
FLAG_READ_ONLY: int
FLAG_IS_COPIED: int
FLAG_IS_SUBBYTE_TYPE_PADDED: int

Device = tuple[int, int]
Shape = int | Sequence[int]

class Tensor:
    """A tensor held by dlbridge, imported zero-copy from any DLPack producer or created in
    Rust memory."""

    def __dlpack__(
        self,
        *,
        stream: Any | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Device | None = None,
        copy: bool | None = None,
    ) -> Any: ...
    def __dlpack_device__(self) -> Device: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def device(self) -> Device: ...
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
    def __buffer__(self, flags: int, /) -> memoryview: ...

def from_dlpack(x: Any, /, *, device: Device | None = None, copy: bool | None = None) -> Tensor: ...
def empty(shape: Shape, dtype: str = "float32") -> Tensor: ...
def zeros(shape: Shape, dtype: str = "float32") -> Tensor: ...
def arange(n: int, dtype: str = "int64") -> Tensor: ...
def explain(x: Any, /, *, device: Device | None = None, copy: bool | None = None) -> dict[str, Any]:
    """What dlbridge does with `x`: `type`; `import`, what `from_dlpack(x, device=device,
    copy=copy)` does (done for real, released at once): `path`, `negotiation`, `copied`,
    `copied_by`, `version`, `dtype`, `shape`, `strides`, `device`, `read_only`; `argument` and
    `writable_argument`, how a kernel's typed arguments read it. Each entry is
    `{"refused": "ExceptionType: message"}` where that step raises."""
