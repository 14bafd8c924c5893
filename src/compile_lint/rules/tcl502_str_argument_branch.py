"""TCL502: a branch on a `str` parameter of a compiled function."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import string_value
from compile_lint.analysis.tensors import dotted_code, param_names
from compile_lint.analysis.values import BOTTOM, STR
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

MAX_TEST = 40


def _mentioned_names(test: cst.BaseExpression) -> list[str]:
    """Plain names read by `test`, in order; `self.mode`'s `mode` is an attribute, not a name."""
    return [n.value for n in iter_nodes(test) if isinstance(n, cst.Name)]  # iter_nodes skips `.attr`


def _is_string_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):  # `mode in ("train", "fit")`
        return bool(node.elements) and all(_is_string_literal(e.value) for e in node.elements)
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString))


def _compared_with_string(test: cst.BaseExpression, name: str) -> bool:
    """Does `test` compare the plain name `name` with string literals (`mode == "train"`, `mode in ("a", "b")`)?
    `"key" in name` tests membership in `name` (a dict, a set of keys): not a string comparison of it."""
    for comparison in iter_nodes(test):
        if not isinstance(comparison, cst.Comparison):
            continue
        left = comparison.left
        for target in comparison.comparisons:
            right = target.comparator
            pair = (left, right) if isinstance(target.operator, (cst.In, cst.NotIn)) else None
            for one, other in [pair] if pair else [(left, right), (right, left)]:
                if isinstance(one, cst.Name) and one.value == name and _is_string_literal(other):
                    return True
            left = right
    return False


def _example_flag(test: cst.BaseExpression, name: str) -> str:
    """`is_train = mode == "train"` for a test comparing `mode` with "train"."""
    literal = next((n for n in iter_nodes(test) if isinstance(n, cst.SimpleString)), None)
    value = string_value(literal) if isinstance(literal, cst.SimpleString) else None
    if literal is None or not isinstance(value, str):
        return f'e.g. `{name}_flag = {name} == "..."`'
    flag = f"is_{value}" if value.isidentifier() else f"{name}_flag"
    return f"e.g. `{flag} = {name} == {literal.value}`"


class StrArgumentBranch(Rule):
    code = "TCL502"
    name = "str-argument-branch"
    summary = "Branch on a `str` parameter: each distinct string value recompiles"
    gb_codes = ()
    fix = (
        'Map the string to a bool before the compiled call (`training = mode == "train"`) and pass that, '
        "or compile one function per value."
    )
    what = (
        "Flags `if`/`elif`/`while`/conditional-expression tests and `match` subjects that read a `str` "
        'parameter (annotated `str`, with a string default such as `mode="train"`, or compared with a '
        "string literal) of a compiled entry point: a `forward`, an `@torch.compile` function or a function "
        "passed to `torch.compile(...)`. One finding per parameter. Helpers reached from a region are not "
        "flagged: their callers usually pass a constant string, which is a single guard, not a recompile. "
        "Nothing breaks; the cost is recompilation."
    )
    why = (
        "Dynamo treats a string argument as a constant and guards on its exact value (`mode == 'train'`). "
        "Strings never become dynamic, unlike ints and floats, so every new value fails the guard and "
        "compiles another graph, until `recompile_limit` (8) is hit and the function runs eagerly from "
        "then on. Measured in torch 2.13: 3 distinct strings, 2 recompiles; 10 distinct strings, 8 "
        "recompiles and the limit warning."
    )
    example = (
        '@torch.compile\ndef head(x, mode: str):\n    if mode == "train":\n        return x.relu()\n'
        "    return x.sigmoid()\n"
    )
    fixed_example = (
        "@torch.compile\ndef head(x, training: bool):\n    if training:\n        return x.relu()\n"
        '    return x.sigmoid()\n\n# caller: head(x, training=(mode == "train"))\n'
    )
    invalid = (
        Example("@torch.compile\ndef f(x, mode: str):\n    if mode == 'train':\n        return x + 1\n    return x\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x, reduction='mean'):\n"
            "        return x.mean() if reduction == 'mean' else x.sum()\n"
        ),
        Example(
            "@torch.compile\ndef f(x, act: str = 'relu'):\n    match act:\n        case 'relu':\n"
            "            return x.relu()\n    return x\n"
        ),
        Example(
            "@torch.compile\ndef f(x, mode):\n    if mode in ('train', 'fit'):\n        return x + 1\n    return x\n"
        ),
        Example(
            "def head(x, mode: str):\n    if mode == 'train':\n        return x.relu()\n    return x\n\n"
            "fast_head = torch.compile(head)\n"
        ),
    )
    valid = (
        Example("@torch.compile\ndef f(x, training: bool):\n    if training:\n        return x + 1\n    return x\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x, mode='train'):\n"
            "        if self.mode == 'train':\n            return x + 1\n        return x\n"
        ),
        Example(
            "@torch.compile\ndef f(x):\n    mode = 'train'\n    if mode == 'train':\n        return x + 1\n    return x\n"
        ),
        Example("@torch.compile\ndef f(x, mode=None):\n    if mode is not None:\n        return x + 1\n    return x\n"),
        Example(
            "@torch.compile\ndef f(x, outputs):\n    if 'aux' in outputs:\n        return x + outputs['aux']\n    return x\n"
        ),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        return self._pad(x, mode='zero')\n\n"
            "    def _pad(self, x, mode: str):\n        if mode == 'zero':\n            return x\n        return -x\n"
        ),
        Example("def eager(x, mode: str):\n    if mode == 'train':\n        return x + 1\n    return x\n"),
    )

    def _params(self, ctx: RuleContext) -> tuple[set[str], set[str]]:
        """(parameters, those that hold a str: annotated `str` or with a string default) of a region entry."""
        if ctx.function is None or not ctx.is_entry or ctx.reach is None:
            return set(), set()
        names = {p.name.value for p in param_names(ctx.function.node.params)}
        strings = {name for name in names if ctx.reach.params.get(name, BOTTOM).only((STR,))}
        return names, strings

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        self._check(node.test, "if", ctx)

    def visit_While(self, node: cst.While, ctx: RuleContext) -> None:
        self._check(node.test, "while", ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        self._check(node.test, "if", ctx)

    def visit_Match(self, node: cst.Match, ctx: RuleContext) -> None:
        self._check(node.subject, "match", ctx)

    def _check(self, test: cst.BaseExpression, keyword: str, ctx: RuleContext) -> None:
        params, strings = self._params(ctx)
        flagged = ctx.names(self, "flagged")
        for name in _mentioned_names(test):
            if name in flagged or name not in params:
                continue
            declared = name in strings and ctx.facts.name_value(name).only((STR,))
            if declared or _compared_with_string(test, name):
                flagged.add(name)
                text = dotted_code(test)
                shown = text if len(text) <= MAX_TEST else text[: MAX_TEST - 3] + "..."
                ctx.report(
                    self,
                    test,
                    f"`{keyword} {shown}` branches on the str parameter `{name}`: Dynamo guards on its exact "
                    f"value, so each distinct string passed in compiles a new graph (strings never become "
                    f"dynamic; after recompile_limit, 8, the function runs eagerly)",
                    fix=f"Map `{name}` to a bool before the compiled call ({_example_flag(test, name)}) and "
                    "branch on that, or compile one function per value.",
                )
                return


RULE = StrArgumentBranch()
