"""PyTorch's autograd is never written behind its back (`dlbridge_pyo3::framework`).

- `from_dlpack` refuses a tensor that requires grad with BufferError, as `__dlpack__` does,
  on the exchange-table path too (the table exports it);
- a read-only typed argument reads it as `x.detach()` does;
- a writable typed argument refuses it while grad mode is on (leaf or not), writes it under
  `torch.no_grad()` as an optimizer step does, and after a call that took a mutable view
  of any PyTorch tensor, bumps that tensor's version counter as PyTorch's in-place
  operations do: `backward()` then raises for a tensor it saved, exactly as after `mul_`;
- a writable typed argument refuses an inference tensor outside inference mode, as PyTorch's
  in-place operations do (test_inplace_rules.py compares every rule with `add_`).
PaddlePaddle's equivalents are in interop/test_paddle.py.
"""

import pytest

import dlbridge
from _frameworks import import_framework
from _kernels import kernels as K

torch = import_framework("torch", "torch")


@pytest.mark.parametrize("copy", [None, True, False])
def test_from_dlpack_refuses_a_tensor_that_requires_grad(copy):
    leaf = torch.zeros(3, requires_grad=True)
    for tensor in (leaf, leaf * 2, leaf[1:], torch.nn.Parameter(torch.ones(2))):
        with pytest.raises(BufferError) as refused:
            dlbridge.from_dlpack(tensor, copy=copy)
        assert "requires grad" in str(refused.value)
        assert "x.detach()" in str(refused.value)
        with pytest.raises(BufferError):  # the reference, for comparison
            tensor.__dlpack__(max_version=(1, 3))
    detached = dlbridge.from_dlpack(leaf.detach())
    assert detached.data_ptr == leaf.data_ptr()


def test_read_only_arguments_read_a_tracked_tensor_as_detach_does():
    leaf = torch.arange(6, dtype=torch.float32, requires_grad=True)
    assert K.total(leaf) == 15.0
    assert K.total(leaf * 2) == 30.0
    assert K.inspect_argument(leaf)["data"] == leaf.data_ptr()
    assert leaf._version == 0 and leaf.grad is None


@pytest.mark.cpp_exception  # PyTorch's own refusal of `mul_` on a leaf
@pytest.mark.parametrize("which", ["leaf", "non-leaf", "view of a leaf", "parameter"])
def test_writable_arguments_refuse_a_tracked_tensor_while_grad_mode_is_on(which):
    leaf = torch.ones(4, dtype=torch.float64, requires_grad=True)
    tensor = {
        "leaf": lambda: leaf,
        "non-leaf": lambda: leaf * 3,
        "view of a leaf": lambda: leaf[1:],
        "parameter": lambda: torch.nn.Parameter(torch.ones(4, dtype=torch.float64)),
    }[which]()
    before = tensor.detach().clone()
    with pytest.raises(TypeError) as refused:
        K.add_one(tensor)
    message = str(refused.value)
    assert "requires grad while grad mode is on" in message
    assert "no_grad()" in message and "x.detach()" in message
    assert torch.equal(tensor.detach(), before)
    # PyTorch's own in-place operation refuses a leaf too.
    if which in ("leaf", "parameter"):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            tensor.mul_(2)


def test_under_no_grad_a_leaf_is_written_and_its_version_bumped():
    # An optimizer step: parameters are updated in place under torch.no_grad().
    weight = torch.nn.Parameter(torch.ones(3))
    with torch.no_grad():
        K.fill(weight, 0.5)
    assert weight.detach().tolist() == [0.5] * 3
    assert weight._version == 1
    assert weight.requires_grad  # still a parameter of the graph
    # As with PyTorch's own in-place operation there.
    with torch.no_grad():
        weight.mul_(2)
    assert weight._version == 2


def test_a_detached_tensor_is_written_and_the_shared_version_bumped():
    leaf = torch.ones(3, requires_grad=True)
    K.fill(leaf.detach(), 4.0)
    assert leaf.detach().tolist() == [4.0] * 3
    assert leaf._version == 1  # detach() shares the version counter


@pytest.mark.cpp_exception  # the autograd engine's error
@pytest.mark.parametrize("writer", ["dlbridge kernel", "x.mul_(2)"])
def test_writing_a_tensor_saved_for_backward_makes_backward_raise(writer):
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    w = torch.full((3,), 2.0, dtype=torch.float64)  # saved by `x * w` for the gradient of x
    loss = (x * w).sum()
    if writer == "dlbridge kernel":
        K.add_one(w)
    else:
        w.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_version_counters_move_only_for_mutable_access():
    tensor = torch.zeros(2, 3)
    K.fill(tensor, 1.0)
    assert tensor._version == 1
    K.fill(tensor.t(), 2.0)  # a view shares the counter
    assert tensor._version == 2
    assert K.take_mut(tensor) == 6  # a TensorArgMut whose mutable view is never taken
    assert K.total(tensor) == 12.0  # a TensorArg
    assert tensor._version == 2
    # A call refused at a later argument took no mutable view: nothing is bumped.
    with pytest.raises(TypeError):
        K.scale(tensor, tensor.double(), 2.0)
    assert tensor._version == 2


@pytest.mark.cpp_exception  # an inference tensor's `_version` raises from C++
def test_inference_tensors_are_written_in_inference_mode_only():
    with torch.inference_mode():
        tensor = torch.zeros(3)
    with pytest.raises(TypeError) as refused:
        K.fill(tensor, 3.0)
    assert "inference tensor" in str(refused.value)
    assert "torch.inference_mode()" in str(refused.value)
    assert tensor.tolist() == [0.0] * 3
    with torch.inference_mode():
        # No version counter to bump: written as PyTorch's own add_ writes it there.
        K.fill(tensor, 3.0)
    assert tensor.tolist() == [3.0] * 3


def test_the_version_bump_runs_for_an_argument_dropped_without_the_gil():
    # `scale` releases the GIL while it writes; the bump happens when PyO3 drops the
    # argument afterwards, on the calling thread.
    out = torch.zeros(2, 2)
    K.scale(torch.ones(2, 2), out, 3.0)
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    assert out._version == 1
