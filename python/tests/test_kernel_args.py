"""Typed tensor arguments (`TensorArg`, `TensorArgMut` of dlbridge-pyo3), through the test
kernels in `dlbridge._dlbridge._testing`: zero-copy on NumPy and PyTorch, writes seen by the
caller, and every constraint violation named."""

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _kernels import kernels as K

torch = import_framework("torch", "torch")


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_writes_through_mutable_arguments_are_seen_by_the_caller(framework):
    if framework == "numpy":
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        out = np.zeros((2, 3), dtype=np.float32)
    else:
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        out = torch.zeros(2, 3)
    K.scale(x, out, 2.0)
    assert np.asarray(out).tolist() == [[0, 2, 4], [6, 8, 10]]
    v = np.zeros(3) if framework == "numpy" else torch.zeros(3, dtype=torch.float64)
    K.add_one(v)
    K.add_one(v)
    assert np.asarray(v).tolist() == [2.0, 2.0, 2.0]


def test_mutable_arguments_may_be_strided():
    out = torch.zeros(3, 2).t()  # a (2, 3) view with strides (1, 2)
    K.scale(torch.ones(2, 3), out, 5.0)
    assert out.tolist() == [[5.0] * 3] * 2
    base = np.zeros(8)
    K.add_one(base[::-2])
    assert base.tolist() == [0, 1, 0, 1, 0, 1, 0, 1]


def test_any_layout_reads_any_strides():
    assert K.total(torch.ones(3, 4).t()) == 12.0
    assert K.total(np.arange(6, dtype=np.float32)[::-1]) == 15.0
    assert K.total(np.ones((2, 0), dtype=np.float32)) == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: K.scale(np.zeros((2, 3)), np.zeros((2, 3), np.float32), 1.0),
            (
                "expected a float32 C-contiguous tensor with 2 dimensions in host memory, "
                "got float64 shape (2, 3) strides (3, 1) on CPU:0"
            ),
        ),
        (
            lambda: K.scale(np.zeros((3, 2), np.float32).T, np.zeros((2, 3), np.float32), 1.0),
            "got float32 shape (2, 3) strides (1, 2)",
        ),
        (
            lambda: K.scale(np.zeros(6, np.float32), np.zeros((2, 3), np.float32), 1.0),
            "with 2 dimensions in host memory, got float32 shape (6,) strides (1,)",
        ),
        (
            lambda: K.add_one(np.frombuffer(bytes(16), dtype=np.float64)),
            (
                "expected a writable float64 tensor with 1 dimension in host memory, "
                "got float64 shape (2,) strides (1,) on CPU:0 (read-only: the NumPy array's "
                "flags.writeable is False"
            ),
        ),
        (lambda: K.total("not a tensor"), "is not a DLPack producer"),
    ],
)
def test_violations_name_what_was_expected_and_received(call, message):
    with pytest.raises(TypeError) as caught:
        call()
    assert message in str(caught.value)


def test_overlapping_layouts_are_refused_for_writing():
    broadcast = np.broadcast_to(np.zeros(1), (4,))
    assert not broadcast.flags.writeable  # numpy marks broadcasts read-only already
    with pytest.raises(TypeError):
        K.add_one(broadcast)


def test_the_fast_path_borrows_torch_tensors_without_dlpack(monkeypatch):
    def forbidden(self, *args, **kwargs):
        raise AssertionError("__dlpack__ was called")

    monkeypatch.setattr(torch.Tensor, "__dlpack__", forbidden)
    out = torch.zeros(2, 2)
    K.scale(torch.ones(2, 2), out, 4.0)
    assert out.tolist() == [[4.0, 4.0], [4.0, 4.0]]
    assert K.noop3(out, out, out) is None


def test_lazy_pytorch_views_are_refused_as_dlpack_refuses_them():
    # The memory of a lazy view holds other values than the tensor's: PyTorch's __dlpack__
    # refuses the conjugation bit and hands the negation bit's memory out as it is (the
    # values negated); every path of dlbridge refuses both, reading and writing.
    neg = torch.tensor([1.0 + 1.0j, 2.0 + 3.0j]).conj().imag  # [-1, -3] behind a neg bit
    assert neg.is_neg()
    with pytest.raises(BufferError, match=r"negation bit.*resolve_neg\(\)"):
        K.total(neg)
    with pytest.raises(BufferError, match="negation bit"):
        K.scale(torch.ones(1, 2), neg.reshape(1, 2), 1.0)
    assert K.total(neg.resolve_neg()) == -4.0
    conj = torch.tensor([1.0 + 1.0j], dtype=torch.complex64).conj()
    assert conj.is_conj()
    with pytest.raises(BufferError, match=r"conjugation bit.*resolve_conj\(\)"):
        dlbridge.from_dlpack(conj)


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_written_argument_may_not_alias_another(framework):
    if framework == "numpy":
        x = np.ones((2, 3), dtype=np.float32)
        view_of_x = x[:, :]
    else:
        x = torch.ones(2, 3)
        view_of_x = x[:, :]
    with pytest.raises(
        ValueError,
        match=r"tensor argument 2 of this call .written. overlaps the memory of tensor argument 1",
    ):
        K.scale(x, x, 2.0)
    with pytest.raises(
        ValueError,
        match=r"tensor argument 2 of this call .written. overlaps the memory of tensor argument 1",
    ):
        K.scale(x, view_of_x, 2.0)
    assert np.asarray(x).tolist() == [[1.0] * 3] * 2  # nothing was written
    # Reading one tensor through several arguments is fine, and nothing stays claimed.
    assert K.noop3(x, x, x) is None
    out = np.zeros((2, 3), np.float32) if framework == "numpy" else torch.zeros(2, 3)
    K.scale(x, out, 2.0)
    assert np.asarray(out).tolist() == [[2.0] * 3] * 2


def test_buffer_protocol_exporters_are_tensor_arguments():
    # NumPy arrays (and any other exporter of host memory) are read through the buffer
    # protocol, without the DLPack negotiation.
    import array

    assert K.total(array.array("f", [1.0, 2.0, 3.5])) == 6.5
    values = array.array("d", [1.0, 2.0])
    K.add_one(values)
    K.add_one(memoryview(values))
    assert values.tolist() == [3.0, 4.0]
    with pytest.raises(TypeError, match=r"\(read-only: "):
        K.add_one(memoryview(bytes(16)).cast("d"))
    assert K.total(np.arange(6, dtype=np.float32)[::2]) == 6.0
    assert K.total(np.arange(6, dtype=np.float32).reshape(2, 3).T) == 15.0
    with pytest.raises(TypeError, match="got int64"):
        K.total(np.arange(3, dtype=np.int64))


def test_numpy_read_only_and_foreign_byte_order():
    ro = np.ones(3)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match=r"\(read-only: "):
        K.add_one(ro)
    big_endian = np.arange(3, dtype=">f4")
    # Not native: the buffer path declines, and NumPy's own DLPack export refuses it (pinned:
    # NumPy 2.4's BufferError, which the kernel's argument passes on).
    with pytest.raises(BufferError, match="DLPack only supports native byte order"):
        K.total(big_endian)


def test_numpy_arguments_do_not_call_dlpack(monkeypatch):
    calls = []
    original = np.ndarray.__dlpack__

    class Counting(np.ndarray):
        def __dlpack__(self, *args, **kwargs):
            calls.append(1)
            return original(self, *args, **kwargs)

    x = np.ones((2, 2), dtype=np.float32).view(Counting)
    assert K.total(x) == 4.0
    assert calls == []


# --------------------------------------------------------------------------------------------
# Shape constraints: `shape!(Rgb = [_, _, 3])`, `shape!(TwoByTwo = [2, 2])`.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_partial_shape_is_checked(framework):
    image = np.arange(2 * 4 * 3, dtype=np.uint8).reshape(2, 4, 3)
    source = image if framework == "numpy" else torch.from_numpy(image)
    assert K.channel_means(source) == pytest.approx(list(image.reshape(-1, 3).mean(axis=0)))
    wrong = source[:, :, :2]
    with pytest.raises(ValueError) as error:
        K.channel_means(wrong)
    assert (
        "expected a uint8 tensor of shape (_, _, 3) in host memory, got uint8 shape (2, 4, 2)"
        in str(error.value)
    )
    with pytest.raises(
        TypeError, match=r"of shape \(_, _, 3\) in host memory, got uint8 shape \(8, 3\)"
    ):
        K.channel_means(source.reshape(8, 3))  # wrong number of dimensions: a type error


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_exact_shape_is_checked_for_written_arguments(framework):
    out = np.zeros((2, 2)) if framework == "numpy" else torch.zeros(2, 2, dtype=torch.float64)
    K.eye2(out)
    assert np.asarray(out).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    big = np.zeros((2, 3)) if framework == "numpy" else torch.zeros(2, 3, dtype=torch.float64)
    with pytest.raises(
        ValueError,
        match=(
            r"expected a writable float64 tensor of shape \(2, 2\) in host memory, "
            r"got float64 shape \(2, 3\)"
        ),
    ):
        K.eye2(big)
    assert not np.asarray(big).any()  # nothing written


def test_read_only_dlbridge_tensors_are_not_written_through_the_exchange_table():
    # A borrowed DLTensor cannot say READ_ONLY: the writability hook that dlbridge-pyo3
    # publishes beside the table says it, so the borrowed path stays allocation-free.
    array = np.arange(3.0)
    array.flags.writeable = False
    tensor = dlbridge.from_dlpack(array)
    assert K.inspect_argument(tensor, True)["path"] == "exchange"
    with pytest.raises(TypeError, match=r"\(read-only: "):
        K.add_one(tensor)
    assert array.tolist() == [0.0, 1.0, 2.0]
    writable = dlbridge.from_dlpack(np.arange(3.0))
    K.add_one(writable)
    assert np.asarray(writable).tolist() == [1.0, 2.0, 3.0]


# --------------------------------------------------------------------------------------------
# Constraints in any combination, infallible slices, and arguments in a Vec, an Option or a
# tuple.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_shape_and_a_layout_together(framework):
    image = np.arange(2 * 4 * 3, dtype=np.uint8).reshape(2, 4, 3)
    source = image if framework == "numpy" else torch.from_numpy(image)
    assert K.packed_rgb_total(source) == int(image.sum())
    with pytest.raises(TypeError) as caught:
        K.packed_rgb_total(source[:, ::2])  # the right shape, not contiguous
    assert str(caught.value).startswith(
        "expected a uint8 C-contiguous tensor of shape (_, _, 3) in host memory, got uint8 "
        "shape (2, 2, 3)"
    )
    with pytest.raises(ValueError, match=r"of shape \(_, _, 3\) in host memory"):
        K.packed_rgb_total(
            source[:, :, :2].contiguous()
            if framework == "torch"
            else np.ascontiguousarray(image[:, :, :2])
        )


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_contiguous_arguments_are_written_through_one_slice(framework):
    x = np.zeros((2, 3), np.float32) if framework == "numpy" else torch.zeros(2, 3)
    K.fill_packed(x, 2.5)
    assert np.asarray(x).tolist() == [[2.5] * 3] * 2
    K.fill_packed(np.zeros((0, 3), np.float32), 1.0)  # empty: the empty slice
    with pytest.raises(TypeError, match="C-contiguous"):
        K.fill_packed(np.zeros((3, 2), np.float32).T, 1.0)


def test_extraction_errors_carry_the_argument_name_as_a_note():
    with pytest.raises(TypeError) as caught:
        K.total(np.zeros(3))
    assert "while processing 'x'" in getattr(caught.value, "__notes__", [])


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_arguments_in_a_list(framework):
    def make(values):
        array = np.asarray(values, dtype=np.float64)
        return array if framework == "numpy" else torch.from_numpy(array)

    vectors = [make([1.0, 2.0]), make([3.0]), make([])]
    assert K.total_of_all(vectors) == 6.0
    assert K.total_of_all(tuple(vectors)) == 6.0
    assert K.total_of_all([]) == 0.0
    with pytest.raises(TypeError, match="got float32 shape"):
        K.total_of_all([make([1.0]), np.zeros(2, np.float32)])
    with pytest.raises(TypeError):
        K.total_of_all("not a list")
    K.scale_all(vectors, 2.0)  # written in place, with the GIL released
    assert [np.asarray(v).tolist() for v in vectors] == [[2.0, 4.0], [6.0], []]


def test_arguments_in_a_list_are_claimed_against_each_other():
    base = np.arange(6.0)
    with pytest.raises(ValueError, match="overlaps the memory of tensor argument"):
        K.scale_all([base[:4], base[2:]], 10.0)
    assert base.tolist() == [0, 1, 2, 3, 4, 5]  # nothing written
    K.scale_all([base[::2], base[1::2]], 10.0)  # disjoint strided views may come together
    assert base.tolist() == [0, 10, 20, 30, 40, 50]


def test_optional_and_tuple_arguments():
    x = np.arange(3.0)
    assert K.dot_with_bias(x, x) == 5.0
    assert K.dot_with_bias(x, x, None) == 5.0
    assert K.dot_with_bias(x, x, torch.ones(2, dtype=torch.float64)) == 7.0
    with pytest.raises(TypeError, match="with 1 dimension"):
        K.dot_with_bias(x, x, np.ones((2, 2)))
    assert K.dot_of_pair((x, torch.from_numpy(x))) == 5.0
    with pytest.raises(ValueError, match="expected tuple of length 2"):
        K.dot_of_pair((x,))


def test_a_range_of_dimensions_is_a_constraint():
    """`DimsBetween<2, 3>`: a matrix or a batch of matrices, nothing else."""
    assert K.matrix_sums(np.ones((2, 3))) == [6.0]
    assert K.matrix_sums(np.ones((4, 2, 3))) == [6.0] * 4
    for refused in (np.ones(3), np.ones((1, 1, 1, 1)), np.float64(1.0)):
        with pytest.raises(TypeError, match="with 2 to 3 dimensions"):
            K.matrix_sums(refused)


# --------------------------------------------------------------------------------------------
# Issue 47: a class's tensor is written through the borrowed path only on the word of the same
# answer that described it (the writability hook describes the tensor and says whether it may
# be written from one call of the class's `tensor()`; tests/soundness.rs drives a class that
# answers two calls with two tensors). Exports handed to Python are not Rust handles.
# --------------------------------------------------------------------------------------------


def test_a_dlbridge_tensor_in_rust_memory_stays_writable_while_python_holds_its_exports():
    tensor = dlbridge.zeros((3,), dtype="float64")
    seen = K.inspect_argument(tensor, True)
    assert (seen["path"], seen["read_only"]) == ("exchange", False)
    array = np.from_dlpack(tensor)
    view = memoryview(tensor)
    capsule = tensor.__dlpack__(max_version=(1, 3))
    K.add_one(tensor)
    assert array.tolist() == [1.0, 1.0, 1.0]
    assert array.flags.writeable and not view.readonly
    del capsule
    view.release()
    # A tensor over another object's memory is written as that object allows.
    source = np.arange(3.0)
    K.add_one(dlbridge.from_dlpack(source))
    assert source.tolist() == [1.0, 2.0, 3.0]
    source.flags.writeable = False
    with pytest.raises(TypeError, match=r"\(read-only: "):
        K.add_one(dlbridge.from_dlpack(source))
