"""MXNet 1.x, as the checker drives it: a framework with DLPack functions but no `__dlpack__`
(`mx.nd.to_dlpack_for_read` gives a legacy capsule, `mx.nd.from_dlpack` imports one), so its
arrays are handed out in the `CapsuleOnly` adapter and the rules the adapter answers are n/a.
It has no catalogue.
"""

from __future__ import annotations

NAME = "mxnet"
MODULE = "mxnet"


def make(array):
    """`mx.nd.array(array)`, of `array`'s dtype."""
    import mxnet as mx

    return mx.nd.array(array, dtype=array.dtype)


def to_capsule(tensor):
    """`mx.nd.to_dlpack_for_read(tensor)`: a legacy capsule."""
    import mxnet as mx

    return mx.nd.to_dlpack_for_read(tensor)


def from_capsule(capsule):
    """`mx.nd.from_dlpack(capsule)`."""
    import mxnet as mx

    return mx.nd.from_dlpack(capsule)


def to_numpy(tensor):
    """`tensor.asnumpy()`."""
    return tensor.asnumpy()


def device(tensor):
    """MXNet's own (device_type, device_id) of an NDArray, from its context."""
    kinds = {"cpu": 1, "cpu_shared": 1, "gpu": 2, "cpu_pinned": 3}
    context = tensor.context
    return kinds[context.device_type], int(context.device_id)
