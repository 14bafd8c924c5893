"""TCL404: a sparse tensor made in a compiled region is returned from it."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.rules.tcl403_sparse_tensor import CONVERSIONS, FACTORIES

WRAP_SPARSE = "GB0015"  # Attempted to wrap sparse Tensor


def makes_sparse(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    return (ctx.resolve(func) or "") in FACTORIES or (
        isinstance(func, cst.Attribute) and func.attr.value in CONVERSIONS
    )


class SparseEscape(Rule):
    code = "TCL404"
    name = "sparse-tensor-returned"
    summary = "A sparse tensor made in a compiled region is returned: Dynamo gives up on the whole function"
    gb_codes = (WRAP_SPARSE,)
    frame_skip = True
    fix = "Return a dense tensor (`adj.to_dense()`), or make the sparse tensor outside the compiled function."
    what = (
        "Flags `return name` in a compiled region where `name` was bound in the same function to a sparse tensor "
        "(`torch.sparse_*_tensor(...)` or `t.to_sparse*()`). The creation itself is TCL403."
    )
    why = (
        "Dynamo cannot hold a sparse tensor as a value of the graph: measured with torch 2.13 and 2.14, returning "
        "one (or using it after it was made eagerly at the TCL403 break) makes it give up on the whole function "
        "(GB0015, attempted to wrap sparse Tensor), which then runs eagerly on every call."
    )
    example = "@torch.compile\ndef f(x, index):\n    adj = torch.sparse_coo_tensor(index, x, (4, 4))\n    return adj\n"
    fixed_example = (
        "@torch.compile\ndef f(x, index):\n    adj = torch.zeros(4, 4).index_put_(tuple(index), x)\n    return adj\n"
    )
    invalid = (Example("@torch.compile\ndef f(x):\n    s = x.to_sparse_csr()\n    return s\n"),)
    valid = (
        Example("@torch.compile\ndef f(x):\n    s = x.to_sparse()\n    return x * 2\n"),
        Example("def eager(x):\n    s = x.to_sparse()\n    return s\n"),
    )

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        names = ctx.names(self, "sparse")
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if makes_sparse(node.value, ctx):
                    names.add(target.target.value)
                else:
                    names.discard(target.target.value)

    def visit_Return(self, node: cst.Return, ctx: RuleContext) -> None:
        value = node.value
        if isinstance(value, cst.Name) and value.value in ctx.names(self, "sparse"):
            ctx.report(self, node, f"`{value.value}` is a sparse tensor made here and returned: Dynamo cannot wrap it "
                       f"and runs the whole function eagerly ({WRAP_SPARSE})")  # fmt: skip


RULE = SparseEscape()
