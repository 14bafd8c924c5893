"""TCL314: an nn.Module built inside a compiled region whose `__init__` breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.names import dotted
from compile_lint.analysis.program import Program
from compile_lint.analysis.values import FunctionKey
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

UNINITIALIZED = "GB0119"  # Uninitialized nn.Module
MAX_CHAIN = 8  # subclasses whose `super().__init__()` leads here, followed this deep


class UninitializedModule(Rule):
    code = "TCL314"
    name = "uninitialized-module"
    summary = "An nn.Module constructed in a compiled region whose `__init__` breaks the graph runs it eagerly"
    gb_codes = (UNINITIALIZED,)
    frame_skip = True
    fix = (
        "Construct the module once outside the compiled region (in the parent's `__init__`, or before "
        "compiling) and call it in `forward`; or remove the break in its `__init__` (its own finding says how)."
    )
    what = (
        "Flags `super().__init__()` in the `__init__` of an nn.Module class that is constructed in a compiled "
        "region when that `__init__` (or what it calls) breaks the graph, e.g. by creating a parameter "
        "(TCL313) or printing; also in the base classes it initialises."
    )
    why = (
        "A break inside the inlined constructor makes Dynamo break at the construction and run `__init__` "
        "as a frame of its own, where `self` is a module whose `nn.Module.__init__` has not run yet. Measured "
        "with torch 2.13 and 2.14: the graph breaks at `super().__init__()` (GB0119) and Dynamo skips the "
        "whole `__init__`; each base class's `__init__` then does the same. A module whose `__init__` does not "
        "break is constructed inside the graph without a break."
    )
    example = (
        "class Head(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.lin = nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.lin(x)\n\n"
        "@torch.compile\ndef f(x):\n    return Head(4)(x)\n"
    )
    fixed_example = (
        "class Head(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.lin = nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.lin(x)\n\n"
        "head = Head(4)\n\n@torch.compile\ndef f(x):\n    return head(x)\n"
    )
    invalid = (
        Example(
            "class Noisy(nn.Module):\n    def __init__(self):\n        super().__init__()\n        print('built')\n\n"
            "    def forward(self, x):\n        return x\n\n@torch.compile\ndef f(x):\n    return Noisy()(x)\n"
        ),
    )  # fmt: skip
    valid = (
        Example(
            "class Scale(nn.Module):\n    def __init__(self, k):\n        super().__init__()\n        self.k = k\n\n"
            "    def forward(self, x):\n        return x * self.k\n\n@torch.compile\ndef f(x):\n    return Scale(2)(x)\n"
        ),
        Example(
            "class Noisy(nn.Module):\n    def __init__(self):\n        super().__init__()\n        print('built')\n\n"
            "    def forward(self, x):\n        return x\n\nnoisy = Noisy()\n\n@torch.compile\ndef f(x):\n    return noisy(x)\n"
        ),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        function, program = ctx.function, ctx.program
        if function is None or program is None or not _base_init(node, function.node):
            return
        if not program.is_module_init(function.key):
            return
        own = _own_frame(ctx, program, function.key, MAX_CHAIN)
        if own is None:
            ctx.revisit = True  # known once every reached function has been walked
        elif own:
            ctx.report(
                self,
                node,
                f"`{function.qualname}` runs for a module constructed in the compiled region, and the construction "
                f"breaks the graph: Dynamo runs `__init__` as a frame of its own, where the module is not "
                f"initialised yet, and skips it here ({UNINITIALIZED})",
            )


def _base_init(node: cst.Call, function: cst.FunctionDef) -> bool:
    """`super().__init__(...)`, `super(Cls, self).__init__(...)` or `Base.__init__(self, ...)`."""
    func = node.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "__init__":
        return False
    if isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
        return True
    params = function.params.params
    first = node.args[0].value if node.args else None
    return bool(params) and isinstance(first, cst.Name) and first.value == params[0].name.value


def _own_frame(ctx: RuleContext, program: Program, key: FunctionKey, depth: int) -> bool | None:
    """Does this module `__init__` run as a frame of its own: it breaks, or a subclass's `__init__` that
    initialises it through `super().__init__()` does."""
    breaks = ctx.breaks_in(key)
    if breaks is None or breaks:
        return breaks
    callers = ctx.callers(key) or frozenset()
    return depth > 0 and any(
        program.is_module_init(caller) and _own_frame(ctx, program, caller, depth - 1)
        for caller in callers
        if caller != key
    )


RULE = UninitializedModule()
