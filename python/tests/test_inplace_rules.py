"""A writable typed argument (`TensorArgMut`) refuses exactly the PyTorch tensors that
PyTorch's own in-place operations refuse to write, with one documented departure.

Each case is a tensor made as users make them (a leaf that requires grad, views of one, views
made under `no_grad()` or `inference_mode()`, outputs of multi-output views and of custom
autograd Functions, inference tensors, broadcast tensors, ...); each is written in grad mode,
under `torch.no_grad()` and under `torch.inference_mode()`, once by `x.add_(1)` and once by a
kernel taking `TensorArgMut`, each on a fresh tensor. The verdicts (written or refused) must
agree, but where PyTorch writes a tracked tensor in grad mode by recording the operation in
the graph (a non-leaf that requires grad): a Rust kernel cannot record itself, so dlbridge
refuses these (`RECORDED_BY_PYTORCH`), as the guide says (docs/guide/src/semantics.md).
"""

from __future__ import annotations

import contextlib

import pytest

from _frameworks import import_framework
from _kernels import kernels as K

torch = import_framework("torch", "torch")

#: PyTorch's own refusals are C++ exceptions (left out under AddressSanitizer), and so is
#: reading `_version` of an inference tensor, which dlbridge's check does.
pytestmark = pytest.mark.cpp_exception


def _inference_tensor():
    with torch.inference_mode():
        return torch.zeros(3)


def _inference_view():
    with torch.inference_mode():
        tensor = torch.zeros(4)
    return tensor[1:]


def _view_made_under_no_grad(base_is_leaf):
    def make():
        base = torch.zeros(4, requires_grad=True)
        if not base_is_leaf:
            base = base.clone()
        with torch.no_grad():
            return base[1:]

    return make


def _view_of_a_view_made_under_no_grad():
    base = torch.zeros(5, requires_grad=True).clone()
    with torch.no_grad():
        view = base[1:]
    return view[1:]


def _view_made_in_inference_mode_of_a_tracked_tensor():
    base = torch.zeros(4, requires_grad=True)
    with torch.inference_mode():
        return base[1:]


def _view_made_in_inference_mode_of_a_normal_tensor():
    base = torch.zeros(4)
    with torch.inference_mode():
        return base[1:]


def _view_made_under_no_grad_then_base_tracked():
    base = torch.zeros(4)
    with torch.no_grad():
        view = base[1:]
    base.requires_grad_()
    return view


def _custom_function_output():
    class Identity(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad

    return Identity.apply(torch.zeros(3, requires_grad=True).clone())


def _unbind_output_detached():
    return torch.zeros(3, 2, requires_grad=True).clone().unbind()[0].detach()


CASES = {
    "plain": lambda: torch.zeros(3),
    "leaf_requires_grad": lambda: torch.zeros(3, requires_grad=True),
    "parameter": lambda: torch.nn.Parameter(torch.zeros(3)),
    "parameter_no_grad": lambda: torch.nn.Parameter(torch.zeros(3), requires_grad=False),
    "view_of_leaf": lambda: torch.zeros(4, requires_grad=True)[1:],
    "non_leaf": lambda: torch.zeros(3, requires_grad=True).clone(),
    "view_of_non_leaf": lambda: torch.zeros(4, requires_grad=True).clone()[1:],
    "detached_leaf": lambda: torch.zeros(3, requires_grad=True).detach(),
    "no_grad_view_of_leaf": _view_made_under_no_grad(True),
    "no_grad_view_of_non_leaf": _view_made_under_no_grad(False),
    "view_of_no_grad_view": _view_of_a_view_made_under_no_grad,
    "no_grad_view_base_tracked_later": _view_made_under_no_grad_then_base_tracked,
    "inference_mode_view_of_tracked": _view_made_in_inference_mode_of_a_tracked_tensor,
    "inference_mode_view_of_normal": _view_made_in_inference_mode_of_a_normal_tensor,
    "unbind_output": lambda: torch.zeros(3, 2, requires_grad=True).clone().unbind()[0],
    "unbind_output_detached": _unbind_output_detached,
    "unbind_output_untracked": lambda: torch.zeros(3, 2).unbind()[0],
    "custom_function_output": _custom_function_output,
    "inference_tensor": _inference_tensor,
    "inference_view": _inference_view,
    "broadcast": lambda: torch.zeros(1).expand(3),
}

MODES = {
    "grad": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}

#: Tracked tensors PyTorch writes in grad mode by recording the operation in the graph.
RECORDED_BY_PYTORCH = {
    ("non_leaf", "grad"),
    ("view_of_non_leaf", "grad"),
}


def _verdict(write, make, mode):
    tensor = make()
    try:
        with MODES[mode]():
            write(tensor)
    except (RuntimeError, TypeError, BufferError, ValueError) as refusal:
        return "refused", f"{type(refusal).__name__}: {refusal}"
    return "written", None


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_same_verdict_as_pytorchs_own_add_(case, mode):
    theirs, their_reason = _verdict(lambda x: x.add_(1), CASES[case], mode)
    ours, our_reason = _verdict(lambda x: K.fill(x, 1.0), CASES[case], mode)
    if (case, mode) in RECORDED_BY_PYTORCH:
        assert (theirs, ours) == ("written", "refused"), (their_reason, our_reason)
        assert "grad mode is on" in our_reason
        return
    assert ours == theirs, f"PyTorch: {theirs} ({their_reason}); dlbridge: {ours} ({our_reason})"


def test_the_departures_are_still_departures():
    """Each departure is a tensor PyTorch writes and that requires grad: were PyTorch to start
    refusing one, the list would be stale."""
    for case, mode in RECORDED_BY_PYTORCH:
        tensor = CASES[case]()
        assert tensor.requires_grad and not tensor.is_leaf
        assert _verdict(lambda x: x.add_(1), CASES[case], mode)[0] == "written"


def test_inference_refusal_speaks_pytorchs_words():
    with pytest.raises(TypeError) as refused:
        K.fill(_inference_tensor(), 1.0)
    message = str(refused.value)
    assert "Inplace update to inference tensor outside InferenceMode is not allowed" in message
    assert "x.clone()" in message
