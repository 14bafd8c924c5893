"""TCL101: `.item()` reads a tensor value into Python."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import receiver_code, short_code, without_item
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_SCALAR, Example, Rule


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

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if id(node) in ctx.reported or not _is_tensor_item(node, ctx):
            return
        receiver = node.func.value  # type: ignore[attr-defined]
        ctx.report(
            self,
            node,
            f"`.item()` on `{short_code(receiver)}` copies a tensor value into Python and breaks the graph",
            fix=f"Use `{receiver_code(receiver)}.detach()` instead: a 0-d tensor with the same value and no "
            "gradient, so the graph goes on; if a Python number is really needed, set "
            f"`torch._dynamo.config.{CAPTURE_SCALAR} = True`.",
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


def _is_tensor_item(node: cst.CSTNode, ctx: RuleContext) -> bool:
    if not isinstance(node, cst.Call) or node.args:
        return False
    func = node.func
    return isinstance(func, cst.Attribute) and func.attr.value == "item" and ctx.facts.may_be_tensor(func.value)


def _item_calls(test: cst.BaseExpression, ctx: RuleContext) -> list[cst.Call]:
    """The `.item()` calls in a branch test, outside any nested call (`f(t.item())` is not a branch on it)."""
    found: list[cst.Call] = []
    pending: list[cst.CSTNode] = [test]
    while pending:
        node = pending.pop()
        if _is_tensor_item(node, ctx):
            found.append(node)  # type: ignore[arg-type]
        elif not isinstance(node, (cst.Call, cst.Lambda)):
            pending.extend(node.children)
    return found


RULE = TensorItem()
