"""TCL701: a `class` statement executed inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule


class ClassInRegion(Rule):
    code = "TCL701"
    name = "class-in-region"
    summary = "A `class` statement inside a compiled function breaks the graph"
    gb_codes = ("GB8977",)  # Invalid call to __build_class__
    fix = "Define the class once at module level and use it from the function."
    what = "Flags `class` statements inside the body of a compiled function or a helper it calls."
    why = (
        "A `class` statement runs `__build_class__` every time the function runs, and Dynamo cannot "
        "trace that. Measured with torch 2.13 and 2.14: the graph breaks on the `class` line (GB8977) "
        "and the class is built eagerly; a `NamedTuple` subclass then also makes Dynamo skip the rest of "
        "the frame (GB0082), and `@dataclass` adds a break on the decorator (GB0059)."
    )
    example = "@torch.compile\ndef f(x):\n    class Scale:\n        factor = 2\n    return x * Scale.factor\n"
    fixed_example = "class Scale:\n    factor = 2\n\n@torch.compile\ndef f(x):\n    return x * Scale.factor\n"
    invalid = (
        Example(
            "from typing import NamedTuple\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        class Out(NamedTuple):\n            y: torch.Tensor\n        return Out(x)\n"
        ),
    )
    valid = (
        Example("class Scale:\n    factor = 2\n\n@torch.compile\ndef f(x):\n    return x * Scale.factor\n"),
        Example("def factory():\n    class Local:\n        pass\n    return Local\n"),
    )

    def visit_ClassDef(self, node: cst.ClassDef, ctx: RuleContext) -> None:
        if ctx.function is not None:
            ctx.report(
                self,
                node.name,
                f"`class {node.name.value}` is built each time the function runs: Dynamo cannot trace "
                "`__build_class__`, so the graph breaks here (GB8977)",
            )


RULE = ClassInRegion()
