"""TCL504: a compiled method reads an int or str attribute that another method of the module changes."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.names import dotted
from compile_lint.analysis.program import Program
from compile_lint.analysis.values import INT, STR, UNKNOWN, ClassKey, Value
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

KEPT = frozenset({INT, STR, UNKNOWN})  # an attribute assigned a parameter of unknown type may be either
CONSTRUCTION = frozenset({"__init__", "__new__", "__setstate__", "reset_parameters", "_init_weights"})


def _attribute_value(ctx: RuleContext, attr: str) -> Value | None:
    """What `self.<attr>` may hold: what the methods assign, joined with a class-level literal."""
    program, function = ctx.program, ctx.function
    assert program is not None and function is not None and function.class_key is not None
    value = program.attribute(function.class_key, attr)
    for cls in program.mro(function.class_key):
        info = program.class_info(cls)
        literal = info.body_assignments.get(attr) if info is not None else None
        if type(literal) is cst.Integer:  # exact types: libcst's node classes are ABCs (isinstance(None) is slow)
            value = Value.of(INT) if value is None else value.join(Value.of(INT))
        elif type(literal) in (cst.SimpleString, cst.ConcatenatedString):
            value = Value.of(STR) if value is None else value.join(Value.of(STR))
    return value


def _called_by_self(program: Program, cls: ClassKey, setter: str) -> bool:
    """Does a method of the class call `self.<setter>(...)` outside construction? Then the value is set on the
    call path from the call's own inputs (Swin's `set_shift_and_window_size` in `forward`), not between calls."""
    info = program.class_info(cls)
    for name, key in info.methods.items() if info is not None else ():
        method = program.function(key)
        if method is None or name in CONSTRUCTION or name == setter:
            continue
        for node in iter_nodes(method.node.body):
            func = node.func if isinstance(node, cst.Call) else None
            if isinstance(func, cst.Attribute) and func.attr.value == setter and dotted(func.value) == "self":
                return True
    return False


class ModuleAttributeSetter(Rule):
    code = "TCL504"
    name = "module-attribute-setter"
    summary = "A compiled method reads an int or str module attribute another method changes: each value recompiles"
    gb_codes = ()
    fix = (
        "Keep a changing int in a buffer (`self.register_buffer(...)`, updated in place), map a changing string "
        "to a bool or an index tensor, or pass the value as a tensor argument."
    )
    what = (
        "Flags a read of `self.<attr>` in a compiled method of an `nn.Module` when the attribute holds an int or "
        "a str (its `__init__` or class body assigns one) and another method of the class, not `__init__` and not "
        "on the compiled path, assigns it (a setter such as `set_scale(self, scale)` or `set_mode(self, mode)`). "
        "A setter that the class itself calls outside `__init__` (e.g. from `forward`, with values from the "
        "inputs) is not counted. One finding per attribute and method. Counters updated inside `forward` are "
        "TCL501's."
    )
    why = (
        "torch.compile treats int and str attributes of an `nn.Module` as constants and guards on their value "
        "(`self.mode == 'a'`, `self.scale == 1`). A setter called between compiled calls fails that guard, so each "
        "new value compiles another graph, until `recompile_limit` (8) is hit and the module runs eagerly from "
        "then on. Measured on torch 2.13 and 2.14 with 10 values: int attribute (used in arithmetic or `range`) 8 "
        "recompiles and the limit; str attribute the same; a float attribute recompiles once and then is dynamic; "
        "`train()`/`eval()` and `requires_grad` toggles recompile once (both graphs stay cached)."
    )
    example = (
        "class Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = 1\n\n"
        "    def set_scale(self, scale):\n        self.scale = scale\n\n"
        "    def forward(self, x):\n        return x * self.scale\n"
    )
    fixed_example = (
        "class Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        '        self.register_buffer("scale", torch.ones(()))\n\n'
        "    def set_scale(self, scale):\n        self.scale.fill_(scale)\n\n"
        "    def forward(self, x):\n        return x * self.scale\n"
    )
    invalid = (
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = 1\n\n"
            "    def set_scale(self, scale: int):\n        self.scale = scale\n\n"
            "    def forward(self, x):\n        return x * self.scale\n"
        ),
        Example(
            "class M(nn.Module):\n    mode = 'sum'\n\n    def use(self, mode):\n        self.mode = mode\n\n"
            "    def forward(self, x):\n        if self.mode == 'sum':\n            return x.sum()\n        return x.mean()\n"
        ),
    )
    valid = (
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.scale = 1.0\n\n"
            "    def set_scale(self, scale: float):\n        self.scale = scale\n\n"
            "    def forward(self, x):\n        return x * self.scale\n"
        ),
        Example(
            "class M(nn.Module):\n    def __init__(self, heads: int):\n        super().__init__()\n"
            "        self.heads = heads\n\n    def forward(self, x):\n        return x.view(self.heads, -1)\n"
        ),
        Example(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.register_buffer('scale', torch.ones(()))\n\n"
            "    def set_scale(self, scale):\n        self.scale.fill_(scale)\n\n"
            "    def forward(self, x):\n        return x * self.scale\n"
        ),
        Example(
            "class Plain:\n    def __init__(self):\n        self.scale = 1\n\n    def set_scale(self, s):\n"
            "        self.scale = s\n\n    @torch.compile\n    def run(self, x):\n        return x * self.scale\n"
        ),
    )

    def visit_Attribute(self, node: cst.Attribute, ctx: RuleContext) -> None:
        if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return
        function, program = ctx.function, ctx.program
        if function is None or function.class_key is None or program is None or ctx.reach is None:
            return
        attr = node.attr.value
        if attr in function.assigned_attributes or attr in ctx.names(self, "flagged"):
            return  # assigned on the compiled path: TCL501's counter, or a value set per call
        if not program.is_module_class(function.class_key):
            return
        value = _attribute_value(ctx, attr)
        if value is None or not value.any_of((INT, STR)) or not value.only(KEPT):
            return
        setters = self._setters(ctx, attr)
        if not setters:
            return
        ctx.names(self, "flagged").add(attr)
        kind = "str" if STR in value and INT not in value else "int" if STR not in value else "int/str"
        fix = (
            f'Keep `{attr}` in a buffer (`self.register_buffer("{attr}", torch.tensor(...))`, updated in place by '
            f"`{setters[0]}`), or pass it to `{function.name}` as a tensor"
            if kind == "int"
            else f"Map `{attr}` to a bool or an index before the compiled call, or compile one module per value"
        )
        ctx.report(
            self,
            node,
            f"`self.{attr}` is {'an' if kind.startswith('int') else 'a'} {kind} attribute that `{'`, `'.join(setters)}` changes: Dynamo guards on its value, "
            f"so each new value set between calls compiles a new graph (eager after recompile_limit, 8)",
            fix=fix + ".",
        )

    def _setters(self, ctx: RuleContext, attr: str) -> list[str]:
        """Methods of the class (and its bases) that assign `self.<attr>` off the compiled path."""
        program, function = ctx.program, ctx.function
        assert program is not None and function is not None and function.class_key is not None
        found = []
        for cls in program.mro(function.class_key):
            info = program.class_info(cls)
            if info is None:
                continue
            for name, key in info.methods.items():
                method = program.function(key)
                if name in CONSTRUCTION or name == "forward" or key == function.key or method is None:
                    continue
                if attr in method.assigned_attributes and name not in found and not _called_by_self(program, cls, name):
                    found.append(name)
        return found


RULE = ModuleAttributeSetter()
