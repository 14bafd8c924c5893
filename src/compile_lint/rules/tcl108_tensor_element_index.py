"""TCL108: the elements of a tensor iterated in a loop used as indices."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import Mapping
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

DATA_DEPENDENT = "GB0033"  # Data dependent operator
NESTED = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
ROW_PRODUCERS = frozenset({"nonzero", "argwhere"})  # 2-D results: one index row per element found


class TensorElementIndex(Rule):
    code = "TCL108"
    name = "tensor-element-index"
    summary = "An element of a tensor iterated in a loop used as an index: indexing with a 0-d tensor reads its value"
    gb_codes = (DATA_DEPENDENT,)
    frame_skip = True
    fix = (
        "Iterate over Python integers (`for idx in perm.tolist():` outside the compiled code, or a `range`) or "
        "index with the whole tensor at once (`y[..., perm]`, `torch.index_select`)."
    )
    what = (
        "Flags, in a compiled region, the first subscript in the body of `for idx in t:` (`t` a tensor) whose "
        "index uses `idx`: `y[idx]`, `y[..., idx]`, `y[idx + 1]`, `x[idx] = v` (a slice bound is TCL107's); not when the body assigns `idx` "
        "again (`idx = idx.item()`) or the tensor is the 2-D result of `nonzero()`/`argwhere` (its rows are 1-D)."
    )
    why = (
        "Iterating a 1-D tensor gives 0-d tensors. Measured with torch 2.13 and 2.14: an index that is a 0-d "
        "tensor (alone, in a tuple with slices, or in arithmetic) is read as a Python integer, a data-dependent "
        "operator (GB0033); inside the loop Dynamo cannot resume after the break and runs the whole function "
        "eagerly. Iterating a 2-D tensor gives 1-D rows, which index as a whole (advanced indexing) without a "
        "break: the rule cannot tell the rank and assumes the common case, a 1-D index tensor."
    )
    example = (
        "@torch.compile\ndef f(y, perm):\n    out = []\n    for idx in perm.long():\n"
        "        out.append(y[..., idx] * 2)\n    return torch.stack(out)\n"
    )
    fixed_example = "@torch.compile\ndef f(y, perm):\n    return (y[..., perm.long()] * 2).movedim(-1, 0)\n"
    invalid = (
        Example("@torch.compile\ndef f(y):\n    for idx in torch.arange(3):\n        y = y + y[idx]\n    return y\n"),
        Example("@torch.compile\ndef f(y):\n    y = y.clone()\n    for idx in torch.randperm(3):\n"
                "        y[..., idx] = 0\n    return y\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(y):\n    for idx in range(3):\n        y = y + y[idx]\n    return y\n"),
        Example("@torch.compile\ndef f(y):\n    for row in torch.arange(3):\n        y = y * row\n    return y\n"),
        Example("@torch.compile\ndef f(y, ids):\n    for idx in ids:\n        y = y + y[idx]\n    return y\n"),
        Example("@torch.compile\ndef f(y):\n    for idx in torch.arange(3):\n        idx = idx.unsqueeze(0)\n"
                "        y = y + y[idx]\n    return y\n"),
        Example("@torch.compile\ndef f(y, sizes):\n    for size in sizes.long():\n        y = y + y[:size].sum()\n"
                "    return y\n"),  # a slice bound: TCL107
        Example("@torch.compile\ndef f(y, m):\n    hit = m.nonzero()\n    for row in hit:\n        y = y + y[row]\n"
                "    return y\n"),
    )  # fmt: skip

    def visit_For(self, node: cst.For, ctx: RuleContext) -> None:
        if not isinstance(node.target, cst.Name) or not ctx.facts.has_evidence(node.iter):
            return
        name = node.target.value
        if _rebinds(node.body, name):  # `idx = idx.item()`, `idx = idx[0]`: no longer the element
            return
        if _index_rows(node.iter, ctx):
            return
        for inner in iter_nodes(node.body, prune=NESTED):
            if isinstance(inner, cst.Subscript) and _indexes_with(inner, name) and not _is_mapping(inner, ctx):
                ctx.report(
                    self,
                    inner,
                    f"`{short_code(inner)}` indexes with `{name}`, an element of the tensor `{short_code(node.iter)}`: "
                    f"a 0-d tensor index is read as a Python integer ({DATA_DEPENDENT}), and in a loop Dynamo runs "
                    "the whole function eagerly",
                )
                return


def _indexes_with(subscript: cst.Subscript, name: str) -> bool:
    """`name` is read in an index, not only in slice bounds (`y[start : start + size]`: TCL107 reports those)."""
    return any(
        isinstance(node, cst.Name) and node.value == name
        for element in subscript.slice
        if not isinstance(element.slice, cst.Slice)
        for node in iter_nodes(element.slice, prune=NESTED)
    )


def _index_rows(iterable: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`x.nonzero()` / `torch.argwhere(x)` (or a name assigned one in the function) is 2-D: its rows are 1-D
    tensors, which index without a break."""
    values = [iterable]
    if isinstance(iterable, cst.Name) and ctx.function is not None:
        for node in iter_nodes(ctx.function.node.body, prune=NESTED):
            if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Name) and t.target.value == iterable.value for t in node.targets
            ):
                values.append(node.value)
    return any(_makes_rows(value) for value in values)


def _makes_rows(value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in ROW_PRODUCERS and not any(arg.keyword and arg.keyword.value == "as_tuple" for arg in value.args)


def _rebinds(body: cst.BaseSuite, name: str) -> bool:
    for node in iter_nodes(body, prune=NESTED):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [target.target for target in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets = [node.target]
        if any(name in _bound_names(target) for target in targets):
            return True
    return False


def _bound_names(target: cst.BaseExpression) -> set[str]:
    """The names `target = ...` binds (`a`, `a, (b, c)`; not those read in `x[i] = ...`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _bound_names(element.value)}
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return set()


def _is_mapping(subscript: cst.Subscript, ctx: RuleContext) -> bool:
    value = ctx.facts.value(subscript.value)
    return bool(value.atoms) and all(isinstance(atom, Mapping) for atom in value.atoms)


RULE = TensorElementIndex()
