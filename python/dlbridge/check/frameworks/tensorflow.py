"""TensorFlow, as the checker drives it: its tensors, `tf.experimental.dlpack.from_dlpack`
(which takes a legacy capsule), and its catalogue.

Findings (tensorflow 2.21, CPU): tensorflow returns legacy capsules; zero-size tensors have
a NULL data pointer. float8 and int4 are refused with `InvalidArgumentError` (not
BufferError). `tf.Variable` has no `__dlpack__` at all (AttributeError); its `.value()` does.
`__dlpack__` on a string tensor aborts the process (TF CHECK failure), so no string tensor
is catalogued. TensorFlow and PaddlePaddle crash the interpreter when imported into one
process (`CONFLICTS`).
"""

from __future__ import annotations

from dlbridge.check.capsules import is_capsule

from .base import kind_list

NAME = "tensorflow"
MODULE = "tensorflow"
DISTRIBUTION = "tensorflow-cpu"
#: Never imported into one process with TensorFlow.
CONFLICTS = ("paddle",)


def make(array):
    """`tf.constant(array)`."""
    import tensorflow as tf

    return tf.constant(array)


#: What its from_dlpack lacks.
FROM_DLPACK_LACKS = {
    "copy": "tf.experimental.dlpack.from_dlpack(dlcapsule) takes a capsule and nothing else"
}


def consume(obj):
    """Its from_dlpack, which takes a legacy capsule only, not a producer object."""
    import tensorflow as tf

    capsule = obj if is_capsule(obj) else obj.__dlpack__()
    return tf.experimental.dlpack.from_dlpack(capsule)


def to_numpy(result):
    """`result.numpy()`."""
    return result.numpy()


def read_only(result) -> bool:
    """Always: TensorFlow's tensors are immutable."""
    return True


def kinds() -> list:
    """TensorFlow's odd tensors: legacy capsules, variables, bfloat16, float8, int4."""
    import tensorflow as tf

    # Never a string tensor here: __dlpack__ on one aborts the process (a TF CHECK failure).
    entries = [
        (
            "float32_2d",
            lambda: tf.reshape(tf.range(6.0), (2, 3)),
            "(2, 3) float32: tensorflow returns a legacy capsule",
        ),
        ("zero_dim", lambda: tf.constant(3.5), "0-d: NULL shape and strides"),
        ("zero_size", lambda: tf.zeros((0, 3)), "shape (0, 3): NULL data pointer"),
        ("bool", lambda: tf.constant([True, False, True]), "bool"),
        ("int64", lambda: tf.range(6, dtype=tf.int64), "int64"),
        ("bfloat16", lambda: tf.cast(tf.range(6.0), tf.bfloat16), "bfloat16 (code 4)"),
        (
            "variable_value",
            lambda: tf.Variable([[1.0, 2.0], [3.0, 4.0]]).value(),
            "tf.Variable(...).value(): an EagerTensor over the variable's buffer",
        ),
        (
            "variable",
            lambda: tf.Variable([[1.0, 2.0], [3.0, 4.0]]),
            "tf.Variable itself: no __dlpack__ at all (AttributeError)",
        ),
        (
            "transposed",
            lambda: tf.transpose(tf.reshape(tf.range(6.0), (2, 3))),
            "tf.transpose: materialized, compact",
        ),
        ("complex64", lambda: tf.complex(tf.range(3.0), tf.range(3.0) + 0.5), "complex64"),
        ("uint64", lambda: tf.constant([1, 2, 3], dtype=tf.uint64), "uint64"),
    ]
    experimental = getattr(tf.dtypes, "experimental", None)
    for name, note in [
        ("float8_e4m3fn", "float8_e4m3fn: refused with InvalidArgumentError (not BufferError)"),
        ("int4", "int4: refused with InvalidArgumentError (not BufferError)"),
    ]:
        dtype = getattr(experimental, name, None) if experimental is not None else None
        if dtype is None:
            continue

        def make(dtype=dtype, name=name):
            return tf.cast(tf.range(6.0) if name.startswith("float") else tf.range(6), dtype)

        entries.append((name, make, note))
    return kind_list("tensorflow", entries)
