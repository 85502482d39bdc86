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
    names = [
        "add_f32",
        "axpy",
        "clamp_",
        "divmod_i64",
        "doubled_and_row_sums",
        "matmul",
        "panics",
        "scale_f32",
    ]
    assert {name: f"{_testing.__name__}.{name}" for name in names} == TARGETS
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


# ---- Kernels declared once (dlbridge_pyo3::kernel!), called through dlbridge.jax.kernel -----

AXPY = djax.kernel(_testing, "axpy", vmap_method="broadcast_all")
MATMUL = djax.kernel(_testing, "matmul")
CLAMP = djax.kernel(_testing, "clamp_")
DIVMOD = djax.kernel(_testing, "divmod_i64")


@pytest.fixture
def x64():
    """64-bit types in JAX (float64 and int64 kernels), for one test."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def test_kernel_inside_jit_equals_eager_and_jax():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 4), dtype=np.float32)
    eager_out = np.empty_like(x)
    _testing.axpy(x, y, eager_out, 2.5)
    jitted = jax.jit(lambda x, y: AXPY(jnp.cos(x), y, alpha=2.5) - 1)
    np.testing.assert_allclose(jitted(x, y), 2.5 * np.cos(x) + y - 1, rtol=1e-5, atol=1e-6)
    # Eager (outside jit), through XLA too; the same result as the eager Rust call.
    np.testing.assert_array_equal(AXPY(x, y, 2.5), eager_out)
    # An attribute marked static is a constant of the program as well.
    np.testing.assert_array_equal(jax.jit(AXPY, static_argnums=2)(x, y, 2.5), eager_out)


def test_a_shape_rule_gives_the_result_shape():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5), dtype=np.float32)
    b = rng.standard_normal((5, 2), dtype=np.float32)
    product = jax.jit(lambda a, b: MATMUL(a, b) + 1)(a, b)
    assert product.shape == (3, 2)
    np.testing.assert_allclose(product, a @ b + 1, rtol=1e-5, atol=1e-5)


def test_vmap_broadcasts_an_elementwise_kernel_and_sequences_a_matmul():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, 4, 3), dtype=np.float32)
    batched = jax.jit(jax.vmap(lambda x, y: AXPY(x, y, alpha=3.0)))(x, y)
    np.testing.assert_allclose(batched, 3 * x + y, rtol=1e-6)
    a = rng.standard_normal((4, 2, 3), dtype=np.float32)
    b = rng.standard_normal((4, 3, 5), dtype=np.float32)
    np.testing.assert_allclose(jax.jit(jax.vmap(MATMUL))(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_a_mutated_argument_comes_back_as_a_result(x64):
    x = np.array([-2.0, 0.25, 3.0])
    clamped = jax.jit(lambda x: CLAMP(x * 2, 0.0, 1.0))(x)
    np.testing.assert_array_equal(clamped, [0.0, 0.5, 1.0])
    # Functional, as JAX is: the argument itself is unchanged.
    np.testing.assert_array_equal(x, [-2.0, 0.25, 3.0])


def test_several_results_come_back_in_order(x64):
    a = np.array([7, -7, 7, -7, 0], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3], dtype=np.int64)
    quotient, remainder = jax.jit(DIVMOD)(a, b)
    np.testing.assert_array_equal(quotient, a // b)
    np.testing.assert_array_equal(remainder, a % b)


def test_wrong_dtype_or_rank_is_refused_at_trace_time():
    a = np.ones((2, 2), np.float32)
    with pytest.raises(
        TypeError,
        match=r"matmul: b: expected a float32 tensor with 2 "
        r"dimensions, got int32 shape \(2, 2\)",
    ):
        jax.jit(MATMUL)(a, np.ones((2, 2), np.int32))
    with pytest.raises(
        TypeError,
        match=r"matmul: a: expected a float32 tensor with 2 "
        r"dimensions, got float32 shape \(4,\)",
    ):
        jax.jit(MATMUL)(np.ones(4, np.float32), a)


def test_a_shape_rule_refuses_at_trace_time():
    with pytest.raises(
        ValueError,
        match=r"matmul: a has shape \[2, 3\] and b \[2, 3\]: inner "
        "extents differ",
    ):
        jax.jit(MATMUL).lower(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


def test_attributes_are_constants_and_checked():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="the attribute alpha is traced"):
        jax.jit(AXPY)(x, x, 2.0)
    with pytest.raises(TypeError, match="missing attribute"):
        AXPY(x, x)
    with pytest.raises(TypeError, match="no attribute 'beta'"):
        AXPY(x, x, alpha=1.0, beta=2.0)
    with pytest.raises(TypeError, match="missing tensor argument"):
        AXPY(x, alpha=1.0)


def test_the_kernels_own_refusal_is_an_xla_error(x64):
    with pytest.raises(Exception, match="INVALID_ARGUMENT: clamp_: low 2 is above high 1") as e:
        jax.jit(lambda x: CLAMP(x, 2.0, 1.0))(np.zeros(3))
    assert "Runtime" in type(e.value).__name__
    with pytest.raises(Exception, match="divmod_i64: division by zero"):
        jax.block_until_ready(DIVMOD(np.ones(2, np.int64), np.zeros(2, np.int64)))


def test_the_handler_checks_results_against_the_rules():
    # ffi_call by hand, with a result shape the kernel's rule does not give.
    target = TARGETS["matmul"]
    wrong = jax.ShapeDtypeStruct((3, 3), jnp.float32)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(
        Exception,
        match=r"matmul: the result for out is float32 shape \(3, 3\), "
        r"not float32 shape \(2, 4\)",
    ):
        jax.block_until_ready(jax.ffi.ffi_call(target, wrong)(a, b))
    with pytest.raises(
        Exception, match="matmul: called with 1 arguments and 1 results; the kernel takes 2 and 1"
    ):
        jax.block_until_ready(jax.ffi.ffi_call(target, wrong)(np.ones((3, 3), np.float32)))


def test_unknown_kernels_and_modules_are_named():
    with pytest.raises(KeyError, match="has no kernel 'nope'"):
        djax.kernel(_testing, "nope")
    with pytest.raises(TypeError, match="publishes no kernels"):
        djax.kernel(types.ModuleType("empty"), "axpy")


def test_results_of_both_kinds_of_rule_take_their_own_shapes():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    kernel = djax.kernel(_testing, "doubled_and_row_sums")
    doubled, sums = jax.jit(kernel)(m)
    np.testing.assert_array_equal(doubled, 2 * m)
    np.testing.assert_array_equal(sums, m.sum(axis=1))
