"""TCL319: a class whose metaclass `__call__` calls `super().__call__`, built where it runs eagerly."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.index import FunctionInfo
from compile_lint.analysis.program import Program
from compile_lint.analysis.values import ClassKey
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

SUPER_CALL = "GB0006"  # Attempted to call a super() attribute that is not a function or method


class MetaclassCall(Rule):
    code = "TCL319"
    name = "metaclass-call"
    summary = (
        "A class whose metaclass `__call__` calls `super().__call__()`, constructed where the construction runs "
        "eagerly: Dynamo compiles the metaclass `__call__` on its own and breaks there"
    )
    gb_codes = (SUPER_CALL,)
    fix = (
        "Remove the break in the class's `__init__` (its own finding says how) or the reason the calling function "
        "runs eagerly, or construct the object outside the compiled code and pass it in."
    )
    what = (
        "Flags, at the `super().__call__(...)` line of a metaclass `__call__`, a construction in a compiled region "
        "of a class with that metaclass (declared on it or a base) when the construction breaks the graph (its "
        "`__init__` or a function it calls does) or the constructing function is one Dynamo gives up on (a "
        "reconstruction failure in it, TCL311/TCL318)."
    )
    why = (
        "Dynamo builds an instance with its own polyfill (`__new__` then `__init__`) and never runs a metaclass "
        "`__call__` while it traces. When the construction runs eagerly instead (it breaks, or its function was "
        "given up on), Python calls the metaclass `__call__`, and Dynamo compiles it as a frame of its own, where "
        "`super().__call__` is `type.__call__`, which it cannot call. Measured with torch 2.13 and 2.14: GB0006 at "
        "that line; a construction that traces whole, or one after a plain graph break in the same function "
        "(Dynamo resumes tracing there), does not break."
    )
    example = (
        "class Meta(type):\n    def __call__(cls, *args, **kwargs):\n        return super().__call__(*args, **kwargs)\n\n"
        "class Stepper(metaclass=Meta):\n    def __init__(self, x):\n        print(x)\n        self.x = x\n\n"
        "@torch.compile\ndef f(x):\n    return Stepper(x).x * 2\n"
    )
    fixed_example = (
        "class Meta(type):\n    def __call__(cls, *args, **kwargs):\n        return super().__call__(*args, **kwargs)\n\n"
        "class Stepper(metaclass=Meta):\n    def __init__(self, x):\n        self.x = x\n\n"
        "@torch.compile\ndef f(x):\n    return Stepper(x).x * 2\n"
    )
    invalid = (
        Example("class Meta(type):\n    def __call__(cls, *args, **kwargs):\n        instance = super(Meta, cls).__call__(*args, **kwargs)\n"
                "        return instance\n\nclass Base(metaclass=Meta):\n    pass\n\nclass Stepper(Base):\n"
                "    def __init__(self, x):\n        if x.sum() > 0:\n            x = x + 1\n        self.x = x\n\n"
                "@torch.compile\ndef f(x):\n    return Stepper(x).x * 2\n"),
    )  # fmt: skip
    valid = (
        Example("class Meta(type):\n    def __call__(cls, *args, **kwargs):\n        return super().__call__(*args, **kwargs)\n\n"
                "class Stepper(metaclass=Meta):\n    def __init__(self, x):\n        self.x = x\n\n"
                "@torch.compile\ndef f(x):\n    print(x)\n    return Stepper(x).x * 2\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.program is None or ctx.function is None:
            return
        classes = [atom.cls for atom in ctx.facts.value(node.func).classes()]
        calls = [site for cls in classes for site in _super_calls(ctx.program, cls)]
        if not calls or not _runs_eagerly(node, ctx):
            return
        for function, super_call in calls:
            ctx.report(
                self,
                super_call,
                f"`{function.class_name}.__call__` runs eagerly when `{ctx.function.qualname}` constructs a class "
                f"of this metaclass at a call that breaks or in a frame Dynamo gave up on; compiled on its own, "
                f"`super().__call__` breaks ({SUPER_CALL})",
                elsewhere=function,
            )


def _runs_eagerly(node: cst.Call, ctx: RuleContext) -> bool:
    """The construction breaks (a function it runs does), or the walked function's frame is given up on."""
    assert ctx.function is not None
    skipped = ctx.frame_skipped(ctx.function.key)
    if skipped is None:
        ctx.revisit = True
    return bool(skipped) or ctx.breaking_target(node) is not None


def _super_calls(program: Program, cls: ClassKey) -> list[tuple[FunctionInfo, cst.Call]]:
    """`super().__call__(...)` (or `super(Meta, cls).__call__`) in the `__call__` of the class's metaclasses."""
    found = []
    for meta in program.metaclasses(cls):
        key = program.method(meta, "__call__")
        function = program.function(key) if key is not None else None
        if function is None:
            continue
        for call in iter_nodes(function.node.body):
            if isinstance(call, cst.Call) and _is_super_call(call):
                found.append((function, call))
    return found


def _is_super_call(call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__call__"
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


RULE = MetaclassCall()
