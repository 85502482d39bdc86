"""A typed argument's owned tensor (`TensorArg::to_managed` of dlbridge-pyo3), through the test
kernels `owned_f32` and `owned_f32_holding`: taken from every source an argument reads
(NumPy's struct, the buffer protocol, an exchange table, `__dlpack__`), zero-copy, accepting
exactly what the argument accepts, outliving the argument and its object, and claiming the
memory while it lives."""

import array
import gc

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import DlpackOnly
from _kernels import kernels as K

torch = import_framework("torch", "torch")


def sources():
    """One float32 2x3 tensor of values 0..5 from each kind of producer, with the path a
    typed argument takes to it and whether the owned tensor may be written."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    read_only = values.copy()
    read_only.flags.writeable = False
    packed = array.array("f", values.ravel().tolist())
    tracked = torch.arange(6, dtype=torch.float32).reshape(2, 3).requires_grad_()
    return [
        ("numpy", values.copy(), "numpy", True),
        ("numpy read-only", read_only, "numpy", False),
        ("buffer", memoryview(packed).cast("B").cast("f", (2, 3)), "buffer", True),
        ("bytes buffer", memoryview(values.tobytes()).cast("f", (2, 3)), "buffer", False),
        ("torch", torch.arange(6, dtype=torch.float32).reshape(2, 3), "exchange", True),
        ("torch requires_grad", tracked, "exchange", True),
        ("__dlpack__ only", DlpackOnly(values.copy()), "dlpack", True),
        ("__dlpack__ read-only", DlpackOnly(read_only), "dlpack", False),
        ("dlbridge", dlbridge.from_dlpack(values.copy()), "exchange", True),
    ]


@pytest.mark.parametrize(
    ("name", "x", "path", "writable"), sources(), ids=[s[0] for s in sources()]
)
def test_the_owned_tensor_is_the_arguments_memory_from_every_source(name, x, path, writable):
    owned, taken, address = K.owned_f32(x)
    assert taken == path
    assert owned.data_ptr == address, "zero-copy: the argument's own memory"
    assert owned.shape == (2, 3)
    assert owned.strides == (3, 1)
    assert np.from_dlpack(owned).tolist() == [[0, 1, 2], [3, 4, 5]]
    # Read-only exactly where the producer does not allow writes.
    assert owned.readonly is not writable, name


def test_the_owned_tensor_keeps_its_layout():
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for x in (base.T, base[:, ::2], base.numpy()[::-1], base.numpy().T[1:]):
        owned, _, address = K.owned_f32(x)
        assert owned.data_ptr == address
        assert np.from_dlpack(owned).tolist() == np.asarray(x).tolist()


def test_the_owned_tensor_outlives_the_argument_and_its_object():
    x = torch.arange(6, dtype=torch.float32) * 2
    owned, _, _ = K.owned_f32(x)
    del x
    gc.collect()
    # Still PyTorch's memory, held through the table's export.
    assert np.from_dlpack(owned).tolist() == [0, 2, 4, 6, 8, 10]
    packed = array.array("f", [1, 2, 3])
    owned, _, _ = K.owned_f32(memoryview(packed))
    # The buffer stays exported while the tensor lives: array.array refuses to resize.
    with pytest.raises(BufferError):
        packed.append(4)
    del owned
    gc.collect()
    packed.append(4)


def test_the_owned_tensor_claims_the_memory_while_it_lives():
    x = np.zeros(4, dtype=np.float32)

    def write():
        try:
            K.fill(x, 1.0)
        except ValueError as error:
            return str(error)
        return None

    refusal, values = K.owned_f32_holding(x, write)
    assert refusal is not None and "a tensor imported into Rust that is still alive" in refusal
    assert values == [0.0] * 4
    # Released with the owned tensor.
    K.fill(x, 1.0)
    assert x.tolist() == [1.0] * 4


def test_a_tensor_autograd_tracks_is_accepted_as_the_read_only_argument_accepts_it():
    x = torch.ones(2, 3, requires_grad=True)
    # The argument reads it as `x.detach()` reads it; `from_dlpack` refuses it, as PyTorch's
    # `__dlpack__` does.
    assert K.total(x) == 6.0
    owned, path, address = K.owned_f32(x)
    assert path == "exchange" and address == x.data_ptr() == owned.data_ptr
    with pytest.raises(BufferError):
        dlbridge.from_dlpack(x)


def test_what_the_argument_refuses_is_refused_before_any_owned_tensor():
    with pytest.raises(TypeError, match="expected a float32"):
        K.owned_f32(np.zeros(3, dtype=np.float64))
    with pytest.raises(BufferError):
        K.owned_f32(torch.ones(3)._neg_view())
