"""Rust's tensor libraries and Python's frameworks through dlbridge: a burn tensor handed to
PyTorch, a PyTorch tensor read by burn, nalgebra, faer and candle, an Arrow fixed-shape tensor
column handed to NumPy (zero-copy, read-only) and PyTorch (a copy: PyTorch would write
Arrow's immutable memory). Each line says whether the memory crossed without a copy (the
addresses compared) and checks the values against NumPy or PyTorch. Run by `make tour`.
"""

import dlbridge_tensor_libraries as libs
import numpy as np
import torch


def crossing(zero_copy):
    return "zero-copy" if zero_copy else "copied"


# burn -> PyTorch and NumPy: burn's Flex (CPU) backend hands its bytes over.
tensor, address = libs.burn_arange(torch.empty(0), 2, 3)
assert isinstance(tensor, torch.Tensor)
torch.testing.assert_close(tensor, torch.arange(6, dtype=torch.float32).reshape(2, 3))
shared = tensor.data_ptr() == address
print(f"burn Tensor<2> (Flex)    -> torch {tuple(tensor.shape)}: {crossing(shared)}")
array, address = libs.burn_arange(np.empty(0), 3, 2)
np.testing.assert_array_equal(array, np.arange(6, dtype=np.float32).reshape(3, 2))
print(f"burn Tensor<2> (Flex)    -> numpy {array.shape}: {crossing(array.ctypes.data == address)}")

# PyTorch -> burn: the argument's own memory becomes burn's TensorData (`to_burn_data`), a
# tensor autograd tracks included (read as x.detach() reads it); a transposed one is compacted.
x = torch.arange(12, dtype=torch.float32).reshape(3, 4).requires_grad_()
sums, in_place = libs.burn_column_sums(x)
torch.testing.assert_close(sums, x.detach().sum(0))
print(f"torch (3, 4) grad        -> burn sum_dim(0): read {crossing(in_place)}")
sums, in_place = libs.burn_column_sums(x.detach().T)
torch.testing.assert_close(sums, x.detach().T.sum(0))
print(f"torch (4, 3) transposed  -> burn sum_dim(0): read {crossing(in_place)} (compacted)")

# PyTorch -> nalgebra: a row-major matrix is read as nalgebra's column-major transpose.
x = torch.arange(12, dtype=torch.float64).reshape(3, 4)
v = torch.tensor([1.0, -1.0, 2.0, 0.5], dtype=torch.float64)
product, in_place = libs.nalgebra_matvec(x, v)
torch.testing.assert_close(product, x @ v)
print(
    f"torch (3, 4) @ (4,)      -> nalgebra tr_mul: read {crossing(in_place)}, result a torch tensor"
)

# PyTorch -> faer: any layout, a transposed (column-major) tensor included.
a = torch.randn(5, 4, dtype=torch.float64)
b = torch.randn(5, 3, dtype=torch.float64)
product, in_place = libs.faer_matmul(a.T, b)
torch.testing.assert_close(product, a.T @ b)
print(f"torch a.T @ b            -> faer: read {crossing(in_place)}, strides {a.T.stride()} kept")

# PyTorch -> candle: candle's CPU storage owns a Vec, so candle reads a copy.
x = torch.randn(4, 3)
sums = libs.candle_column_sums(x)
torch.testing.assert_close(sums, x.sum(0), rtol=1e-5, atol=1e-5)
print(f"torch (4, 3)             -> candle sum(0): {crossing(False)} (candle owns its memory)")

# Arrow -> NumPy and PyTorch: an arrow.fixed_shape_tensor column of 4 tensors of shape (2, 3).
expected = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
column, address = libs.arrow_fixed_shape_column(np.empty(0), 4)
np.testing.assert_array_equal(column, expected)
assert not column.flags.writeable  # Arrow's buffers are immutable
shared = column.ctypes.data == address
print(f"arrow fixed_shape_tensor -> numpy {column.shape}: {crossing(shared)}, read-only")
# PyTorch has no read-only tensors (it writes memory flagged READ_ONLY): it gets a copy.
column, address = libs.arrow_fixed_shape_column(torch.empty(0), 4)
torch.testing.assert_close(column, torch.from_numpy(expected))
shared = column.data_ptr() == address
assert not shared
print(f"arrow fixed_shape_tensor -> torch {tuple(column.shape)}: {crossing(shared)}, writable")
