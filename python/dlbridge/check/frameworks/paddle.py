"""PaddlePaddle, as the checker drives it: its tensors, `paddle.from_dlpack`, and its
catalogue.

Findings (paddle 3.3.1, CPU): its `__dlpack_device__` returns `device_id=None` for CPU; the
capsule says 0. A strided view is exported with byte_offset 0 and `data` pointing at its
first element. Zero-size tensors: NULL data and strides (0, 3) for shape (0, 3). Tensors that
require gradients are refused with BufferError, which its C exchange table exports: every
consumer is fed them (`consumer.producer-refusals`). TensorFlow and PaddlePaddle crash the
interpreter when imported into one process (`CONFLICTS`).
"""

from __future__ import annotations

from .base import kind_list

NAME = "paddle"
MODULE = "paddle"
DISTRIBUTION = "paddlepaddle"
#: Never imported into one process with PaddlePaddle.
CONFLICTS = ("tensorflow",)
#: Its C exchange table exports tensors its `__dlpack__` refuses (stop_gradient=False).
TABLE_EXPORTS_REFUSED = True


def make(array):
    """`paddle.to_tensor(array)`."""
    import paddle

    return paddle.to_tensor(array)


def consume(obj):
    """`paddle.from_dlpack(obj)`."""
    import paddle

    return paddle.from_dlpack(obj)


def consume_copy(obj):
    """`paddle.from_dlpack(obj, copy=True)`."""
    import paddle

    return paddle.from_dlpack(obj, copy=True)


def to_numpy(result):
    """`result.numpy()`."""
    return result.numpy()


def kinds() -> list:
    """PaddlePaddle's odd tensors: gradients, strided views, bfloat16, float8."""
    import paddle

    def grad_leaf():
        x = paddle.arange(6, dtype="float32").reshape([2, 3])
        x.stop_gradient = False
        return x

    def int_grad():
        x = paddle.arange(6)
        x.stop_gradient = False
        return x

    entries = [
        (
            "stop_gradient_false_leaf",
            grad_leaf,
            "leaf with stop_gradient=False: refused (BufferError)",
        ),
        ("non_leaf", lambda: grad_leaf() * 2, "x*2 of a grad leaf: refused (BufferError)"),
        (
            "plain",
            lambda: paddle.arange(6, dtype="float32").reshape([2, 3]),
            "(2, 3) float32; __dlpack_device__ says device_id None",
        ),
        (
            "strided_view",
            lambda: paddle.arange(12, dtype="float32").reshape([3, 4])[:, 1:3],
            "x[:, 1:3]: strides (4, 1), data points at the first element",
        ),
        ("zero_size", lambda: paddle.zeros([0, 3]), "shape (0, 3): NULL data, strides (0, 3)"),
        ("zero_dim", lambda: paddle.to_tensor(3.5), "0-d"),
        (
            "bfloat16",
            lambda: paddle.arange(6, dtype="float32").astype("bfloat16"),
            "bfloat16 (code 4)",
        ),
        ("bool", lambda: paddle.to_tensor([True, False, True]), "bool"),
        ("complex64", lambda: paddle.to_tensor([1 + 2j, 3j], dtype="complex64"), "complex64"),
        ("int64", lambda: paddle.arange(6), "int64"),
        (
            "int64_stop_gradient_false",
            int_grad,
            (
                "an int64 tensor with stop_gradient=False (PaddlePaddle allows it, unlike "
                "PyTorch for integer tensors): refused (BufferError)"
            ),
        ),
        (
            "transposed",
            lambda: paddle.arange(6, dtype="float32").reshape([2, 3]).t(),
            ".t(): a strided view with strides (1, 3)",
        ),
        (
            "float8_e4m3fn",
            lambda: paddle.arange(6, dtype="float32").astype("float8_e4m3fn"),
            "float8_e4m3fn (code 10)",
        ),
    ]
    return kind_list("paddle", entries)
