"""TCL101: `.item()` reads a tensor value into Python."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import children
from compile_lint.analysis.tensors import receiver_code, short_code, without_item
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_SCALAR, Example, Rule
from compile_lint.rules.tcl107_tensor_as_size import FILLED, NARROW, SIZE_FACTORIES, SIZE_METHODS


class TensorItem(Rule):
    code = "TCL101"
    name = "tensor-item"
    summary = "`.item()` copies a tensor value into Python and breaks the graph"
    gb_codes = ("GB0124",)
    fix = (
        "Keep the value a 0-d tensor: `t.detach()` instead of `t.item()` (same value, no gradient); when it "
        "decides a branch, select with `torch.where`. Or set `torch._dynamo.config.capture_scalar_outputs = True` "
        "if it only feeds arithmetic."
    )
    silenced_by = CAPTURE_SCALAR
    what = "Flags `.item()` calls on tensors inside compiled regions, whether or not the value feeds a branch."
    why = (
        "Dynamo cannot trace a Python number whose value is only known at run time. By default "
        "(`capture_scalar_outputs=False`) it ends the graph at `.item()`, runs the call eagerly and "
        "starts a new graph after it: GB0124."
    )
    example = "@torch.compile\ndef step(x):\n    scale = x.abs().max().item()\n    return x / scale\n"
    fixed_example = "@torch.compile\ndef step(x):\n    scale = x.abs().max().detach()\n    return x / scale\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    return x * x.sum().item()\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        vals = [v.item() for v in x]\n        return vals\n"
        ),
    )
    valid = (
        Example("@torch.compile\ndef f(x):\n    return x * x.sum()\n"),
        Example("@torch.compile\ndef f(x):\n    return x * x.sum().item()\n", flags=(CAPTURE_SCALAR,)),
        Example("def not_compiled(x):\n    return x.sum().item()\n"),
    )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        """`n = t.amax().item()` where `n` is then a slice bound or a size: a tensor would not hold there."""
        call, targets = node.value, node.targets
        if id(call) in ctx.reported or not is_tensor_item(call, ctx) or ctx.function is None:
            return
        if len(targets) != 1 or not isinstance(targets[0].target, cst.Name):
            return
        name = targets[0].target.value
        use = next(iter(int_uses(name, ctx)), "")
        if use:
            ctx.reported.add(id(call))
            self._report_size(call, f"`{name}` is then {use}", ctx)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        self._sizes(node, ctx)
        if id(node) in ctx.reported or not is_tensor_item(node, ctx):
            return
        receiver = node.func.value  # type: ignore[attr-defined]
        ctx.report(
            self,
            node,
            _message(receiver),
            fix=f"Use `{receiver_code(receiver)}.detach()` instead: a 0-d tensor with the same value and no "
            "gradient, so the graph goes on; if a Python number is really needed, set "
            f"`torch._dynamo.config.{CAPTURE_SCALAR} = True`.",
        )

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        self._sizes(node, ctx)

    def _sizes(self, node: cst.Call | cst.Subscript, ctx: RuleContext) -> None:
        """`x[:t.item()]`, `torch.arange(t.item())`: the value must be a Python int there."""
        for use, value in int_operands(node, ctx):
            if is_tensor_item(value, ctx) and id(value) not in ctx.reported:
                ctx.reported.add(id(value))
                self._report_size(value, f"The value is {use}", ctx)

    def _report_size(self, call: cst.BaseExpression, use: str, ctx: RuleContext) -> None:
        receiver = call.func.value  # type: ignore[attr-defined]
        ctx.report(
            self,
            call,
            _message(receiver),
            fix=f"{use}, which must be a Python int, so `.detach()` would not hold (a tensor there breaks too, "
            f"TCL107). Set `torch._dynamo.config.{CAPTURE_SCALAR} = True`: Dynamo then traces the value as a "
            "symbolic int (slicing and `torch.arange` with it compile without a break), or keep the shape static "
            "(pad to a fixed length and mask).",
        )

    def _branch(self, test: cst.BaseExpression, ctx: RuleContext) -> None:
        """`.item()` read only to decide a branch: the fix is a tensor select, not a Python number."""
        for call in _item_calls(test, ctx):
            ctx.reported.add(id(call))  # claimed: visit_Call must not report it again with the other fix
            condition = short_code(without_item(test), limit=60)
            ctx.report(
                self,
                call,
                f"`.item()` on `{short_code(call.func.value)}` copies a tensor value into Python to decide a "  # type: ignore[attr-defined]
                "branch; the graph breaks",
                fix=f"Keep the condition a tensor: select with `torch.where({condition}, if_true, if_false)`, "
                "or use `torch.cond` when the branches run different code (`--unsafe-fixes` rewrites simple "
                "if/else blocks).",
            )

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        self._branch(node.test, ctx)

    def visit_While(self, node: cst.While, ctx: RuleContext) -> None:
        self._branch(node.test, ctx)

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        self._branch(node.test, ctx)


def int_operands(node: cst.CSTNode, ctx: RuleContext) -> list[tuple[str, cst.BaseExpression]]:
    """Where `node` needs Python ints (as TCL107 reads them): each slice bound of a subscript, each size
    argument of `torch.zeros`-like factories, `.view`-like methods, `.narrow` and `range()`."""
    if isinstance(node, cst.Subscript):
        return [
            ("a slice bound", bound)
            for element in node.slice
            if isinstance(element.slice, cst.Slice)
            for bound in (element.slice.lower, element.slice.upper, element.slice.step)
            if bound is not None
        ]
    if not isinstance(node, cst.Call):
        return []
    func, full = node.func, ctx.resolve(node.func) or ""
    sizes = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if isinstance(func, cst.Name) and func.value == "range" and "range" not in ctx.imports.aliases:
        op, what = "range", "a `range()` bound"
    elif full.startswith("torch.") and full.count(".") == 1 and full.split(".")[1] in SIZE_FACTORIES:
        op, what = full.split(".")[1], f"a size of `{full}`"
    elif isinstance(func, cst.Attribute) and func.attr.value in (*SIZE_METHODS, NARROW):
        op, what = func.attr.value, f"a size given to `.{func.attr.value}()`"
    else:
        return []
    if op in FILLED:
        sizes = sizes[:1]
    elif op == NARROW:
        sizes = sizes[1:]
    return [(what, size) for size in sizes]


def int_uses(name: str, ctx: RuleContext) -> list[str]:
    """How the function being walked uses `name` where Python needs an int (see `int_operands`)."""
    if ctx.function is None:
        return []
    uses: list[str] = []

    class _Uses(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            uses.extend(what for what, value in int_operands(node, ctx) if _mentions(value, name))
            return True

    ctx.function.node.visit(_Uses())
    return uses


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return (isinstance(node, cst.Name) and node.value == name) or any(_mentions(c, name) for c in node.children)


def is_tensor_item(node: cst.CSTNode, ctx: RuleContext) -> bool:
    if type(node) is not cst.Call or node.args:  # exact types: libcst's node classes are ABCs (isinstance is slow)
        return False
    func = node.func
    return type(func) is cst.Attribute and func.attr.value == "item" and ctx.facts.may_be_tensor(func.value)


def _item_calls(test: cst.BaseExpression, ctx: RuleContext) -> list[cst.Call]:
    """The `.item()` calls in a branch test, outside any nested call (`f(t.item())` is not a branch on it)."""
    found: list[cst.Call] = []
    pending: list[cst.CSTNode] = [test]
    while pending:
        node = pending.pop()
        if is_tensor_item(node, ctx):
            found.append(node)  # type: ignore[arg-type]
        elif type(node) not in (cst.Call, cst.Lambda):
            pending.extend(children(node))  # libcst's `children` runs a visitor over the node
    return found


RULE = TensorItem()


def _message(receiver: cst.BaseExpression) -> str:
    return f"`.item()` on `{short_code(receiver)}` copies a tensor value into Python and breaks the graph"
