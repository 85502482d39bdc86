"""JAX, as the checker drives it: its arrays (also on a GPU), `jax.dlpack.from_dlpack`, and
its catalogue.

Findings (jax 0.10.2, CPU): jax always returns a legacy `dltensor` (even for max_version=(1,
3)). int4/uint4 are refused with `JaxRuntimeError` ("UNIMPLEMENTED: XLA type S4 has no
DLPack equivalent"), not BufferError. float4_e2m1fn is exported as (17, 4, 1) over PACKED
memory (two values per byte, low nibble first) in a legacy capsule. `x.T` is materialized
(compact). In its default configuration (jax_enable_x64 off) its from_dlpack narrows 64-bit
dtypes (`NARROWING_FIX`).
"""

from __future__ import annotations

import numpy as np

from .base import kind_list

NAME = "jax"
MODULE = "jax"
#: How to keep 64-bit dtypes (`consumer.keeps-dtype-and-values`).
NARROWING_FIX = (
    "JAX narrows 64-bit dtypes while jax_enable_x64 is off, its default: "
    'jax.config.update("jax_enable_x64", True) (or JAX_ENABLE_X64=1) before any JAX array '
    "is made keeps them"
)


def make(array):
    """An array of `array`'s values; TypeError where JAX would change the dtype."""
    import jax.numpy as jnp

    result = jnp.asarray(array)
    if np.dtype(result.dtype) != array.dtype:  # float64 without jax_enable_x64
        raise TypeError(f"jax makes {result.dtype} of {array.dtype}")
    return result


def consume(obj):
    """`jax.dlpack.from_dlpack(obj)`."""
    import jax.dlpack

    return jax.dlpack.from_dlpack(obj)


def consume_copy(obj):
    """`jax.dlpack.from_dlpack(obj, copy=True)`."""
    import jax.dlpack

    return jax.dlpack.from_dlpack(obj, copy=True)


#: A result read back.
to_numpy = np.asarray


def read_only(result) -> bool:
    """Always: JAX's arrays are immutable."""
    return True


def make_cuda(array):
    """An array on the first GPU holding `array`'s values."""
    import jax

    return jax.device_put(make(array), jax.devices("gpu")[0])


def kinds() -> list:
    """JAX's odd arrays: legacy capsules, bfloat16, float8, float4, int4."""
    import jax.numpy as jnp

    entries = [
        (
            "float32_2d",
            lambda: jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3),
            "(2, 3) float32: jax always returns a legacy capsule (read-only by default)",
        ),
        (
            "bfloat16",
            lambda: jnp.arange(6.0).astype(jnp.bfloat16).reshape(2, 3),
            "bfloat16 (code 4)",
        ),
        ("zero_dim", lambda: jnp.array(3.5, dtype=jnp.float32), "0-d: NULL shape and strides"),
        (
            "zero_size",
            lambda: jnp.zeros((0, 3), dtype=jnp.float32),
            "shape (0, 3): non-NULL data, strides (3, 1)",
        ),
        ("bool", lambda: jnp.array([True, False, True]), "bool (code 6, bits 8)"),
        ("int8", lambda: jnp.arange(6, dtype=jnp.int8).reshape(2, 3), "int8"),
        (
            "transposed",
            lambda: jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3).T,
            "x.T: jax materializes it, compact (3, 2)",
        ),
        ("complex64", lambda: (jnp.arange(3.0) + 0.5j).astype(jnp.complex64), "complex64"),
    ]
    for name, note in [
        ("float8_e4m3fn", "float8_e4m3fn (code 10)"),
        ("float8_e5m2", "float8_e5m2 (code 12)"),
        ("float4_e2m1fn", "float4_e2m1fn: (17, 4, 1) over packed memory, legacy capsule"),
        ("int4", "int4: refused with JaxRuntimeError (not BufferError)"),
    ]:
        dtype = getattr(jnp, name, None)
        if dtype is None:
            continue

        def make(dtype=dtype, name=name):
            if name.startswith("float"):
                return jnp.array([0.5, 1.0, 1.5, 2.0, 3.0, 4.0]).astype(dtype)
            return jnp.arange(6).astype(dtype)

        entries.append((name, make, note))
    return kind_list("jax", entries)
