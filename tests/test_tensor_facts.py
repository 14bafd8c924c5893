"""`TensorFacts`: boolean masks (what makes `x[mask]` a dynamic-shape read) and evidence that a value is a tensor."""

from __future__ import annotations

import libcst as cst
import pytest

from compile_lint.analysis.annotations import annotation_value
from compile_lint.analysis.names import ImportMap
from compile_lint.analysis.tensors import Kind, TensorFacts, default_param_value, param_names
from compile_lint.analysis.values import INT_VALUE, TENSOR_VALUE, Tup, Value

# Facts memoize kinds by node id: every parsed tree stays alive so that no freed node's id is reused.
PARSED: list[cst.CSTNode] = []


def parse_expression(source: str) -> cst.BaseExpression:
    PARSED.append(node := cst.parse_expression(source))
    return node


def parse_statement(source: str) -> cst.BaseStatement:
    PARSED.append(node := cst.parse_statement(source))
    return node


def facts_for(*statements: str) -> TensorFacts:
    """Facts after `import torch`, with `x` and `y` tensors, `n` an int, then `statements` bound in order."""
    imports = ImportMap()
    imports.add(parse_statement("import torch").body[0])  # type: ignore[attr-defined]
    facts = TensorFacts(imports, env={"x": TENSOR_VALUE, "y": TENSOR_VALUE, "n": INT_VALUE})
    for statement in statements:
        assign = parse_statement(statement).body[0]  # type: ignore[attr-defined]
        assert isinstance(assign, cst.Assign)
        facts.bind(assign.targets[0].target, facts.value(assign.value))
    return facts


@pytest.mark.parametrize(
    "expr",
    [
        "x > 0",
        "x == y",
        "~(x > 0)",
        "(x > 0) & (y < 1)",
        "(x > 0) | ~(y < 1)",
        "x.bool()",
        "x.gt(0)",
        "x.isnan()",
        "torch.isfinite(x)",
        "torch.logical_and(x > 0, y > 0)",
        "x.to(torch.bool)",
        "torch.zeros(3, dtype=torch.bool)",
        "(m := x > 0)",
    ],
)
def test_boolean_tensor_expressions_are_masks(expr: str) -> None:
    assert facts_for().is_mask(parse_expression(expr))


@pytest.mark.parametrize(
    "expr",
    [
        "x",  # an un-annotated input may hold indices
        "n > 0",  # a Python bool
        "x.sum()",
        "(x > 0) & y",  # `&` with a non-mask gives an integer tensor
        "x.long()",
        "x is None",
        "torch.argmax(x)",
        "x.to(torch.float32)",
    ],
)
def test_other_expressions_are_not_masks(expr: str) -> None:
    assert not facts_for().is_mask(parse_expression(expr))


def test_names_bound_to_masks_are_masks_until_rebound() -> None:
    facts = facts_for("m = x > 0", "keep = ~m", "idx = torch.nonzero(x)")
    assert facts.is_mask(parse_expression("m"))
    assert facts.is_mask(parse_expression("keep"))
    assert not facts.is_mask(parse_expression("idx"))
    facts = facts_for("m = x > 0", "m = m.float()")
    assert not facts.is_mask(parse_expression("m"))


def facts_of_function(source: str) -> TensorFacts:
    """Facts after the parameters of `source` (a `def`) and its top-level assignments, in order."""
    function = parse_statement(source)
    assert isinstance(function, cst.FunctionDef)
    facts = facts_for()
    for param in param_names(function.params):
        annotation = annotation_value(param.annotation.annotation, facts.imports) if param.annotation else None
        facts.env[param.name.value] = default_param_value(param, annotation, entry=True)
    for statement in function.body.body:
        assign = statement.body[0]  # type: ignore[attr-defined]
        facts.bind(assign.targets[0].target, facts.value(assign.value))
    return facts


@pytest.mark.parametrize(
    ("expr", "evident"),
    [
        ("width * ratio", False),  # bare un-annotated parameters: often Python numbers
        ("blocks[:2]", False),
        ("max(width, ratio)", False),
        ("scaled", False),  # assigned from bare parameters only
        ("width.sum()", True),  # a tensor method
        ("torch.ones(3) * ratio", True),
        ("hidden", True),  # annotated `Tensor`
        ("hidden * ratio", True),
        ("summed", True),  # assigned from a tensor method
    ],
)
def test_tensor_evidence(expr: str, evident: bool) -> None:
    facts = facts_of_function(
        "def f(width, ratio, blocks, hidden: torch.Tensor):\n    scaled = width * ratio\n    summed = width.sum()\n"
    )
    node = parse_expression(expr)
    assert facts.kind(node) is Kind.TENSOR
    assert facts.has_evidence(node) is evident


def test_getter_methods_return_python_values() -> None:
    """`cache.get_seq_length()` on an input taken as a tensor is a Python int, like `torch.get_default_dtype()`."""
    facts = facts_for()
    assert facts.kind(parse_expression("x.get_seq_length() + 1")) is Kind.OTHER
    assert facts.kind(parse_expression("x.sum() + 1")) is Kind.TENSOR


def test_tuples_of_several_lengths_keep_their_first_items() -> None:
    """`out += (attn,)` under a flag: the join of a 2- and a 3-tuple still knows `out[1]` is an int."""
    short = Value.of(Tup((TENSOR_VALUE, INT_VALUE)))
    long = Value.of(Tup((TENSOR_VALUE, INT_VALUE, TENSOR_VALUE)))
    facts = facts_for()
    facts.bind(parse_expression("out"), short.join(long))
    assert not facts.value(parse_expression("out[1]")).is_tensor_like
    assert facts.value(parse_expression("out[2]")).is_tensor_like
    assert not facts.value(parse_expression("out[1:][0]")).is_tensor_like  # a literal slice keeps positions
    assert facts.value(parse_expression("out[n:][0]")).is_tensor_like  # any other: the join of the items
