"""NumPy -> dlbridge -> PyTorch, zero-copy, and back: the Python half of `make tour`."""

import numpy as np
import torch

import dlbridge

array = np.arange(12, dtype=np.float32).reshape(3, 4)
tensor = dlbridge.from_dlpack(array)
print(f"numpy    {array.shape} {array.dtype} at {array.ctypes.data:#x}")
print(f"dlbridge {tensor!r} at {tensor.data_ptr:#x}")

as_torch = torch.from_dlpack(tensor)
print(f"torch    {tuple(as_torch.shape)} {as_torch.dtype} at {as_torch.data_ptr():#x}")
assert as_torch.data_ptr() == array.ctypes.data == tensor.data_ptr, "zero-copy"

as_torch[0, 0] = 100.0
print(f"a write through torch is seen by numpy: array[0, 0] = {array[0, 0]}")

del array  # dlbridge keeps NumPy's memory alive for torch
print(f"after `del array`, torch still reads {as_torch[0].tolist()}")

back = np.from_dlpack(dlbridge.from_dlpack(as_torch.T))
print(f"torch.T -> dlbridge -> numpy: shape {back.shape}, strides {back.strides}")

try:
    dlbridge.from_dlpack(object())
except TypeError as error:
    print(f"not a producer -> TypeError: {error}")
