"""Rust kernels as PyTorch operators (`dlbridge.torch.register`), with the test kernels
declared once by `dlbridge_pyo3::kernel!` (`dlbridge._dlbridge._testing`): the schemas say what
each reads, writes and returns; `torch.library.opcheck` passes for every one;
`torch.compile(fullgraph=True)` runs functions that call them with no graph break, the
operators in the graph, and gives the eager results; bad input is refused at trace time; a
backward registered with them trains."""

import types

import pytest
import torch
import torch._dynamo
from dlbridge._dlbridge import _testing
from torch.library import opcheck

import dlbridge.torch as dtorch
from dlbridge import _kernel_signatures


def _axpy_setup_context(ctx, inputs, output):
    ctx.alpha = inputs[2]


def _axpy_backward(ctx, grad):
    return grad * ctx.alpha, grad, None


OPS = dtorch.register(
    _testing, "dlbridge_tests", autograd={"axpy": (_axpy_backward, _axpy_setup_context)}
)


def test_every_kernel_becomes_an_operator_with_its_schema():
    signatures = _kernel_signatures.signatures(_testing)
    schemas = {name: dtorch.schema(signature) for name, signature in signatures.items()}
    assert schemas == {
        "axpy": "(Tensor x, Tensor y, float alpha) -> Tensor",
        "matmul": "(Tensor a, Tensor b) -> Tensor",
        "clamp_": "(Tensor(a!) x, float low, float high) -> ()",
        "divmod_i64": "(Tensor a, Tensor b) -> (Tensor, Tensor)",
        "doubled_and_row_sums": "(Tensor m) -> (Tensor, Tensor)",
    }
    assert OPS["matmul"] is torch.ops.dlbridge_tests.matmul
    # Registering the namespace again gives the same operators.
    assert dtorch.register(_testing, "dlbridge_tests") == OPS


def _cases():
    torch.manual_seed(0)
    return {
        "axpy": (torch.randn(3, 4), torch.randn(3, 4), 2.0),
        "matmul": (torch.randn(3, 5), torch.randn(5, 2)),
        "clamp_": (torch.randn(6, dtype=torch.float64), -0.5, 0.5),
        "divmod_i64": (torch.tensor([7, -7, 7, -7]), torch.tensor([2, 2, -2, -3])),
        "doubled_and_row_sums": (torch.randn(3, 4),),
    }


@pytest.mark.parametrize("name", ["axpy", "matmul", "clamp_", "divmod_i64", "doubled_and_row_sums"])
def test_opcheck_passes(name):
    results = opcheck(OPS[name], _cases()[name])
    assert set(results.values()) == {"SUCCESS"}, results


def test_operators_compute_what_torch_computes():
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(OPS["axpy"](x, y, 2.0), 2 * x + y)
    a, b = torch.randn(3, 5), torch.randn(5, 2)
    torch.testing.assert_close(OPS["matmul"](a, b), a @ b)
    z = torch.tensor([-2.0, 0.25, 3.0], dtype=torch.float64)
    assert OPS["clamp_"](z, 0.0, 1.0) is None
    assert z.tolist() == [0.0, 0.25, 1.0]
    n, d = torch.tensor([7, -7, 7, -7]), torch.tensor([2, 2, -2, -3])
    quotient, remainder = OPS["divmod_i64"](n, d)
    assert quotient.tolist() == (n // d).tolist()
    assert remainder.tolist() == (n % d).tolist()


class _Graphs:
    """A torch.compile backend that keeps every graph it is given and runs it as it is."""

    def __init__(self):
        self.graphs = []

    def __call__(self, graph, example_inputs):
        self.graphs.append(graph)
        return graph.forward

    def targets(self):
        return {node.target for graph in self.graphs for node in graph.graph.nodes}


def _compiled(function, backend=None):
    torch._dynamo.reset()
    return torch.compile(function, fullgraph=True, backend=backend or "aot_eager")


def test_compile_fullgraph_keeps_the_operators_in_one_graph():
    def step(a, b, x):
        hidden = torch.ops.dlbridge_tests.matmul(a, b).relu()
        return torch.ops.dlbridge_tests.axpy(hidden, x, 0.5).sum(dim=0)

    graphs = _Graphs()
    compiled = _compiled(step, graphs)
    a, b, x = torch.randn(4, 3), torch.randn(3, 2), torch.randn(4, 2)
    torch.testing.assert_close(compiled(a, b, x), step(a, b, x))
    assert len(graphs.graphs) == 1
    # Dynamo records the operators themselves (the overload packets) as the graph's calls.
    assert {OPS["matmul"], OPS["axpy"]} <= graphs.targets()


def test_compile_mutation_and_several_results():
    def clamp_twice(x):
        y = x * 2
        torch.ops.dlbridge_tests.clamp_(y, -1.0, 1.0)
        return y + 1

    x = torch.linspace(-2, 2, 9, dtype=torch.float64)
    torch.testing.assert_close(_compiled(clamp_twice)(x), clamp_twice(x))

    def divide(a, b):
        quotient, remainder = torch.ops.dlbridge_tests.divmod_i64(a, b)
        return quotient * b + remainder

    n, d = torch.arange(-6, 6), torch.tensor([5, -3] * 6)
    assert _compiled(divide)(n, d).tolist() == n.tolist()


def test_compile_with_inductor():
    def step(a, b):
        return torch.ops.dlbridge_tests.matmul(a.sin(), b).relu() * 3

    a, b = torch.randn(8, 4), torch.randn(4, 6)
    torch.testing.assert_close(_compiled(step, "inductor")(a, b), step(a, b))


def test_bad_input_is_refused_at_trace_time():
    a = torch.ones(2, 2)
    with pytest.raises(
        Exception,
        match=r"matmul: b: expected a float32 tensor with 2 "
        r"dimensions, got float64 shape \(2, 2\)",
    ):
        _compiled(torch.ops.dlbridge_tests.matmul)(a, a.double())
    with pytest.raises(
        Exception,
        match=r"matmul: a has shape \[2, 3\] and b \[2, 3\]: inner "
        "extents differ",
    ):
        _compiled(lambda a: torch.ops.dlbridge_tests.matmul(a, a))(torch.ones(2, 3))
    # Eagerly, the same refusals, as the exceptions themselves.
    with pytest.raises(TypeError, match="matmul: b: expected a float32 tensor"):
        OPS["matmul"](a, a.double())
    with pytest.raises(ValueError, match="divmod_i64: division by zero"):
        OPS["divmod_i64"](torch.ones(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64))


def test_a_registered_backward_trains_eagerly_and_compiled():
    x = torch.randn(5, requires_grad=True)
    y = torch.randn(5, requires_grad=True)
    OPS["axpy"](x, y, 3.0).square().sum().backward()
    expected_x = 2 * (3 * x + y).detach() * 3
    torch.testing.assert_close(x.grad, expected_x)
    torch.testing.assert_close(y.grad, expected_x / 3)

    x2 = x.detach().clone().requires_grad_()
    y2 = y.detach().clone().requires_grad_()
    compiled = _compiled(lambda x, y: torch.ops.dlbridge_tests.axpy(x, y, 3.0).square().sum())
    compiled(x2, y2).backward()
    torch.testing.assert_close(x2.grad, x.grad)
    torch.testing.assert_close(y2.grad, y.grad)


def test_registration_refusals_name_what_is_wrong():
    with pytest.raises(TypeError, match="publishes no kernels"):
        dtorch.register(types.ModuleType("empty"))
    with pytest.raises(KeyError, match="nope"):
        dtorch.register(_testing, "dlbridge_tests_other", autograd={"nope": (None, None)})
