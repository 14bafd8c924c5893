"""TCL313: an `nn.Parameter`, or a torch.nn layer that owns parameters, constructed inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

PARAMETER_CTOR = "GB0264"  # Attempted to use `torch.nn.Parameter()` constructor with Dynamo
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# torch.nn layers whose constructor creates parameters (unless the keyword named turns them off).
LAYERS: dict[str, str | None] = {
    **dict.fromkeys(
        ("Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
         "ConvTranspose3d", "Embedding", "EmbeddingBag", "PReLU", "MultiheadAttention", "RNN", "LSTM", "GRU",
         "RNNCell", "LSTMCell", "GRUCell", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer"),
        None,
    ),
    **dict.fromkeys(("LayerNorm", "RMSNorm"), "elementwise_affine"),
    **dict.fromkeys(("GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"), "affine"),
}  # fmt: skip


class ParameterInRegion(Rule):
    code = "TCL313"
    name = "parameter-in-region"
    summary = "An `nn.Parameter` (or a torch.nn layer that creates one) constructed inside a compiled region"
    gb_codes = (PARAMETER_CTOR,)
    fix = (
        "Construct parameters and layers once, in `__init__` of the module that is compiled (or before "
        "compiling), and only use them in `forward`."
    )
    what = (
        "Flags `nn.Parameter(...)` and the construction of torch.nn layers that own parameters (`nn.Linear`, "
        "`nn.Conv2d`, `nn.Embedding`, `nn.LayerNorm`, ...) in a compiled region or in the `__init__` of a "
        "class constructed there."
    )
    why = (
        "Dynamo does not trace the `nn.Parameter` constructor (`graph_break_on_nn_param_ctor`). Measured "
        "with torch 2.13 and 2.14: `nn.Linear(4, 4)` or `nn.Parameter(t)` in a compiled function breaks the "
        "graph on that line (GB0264), also inside the `__init__` of a module built in the region, where only "
        "the first one breaks (Dynamo then runs that `__init__` eagerly, see TCL314); layers without "
        "parameters (`nn.Dropout`) trace."
    )
    example = (
        "class Block(nn.Module):\n    def forward(self, x):\n        proj = nn.Linear(x.shape[-1], 8)\n"
        "        return proj(x)\n"
    )
    fixed_example = (
        "class Block(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
        "        self.proj = nn.Linear(dim, 8)\n\n    def forward(self, x):\n        return self.proj(x)\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    scale = nn.Parameter(torch.ones(4))\n    return x * scale\n"),
        Example("@torch.compile\ndef f(x):\n    return nn.LayerNorm(4)(x)\n"),
        Example(
            "class Head(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.lin = nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.lin(x)\n\n"
            "@torch.compile\ndef f(x):\n    return Head(4)(x)\n"
        ),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    return nn.Dropout(0.1)(x)\n"),
        Example("@torch.compile\ndef f(x):\n    return nn.LayerNorm(4, elementwise_affine=False)(x)\n"),
        Example(
            "class Head(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.lin = nn.Linear(n, n)\n\n    def forward(self, x):\n        return self.lin(x)\n"
        ),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        full = ctx.resolve(node.func)
        if full is None:
            return
        if full in PARAMETER:
            what = f"`{dotted_code(node.func)}(...)` is constructed"
        else:
            module, _, name = full.rpartition(".")
            if not module.startswith("torch.nn") or name not in LAYERS or _turned_off(node, LAYERS[name]):
                return
            what = f"`{dotted_code(node.func)}(...)` creates its parameters"
        if ctx.function is not None and ctx.program is not None and ctx.program.is_module_init(ctx.function.key):
            # The first one makes Dynamo give up on the whole `__init__` (TCL314): the others run eagerly.
            if ctx.names(self, "reported"):
                return
            ctx.names(self, "reported").add("first")
        ctx.report(
            self,
            node,
            f"{what} inside the compiled region: Dynamo does not trace the `nn.Parameter` constructor, so the "
            f"graph breaks here ({PARAMETER_CTOR})",
        )


def _turned_off(node: cst.Call, keyword: str | None) -> bool:
    """`nn.LayerNorm(n, elementwise_affine=False)`: the layer has no parameters."""
    return keyword is not None and any(
        arg.keyword is not None and arg.keyword.value == keyword and dotted_code(arg.value) == "False"
        for arg in node.args
    )


RULE = ParameterInRegion()
