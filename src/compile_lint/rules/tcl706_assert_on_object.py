"""TCL706: `assert` on an object or a container of objects, in a function a compiled region calls."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import NONE, Atom, Instance, Mapping, Module, Seq, Tup, Value
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

NO_PROXY = "GB0055"  # Failed to convert args/kwargs to proxy


class AssertOnObject(Rule):
    code = "TCL706"
    name = "assert-on-object"
    summary = "`assert obj` on an object (or a list, tuple or dict holding one) in a function the region calls"
    gb_codes = (NO_PROXY,)
    fix = "Assert something Dynamo can evaluate: `assert obj is not None`, `assert len(items) > 0`."
    what = (
        "Flags `assert <expr>` in a function a compiled region calls (not the compiled function itself) when "
        "`<expr>` is an instance of a user class, an nn.Module, or a list, tuple or dict that holds one."
    )
    why = (
        "Dynamo turns an `assert` whose operand is not a constant into a `torch._assert` call in the graph, "
        "and an object cannot be a graph argument. Measured with torch 2.13 and 2.14: the assert breaks the "
        "graph (GB0055) in a function the region calls, while `if obj:`, `assert obj is not None` and an "
        "assert on a tensor or a list of ints trace. In the compiled function itself Dynamo skips the whole "
        "frame instead, and an assert on a list of tensors fails as a fake-tensor call (GB0112, also a frame "
        "skip): neither is reported by this rule."
    )
    example = (
        "class Step:\n    pass\n\nclass Chain:\n    def __init__(self, *steps):\n        assert steps, 'no steps'\n        self.steps = steps\n\n"
        "@torch.compile\ndef f(x):\n    chain = Chain(Step(), Step())\n    return x\n"
    )
    fixed_example = (
        "class Step:\n    pass\n\nclass Chain:\n    def __init__(self, *steps):\n        assert len(steps) > 0, 'no steps'\n"
        "        self.steps = steps\n\n@torch.compile\ndef f(x):\n    chain = Chain(Step(), Step())\n    return x\n"
    )
    invalid = (
        Example("class Step:\n    pass\n\ndef check(step):\n    assert step\n    return 1\n\n"
                "@torch.compile\ndef f(x):\n    return x * check(Step())\n"),
        Example("class Step:\n    pass\n\ndef check(steps):\n    assert steps, 'empty'\n    return len(steps)\n\n"
                "@torch.compile\ndef f(x):\n    return x * check([Step(), Step()])\n"),
    )  # fmt: skip
    valid = (
        Example("class Step:\n    pass\n\ndef check(step):\n    assert step is not None\n    return 1\n\n"
                "@torch.compile\ndef f(x):\n    return x * check(Step())\n"),
        Example("def check(sizes):\n    assert sizes\n    return len(sizes)\n\n"
                "@torch.compile\ndef f(x):\n    return x * check([1, 2])\n"),
        Example("class Step:\n    pass\n\ndef check(step):\n    assert step\n    return 1\n\ndef eager(x):\n"
                "    return x * check(Step())\n"),
    )  # fmt: skip

    def visit_Assert(self, node: cst.Assert, ctx: RuleContext) -> None:
        if ctx.is_entry or not _is_object(ctx.facts.value(node.test)):
            return
        ctx.report(
            self,
            node,
            f"`assert {short_code(node.test)}` tests the truth of an object: Dynamo passes it to `torch._assert`, "
            f"which cannot take it, and the graph breaks here ({NO_PROXY})",
        )


def _is_object(value: Value) -> bool:
    """Only objects Dynamo cannot pass to a graph call (or None), and at least one of them."""
    return any(_object_atom(atom) for atom in value) and all(_object_atom(a) or a == NONE for a in value)


def _object_atom(atom: Atom) -> bool:
    if isinstance(atom, (Instance, Module)):
        return True
    if isinstance(atom, (Seq, Tup)):
        return any(_object_atom(item) for item in atom.item)
    if isinstance(atom, Mapping):
        return any(_object_atom(item) for item in atom.value)
    return False


RULE = AssertOnObject()
