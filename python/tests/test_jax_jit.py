"""Rust kernels inside `jax.jit` through XLA's FFI (`dlbridge.jax`), with the test kernels'
handlers (`dlbridge._dlbridge._testing`, whose bodies are `dlbridge::xla::handle`): results
equal to JAX's own, eager and jitted, under `vmap`; bad input and a panicking kernel reach
Python as JAX's errors, with dlbridge's message, and the process goes on."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dlbridge._dlbridge import _testing

import dlbridge.jax as djax

TARGETS = djax.register(_testing)
ADD = TARGETS["add_f32"]


def add(a, b):
    return djax.call(ADD, a, a, b)


def test_register_names_every_handler_once():
    assert {
        "add_f32": f"{_testing.__name__}.add_f32",
        "panics": f"{_testing.__name__}.panics",
        "scale_f32": f"{_testing.__name__}.scale_f32",
    } == TARGETS
    # A second registration is a no-op, not JAX's error for a name registered twice.
    assert djax.register(_testing) == TARGETS
    assert (ADD, "cpu") in djax.registered_targets()


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (0, 4)])
def test_add_inside_jit_equals_jax(shape):
    a = jnp.arange(int(np.prod(shape)), dtype=jnp.float32).reshape(shape)
    b = jnp.full(shape, 0.5, dtype=jnp.float32)
    jitted = jax.jit(lambda x, y: add(jnp.sin(x), y) * 2)
    np.testing.assert_allclose(jitted(a, b), (jnp.sin(a) + b) * 2, rtol=1e-6)
    # Eagerly too: the same handler, one XLA computation per call.
    np.testing.assert_array_equal(add(a, b), a + b)


def test_results_stated_as_shape_dtype_structs():
    a = jnp.ones((2, 2), jnp.float32)
    spec = jax.ShapeDtypeStruct((2, 2), jnp.float32)
    np.testing.assert_array_equal(djax.call(ADD, spec, a, a), 2 * a)
    (only,) = djax.call(ADD, [spec], a, a)
    np.testing.assert_array_equal(only, 2 * a)
    with pytest.raises(TypeError, match=r"expected a jax\.ShapeDtypeStruct"):
        djax.call(ADD, 3, a, a)


def test_attributes_reach_the_kernel_by_name_and_type():
    x = jnp.arange(4, dtype=jnp.float32)
    scale = TARGETS["scale_f32"]
    jitted = jax.jit(lambda v: djax.call(scale, v, v, alpha=np.float32(3.0)))
    np.testing.assert_array_equal(jitted(x), 3 * x)
    with pytest.raises(Exception, match=r'attribute "alpha" is float64, not float32'):
        jax.block_until_ready(djax.call(scale, x, x, alpha=np.float64(3.0)))
    with pytest.raises(Exception, match=r'no attribute "alpha" \(the call has \["beta"\]\)'):
        jax.block_until_ready(djax.call(scale, x, x, beta=np.float32(3.0)))


def test_vmap_broadcasts_an_elementwise_kernel():
    a = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)
    b = jnp.ones(4, jnp.float32)

    def row(x, y):
        return djax.call(ADD, x, x, y, vmap_method="broadcast_all")

    batched = jax.jit(jax.vmap(row, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(batched, a + b)


def test_a_data_type_the_kernel_does_not_take_is_jax_s_error_with_dlbridge_s_message():
    a = jnp.arange(3, dtype=jnp.int32)
    with pytest.raises(Exception, match=r"float32.*int32|int32.*float32") as raised:
        jax.block_until_ready(djax.call(ADD, jax.ShapeDtypeStruct((3,), jnp.float32), a, a))
    assert "INVALID_ARGUMENT" in str(raised.value) or "invalid" in str(raised.value).lower()


def test_shapes_the_kernel_checks_are_refused_with_its_message():
    a, b = jnp.ones(3, jnp.float32), jnp.ones(4, jnp.float32)
    with pytest.raises(Exception, match=r"add_f32: shapes \[3\], \[4\]"):
        jax.block_until_ready(add(a, b))


def test_a_kernel_that_panics_is_an_error_and_the_process_goes_on():
    a = jnp.ones(2, jnp.float32)
    with pytest.raises(Exception, match="the handler panicked: the kernel panicked on purpose"):
        jax.block_until_ready(djax.call(TARGETS["panics"], a, a))
    np.testing.assert_array_equal(add(a, a), 2 * a)


def test_a_module_without_handlers_is_refused_by_name():
    with pytest.raises(TypeError, match="'plain' publishes no XLA handlers"):
        djax.register(types.ModuleType("plain"))
