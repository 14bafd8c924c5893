"""TCL317: a module attribute assigned an `nn.Buffer` object itself, through a conversion that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from compile_lint.analysis.index import ClassInfo
from compile_lint.analysis.program import Program
from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule

PYTHON_TYPE = "GB4841"  # Unsupported python_type() call
BUFFER = frozenset({"torch.nn.Buffer", "torch.nn.parameter.Buffer"})
# Methods that return the tensor itself when they have nothing to do (same dtype, device or layout): measured
# with an nn.Buffer on torch 2.13 and 2.14 (`.half()` on a float32 buffer converts and does not break).
SELF_WHEN_NO_OP = frozenset({"to", "type_as", "contiguous", "cpu", "float"})
# A dtype written out: the conversion changes the (float32 by default) buffer unless it names float32.
UNCHANGED_DTYPES = frozenset({"torch.float32", "torch.float"})


class BufferReassignment(Rule):
    code = "TCL317"
    name = "buffer-reassignment"
    summary = "`self.x = self.buf.to(...)` on an `nn.Buffer` attribute: a conversion that changes nothing breaks"
    gb_codes = (PYTHON_TYPE,)
    fix = (
        "Convert into a local (`pe = self.buf.to(x.dtype)`) instead of assigning it back, or declare the buffer "
        'with `self.register_buffer("buf", tensor)` in `__init__` and move the module with `.to()` before compiling.'
    )
    what = (
        "Flags, in a compiled region, an assignment to an attribute of `self` whose value is an attribute declared "
        "as `nn.Buffer(...)` (in a method of the class or a base) passed through `.to()`, `.type_as()`, "
        "`.contiguous()`, `.cpu()` or `.float()`."
    )
    why = (
        "When the conversion has nothing to do (same device and dtype, the usual case) it returns the buffer "
        "object itself, which still carries nn.Buffer's marker; `nn.Module.__setattr__` then reads its "
        "`persistent` flag, which Dynamo cannot do. Measured with torch 2.13 and 2.14: the assignment breaks "
        "(GB4841), whichever attribute it assigns. A buffer made with `register_buffer`, an assignment of a new "
        "tensor, or a conversion that really changes the dtype does not break."
    )
    example = (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.pe = nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
        "        self.pe = self.pe.to(x.dtype)\n        return x + self.pe\n"
    )
    fixed_example = (
        "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.pe = nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
        "        pe = self.pe.to(x.dtype)\n        return x + pe\n"
    )
    invalid = (
        Example("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.pe = torch.nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
                "        self.pe = self.pe.to(device=x.device, dtype=x.dtype)\n        return x + self.pe\n"),
        Example("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.pe = nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
                "        self.cache = self.pe.contiguous()\n        return x + self.cache\n"),
    )  # fmt: skip
    valid = (
        Example("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.register_buffer('pe', torch.zeros(8))\n\n    def forward(self, x):\n"
                "        self.pe = self.pe.to(x.dtype)\n        return x + self.pe\n"),
        Example("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.pe = nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
                "        pe = self.pe.to(x.dtype)\n        return x + pe\n"),
        Example("class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                "        self.pe = nn.Buffer(torch.zeros(8))\n\n    def forward(self, x):\n"
                "        self.pe = x * 2\n        return x + self.pe\n"),
    )  # fmt: skip

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        if ctx.function is None or ctx.function.class_key is None or ctx.program is None:
            return
        if not any(_self_attribute(target.target) for target in node.targets):
            return
        source = _converted_attribute(node.value, ctx)
        if source is None or source not in _buffer_attributes(ctx.program, ctx.function.class_key):
            return
        ctx.report(
            self,
            node,
            f"`{short_code(node.value)}` returns the nn.Buffer `self.{source}` itself when it changes nothing; "
            f"assigning it to a module attribute makes nn.Module read its `persistent` flag, which Dynamo cannot "
            f"trace: the graph breaks here ({PYTHON_TYPE})",
        )


def _self_attribute(node: cst.BaseExpression) -> str | None:
    """`self.<name>` -> name."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _converted_attribute(node: cst.BaseExpression, ctx: RuleContext) -> str | None:
    """`self.buf.to(...)`, `self.buf.to(...).contiguous()`: the attribute at the root of a chain of calls to
    methods that return the tensor itself when they have nothing to do."""
    converted = False
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value not in SELF_WHEN_NO_OP or _names_other_dtype(node, ctx):
            return None
        converted = True
        node = node.func.value
    return _self_attribute(node) if converted else None


def _names_other_dtype(call: cst.Call, ctx: RuleContext) -> bool:
    """`.to(torch.float64)`: a dtype written out that is not the default one converts for real."""
    for arg in call.args:
        name = ctx.resolve(arg.value) or ""
        if name.startswith("torch.") and name not in UNCHANGED_DTYPES and name.rsplit(".", 1)[-1][:1].islower():
            return True
    return False


def _buffer_attributes(program: Program, cls: tuple[str, str]) -> set[str]:
    """Attributes a method of the class or of a base assigns `nn.Buffer(...)` to."""
    return {name for key in program.mro(cls) for name in _declared_buffers(program, program.class_info(key))}


def _declared_buffers(program: Program, info: ClassInfo | None) -> Iterator[str]:
    if info is None:
        return
    imports = program.index_of(info.path).imports
    for method in info.methods.values():
        function = program.function(method)
        if function is None:
            continue
        for node in iter_nodes(function.node.body):
            if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
                continue
            if imports.resolve(node.value.func) in BUFFER:
                yield from (name for t in node.targets if (name := _self_attribute(t.target)))


RULE = BufferReassignment()
