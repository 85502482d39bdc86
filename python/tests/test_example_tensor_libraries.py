"""The example extension examples/tensor_libraries: burn, nalgebra, faer, candle and Arrow
beside NumPy, PyTorch and JAX. Zero-copy is checked by addresses where the library allows it
(a copy where it cannot hold foreign memory: candle), values against the frameworks' own
operations, and the refusals a kernel's caller meets."""

import numpy as np
import pytest

from _frameworks import import_example, import_framework

libs = import_example("dlbridge_tensor_libraries", "tensor_libraries")
torch = import_framework("torch", "torch")

pytestmark = pytest.mark.example_module


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_a_burn_tensor_reaches_the_framework_without_a_copy(framework):
    like = np.empty(0) if framework == "numpy" else torch.empty(0)
    result, address = libs.burn_arange(like, 3, 4)
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    if framework == "numpy":
        assert isinstance(result, np.ndarray)
        assert result.ctypes.data == address
        np.testing.assert_array_equal(result, expected)
    else:
        assert isinstance(result, torch.Tensor)
        assert result.data_ptr() == address
        torch.testing.assert_close(result, torch.from_numpy(expected))
    # An empty burn tensor crosses too.
    result, _ = libs.burn_arange(like, 0, 5)
    assert tuple(result.shape) == (0, 5)


def test_nalgebra_reads_row_major_tensors_in_place_through_the_transpose():
    x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    v = torch.tensor([1.0, -1.0, 2.0, 0.5], dtype=torch.float64)
    product, in_place = libs.nalgebra_matvec(x, v)
    assert in_place
    torch.testing.assert_close(product, x @ v)
    product, in_place = libs.nalgebra_matvec(x.numpy(), v.numpy())
    assert in_place and isinstance(product, np.ndarray)
    np.testing.assert_allclose(product, x.numpy() @ v.numpy())


def test_nalgebra_refuses_what_it_would_read_out_of_bounds():
    # A column-major matrix has column stride 1 along axis 0 only: its transpose view would
    # need row stride 1 along axis 1, which this layout lacks.
    x = torch.arange(12, dtype=torch.float64).reshape(4, 3).T
    v = torch.ones(4, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"nalgebra issue #1616"):
        libs.nalgebra_matvec(x, v)
    # A strided vector: stride 2.
    with pytest.raises(TypeError, match=r"nalgebra cannot express a nalgebra vector view"):
        libs.nalgebra_matvec(
            torch.ones(3, 4, dtype=torch.float64), torch.ones(8, dtype=torch.float64)[::2]
        )


@pytest.mark.parametrize(
    "layout",
    ["row-major", "transposed", "sliced", "reversed"],
)
def test_faer_reads_every_layout_in_place(layout):
    base = torch.randn(6, 6, dtype=torch.float64)
    a = {
        "row-major": base[:4, :5],
        "transposed": base.T[:4, :5],
        "sliced": base[::2, 1:6],
        "reversed": base.numpy()[::-1, :5][:4],
    }[layout]
    b = torch.randn(5, 3, dtype=torch.float64)
    if isinstance(a, np.ndarray):
        product, in_place = libs.faer_matmul(a, b.numpy())
        assert in_place
        np.testing.assert_allclose(product, a @ b.numpy())
    else:
        product, in_place = libs.faer_matmul(a, b)
        assert in_place
        torch.testing.assert_close(product, a @ b)


def test_candle_copies_a_torch_tensor_and_returns_a_torch_tensor():
    x = torch.randn(5, 3)
    sums = libs.candle_column_sums(x)
    assert isinstance(sums, torch.Tensor)
    torch.testing.assert_close(sums, x.sum(0), rtol=1e-5, atol=1e-5)
    # Any layout: candle reads a row-major copy.
    torch.testing.assert_close(libs.candle_column_sums(x.T), x.T.sum(0), rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="expected a float32 tensor with 2 dimensions"):
        libs.candle_column_sums(x.double())


def test_an_arrow_fixed_shape_column_reaches_numpy_zero_copy_and_torch_as_a_copy():
    expected = np.arange(30, dtype=np.float32).reshape(5, 2, 3)
    column, address = libs.arrow_fixed_shape_column(np.empty(0), 5)
    assert column.ctypes.data == address
    assert not column.flags.writeable
    np.testing.assert_array_equal(column, expected)
    # Arrow's buffers are immutable and PyTorch has no read-only tensors (it writes memory
    # flagged READ_ONLY): PyTorch gets a copy, which it may write.
    column, address = libs.arrow_fixed_shape_column(torch.empty(0), 5)
    assert column.data_ptr() != address
    torch.testing.assert_close(column, torch.from_numpy(expected))
    column.add_(100)
    torch.testing.assert_close(column, torch.from_numpy(expected + 100))


def test_jax_arrays_reach_the_libraries_too():
    jax = import_framework("jax", "jax")
    import jax.numpy as jnp

    a = jnp.arange(12.0, dtype=jnp.float32).reshape(4, 3)
    sums = libs.candle_column_sums(a)
    assert isinstance(sums, jax.Array)
    np.testing.assert_allclose(np.asarray(sums), np.asarray(a).sum(0))
    # JAX asks for a legacy capsule, which cannot say "read-only": Arrow's immutable column
    # reaches JAX as a copy, never as the column's memory.
    column, address = libs.arrow_fixed_shape_column(jnp.zeros(1), 2)
    assert isinstance(column, jax.Array)
    assert column.unsafe_buffer_pointer() != address
    np.testing.assert_array_equal(
        np.asarray(column), np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    )
    # faer's product pads its columns (a 3x3 float64 product has column stride 8), a layout
    # JAX refuses: it reaches JAX compacted, with the product's values.
    x64 = jax.config.jax_enable_x64  # float64 needs it; this process's other tests keep theirs
    jax.config.update("jax_enable_x64", True)
    try:
        a = jnp.arange(9.0, dtype=jnp.float64).reshape(3, 3)
        product, in_place = libs.faer_matmul(a, a.T)
        assert in_place
        assert isinstance(product, jax.Array)
        np.testing.assert_allclose(np.asarray(product), np.asarray(a) @ np.asarray(a).T)
    finally:
        jax.config.update("jax_enable_x64", x64)


@pytest.mark.parametrize("layout", ["row-major", "transposed", "requires_grad", "numpy"])
def test_burn_reads_any_argument_the_kernel_accepts(layout):
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    x = {
        "row-major": base,
        "transposed": base.T,
        "requires_grad": base.clone().requires_grad_(),
        "numpy": base.numpy()[:, 1:],
    }[layout]
    sums, in_place = libs.burn_column_sums(x)
    # burn's TensorData is the argument's memory where it is C-contiguous; another layout is
    # compacted (a copy) on the way.
    assert in_place == (layout in ("row-major", "requires_grad"))
    expected = np.asarray(x.detach() if layout == "requires_grad" else x).sum(axis=0)
    np.testing.assert_allclose(np.asarray(sums), expected)
    assert isinstance(sums, np.ndarray if layout == "numpy" else torch.Tensor)
