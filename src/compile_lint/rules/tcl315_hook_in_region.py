"""TCL315: a module hook registered inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

SETATTR_UNSUPPORTED = "GB0467"  # setattr() on unsupported type
HOOK_REGISTRARS = frozenset(
    {
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_backward_hook",
    }
)


class HookInRegion(Rule):
    code = "TCL315"
    name = "hook-in-region"
    summary = "A module hook registered inside a compiled region breaks the graph"
    gb_codes = (SETATTR_UNSUPPORTED,)
    fix = (
        "Register hooks once, outside the compiled function (after building the model, before compiling); "
        "switch what they record with a flag instead of re-registering."
    )
    what = (
        "Flags `m.register_forward_hook(...)`, `register_forward_pre_hook`, `register_full_backward_hook`, "
        "`register_full_backward_pre_hook` and `register_backward_hook` called in a compiled region (e.g. hooks "
        "installed lazily the first time a decorated `forward` runs)."
    )
    why = (
        "Registering a hook stores it in the module's hook dicts, which Dynamo cannot mutate while tracing. "
        "Measured with torch 2.13 and 2.14: the call breaks the graph (GB0467, setattr() on unsupported type), "
        "and on a module made in the same function Dynamo then skips the whole function (GB0092)."
    )
    example = (
        "class M(nn.Module):\n    def forward(self, x):\n        self.lin.register_forward_hook(record)\n"
        "        return self.lin(x)\n"
    )
    fixed_example = "model = M()\nmodel.lin.register_forward_hook(record)\ncompiled = torch.compile(model)\n"
    invalid = (
        Example("@torch.compile\ndef f(x, model: nn.Module):\n    model.register_forward_pre_hook(check)\n    return model(x)\n"),
    )  # fmt: skip
    valid = (
        Example("model = nn.Linear(4, 4)\nmodel.register_forward_hook(record)\n\n@torch.compile\ndef f(x):\n    return model(x)\n"),
        Example("@torch.compile\ndef f(x):\n    y = x * 2\n    y.register_hook(print_grad)\n    return y\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in HOOK_REGISTRARS:
            return
        if ctx.facts.is_tensor(func.value):
            return
        ctx.report(
            self,
            node,
            f"`{dotted_code(func)}(...)` registers a hook inside the compiled region: Dynamo cannot add it to the "
            f"module's hooks while tracing, so the graph breaks here ({SETATTR_UNSUPPORTED})",
        )


RULE = HookInRegion()
