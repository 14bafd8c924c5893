"""TCL403: a sparse tensor made inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

SKIPPED = "GB0007"  # torch.sparse_coo_tensor: a builtin Dynamo skips
SPARSE_CREATION = "GB0374"  # Sparse tensor creation not supported
TO_SPARSE = "GB0277"  # a dense tensor converted to a sparse layout
WRAP_SPARSE = "GB0015"  # Attempted to wrap sparse Tensor (the input was sparse already: the frame is skipped)
# Measured with torch 2.13 and 2.14 (fixtures/sparse_tensors.py).
FACTORIES = {
    "torch.sparse_coo_tensor": SKIPPED,
    "torch.sparse_csr_tensor": SPARSE_CREATION,
    "torch.sparse_csc_tensor": SPARSE_CREATION,
    "torch.sparse_bsr_tensor": SPARSE_CREATION,
    "torch.sparse_bsc_tensor": SPARSE_CREATION,
    "torch.sparse_compressed_tensor": SPARSE_CREATION,
}
CONVERSIONS = frozenset(
    {"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc"}
)


class SparseTensor(Rule):
    code = "TCL403"
    name = "sparse-tensor"
    summary = "A sparse tensor made in a compiled region (`torch.sparse_*_tensor`, `.to_sparse*()`) breaks the graph"
    gb_codes = (SKIPPED, SPARSE_CREATION, TO_SPARSE, WRAP_SPARSE)
    fix = (
        "Keep sparse tensors out of the compiled region: densify before the call (`adj.to_dense()`) or run the "
        "sparse step eagerly and compile the dense part."
    )
    what = (
        "Flags `torch.sparse_coo_tensor`, `torch.sparse_csr_tensor` (and the csc/bsr/bsc/compressed "
        "factories) and `t.to_sparse()` / `to_sparse_coo()` / `to_sparse_csr()` / ... inside compiled regions."
    )
    why = (
        "Dynamo has no fake sparse tensors: measured with torch 2.13 and 2.14, `torch.sparse_coo_tensor` is a "
        "builtin it skips (GB0007), the compressed-layout factories are unsupported (GB0374), converting a "
        "dense tensor breaks (GB0277), and any sparse tensor Dynamo meets (converted again, used, returned or "
        "passed in) makes it give up on the whole function (GB0015)."
    )
    example = "@torch.compile\ndef f(x, index):\n    adj = torch.sparse_coo_tensor(index, torch.ones(index.shape[1]), (4, 4))\n    return adj @ x\n"
    fixed_example = (
        "@torch.compile\ndef f(x, adj):\n    return adj @ x\n\n"
        "def run(x, index):\n    adj = torch.sparse_coo_tensor(index, torch.ones(index.shape[1]), (4, 4))\n"
        "    return f(x, adj.to_dense())\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    s = x.to_sparse()\n    return x + 1\n"),
        Example("@torch.compile\ndef f(x, rows, cols):\n    s = torch.sparse_csr_tensor(rows, cols, x.flatten(), (4, 4))\n    return s\n"),
    )  # fmt: skip
    valid = (
        Example("def eager(x):\n    return x.to_sparse()\n"),
        Example("@torch.compile\ndef f(x):\n    return x.to_dense()\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        code = FACTORIES.get(ctx.resolve(func) or "")
        if code is not None:
            ctx.report(self, node, f"`{short_code(func)}(...)` makes a sparse tensor: the graph breaks here ({code})",
                       gb_codes=(code,))  # fmt: skip
        elif isinstance(func, cst.Attribute) and func.attr.value in CONVERSIONS and ctx.facts.is_tensor(func.value):
            ctx.report(
                self,
                node,
                f"`{short_code(node)}` converts to a sparse layout: the graph breaks here ({TO_SPARSE}; "
                f"{WRAP_SPARSE}, and the whole function runs eagerly, when `{short_code(func.value)}` is sparse)",
                gb_codes=(TO_SPARSE, WRAP_SPARSE),
            )


RULE = SparseTensor()
