"""One Rust matmul and add, written once, called zero-copy on NumPy, PyTorch and JAX, each
result checked against the framework's own operation. Run by `make tour`."""

import dlbridge_matmul as kernels
import numpy as np
import torch

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # pragma: no cover - jax is in the test environment
    jax = None

rng = np.random.default_rng(0)
a_np = rng.standard_normal((56, 56), dtype=np.float32)
b_np = rng.standard_normal((56, 56), dtype=np.float32)

# NumPy in, NumPy out.
c = kernels.matmul(a_np, b_np)
assert isinstance(c, np.ndarray)
np.testing.assert_allclose(c, a_np @ b_np, rtol=1e-4, atol=1e-4)
print(f"numpy  matmul 56x56 -> {type(c).__module__}.{type(c).__name__}, matches a @ b")

# PyTorch in, PyTorch out; a transposed (strided) input is read in place.
a_t, b_t = torch.from_numpy(a_np), torch.from_numpy(b_np)
c = kernels.matmul(a_t.T, b_t)
assert isinstance(c, torch.Tensor)
torch.testing.assert_close(c, a_t.T @ b_t, rtol=1e-4, atol=1e-4)
out = torch.empty(56, 56)
kernels.matmul_into(a_t, b_t, out)
torch.testing.assert_close(out, a_t @ b_t, rtol=1e-4, atol=1e-4)
print("torch  matmul (transposed input), matmul_into a torch tensor, match torch.matmul")

s = kernels.add(a_t, b_t)
torch.testing.assert_close(s, a_t + b_t)
print("torch  add matches a + b")

if jax is not None:
    a_j, b_j = jnp.asarray(a_np), jnp.asarray(b_np)
    c = kernels.matmul(a_j, b_j)
    assert isinstance(c, jax.Array)
    np.testing.assert_allclose(np.asarray(c), np.asarray(a_j @ b_j), rtol=1e-3, atol=1e-3)
    print("jax    matmul -> jax.Array, matches a @ b")

try:
    kernels.matmul(a_np.astype(np.float64), b_np)
except TypeError as error:
    print(f"wrong dtype -> TypeError: {error}")
