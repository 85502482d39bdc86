"""safetensors files: model weights mapped once and handed to any DLPack consumer without a
copy, and files written from the tensors of any framework.

>>> import os, tempfile, numpy as np, dlbridge.safetensors as st
>>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
>>> st.save(path, {"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, {"format": "np"})
>>> weights = st.load(path)
>>> np.from_dlpack(weights["w"])
array([[0., 1., 2.],
       [3., 4., 5.]], dtype=float32)
>>> st.metadata(path)
{'format': 'np'}

- `load(path)` maps the file (privately, copy-on-write) and checks its header against every
  rule of the format; each tensor is a `dlbridge.Tensor` over the mapping, with no copy, which
  `torch.from_dlpack`, `np.from_dlpack` and every other DLPack consumer take as it is. Nothing
  of the data is read until a consumer touches it: the process's resident memory grows by the
  pages read, not by the file's size. The tensors are read-only (flagged READ_ONLY) unless
  `writable=True`.
- `metadata(path)` is the file's `__metadata__`.
- `save(path, tensors, metadata)` writes any host tensors (NumPy, PyTorch, JAX, dlbridge, any
  object with `__dlpack__`, or a DLPack capsule; strided ones row-major through one compact
  copy) into a new file beside `path`, which then replaces `path` by a rename.

Every safetensors data type has a DLPack one: BOOL, U8-U64, I8-I64, F16, BF16, F32, F64, C64,
and F8_E4M3, F8_E5M2, F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0, F6_E2M3, F6_E3M2, F4 (the last three
packed). DLPack types the format cannot name (`complex128`, `float8_e3m4`, ...) are refused by
`save` with the tensor's name.

The mapping's one rule: **the file must not be truncated or overwritten in place** while any
tensor `load` returned (or any tensor a consumer made of one) is alive, in this process or
another. A truncated file's pages cannot be read at all (the process is killed with SIGBUS),
and bytes written into the file in place show through the tensors. Writers that replace the
file by a rename are safe: this module's `save` and the `safetensors` package's `save_file`
(0.8: a temporary file beside it, renamed) both do; the old file's bytes stay mapped until
its last tensor goes. Writes into a `writable=True` tensor are this process's own
(copy-on-write pages) and never reach the file.

Errors: a file that breaks a rule of the format (offsets past the end, a truncated file, a
header that lies about a size or a type, overlapping tensors...) is refused as a whole with a
`ValueError` naming the tensor, the field and the value; so is a tensor `save` cannot write.
An I/O error is the `OSError` subclass of its errno (`FileNotFoundError`, `PermissionError`,
`IsADirectoryError`...), its `filename` the file's path. Names and metadata that are not `str`
are a `TypeError`.
"""

from __future__ import annotations

import errno
import importlib
import os
from collections.abc import Mapping
from typing import Any, Union

from . import Tensor

__all__ = ["load", "metadata", "save"]

# The extension's functions (private: `dlbridge._dlbridge` has no stubs of its own).
_extension: Any = importlib.import_module("dlbridge._dlbridge")
_load = _extension._safetensors_load
_metadata = _extension._safetensors_metadata
_save = _extension._safetensors_save

# A file's path: a `str` or an `os.PathLike` (`pathlib.Path`).
_PathArg = Union[str, "os.PathLike[str]"]


def load(path: _PathArg, *, writable: bool = False) -> dict[str, Tensor]:
    """The tensors of the safetensors file at `path`, by name, in the order of their bytes in
    the file: each a `dlbridge.Tensor` (CPU, versioned DLPack) over a private, copy-on-write
    mapping of the file, with no copy; the mapping lives until the last tensor over it goes.

    `writable=False` (the default): the tensors are flagged READ_ONLY, and consumers that
    honour the flag make read-only arrays (`np.from_dlpack` does). `writable=True`: they are
    not, and writes into them change this process's copy of the pages only, never the file.

    The file must not be truncated or overwritten in place while the tensors live (see the
    module's documentation); replacing it by a rename is safe. `ValueError` for a file that
    breaks a rule of the format, naming the tensor, the field and the value; the `OSError`
    subclass of the error (`FileNotFoundError`...) where it cannot be opened or mapped.
    """
    return _load(_file(path), bool(writable))


def metadata(path: _PathArg) -> dict[str, str]:
    """The `__metadata__` of the safetensors file at `path`, in the file's order (`{}` when it
    has none). The header is read and checked as `load` checks it; the data is not read.
    `ValueError` for a file that breaks a rule of the format, the `OSError` subclass of the
    error where it cannot be opened."""
    return _metadata(_file(path))


def save(
    path: _PathArg,
    tensors: Mapping[str, Any],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Writes `tensors` (name -> any host tensor: an object with `__dlpack__`, such as a NumPy
    array, a PyTorch or JAX tensor or a `dlbridge.Tensor`, or a DLPack capsule) and `metadata`
    (the file's `__metadata__`) as a safetensors file at `path`.

    Each tensor is imported as `dlbridge.from_dlpack` imports it (no copy; a strided one is
    written row-major through one compact copy), and the file is laid out so that every
    tensor starts aligned for its type (largest alignment first, then by name). It is written
    to a new file beside `path`, which then replaces `path` by a rename: tensors mapped from
    the old file (`load`) stay valid, and a failed write leaves `path` as it was.

    `TypeError` for a name or a metadata key or value that is not a `str`, or `tensors` or
    `metadata` not a mapping; an import's error (`BufferError`, `TypeError`...) with the
    tensor's name; `ValueError` for a tensor the format cannot hold (a data type it cannot
    name, such as `complex128`; device memory; the reserved name `__metadata__`), naming it;
    the `OSError` subclass of an I/O error.
    """
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"tensors must be a mapping of names to tensors, got {type(tensors).__name__}"
        )
    entries = []
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {type(name).__name__} {name!r}")
        entries.append((name, tensor))
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping of str to str, got {type(metadata).__name__}")
    pairs = []
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise TypeError(f"metadata keys must be str, got {type(key).__name__} {key!r}")
        if not isinstance(value, str):
            raise TypeError(
                f"metadata values must be str, got {type(value).__name__} for key {key!r}"
            )
        pairs.append((key, value))
    _save(_path(path), entries, pairs)


def _file(path: _PathArg) -> str:
    """`path` as `_path` gives it, refused with `IsADirectoryError` when it names a directory
    (which the system would open, and then refuse to map with a less telling error)."""
    path = _path(path)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, f"cannot open: {os.strerror(errno.EISDIR)}", path)
    return path


def _path(path: _PathArg) -> str:
    """`path` as a `str`: a `str` or an `os.PathLike` (a bytes path is decoded as the file
    system encodes names); `TypeError` for anything else."""
    if isinstance(path, str):
        return path
    try:
        fspath = os.fspath(path)
    except TypeError:
        raise TypeError(
            f"path must be a str or an os.PathLike, got {type(path).__name__}"
        ) from None
    return os.fsdecode(fspath)
