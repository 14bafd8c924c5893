"""TCL316: a generator expression whose items break the graph while a builtin consumes it."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.rules.tcl101_tensor_item import is_tensor_item
from compile_lint.rules.tcl102_scalar_conversion import converted_tensor
from compile_lint.rules.tcl103_tensor_condition import tested_tensor_items
from compile_lint.rules.tcl106_tensor_to_bool import python_bool_call

GENERATOR_RECONSTRUCTION = "GB8335"  # Generator reconstruction with mutations
CONSUMERS = frozenset({"all", "any", "sum"})  # measured (fixtures/all_any_items.py); others are not


class GeneratorBreak(Rule):
    code = "TCL316"
    name = "generator-break"
    summary = "A generator expression whose items break the graph: Dynamo runs the whole function eagerly"
    gb_codes = (GENERATOR_RECONSTRUCTION,)
    frame_skip = True
    fix = (
        "Compute the items as one tensor and reduce it (`torch.stack([...]).all()`, `torch.stack(items).sum()`), "
        "or build a list first so the break does not happen inside the generator."
    )
    what = (
        "Flags `all(...)`, `any(...)` and `sum(...)` over a generator expression inside a compiled region when an "
        "item breaks the graph: `.item()`, `float()`/`int()`/`bool()` of a tensor, `torch.equal`, or (for "
        "`all`/`any`) items that are tensors, whose truth `all`/`any` take."
    )
    why = (
        "Measured on torch 2.13 and 2.14: after a graph break inside the generator, Dynamo would have to rebuild the "
        "half-consumed generator for eager Python, which it cannot (GB8335); it gives up on the whole function "
        "that holds the generator and runs it eagerly, so none of it is compiled."
    )
    example = "@torch.compile\ndef f(ts):\n    total = sum(t.item() for t in ts)\n    return ts + total\n"
    fixed_example = "@torch.compile\ndef f(ts):\n    total = ts.sum()\n    return ts + total\n"
    invalid = (
        Example("@torch.compile\ndef f(ts: torch.Tensor):\n    if all(a < b for a, b in zip(ts[:-1], ts[1:])):\n"
                "        return ts\n    return -ts\n"),
        Example("@torch.compile\ndef f(ts):\n    return ts * sum(t.item() for t in ts)\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    if all(size > 0 for size in x.shape):\n        return x\n"
                "    return -x\n"),
        Example("@torch.compile\ndef f(ts):\n    return sum(t * 2 for t in ts)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Name) or func.value not in CONSUMERS or func.value in ctx.imports.aliases:
            return
        if func.value in ctx.facts.env or not node.args or not isinstance(node.args[0].value, cst.GeneratorExp):
            return
        generator = node.args[0].value
        ctx.facts.value(generator)  # binds the generator's loop names for the items below
        if not (tested_tensor_items(node, ctx) or _item_breaks(generator, ctx)):
            return
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` breaks the graph inside a generator, which Dynamo cannot resume: it runs the "
            f"whole function eagerly ({GENERATOR_RECONSTRUCTION})",
        )


def _item_breaks(generator: cst.GeneratorExp, ctx: RuleContext) -> bool:
    """Does computing an item read a tensor's value into Python?"""
    for node in iter_nodes(generator.elt):
        if isinstance(node, cst.Call) and (
            is_tensor_item(node, ctx) or converted_tensor(node, ctx) or python_bool_call(node, ctx) is not None
        ):
            return True
    return False


RULE = GeneratorBreak()
