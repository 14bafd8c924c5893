"""TCL104's claim, proven on torch 2.13: after `not t` Dynamo compiles nothing more of the function
(the rest runs eagerly on every call), while an ordinary graph break compiles the rest as a new graph."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from fixture_support import FIXTURES

torch = pytest.importorskip("torch")

CALLS = 3


def graphs_compiled(fn: Callable[..., Any]) -> list[int]:
    """Ops in each graph Dynamo compiles for `fn` over a few calls."""
    sizes: list[int] = []

    def counting_backend(gm: Any, example_inputs: Any) -> Any:
        sizes.append(sum(node.op in ("call_function", "call_method") for node in gm.graph.nodes))
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=counting_backend)
    for _ in range(CALLS):
        compiled(torch.randn(4, 3))
    torch._dynamo.reset()
    return sizes


def not_in_the_middle(x: Any) -> Any:
    y = x.sin() * 2
    z = not (y.sum() > 0)
    return (y.cos() + 1).exp(), z


def break_in_the_middle(x: Any) -> Any:
    y = x.sin() * 2
    torch._dynamo.graph_break()
    return (y.cos() + 1).exp()


@pytest.fixture(scope="module")
def scalars() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scalars_fixture_skip", FIXTURES / "scalars.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.dynamo
def test_not_first_compiles_nothing(scalars: ModuleType) -> None:
    assert graphs_compiled(scalars.not_as_value) == []
    assert graphs_compiled(scalars.not_returned) == []


@pytest.mark.dynamo
def test_not_in_the_middle_compiles_only_what_comes_before() -> None:
    assert graphs_compiled(not_in_the_middle) == [2]  # sin, mul; cos/add/exp run eagerly
    assert graphs_compiled(break_in_the_middle) == [2, 3]  # a graph break resumes in a new graph
