"""TCL707: a comprehension in or after a `try` block that breaks the graph: it is compiled on its own and skipped."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import Mapping, Seq, Tup, Value
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.config import OPT_IN
from compile_lint.rules.base import Example, Rule

MISSING_ITERNEXT = "GB4347"  # torch 2.13: Missing tp_iternext
NO_TRACKER = "GB9493"  # torch 2.14: C-implemented special method without VariableTracker model
COMPREHENSIONS = (cst.ListComp, cst.DictComp, cst.SetComp)


class EagerComprehension(Rule):
    code = "TCL707"
    name = "eager-comprehension"
    summary = "A list/dict/set comprehension in or after a `try` block that breaks: Dynamo skips its frame"
    gb_codes = (MISSING_ITERNEXT, NO_TRACKER)
    gb_codes_by_version = {(2, 13): (MISSING_ITERNEXT,), (2, 14): (NO_TRACKER,)}
    frame_skip = True
    fix = (
        "Remove the break inside the `try` block (its own finding says how), or move the `try` into a helper "
        "that the compiled code calls, so the rest of this function is traced."
    )
    what = (
        "Flags a list, dict or set comprehension that uses a tensor, a module or `torch`, written inside or "
        "after a `try` statement whose block calls a function that breaks the graph (or breaks itself), in "
        "a function of a compiled region."
    )
    why = (
        "Dynamo cannot resume a graph in the middle of a `try` block: at the break the rest of the function "
        "runs eagerly. A comprehension is a frame of its own (Python 3.11), so Dynamo then compiles it alone, "
        "starting from the iterator its caller made, and has no model of that iterator. Measured with torch "
        "2.13 (GB4347, missing tp_iternext) and 2.14 (GB9493): it gives up on the comprehension's frame. "
        "Dynamo skips a comprehension that uses no tensor without a report."
    )
    example = (
        "@torch.compile\ndef f(x, keys):\n    try:\n        print(x)\n    finally:\n        pass\n"
        "    return [x * k for k in keys]\n"
    )
    fixed_example = "@torch.compile\ndef f(x, keys):\n    out = [x * k for k in keys]\n    print(x)\n    return out\n"
    invalid = (
        Example("def show(x):\n    print(x)\n\n@torch.compile\ndef f(x, keys):\n    try:\n        show(x)\n"
                "        parts = {k: x * k for k in keys}\n    except ValueError:\n        parts = {}\n    return parts\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x, keys):\n    try:\n        y = x + 1\n    finally:\n        pass\n"
                "    return [y * k for k in keys]\n"),
        Example("@torch.compile\ndef f(x, keys):\n    try:\n        print(x)\n    finally:\n        pass\n"
                "    return x, [k * 2 for k in keys]\n"),
        Example("@torch.compile\ndef f(x, keys):\n    print(x)\n    return [x * k for k in keys]\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        breaking = ctx.names(self, "breaking tries")
        for block in _try_blocks(node, ctx):
            if str(id(block)) in breaking:
                continue
            for target in ctx.call_targets(node):
                breaks = ctx.breaks_in(target.key)
                if breaks is None:
                    ctx.revisit = True  # known once every reached function has been walked
                elif breaks:
                    breaking.add(str(id(block)))

    def visit_ListComp(self, node: cst.ListComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def visit_DictComp(self, node: cst.DictComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def visit_SetComp(self, node: cst.SetComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def _check(self, node: cst.ListComp | cst.DictComp | cst.SetComp, ctx: RuleContext) -> None:
        if ctx.function is None or not _uses_tensors(node, ctx):
            return
        order = {id(n): i for i, n in enumerate(_own_nodes(ctx.function.node))}
        here = order.get(id(node))
        if here is None:
            return
        breaking = ctx.names(self, "breaking tries") | _tries_with_own_breaks(ctx)
        if not any(str(id(n)) in breaking and order[id(n)] < here for n in _own_tries(ctx)):
            return
        code = NO_TRACKER if ctx.torch_version >= (2, 14) else MISSING_ITERNEXT
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` runs after a graph break in a `try` block, where Dynamo cannot resume: the "
            f"rest of the function runs eagerly and Dynamo compiles this comprehension alone, then gives up on "
            f"its iterator ({code})",
            gb_codes=(code,),
        )


def _own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The function's nodes in source order, without those of nested functions, lambdas and classes."""
    nested = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    return list(iter_nodes(function.body, prune=nested))


def _own_tries(ctx: RuleContext) -> list[cst.Try]:
    assert ctx.function is not None
    return [n for n in _own_nodes(ctx.function.node) if isinstance(n, cst.Try)]


def _try_blocks(node: cst.CSTNode, ctx: RuleContext) -> list[cst.Try]:
    """The `try` statements of the walked function whose block holds `node`."""
    if ctx.function is None:
        return []
    return [t for t in _own_tries(ctx) if any(n is node for n in iter_nodes(t.body))]


def _tries_with_own_breaks(ctx: RuleContext) -> set[str]:
    """`try` statements whose block holds a finding of another rule that predicts a break on the default path."""
    breaking = {id(p.node) for p in ctx.pending if p.gb_codes and p.rule.code not in OPT_IN}
    return {str(id(t)) for t in _own_tries(ctx) if any(id(n) in breaking for n in iter_nodes(t.body))}


def _uses_tensors(node: cst.ListComp | cst.DictComp | cst.SetComp, ctx: RuleContext) -> bool:
    """Dynamo compiles a frame only if, when it starts, it holds a tensor or a module (also inside a list, tuple
    or dict) or reads a torch module: here the names the comprehension reads from its function (its first
    iterable is evaluated by the function, and its loop variables are not bound yet)."""
    bound: set[str] = set()
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        bound.update(n.value for n in iter_nodes(clause.target) if isinstance(n, cst.Name))
        clause = clause.inner_for_in
    outer_iterable = {id(n) for n in iter_nodes(node.for_in.iter)}
    for name in iter_nodes(node):
        if not isinstance(name, cst.Name) or name.value in bound or id(name) in outer_iterable:
            continue
        if (ctx.resolve(name) or "").startswith("torch") or _holds_tensors(ctx.facts.value(name)):
            return True
    return False


def _holds_tensors(value: Value) -> bool:
    if value.is_tensor_like or value.modules():
        return True
    for atom in value:
        if isinstance(atom, (Seq, Tup)) and _holds_tensors(atom.item):
            return True
        if isinstance(atom, Mapping) and _holds_tensors(atom.value):
            return True
    return False


RULE = EagerComprehension()
