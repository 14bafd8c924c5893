"""TCL501: an nn.Module's int attribute updated from its own value in a compiled method."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.names import dotted
from compile_lint.analysis.values import INT
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule


def _self_attr(target: cst.BaseExpression) -> str | None:
    name = dotted(target)
    return name[5:] if name and name.startswith("self.") and name.count(".") == 1 else None


def _holds_int(ctx: RuleContext, attr: str) -> bool:
    """Is `self.<attr>` an int attribute of an nn.Module: every value the class assigns it is an int?"""
    function, program = ctx.function, ctx.program
    if function is None or function.class_key is None or program is None:
        return False
    if not program.is_module_class(function.class_key):
        return False
    value = program.attribute(function.class_key, attr)
    return value is not None and value.only((INT,))


def _reads(value: cst.BaseExpression, attr: str) -> bool:
    return any(
        isinstance(n, cst.Attribute)
        and isinstance(n.value, cst.Name)
        and n.value.value == "self"
        and n.attr.value == attr
        for n in iter_nodes(value)
    )


class ModuleIntCounter(Rule):
    code = "TCL501"
    name = "module-int-counter"
    summary = "An int attribute of the module changes on every call: each call recompiles"
    gb_codes = ()
    fix = (
        'Keep the counter in a buffer: `self.register_buffer("count", torch.zeros((), dtype=torch.long))` '
        "in `__init__` and `self.count += 1` in `forward` (no recompiles); or set "
        "`torch._dynamo.config.allow_unspec_int_on_nn_module = True` (one recompile, two for a class-level "
        "attribute, then the int is dynamic)."
    )
    what = (
        "Flags `self.<attr> += ...` and `self.<attr> = <expression reading self.<attr>>` in methods of an "
        "`nn.Module` (a class deriving from `torch.nn.*` or defining `forward`) when the attribute holds a "
        "Python int: it is assigned an int literal at class level or in `__init__`. Nothing breaks; the "
        "cost is recompilation."
    )
    why = (
        "torch.compile treats int attributes of an `nn.Module` as constants and guards on their value "
        "(`self.count == 0`). Changing the value in `forward` fails that guard on the next call, so every "
        "call compiles a new graph, until `recompile_limit` (8) is hit and Dynamo runs the function eagerly "
        "from then on. Measured in torch 2.13: 3 calls, 2 recompiles; with a buffer, 0; with "
        "`allow_unspec_int_on_nn_module = True`, 1 (the second value makes the int dynamic; 2 for a class-level "
        "attribute, whose first write moves it into the instance)."
    )
    example = (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.steps = 0\n\n"
        "    def forward(self, x):\n        self.steps += 1\n        return x * 2\n"
    )
    fixed_example = (
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        '        self.register_buffer("steps", torch.zeros((), dtype=torch.long))\n\n'
        "    def forward(self, x):\n        self.steps += 1\n        return x * 2\n"
    )
    invalid = (
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.count = 0\n\n"
            "    def forward(self, x):\n        self.count += 1\n        return x\n"
        ),
        Example(
            "class M(nn.Module):\n    calls = 0\n\n    def forward(self, x):\n"
            "        self.calls = self.calls + 1\n        return x\n"
        ),
    )
    valid = (
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('count', torch.zeros((), dtype=torch.long))\n\n"
            "    def forward(self, x):\n        self.count += 1\n        return x\n"
        ),
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.total = 0.0\n\n"
            "    def forward(self, x):\n        self.total += 0.5\n        return x\n"
        ),
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.count = 0\n\n"
            "    def forward(self, x):\n        self.count = 5\n        return x\n"
        ),
        Example(
            "class Stepper:\n    def __init__(self):\n        self.count = 0\n\n    @torch.compile\n"
            "    def step(self, x):\n        self.count += 1\n        return x\n"
        ),
    )

    def visit_AugAssign(self, node: cst.AugAssign, ctx: RuleContext) -> None:
        self._check(node, node.target, ctx)

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        if len(node.targets) == 1:
            self._check(node, node.targets[0].target, ctx, value=node.value)

    def _check(
        self,
        node: cst.AugAssign | cst.Assign,
        target: cst.BaseExpression,
        ctx: RuleContext,
        value: cst.BaseExpression | None = None,
    ) -> None:
        attr = _self_attr(target)
        if attr is None or not _holds_int(ctx, attr):
            return
        if value is not None and not _reads(value, attr):
            return  # `self.count = 5`: the same value every call, one guard
        statement = cst.Module([]).code_for_node(node).strip()
        ctx.report(
            self,
            node,
            f"`{statement}` changes the int attribute `self.{attr}` on every call: Dynamo guards on "
            f"`self.{attr} == <value>`, so each call recompiles (eager after recompile_limit, 8)",
            fix=(
                f'Make it a buffer: `self.register_buffer("{attr}", torch.zeros((), dtype=torch.long))` in '
                f"`__init__` and update it in place with `self.{attr} += 1` (no recompiles); or set "
                "`torch._dynamo.config.allow_unspec_int_on_nn_module = True` (one recompile, two for a class-level "
                "attribute, then the int is dynamic)."
            ),
        )


RULE = ModuleIntCounter()
