"""The example's three kernels declared once with `dlbridge_pyo3::kernel!` (`to_gray`,
`matmul_into`, `add_scaled_`), run three ways: eagerly, inside `jax.jit` (and under `vmap`),
and inside `torch.compile(fullgraph=True)`; each way's result is checked against the eager one.
Run by `make tour`."""

import dlbridge_matmul as kernels
import jax
import jax.numpy as jnp
import numpy as np
import torch

import dlbridge.jax
import dlbridge.torch

rng = np.random.default_rng(0)
image = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
a = rng.standard_normal((32, 24), dtype=np.float32)
b = rng.standard_normal((24, 16), dtype=np.float32)
acc = rng.standard_normal((8, 8), dtype=np.float32)
x = rng.standard_normal((8, 8), dtype=np.float32)

# Eagerly: the Rust functions, results written into arrays the caller allocated.
gray = np.empty(image.shape[:2], np.uint8)
kernels.to_gray(image, gray)
product = np.empty((32, 16), np.float32)
kernels.matmul_into(a, b, product)
stepped = acc.copy()
kernels.add_scaled_(stepped, x, 0.5)
print("eager          to_gray, matmul_into, add_scaled_ (results in NumPy arrays)")

# Inside jax.jit: XLA calls the Rust kernels; results' shapes come from the kernels' rules.
to_gray_jax = dlbridge.jax.kernel(kernels, "to_gray")
matmul_jax = dlbridge.jax.kernel(kernels, "matmul_into")
add_scaled_jax = dlbridge.jax.kernel(kernels, "add_scaled_", vmap_method="broadcast_all")

np.testing.assert_array_equal(jax.jit(to_gray_jax)(image), gray)
np.testing.assert_allclose(jax.jit(matmul_jax)(a, b), product, rtol=1e-6)
np.testing.assert_array_equal(jax.jit(lambda acc, x: add_scaled_jax(acc, x, 0.5))(acc, x), stepped)
batch = np.stack([image, image[::-1]])
np.testing.assert_array_equal(jax.jit(jax.vmap(to_gray_jax))(batch)[0], gray)
print("jax.jit        the same three, equal to eager; vmap over a batch of images too")

# A jitted function that mixes JAX's own operations and the Rust kernels.
normalized = jax.jit(lambda a, b: jnp.tanh(matmul_jax(a, b)))(a, b)
np.testing.assert_allclose(normalized, np.tanh(product), rtol=1e-5, atol=1e-6)

# Inside torch.compile: each kernel is an operator torch.ops.dlbridge_matmul.<name>.
ops = dlbridge.torch.register(kernels)


def pipeline(image, a, b, acc, x):
    gray = torch.ops.dlbridge_matmul.to_gray(image)
    product = torch.ops.dlbridge_matmul.matmul_into(a, b).relu()
    acc = acc.clone()
    torch.ops.dlbridge_matmul.add_scaled_(acc, x, 0.5)
    return gray, product, acc


compiled = torch.compile(pipeline, fullgraph=True)
tensors = [torch.from_numpy(array) for array in (image, a, b, acc, x)]
gray_t, product_t, stepped_t = compiled(*tensors)
assert torch.equal(gray_t, torch.from_numpy(gray))
torch.testing.assert_close(product_t, torch.from_numpy(product).relu())
assert torch.equal(stepped_t, torch.from_numpy(stepped))
print("torch.compile  the same three in one graph (fullgraph=True), equal to eager")

try:
    jax.jit(matmul_jax)(a, a)
except ValueError as error:
    print(f"a shape the rule refuses, at trace time -> ValueError: {error}")
