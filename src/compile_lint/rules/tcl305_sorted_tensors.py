"""TCL305: `sorted(...)` / `list.sort()` over tensors, or ordered by a tensor-valued key."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import Kind, dotted_code, short_code, torch_call_kind
from compile_lint.analysis.values import TENSOR_VALUE, Mapping, join_all
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

NON_CONSTANT_SORT = "GB0207"  # sort with non-constant keys
BUILTIN_ON_TENSOR = "GB0059"  # Failed to trace builtin operator: sorted() iterating a tensor itself
KEYED_MIN_MAX = "GB5687"  # torch 2.14: min/max with non-constant key
BUILTIN_HANDLER = "GB0193"  # torch 2.13: invalid call to builtin op handler (min/max with any key)
MIN_MAX = frozenset({"min", "max"})


def stackable(sequence: cst.BaseExpression) -> str:
    """Source for `sequence` as an argument of `torch.stack` (which takes no generator)."""
    if isinstance(sequence, cst.GeneratorExp):
        return dotted_code(cst.ListComp(elt=sequence.elt, for_in=sequence.for_in))
    return dotted_code(sequence)


def key_list(key: cst.BaseExpression, sequence: cst.BaseExpression) -> str:
    """Source of a list comprehension computing every key: `[t.abs() for t in parts]`."""
    if isinstance(key, cst.Lambda):
        return f"[{dotted_code(key.body)} for {key.params.params[0].name.value} in {stackable(sequence)}]"
    return f"[{dotted_code(key)}(t) for t in {stackable(sequence)}]"


class SortedTensors(Rule):
    code = "TCL305"
    name = "sorted-tensors"
    summary = (
        "`sorted()` / `list.sort()` over tensors, or `min`/`max`/`sorted` by a tensor-valued key, breaks the graph"
    )
    gb_codes = (NON_CONSTANT_SORT, BUILTIN_ON_TENSOR, KEYED_MIN_MAX, BUILTIN_HANDLER)
    gb_codes_by_version = {
        (2, 13): (NON_CONSTANT_SORT, BUILTIN_ON_TENSOR, BUILTIN_HANDLER),
        (2, 14): (NON_CONSTANT_SORT, BUILTIN_ON_TENSOR, KEYED_MIN_MAX),
    }
    fix = "Stack and sort in torch: `torch.stack(parts).sort()` gives values and indices; or sort by a static key such as `t.shape`."
    what = (
        "Flags `sorted(seq)` and `seq.sort()` inside compiled regions when the elements are tensors (a "
        "list/tuple display, a comprehension, `t.unbind()`/`split()`/`chunk()`, or a local name bound to one "
        "of those) and there is no key or the key returns a tensor (`key=lambda t: t.sum()`, `key=torch.norm`), "
        "and `sorted(t)` on a tensor itself; and `min()`/`max()` over tensors with a `key=`: a tensor-valued "
        "key on torch 2.14, any key on torch 2.13. Keys on static facts (`key=lambda t: t.shape[0]`) are fine "
        "for `sorted`, as are `max()`/`min()` over tensors without a key. On torch 2.13 also `sorted(d.items())` "
        "without a key when the dict's values may be tensors, modules or user objects."
    )
    why = (
        "Python's sort compares the elements (or keys) with `<`, and each comparison of tensors is a "
        "data-dependent boolean. Dynamo cannot trace a sort whose keys are not constants (GB0207); "
        "`sorted(t)` on a tensor fails even earlier, iterating it (GB0059). The graph ends, the sort runs "
        "eagerly and a new graph starts after it. Measured: `min`/`max` with a tensor-valued key break on "
        "torch 2.14 (GB5687); torch 2.13 fails on any `key=` over tensors (GB0193), even `key=len`. torch 2.13 "
        "also refuses to sort (key, value) pairs whose values are not constants (GB0207, linear_operator's "
        "`for name, val in sorted(kwargs.items())`), even though unique keys never compare the values; 2.14 traces it."
    )
    example = (
        "@torch.compile\ndef f(x):\n    scores = [r.sum() for r in x]\n    ranked = sorted(scores)\n"
        "    return ranked[0]\n"
    )
    fixed_example = "@torch.compile\ndef f(x):\n    scores = x.sum(dim=1)\n    ranked, order = scores.sort()\n    return ranked[0]\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    parts = [x[0], x[1]]\n    return sorted(parts)[0]\n"),
        Example("@torch.compile\ndef f(x):\n    return sorted(x.unbind(0), key=lambda t: t.sum())[0]\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        parts = list(x.chunk(4))\n        parts.sort(key=torch.norm)\n        return parts[0]\n"),
        Example("@torch.compile\ndef f(x):\n    return sorted(x)[0]\n"),
        Example("@torch.compile\ndef f(x):\n    return max(x.chunk(2), key=torch.norm)\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    return sorted([x, x[:2]], key=lambda t: t.shape[0])[0]\n"),
        Example("@torch.compile\ndef f(x):\n    dims = sorted([3, 1, 2])\n    return x.permute(*[d - 1 for d in dims])\n"),
        Example("@torch.compile\ndef f(x):\n    return max([x[0], x[1]])\n"),
        Example("@torch.compile\ndef f(x):\n    return x * max([1, 2, 3], key=lambda v: -v)\n"),
        Example("@torch.compile\ndef f(x):\n    values, indices = x.sort()\n    return values\n"),
    )  # fmt: skip

    def tensor_sequence(self, node: cst.BaseExpression, ctx: RuleContext) -> bool:
        """Is `node` a list/tuple (or comprehension, split, ...) whose elements are tensors?"""
        return any(items.is_tensor_like for items in ctx.facts.value(node).sequences())

    @staticmethod
    def _items_of_objects(sequence: cst.BaseExpression, ctx: RuleContext) -> bool:
        """`d.items()` of a dict whose values may be tensors, modules or user objects (measured, 2.13 only:
        `sorted(d.items())` breaks with GB0207 then, not with numbers or strings, nor with a `key=`)."""
        if not (
            isinstance(sequence, cst.Call)
            and isinstance(sequence.func, cst.Attribute)
            and sequence.func.attr.value == "items"
            and not sequence.args
        ):
            return False
        mappings = [atom for atom in ctx.facts.value(sequence.func.value) if isinstance(atom, Mapping)]
        held = join_all(m.every_value() for m in mappings)
        return held.is_tensor_like or bool(held.instances() or held.modules())

    def _key_is_tensor(self, key: cst.BaseExpression, ctx: RuleContext) -> bool:
        if isinstance(key, cst.Lambda):
            params = key.params.params
            if len(params) != 1:
                return False
            return ctx.facts.with_names({params[0].name.value: TENSOR_VALUE}).is_tensor(key.body)
        full = ctx.resolve(key)
        return full is not None and full.startswith("torch.") and torch_call_kind(full) is Kind.TENSOR

    def _check(self, node: cst.Call, sequence: cst.BaseExpression, ctx: RuleContext) -> None:
        call = dotted_code(node)
        key = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "key"), None)
        if key is not None:
            if self._key_is_tensor(key, ctx):
                ctx.report(
                    self,
                    node,
                    f"`{call}` orders tensors by a tensor-valued key, compared in Python: Dynamo cannot "
                    f"trace a sort with non-constant keys ({NON_CONSTANT_SORT})",
                    gb_codes=(NON_CONSTANT_SORT,),
                    fix=f"Sort in torch: `order = torch.stack({key_list(key, sequence)}).argsort()`, then "
                    f"`torch.stack({stackable(sequence)})[order]`.",
                )
            return
        descending = any(
            a.keyword is not None and a.keyword.value == "reverse" and dotted_code(a.value) == "True" for a in node.args
        )
        ctx.report(
            self,
            node,
            f"`{call}` compares tensors in Python to order them: Dynamo cannot trace a sort with "
            f"non-constant keys ({NON_CONSTANT_SORT})",
            gb_codes=(NON_CONSTANT_SORT,),
            fix=f"Stack and sort in torch: `torch.stack({stackable(sequence)}).sort({'descending=True' if descending else ''})` "
            "(values and indices).",
        )

    def _check_min_max(self, node: cst.Call, builtin: str, ctx: RuleContext) -> None:
        key = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "key"), None)
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if key is None or not positional:
            return
        if len(positional) == 1:
            sequence: cst.BaseExpression = positional[0]
            if not self.tensor_sequence(sequence, ctx):
                return
        elif any(ctx.facts.is_tensor(p) for p in positional):
            sequence = cst.List([cst.Element(p) for p in positional])
        else:
            return
        tensor_key = self._key_is_tensor(key, ctx)
        if ctx.torch_version >= (2, 14):
            if not tensor_key:
                return
            code, reason = KEYED_MIN_MAX, "compares tensor-valued keys in Python"
        else:
            code, reason = (
                BUILTIN_HANDLER,
                "takes a `key=` over tensors, which torch 2.13 cannot trace whatever the key",
            )
        if tensor_key:
            fix = f"Pick in torch: `torch.stack({stackable(sequence)})[torch.stack({key_list(key, sequence)}).arg{builtin}()]`."
        else:
            fix = f"Pick by index: `keys = {key_list(key, sequence)}`, then `{stackable(sequence)}[keys.index({builtin}(keys))]`."
        ctx.report(
            self, node, f"`{short_code(node)}` {reason}: the graph breaks here ({code})", gb_codes=(code,), fix=fix
        )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in MIN_MAX and func.value not in ctx.imports.aliases:
            self._check_min_max(node, func.value, ctx)
            return
        if isinstance(func, cst.Name) and func.value == "sorted" and "sorted" not in ctx.imports.aliases:
            if not node.args or node.args[0].keyword is not None:
                return
            sequence = node.args[0].value
            if ctx.torch_version < (2, 14) and len(node.args) == 1 and self._items_of_objects(sequence, ctx):
                ctx.report(
                    self,
                    node,
                    f"`{dotted_code(node)}` sorts (key, value) pairs whose values are tensors or objects: torch 2.13 "
                    f"cannot trace a sort whose elements are not all constants ({NON_CONSTANT_SORT})",
                    gb_codes=(NON_CONSTANT_SORT,),
                    fix="Sort the keys only, then read the values: `for name in sorted(d): val = d[name]` "
                    "(or pass `key=lambda item: item[0]`).",
                )
            elif self.tensor_sequence(sequence, ctx):
                self._check(node, sequence, ctx)
            elif ctx.facts.is_tensor(sequence):
                shown = dotted_code(sequence)
                ctx.report(
                    self,
                    node,
                    f"`{dotted_code(node)}` iterates the tensor `{shown}` in Python to sort it: Dynamo cannot "
                    f"trace that ({BUILTIN_ON_TENSOR})",
                    gb_codes=(BUILTIN_ON_TENSOR,),
                    fix=f"Sort in torch: `torch.sort({shown}).values` (or `{shown}.sort()` for values and indices).",
                )
        elif (
            isinstance(func, cst.Attribute)
            and func.attr.value == "sort"
            and isinstance(func.value, cst.Name)
            and self.tensor_sequence(func.value, ctx)
        ):
            self._check(node, func.value, ctx)


RULE = SortedTensors()
