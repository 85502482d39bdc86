"""What a producer hands out, read through ctypes without dlbridge.

- Tensor capsules: `read_capsule` decodes an unconsumed capsule's fields, `consume_capsule`
  and `release` take it over as a consumer does.
- The reference reader: `reference(obj)` calls `obj.__dlpack__(max_version=...)` (retrying
  `obj.__dlpack__()` on TypeError, as a consumer does for old producers), reads the capsule,
  gathers the element bytes in row-major order through the strides, then takes ownership
  (renames the capsule to `used_*`) and calls the deleter once. It returns `Exported` or,
  when `__dlpack__` raised, `Refused`. `normalized_strides(shape, strides)` makes strides
  comparable (DLPack allows any stride on an extent-1 dimension and any strides on a
  zero-size tensor).
- The C exchange table a type publishes: its capsule (`capsule_table`), the first table of
  major version 1 along `prev_api`, its members as callables, and the release of the tensors
  it hands out.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from . import capi
from .abi import (
    EXCHANGE_PROTOTYPES,
    FLAG_IS_COPIED,
    FLAG_IS_SUBBYTE_TYPE_PADDED,
    FLAG_READ_ONLY,
    HOST_DEVICES,
    NAME_EXCHANGE_API,
    NAME_LEGACY,
    NAME_USED_LEGACY,
    NAME_USED_VERSIONED,
    NAME_VERSIONED,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackExchangeAPI,
    compact_strides,
)

# ---- tensor capsules ----------------------------------------------------------------------


def is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def capsule_name(capsule) -> bytes | None:
    return capi.PyCapsule_GetName(capsule)


def read_capsule(capsule) -> dict:
    """Decode the managed tensor inside an unconsumed `dltensor[_versioned]` capsule."""
    name = capi.PyCapsule_GetName(capsule)
    pointer = capi.PyCapsule_GetPointer(capsule, name)
    if name == NAME_VERSIONED:
        managed = DLManagedTensorVersioned.from_address(pointer)
        version = (managed.version.major, managed.version.minor)
        flags = managed.flags
    elif name == NAME_LEGACY:
        managed = DLManagedTensor.from_address(pointer)
        version, flags = None, None
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    t = managed.dl_tensor
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim)) if t.shape else None
    strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else None
    return {
        "name": name,
        "address": pointer,
        "version": version,
        "flags": flags,
        "data": t.data,
        "byte_offset": t.byte_offset,
        "device": (t.device.device_type, t.device.device_id),
        "ndim": ndim,
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": shape,
        "strides": strides,
        "has_deleter": bool(managed.deleter),
        "manager_ctx": managed.manager_ctx,
    }


def consume_capsule(capsule):
    """Take ownership as a consumer: rename to used_* and return (pointer, deleter, name).

    The caller must call `release(pointer, deleter)` exactly once.
    """
    name = capi.PyCapsule_GetName(capsule)
    pointer = capi.PyCapsule_GetPointer(capsule, name)
    if name == NAME_VERSIONED:
        deleter = DLManagedTensorVersioned.from_address(pointer).deleter
        used = NAME_USED_VERSIONED
    elif name == NAME_LEGACY:
        deleter = DLManagedTensor.from_address(pointer).deleter
        used = NAME_USED_LEGACY
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    if capi.PyCapsule_SetName(capsule, capi.static_name(used)) != 0:
        raise RuntimeError("PyCapsule_SetName failed")
    return pointer, deleter, name


def release(pointer, deleter):
    """Call a foreign deleter (ctypes releases the GIL around the call, as C code might)."""
    if deleter:
        deleter(pointer)


# ---- the reference reader ----------------------------------------------------------------


@dataclass(frozen=True)
class Exported:
    """What `__dlpack__` handed out, read with ctypes.

    `strides` are in elements; a NULL strides pointer is reported as compact row-major.
    `data` is the address of the first element (the struct's data + byte_offset), 0 for a
    NULL data pointer. `elements` holds the element bytes gathered in row-major order for
    host devices and byte-addressable dtypes (None otherwise). `first_error` is
    "Type: message" of the TypeError that made `reference` retry without max_version (None
    when the first call succeeded).
    """

    capsule_name: str
    version: tuple[int, int] | None
    flags: int
    device: tuple[int, int]
    dtype: tuple[int, int, int]
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    byte_offset: int
    data: int
    elements: bytes | None
    first_error: str | None = None

    @property
    def read_only(self) -> bool:
        """True when the consumer must not write: READ_ONLY is set, or the capsule is legacy
        (a legacy capsule cannot say its memory is writable, and "not known" is not
        claimed)."""
        if self.version is None:
            return True
        return bool(self.flags & FLAG_READ_ONLY)

    @property
    def is_copied(self) -> bool:
        return bool(self.flags & FLAG_IS_COPIED)

    @property
    def size(self) -> int:
        n = 1
        for extent in self.shape:
            n *= extent
        return n

    def summary(self) -> str:
        """One line: capsule, version, flags, device, dtype, shape, strides."""
        version = "legacy" if self.version is None else f"v{self.version[0]}.{self.version[1]}"
        flags = []
        if self.flags & FLAG_READ_ONLY:
            flags.append("RO")
        if self.flags & FLAG_IS_COPIED:
            flags.append("COPIED")
        if self.flags & FLAG_IS_SUBBYTE_TYPE_PADDED:
            flags.append("PADDED")
        extra = ""
        if self.byte_offset:
            extra += f" byte_offset={self.byte_offset}"
        if not self.data:
            extra += " data=NULL"
        elif self.data % max(1, _exact_itemsize(self.dtype) or 1):
            extra += (
                f" data%{_exact_itemsize(self.dtype)}={self.data % _exact_itemsize(self.dtype)}"
            )
        if self.elements is None:
            extra += " elements=n/a"
        return (
            f"{version} flags={'|'.join(flags) or 0} dev={self.device} dtype={self.dtype} "
            f"shape={self.shape} strides={self.strides}{extra}"
        )


@dataclass(frozen=True)
class Refused:
    """`__dlpack__` raised: the exception's type name and message."""

    exception: str
    message: str
    first_error: str | None = None

    def summary(self) -> str:
        first_line = self.message.splitlines()[0][:90] if self.message else ""
        return f"Refused({self.exception}: {first_line})"


def _exact_itemsize(dtype) -> int | None:
    """Bytes per element, or None for a dtype whose elements are not whole bytes."""
    _, bits, lanes = dtype
    total = bits * lanes
    if total == 0 or total % 8:
        return None
    return total // 8


def normalized_strides(shape, strides) -> tuple[int, ...]:
    """Strides made comparable: 0 for every extent-1 dimension, and all 0 for a zero-size
    tensor (DLPack allows any stride there)."""
    shape, strides = tuple(shape), tuple(strides)
    if len(shape) != len(strides):
        raise ValueError(f"shape {shape} and strides {strides} differ in length")
    if any(extent == 0 for extent in shape):
        return (0,) * len(shape)
    return tuple(0 if extent == 1 else stride for extent, stride in zip(shape, strides))


def _gather(address: int, shape, strides, itemsize: int) -> bytes:
    """The elements at `address` with `strides` (in elements), in row-major order."""
    if any(extent == 0 for extent in shape):
        return b""
    if not shape:
        return ctypes.string_at(address, itemsize)
    out = bytearray()
    last_extent, last_stride = shape[-1], strides[-1]
    row_compact = last_stride == 1

    def walk(dim: int, base: int) -> None:
        if dim == len(shape) - 1:
            if row_compact:
                out.extend(ctypes.string_at(base, last_extent * itemsize))
            else:
                step = last_stride * itemsize
                for i in range(last_extent):
                    out.extend(ctypes.string_at(base + i * step, itemsize))
            return
        step = strides[dim] * itemsize
        for i in range(shape[dim]):
            walk(dim + 1, base + i * step)

    walk(0, address)
    return bytes(out)


def read_exported(capsule, first_error: str | None = None) -> Exported:
    """Read a capsule fully, then consume it and call its deleter once."""
    if not is_capsule(capsule):
        raise ValueError(f"__dlpack__ returned {type(capsule).__name__}, not a PyCapsule")
    name = capi.PyCapsule_GetName(capsule)
    if name not in (NAME_LEGACY, NAME_VERSIONED):
        raise ValueError(f"__dlpack__ returned a capsule named {name!r}")
    if name == NAME_VERSIONED:
        pointer = capi.PyCapsule_GetPointer(capsule, name)
        version = DLManagedTensorVersioned.from_address(pointer).version
        if version.major != 1:
            # Only version, manager_ctx and deleter may be read: release and say so.
            pointer, deleter, _ = consume_capsule(capsule)
            release(pointer, deleter)
            raise ValueError(f"DLPack major version {version.major} (minor {version.minor})")
    info = read_capsule(capsule)
    ndim = info["ndim"]
    shape = info["shape"] if info["shape"] is not None else ()
    if len(shape) != ndim:  # NULL shape with ndim > 0: a broken producer
        raise ValueError(f"ndim {ndim} but a NULL shape pointer")
    strides = info["strides"] if info["strides"] is not None else compact_strides(shape)
    dtype = info["dtype"]
    raw_data = info["data"] or 0
    data = raw_data + info["byte_offset"] if raw_data else 0
    flags = info["flags"] or 0
    itemsize = _exact_itemsize(dtype)
    if itemsize is None and flags & FLAG_IS_SUBBYTE_TYPE_PADDED and dtype[1] < 8:
        itemsize = dtype[2]  # padded sub-byte lanes: one byte each
    size = 1
    for extent in shape:
        size *= extent
    elements = None
    if info["device"][0] in HOST_DEVICES and itemsize is not None:
        if size == 0:
            elements = b""
        elif data:
            elements = _gather(data, shape, strides, itemsize)
    result = Exported(
        capsule_name=name.decode(),
        version=info["version"],
        flags=flags,
        device=info["device"],
        dtype=dtype,
        shape=tuple(shape),
        strides=tuple(strides),
        byte_offset=info["byte_offset"],
        data=data,
        elements=elements,
        first_error=first_error,
    )
    pointer, deleter, _ = consume_capsule(capsule)
    release(pointer, deleter)
    return result


def reference(obj, *, max_version=(1, 3), copy=None) -> Exported | Refused:
    """What `obj.__dlpack__` hands out, read without dlbridge.

    Calls `obj.__dlpack__(max_version=max_version)` (or `obj.__dlpack__()` when
    max_version is None: a legacy request), with `copy=copy` when it is not None; on
    TypeError retries without max_version as a consumer does for old producers. An
    exception from the (last) call gives `Refused`.
    The capsule is read with the ctypes structs of `abi`, its elements gathered in
    row-major order (host devices and byte-addressable dtypes), then it is renamed to
    `used_*` and its deleter called exactly once.

    Raises ValueError when `__dlpack__` returns something unreadable (not a capsule, an
    unknown capsule name, a major version other than 1: the tensor is released first).
    """
    first_error = None
    keywords = {} if copy is None else {"copy": copy}
    try:
        if max_version is None:
            capsule = obj.__dlpack__(**keywords)
        else:
            try:
                capsule = obj.__dlpack__(max_version=tuple(max_version), **keywords)
            except TypeError as error:
                first_error = f"{type(error).__name__}: {error}"
                capsule = obj.__dlpack__(**keywords)
    except Exception as error:  # noqa: BLE001 - any refusal is reported
        return Refused(type(error).__name__, str(error), first_error)
    return read_exported(capsule, first_error)


# ---- the C exchange table -----------------------------------------------------------------


def capsule_table(capsule) -> DLPackExchangeAPI:
    """The table in a `dlpack_exchange_api` capsule; ValueError for anything else."""
    if not is_capsule(capsule):
        raise ValueError(f"expected a capsule, got {type(capsule).__name__}")
    name = capi.PyCapsule_GetName(capsule)
    if name != NAME_EXCHANGE_API:
        raise ValueError(f"the capsule is named {name!r}, not {NAME_EXCHANGE_API!r}")
    return DLPackExchangeAPI.from_address(capi.PyCapsule_GetPointer(capsule, NAME_EXCHANGE_API))


def major_one(table: DLPackExchangeAPI, limit: int = 16):
    """The first table of major version 1 along `prev_api`, or None."""
    for _ in range(limit):
        if table.header.version.major == 1:
            return table
        if not table.header.prev_api:
            return None
        table = DLPackExchangeAPI.from_address(table.header.prev_api)
    return None


def table_member(table: DLPackExchangeAPI, member: str):
    """A callable for a member of the table (None when it is NULL)."""
    address = getattr(table, member)
    return EXCHANGE_PROTOTYPES[member](address) if address else None


def free(tensor_pointer) -> None:
    """Calls the deleter of a `DLManagedTensorVersioned*` handed out by the table."""
    managed = tensor_pointer.contents
    if managed.deleter:
        managed.deleter(ctypes.addressof(managed))
