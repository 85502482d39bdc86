"""dlbridge.safetensors against the format's reference implementation (the `safetensors`
package, in python/requirements-test.txt): files its NumPy and PyTorch writers make load with
equal values and metadata, files `dlbridge.safetensors.save` makes (from NumPy, PyTorch,
strided and bfloat16/float8 tensors included) load in its readers; the tensors are the file's
own mapping (zero-copy, /proc/self/maps), read-only unless asked otherwise, and what NumPy,
PyTorch and JAX make of them; hostile files, missing files and tensors the format cannot hold
give typed errors naming the tensor and the value; resident memory grows by the pages read,
not by the file's size.
"""

from __future__ import annotations

import doctest
import errno
import json
import os
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst

import dlbridge
import dlbridge.safetensors as st
from _frameworks import import_framework
from _helpers import collect, rss_bytes
from _skips import not_on_platform

torch = import_framework("torch", "torch")
safetensors = import_framework("safetensors", "safetensors")
safetensors_numpy = import_framework("safetensors.numpy", "safetensors")
safetensors_torch = import_framework("safetensors.torch", "safetensors")

MiB = 1 << 20

#: NumPy dtypes the `safetensors` package's NumPy writer takes (bfloat16 and float8 have no
#: NumPy dtype: the PyTorch writer's file covers them).
NUMPY_DTYPES = [
    "float32",
    "float16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
]

#: PyTorch dtypes -> dlbridge's name of each.
TORCH_DTYPES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e5m2: "float8_e5m2",
}

FLOAT8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def numpy_array(dtype: str, shape=(3, 5)) -> np.ndarray:
    """Distinct values of `dtype` (negative ones where it has them)."""
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) - 7
    if dtype == "bool":
        return values % 3 == 0
    if dtype.startswith("uint"):
        return (values + 7).astype(dtype)
    if dtype == "complex64":
        return (values + 1j * values[::-1]).astype(dtype)
    return values.astype(dtype)


def torch_tensor(dtype, shape=(3, 5)):
    """Distinct values of `dtype`; float8 ones exactly representable."""
    values = torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape) - 7
    if dtype == torch.bool:
        return values.to(torch.int64) % 3 == 0
    if dtype == torch.uint8:
        return (values + 7).to(dtype)
    if dtype == torch.complex64:
        return torch.complex(values, -values)
    if dtype in FLOAT8:
        return (values / 4).to(dtype)
    return values.to(dtype)


def same_torch(left, right) -> bool:
    """Equal dtype, shape and bits (float8 has no `torch.equal`)."""
    if left.dtype != right.dtype or left.shape != right.shape:
        return False
    if left.dtype in FLOAT8:
        return torch.equal(left.view(torch.uint8), right.view(torch.uint8))
    return torch.equal(left, right)


def header_of(path) -> dict:
    """The file's header, as JSON."""
    with open(path, "rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        return json.loads(file.read(length))


def file_bytes(header, data: bytes = b"", *, length: int | None = None) -> bytes:
    """A safetensors file: the header (a dict, written as JSON, or raw bytes), its length
    (or `length`, a lie), then `data`."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def mappings_of(path) -> list[tuple[int, int]]:
    """The address ranges of this process's mappings of the file at `path` (/proc/self/maps)."""
    target = os.path.realpath(path)
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].rstrip("\n") == target:
                start, end = (int(address, 16) for address in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


def inside_a_mapping_of(address: int, path) -> bool:
    return any(start <= address < end for start, end in mappings_of(path))


def needs_proc(what: str) -> None:
    if not sys.platform.startswith("linux"):
        not_on_platform(what)


def aligned_file(path, data_alignment: int, tensor) -> None:
    """Saves `{"w": tensor}` at `path` (dlbridge's writer) with metadata padded so that the
    data begins `data_alignment` bytes past a multiple of 64 (the mapping starts on a page)."""
    for pad in range(64):
        st.save(path, {"w": tensor}, {"pad": "x" * pad})
        with open(path, "rb") as file:
            (length,) = struct.unpack("<Q", file.read(8))
        if (8 + length) % 64 == data_alignment:
            return
    raise AssertionError(f"no padding puts the data {data_alignment} bytes past 64")


# ---- the module's own example ---------------------------------------------------------------


def test_the_module_docstring_example_runs():
    results = doctest.testmod(st, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert results.attempted >= 5
    assert results.failed == 0


# ---- files of the reference writers, read by dlbridge ---------------------------------------


def test_files_of_the_numpy_writer_load_with_equal_values_and_metadata(tmp_path):
    path = tmp_path / "numpy.safetensors"
    arrays = {f"x_{dtype}": numpy_array(dtype) for dtype in NUMPY_DTYPES}
    arrays["scalar"] = np.array(2.5, dtype=np.float32)
    arrays["empty"] = np.zeros((0, 3), dtype=np.int32)
    safetensors_numpy.save_file(arrays, str(path), metadata={"format": "np", "note": "é"})

    loaded = st.load(path)
    assert set(loaded) == set(arrays)
    for name, expected in arrays.items():
        tensor = loaded[name]
        assert isinstance(tensor, dlbridge.Tensor)
        assert tensor.readonly and tensor.version is not None, name
        got = np.from_dlpack(tensor)
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        assert np.array_equal(got, expected), name
    assert st.metadata(path) == {"format": "np", "note": "é"}


def test_files_of_the_torch_writer_load_with_equal_values_and_metadata(tmp_path):
    path = tmp_path / "torch.safetensors"
    tensors = {f"x_{name}": torch_tensor(dtype) for dtype, name in TORCH_DTYPES.items()}
    safetensors_torch.save_file(tensors, str(path), metadata={"format": "pt"})

    loaded = st.load(path)
    for name in TORCH_DTYPES.values():
        tensor = loaded[f"x_{name}"]
        assert tensor.dtype == name
        assert same_torch(torch.from_dlpack(tensor), tensors[f"x_{name}"]), name
    assert st.metadata(path) == {"format": "pt"}


def test_tensors_come_in_the_order_of_their_bytes(tmp_path):
    path = tmp_path / "order.safetensors"
    # The reference writer puts larger types first, then sorts by name: neither the names'
    # order nor the dict's.
    tensors = {"a": torch.zeros(3, dtype=torch.uint8), "b": torch.zeros(2, dtype=torch.int64)}
    tensors["c"] = torch.zeros(5, dtype=torch.float16)
    safetensors_torch.save_file(tensors, str(path))
    header = header_of(path)
    by_offset = sorted(tensors, key=lambda name: header[name]["data_offsets"][0])
    assert by_offset == ["b", "c", "a"]
    assert list(st.load(path)) == by_offset


def test_a_file_without_metadata_has_empty_metadata_and_paths_may_be_pathlike(tmp_path):
    path = tmp_path / "plain.safetensors"
    safetensors_numpy.save_file({"w": numpy_array("int32")}, str(path))
    assert st.metadata(path) == {}
    assert st.metadata(str(path)) == {}
    assert list(st.load(os.fsencode(str(path)))) == ["w"]  # a bytes path too


# ---- files of dlbridge's writer, read by the reference ----------------------------------------


def test_numpy_tensors_saved_by_dlbridge_load_in_the_reference_reader(tmp_path):
    path = tmp_path / "from_numpy.safetensors"
    arrays = {f"x_{dtype}": numpy_array(dtype) for dtype in NUMPY_DTYPES}
    strided = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::3]
    assert not strided.flags.c_contiguous
    arrays["strided"] = strided
    metadata = {"format": "np", "source": "dlbridge"}
    st.save(path, arrays, metadata)

    read = safetensors_numpy.load_file(str(path))
    assert set(read) == set(arrays)
    for name, expected in arrays.items():
        assert read[name].dtype == expected.dtype, name
        assert np.array_equal(read[name], expected), name
    with safetensors.safe_open(str(path), framework="np") as file:
        assert file.metadata() == metadata


def test_torch_tensors_saved_by_dlbridge_load_in_the_reference_reader(tmp_path):
    path = tmp_path / "from_torch.safetensors"
    tensors = {f"x_{name}": torch_tensor(dtype) for dtype, name in TORCH_DTYPES.items()}
    transposed = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    sliced = torch.arange(40, dtype=torch.bfloat16).reshape(4, 10)[:, 1::3]
    assert not transposed.is_contiguous() and not sliced.is_contiguous()
    tensors["transposed"] = transposed
    tensors["sliced_bf16"] = sliced
    metadata = {"format": "pt"}
    st.save(path, tensors, metadata)

    read = safetensors_torch.load_file(str(path))
    assert set(read) == set(tensors)
    for name, expected in tensors.items():
        assert same_torch(read[name], expected.contiguous()), name
    with safetensors.safe_open(str(path), framework="pt") as file:
        assert file.metadata() == metadata
        assert same_torch(file.get_tensor("x_float8_e5m2"), tensors["x_float8_e5m2"])


def test_dlbridge_tensors_and_capsules_are_saved_too(tmp_path):
    path = tmp_path / "mixed.safetensors"
    capsule = np.arange(4, dtype=np.int16).__dlpack__()
    st.save(path, {"rust": dlbridge.arange(5, "float8_e4m3fn"), "capsule": capsule})
    read = safetensors_torch.load_file(str(path))
    assert same_torch(read["rust"], torch.arange(5, dtype=torch.float32).to(torch.float8_e4m3fn))
    assert torch.equal(read["capsule"], torch.arange(4, dtype=torch.int16))


@pytest.mark.cpp_exception  # JAX's backend throws a C++ exception while it starts
def test_jax_arrays_are_saved(tmp_path):
    jnp = import_framework("jax.numpy", "jax")
    path = tmp_path / "jax.safetensors"
    st.save(path, {"j": jnp.arange(6, dtype=jnp.float32).reshape(2, 3)})
    read = safetensors_numpy.load_file(str(path))
    assert np.array_equal(read["j"], np.arange(6, dtype=np.float32).reshape(2, 3))


# ---- zero-copy, and what each consumer makes of the tensors ---------------------------------


def test_torch_and_numpy_read_the_files_own_mapping(tmp_path):
    needs_proc("/proc/self/maps")
    path = tmp_path / "mapped.safetensors"
    safetensors_torch.save_file({"w": torch_tensor(torch.float32, (64, 64))}, str(path))
    tensor = st.load(path)["w"]
    as_torch = torch.from_dlpack(tensor)
    as_numpy = np.from_dlpack(tensor)
    assert as_torch.data_ptr() == tensor.data_ptr == as_numpy.ctypes.data
    assert inside_a_mapping_of(tensor.data_ptr, path)
    assert inside_a_mapping_of(tensor.data_ptr + tensor.nbytes - 1, path)
    # The mapping lives as long as a tensor over it, the dict gone.
    del tensor
    collect()
    assert inside_a_mapping_of(as_torch.data_ptr(), path)
    del as_torch, as_numpy
    collect()
    assert mappings_of(path) == []


def test_numpy_makes_a_read_only_tensor_a_non_writeable_array(tmp_path):
    path = tmp_path / "ro.safetensors"
    safetensors_numpy.save_file({"w": numpy_array("float32")}, str(path))
    tensor = st.load(path)["w"]
    assert tensor.readonly and tensor.flags & dlbridge.FLAG_READ_ONLY
    array = np.from_dlpack(tensor)
    assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        array[0, 0] = 1


def test_torch_ignores_read_only_and_its_writes_stay_in_this_process(tmp_path):
    path = tmp_path / "torch_writes.safetensors"
    original = torch.arange(8, dtype=torch.float32)
    safetensors_torch.save_file({"w": original}, str(path))
    before = path.read_bytes()
    tensor = st.load(path)["w"]
    assert tensor.readonly
    through_torch = torch.from_dlpack(tensor)  # no error, no warning, no copy
    assert through_torch.data_ptr() == tensor.data_ptr
    through_torch.add_(1)
    # The private mapping's page was copied for this process: the tensor shows the write,
    # the file and a new mapping of it do not.
    assert np.array_equal(np.from_dlpack(tensor), original.numpy() + 1)
    assert path.read_bytes() == before
    assert torch.equal(torch.from_dlpack(st.load(path)["w"]), original)


def test_writable_tensors_are_writable_in_this_process_only(tmp_path):
    needs_proc("/proc/self/maps")
    path = tmp_path / "writable.safetensors"
    safetensors_numpy.save_file({"w": numpy_array("int64"), "v": numpy_array("int8")}, str(path))
    before = path.read_bytes()
    loaded = st.load(path, writable=True)
    assert [tensor.readonly for tensor in loaded.values()] == [False, False]
    array = np.from_dlpack(loaded["w"])
    assert array.flags.writeable
    assert array.ctypes.data == loaded["w"].data_ptr
    assert inside_a_mapping_of(array.ctypes.data, path)
    array[:] = 99
    assert np.all(np.from_dlpack(loaded["w"]) == 99)
    assert path.read_bytes() == before
    assert np.array_equal(np.from_dlpack(st.load(path)["w"]), numpy_array("int64"))


@pytest.mark.cpp_exception  # JAX's backend throws a C++ exception while it starts
def test_jax_refuses_read_only_tensors(tmp_path):
    # JAX asks for a legacy capsule (`__dlpack__(stream=...)` without max_version), which has
    # no flag to say read-only: dlbridge refuses to export one, whichever entry point.
    jax_dlpack = import_framework("jax.dlpack", "jax")
    jnp = import_framework("jax.numpy", "jax")

    path = tmp_path / "jax_ro.safetensors"
    aligned_file(path, 0, np.arange(256, dtype=np.float32))
    tensor = st.load(path)["w"]
    message = (
        "a read-only tensor cannot be exported as a legacy DLManagedTensor, which has no "
        "flags to say so; export it as DLManagedTensorVersioned"
    )
    for from_dlpack in (jnp.from_dlpack, jax_dlpack.from_dlpack):
        with pytest.raises(BufferError, match=message):
            from_dlpack(tensor)
    with pytest.raises(BufferError, match=message):
        jnp.from_dlpack(tensor, copy=True)


@pytest.mark.cpp_exception  # JAX's backend throws a C++ exception while it starts
def test_jax_maps_writable_tensors_aligned_to_64_bytes_and_copies_others(tmp_path):
    jax_dlpack = import_framework("jax.dlpack", "jax")
    jnp = import_framework("jax.numpy", "jax")

    values = np.arange(256, dtype=np.float32)
    aligned, misaligned = tmp_path / "aligned.safetensors", tmp_path / "misaligned.safetensors"
    aligned_file(aligned, 0, values)
    aligned_file(misaligned, 16, values)

    tensor = st.load(aligned, writable=True)["w"]
    assert tensor.data_ptr % 64 == 0
    for from_dlpack in (jnp.from_dlpack, jax_dlpack.from_dlpack):
        array = from_dlpack(tensor)
        assert array.unsafe_buffer_pointer() == tensor.data_ptr  # zero-copy
        assert np.array_equal(np.asarray(array), values)

    tensor = st.load(misaligned, writable=True)["w"]
    assert tensor.data_ptr % 64 == 16
    array = jnp.from_dlpack(tensor)
    assert array.unsafe_buffer_pointer() != tensor.data_ptr  # XLA's CPU buffers need 64
    assert np.array_equal(np.asarray(array), values)
    with pytest.raises(ValueError, match=r"not aligned to 64 bytes\.  However copy=False"):
        jnp.from_dlpack(tensor, copy=False)


def test_saving_over_a_loaded_file_replaces_it_and_old_tensors_keep_their_bytes(tmp_path):
    path = tmp_path / "replaced.safetensors"
    st.save(path, {"w": np.arange(4, dtype=np.float32)})
    old = st.load(path)["w"]
    st.save(path, {"w": np.arange(100, dtype=np.int64)})  # dlbridge's writer: a rename
    assert np.array_equal(np.from_dlpack(old), np.arange(4, dtype=np.float32))
    newer = st.load(path)["w"]
    safetensors_torch.save_file({"w": torch.ones(3)}, str(path))  # the reference's: a rename
    assert np.array_equal(np.from_dlpack(newer), np.arange(100, dtype=np.int64))
    assert np.array_equal(np.from_dlpack(st.load(path)["w"]), np.ones(3, dtype=np.float32))
    assert sorted(os.listdir(tmp_path)) == ["replaced.safetensors"]  # no temporary left


# ---- errors -----------------------------------------------------------------------------------

F32_4 = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}
LYING_LENGTH = file_bytes({"w": F32_4}, bytes(16), length=4096)

HOSTILE = {
    "offsets-past-the-end": (
        file_bytes({"w": F32_4}, bytes(8)),
        (
            'tensor "w": data_offsets [0, 16] reach past the file\'s 8 bytes of data '
            "(a truncated file?)"
        ),
    ),
    "header-length-lies": (
        LYING_LENGTH,
        (
            f"header length = 4096 bytes, but the file has {len(LYING_LENGTH)} bytes: "
            "truncated, or not a safetensors file"
        ),
    ),
    "size-mismatch": (
        file_bytes({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 8]}}, bytes(8)),
        'tensor "w": data_offsets [0, 8] hold 8 bytes, but F32 with shape [2, 2] takes 16',
    ),
    "unknown-dtype": (
        file_bytes({"w": {"dtype": "F99", "shape": [4], "data_offsets": [0, 16]}}, bytes(16)),
        'tensor "w": dtype "F99" is not a safetensors data type',
    ),
    "overlap": (
        file_bytes(
            {
                "a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]},
            },
            bytes(12),
        ),
        'tensor "b": data_offsets [4, 12] overlap those of "a", [0, 8]',
    ),
    "gap": (
        file_bytes(
            {
                "a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]},
            },
            bytes(12),
        ),
        "bytes 4..8 of the data belong to no tensor (the format allows no gaps)",
    ),
    "too-short": (
        b"\x01\x02\x03",
        "the file has 3 bytes: a safetensors file begins with the 8 bytes of its header's length",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_file_is_a_value_error_naming_the_tensor_and_the_value(tmp_path, case):
    content, message = HOSTILE[case]
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(content)
    for read in (st.load, st.metadata):
        with pytest.raises(ValueError) as raised:
            read(path)
        assert str(raised.value) == message


def test_a_truncated_file_names_its_last_tensor(tmp_path):
    path = tmp_path / "truncated.safetensors"
    safetensors_numpy.save_file({"a": numpy_array("int64"), "b": numpy_array("int8")}, str(path))
    header = header_of(path)
    last = max(header, key=lambda name: header[name]["data_offsets"][1])
    begin, end = header[last]["data_offsets"]
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(ValueError) as raised:
        st.load(path)
    assert str(raised.value) == (
        f'tensor "{last}": data_offsets [{begin}, {end}] reach past the file\'s {end - 5} bytes '
        "of data (a truncated file?)"
    )


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(position=hst.integers(min_value=0), byte=hst.integers(min_value=0, max_value=255))
def test_a_corrupted_byte_loads_or_is_a_value_error(tmp_path, position, byte):
    # One byte of a valid file replaced, anywhere: never another exception, never a crash.
    path = tmp_path / "corrupted.safetensors"
    if not path.exists():
        st.save(path, {"w": np.arange(6, dtype=np.int32), "b": np.ones(3, np.float16)}, {"k": "v"})
    content = bytearray(path.read_bytes())
    content[position % len(content)] = byte
    corrupted = tmp_path / "corrupted-copy.safetensors"
    corrupted.write_bytes(bytes(content))
    try:
        loaded = st.load(corrupted)
    except ValueError:
        return
    for tensor in loaded.values():
        tensor.copy()  # reads every byte the tensor claims


def test_a_missing_file_is_a_file_not_found_error_naming_it(tmp_path):
    path = tmp_path / "missing.safetensors"
    for read in (st.load, st.metadata):
        with pytest.raises(FileNotFoundError) as raised:
            read(path)
        assert raised.value.errno == errno.ENOENT
        assert raised.value.filename == str(path)
        assert str(raised.value) == (
            f"[Errno {errno.ENOENT}] cannot open: No such file or directory: '{path}'"
        )


def test_a_directory_is_an_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError) as raised:
        st.load(tmp_path)
    assert raised.value.filename == str(tmp_path)


def test_saving_into_a_missing_folder_is_a_file_not_found_error(tmp_path):
    path = tmp_path / "no" / "such.safetensors"
    with pytest.raises(FileNotFoundError) as raised:
        st.save(path, {"w": np.zeros(2)})
    assert raised.value.errno == errno.ENOENT
    assert os.path.dirname(raised.value.filename) == str(path.parent)


def test_complex128_is_refused_naming_the_tensor_and_the_file_stays_as_it_was(tmp_path):
    path = tmp_path / "kept.safetensors"
    st.save(path, {"w": np.arange(3, dtype=np.float32)})
    before = path.read_bytes()
    with pytest.raises(ValueError) as raised:
        st.save(path, {"fine": np.zeros(2), "c": np.zeros(2, dtype=np.complex128)})
    assert str(raised.value) == 'tensor "c": dtype complex128 has no safetensors name'
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["kept.safetensors"]


def test_the_reserved_name_is_refused(tmp_path):
    with pytest.raises(ValueError) as raised:
        st.save(tmp_path / "x.safetensors", {"__metadata__": np.zeros(2)})
    assert str(raised.value) == (
        'tensor name "__metadata__" is reserved by the format for the file\'s metadata'
    )


def test_names_and_metadata_that_are_not_str_are_type_errors(tmp_path):
    path = tmp_path / "typed.safetensors"
    with pytest.raises(TypeError, match=r"^tensor names must be str, got int 1$"):
        st.save(path, {1: np.zeros(2)})
    with pytest.raises(
        TypeError, match=r"^tensors must be a mapping of names to tensors, got list"
    ):
        st.save(path, [("w", np.zeros(2))])
    with pytest.raises(TypeError, match=r"^metadata values must be str, got int for key 'n'$"):
        st.save(path, {"w": np.zeros(2)}, {"n": 1})
    with pytest.raises(TypeError, match=r"^metadata keys must be str, got bytes b'k'$"):
        st.save(path, {"w": np.zeros(2)}, {b"k": "v"})
    with pytest.raises(TypeError, match=r"^path must be a str or an os.PathLike, got int$"):
        st.load(3)
    assert not path.exists()


def test_an_object_that_is_no_tensor_is_refused_naming_it(tmp_path):
    with pytest.raises(TypeError) as raised:
        st.save(tmp_path / "x.safetensors", {"w": [1.0, 2.0]})
    assert str(raised.value).startswith('tensor "w": ')
    assert isinstance(raised.value.__cause__, TypeError)


# ---- resident memory ----------------------------------------------------------------------


@pytest.mark.rss
def test_loading_costs_no_resident_memory_until_the_data_is_read(tmp_path):
    needs_proc("/proc/self/statm")
    size = 64 * MiB
    path = tmp_path / "large.safetensors"
    header = json.dumps({"x": {"dtype": "F32", "shape": [size // 4], "data_offsets": [0, size]}})
    header += " " * (-len(header) % 8)
    chunk = np.arange(MiB // 4, dtype=np.float32).tobytes()
    with open(path, "wb") as file:  # written in pieces: no 64 MiB buffer in this process
        file.write(struct.pack("<Q", len(header)) + header.encode())
        file.writelines(chunk for _ in range(size // MiB))
    collect()

    before = rss_bytes()
    tensor = st.load(path)["x"]
    array = np.from_dlpack(tensor)
    untouched = rss_bytes() - before
    # Pages of the file may be in the page cache (just written), but a fresh mapping's
    # untouched pages are not resident in this process.
    assert untouched < size // 8, f"{untouched / MiB:.1f} MiB resident before any read"

    assert float(array[:: 1024 // 4].sum()) > 0  # one element of every 1 KiB: every page
    touched = rss_bytes() - before
    assert touched > size * 3 // 4, f"{touched / MiB:.1f} MiB resident after reading it all"
