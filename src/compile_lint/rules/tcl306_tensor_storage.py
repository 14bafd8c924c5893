"""TCL306: a tensor's storage object used inside a compiled region (`t.storage()`, `untyped_storage()` methods)."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

NON_TENSOR_OP = "GB0208"  # torch.* op returned non-Tensor: `t.storage()` (TypedStorage)
UNSUPPORTED_METHOD = "GB0156"  # Unsupported method call: methods of an UntypedStorage
# UntypedStorage methods Dynamo answers while tracing (measured: `size()` traces, `nbytes()`,
# `data_ptr()` and `element_size()` break).
TRACED_STORAGE_METHODS = frozenset({"size"})


def is_tensor_receiver(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    if isinstance(node, cst.Name) and node.value == "self":
        return False  # a class's own `storage()` method
    return ctx.facts.may_be_tensor(node)


class TensorStorage(Rule):
    code = "TCL306"
    name = "tensor-storage"
    summary = "A tensor's storage used in a compiled region (`t.storage()`, `t.untyped_storage().nbytes()`)"
    gb_codes = (NON_TENSOR_OP, UNSUPPORTED_METHOD)
    fix = "Use tensor-level facts: `t.nbytes` or `t.numel() * t.element_size()` for sizes; keep storage checks outside the region."
    what = (
        "Flags `t.storage()` on tensors, and method calls on `t.untyped_storage()` (chained, or through "
        "a local name bound to it) other than `size()`, inside compiled regions."
    )
    why = (
        "`t.storage()` returns a legacy TypedStorage, a torch result that is not a tensor: GB0208 at the "
        "call. `t.untyped_storage()` itself traces, but most of its methods (`nbytes()`, `data_ptr()`, "
        "`element_size()`) are unsupported, so Dynamo breaks where the storage is used (GB0156), which "
        "may be a later line than the `untyped_storage()` call. (`len()` of an UntypedStorage is worse: "
        "it skips the whole frame; this rule does not track it.)"
    )
    example = "@torch.compile\ndef f(x):\n    y = x * 2\n    size = y.untyped_storage().nbytes()\n    return y / size\n"
    fixed_example = "@torch.compile\ndef f(x):\n    y = x * 2\n    size = y.nbytes\n    return y / size\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    s = x.storage()\n    return x\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        s = x.untyped_storage()\n        n = s.nbytes()\n        return x * n\n"),
        Example("@torch.compile\ndef f(x):\n    p = x.untyped_storage().data_ptr()\n    return x\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    n = x.untyped_storage().size()\n    return x * n\n"),
        Example("@torch.compile\ndef f(x):\n    return x * (x.numel() * x.element_size())\n"),
        Example("class Store:\n    def storage(self):\n        return {}\n\n    def forward(self, x):\n        return self.storage()\n"),
    )  # fmt: skip

    def _names(self, ctx: RuleContext) -> set[str]:
        return ctx.names(self, "storages")

    def _is_untyped_storage(self, node: cst.BaseExpression, ctx: RuleContext) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self._names(ctx)
        return (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "untyped_storage"
            and is_tensor_receiver(node.func.value, ctx)
        )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        name = node.targets[0].target.value
        if self._is_untyped_storage(node.value, ctx) and not isinstance(node.value, cst.Name):
            self._names(ctx).add(name)
        else:
            self._names(ctx).discard(name)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method, receiver = func.attr.value, func.value
        if method == "storage" and not node.args and is_tensor_receiver(receiver, ctx):
            shown = dotted_code(receiver)
            ctx.report(
                self,
                node,
                f"`{shown}.storage()` returns a legacy TypedStorage, not a tensor: Dynamo cannot trace it "
                f"and the graph breaks here ({NON_TENSOR_OP})",
                gb_codes=(NON_TENSOR_OP,),
                fix=f"Use `{shown}.nbytes` or `{shown}.numel() * {shown}.element_size()` for sizes; keep storage checks outside the region.",
            )
        elif method not in TRACED_STORAGE_METHODS and self._is_untyped_storage(receiver, ctx):
            ctx.report(
                self,
                node,
                f"`{dotted_code(node)}` calls an UntypedStorage method Dynamo does not support: the graph "
                f"breaks here ({UNSUPPORTED_METHOD})",
                gb_codes=(UNSUPPORTED_METHOD,),
                fix="Ask the tensor instead (`t.nbytes`, `t.numel() * t.element_size()`), or do storage checks outside the region.",
            )


RULE = TensorStorage()
