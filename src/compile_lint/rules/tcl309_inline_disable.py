"""TCL309: `torch.compiler.disable(fn)` called inside a compiled region instead of at definition."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import TorchVersion

SKIPPED = "GB0007"  # torch 2.13: the disable() call itself is a skipped function
DYNAMO_DISABLE_CALL = "GB0376"  # torch 2.14: Call to `torch._dynamo.disable()`
COMPILER_DISABLE_CALL = "GB0377"  # torch 2.14: Call to `torch.compiler.disable()`
SKIP_CALLING = "GB0098"  # calling the disabled result
SKIP_INLINING = "GB0099"  # ... made with recursive=False
DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})


def wrapping_code(full: str, version: TorchVersion) -> str:
    """The break of the `disable(fn)` call itself, measured with torch 2.13 and 2.14."""
    if version < (2, 14):
        return SKIPPED
    return DYNAMO_DISABLE_CALL if full == "torch._dynamo.disable" else COMPILER_DISABLE_CALL


def calling_code(disable_call: cst.Call) -> str:
    non_recursive = any(
        arg.keyword is not None and arg.keyword.value == "recursive" and dotted_code(arg.value) == "False"
        for arg in disable_call.args
    )
    return SKIP_INLINING if non_recursive else SKIP_CALLING


class InlineDisable(Rule):
    code = "TCL309"
    name = "inline-disable"
    summary = "`torch.compiler.disable(fn)` called inside a compiled region: two breaks where one would do"
    gb_codes = (SKIPPED, DYNAMO_DISABLE_CALL, COMPILER_DISABLE_CALL, SKIP_CALLING, SKIP_INLINING)
    gb_codes_by_version = {
        (2, 13): (SKIPPED, SKIP_CALLING, SKIP_INLINING),
        (2, 14): (DYNAMO_DISABLE_CALL, COMPILER_DISABLE_CALL, SKIP_CALLING, SKIP_INLINING),
    }
    fix = (
        "Disable the function where it is defined (`@torch.compiler.disable`), or wrap it once at module "
        "level (`eager_fn = torch.compiler.disable(fn)`) and call `eager_fn(...)` in the region."
    )
    what = (
        "Flags calls of `torch.compiler.disable(...)` and `torch._dynamo.disable(...)` made inside a compiled "
        "region (not used as a decorator at definition), and calls of a local name bound to their result."
    )
    why = (
        "Measured with torch 2.13: Dynamo cannot trace the `disable()` call itself (a skipped function, "
        "GB0007); torch 2.14 names it (GB0377 for `torch.compiler.disable`, GB0376 for "
        "`torch._dynamo.disable`). Calling the result is a second break (GB0098, or GB0099 with "
        "`recursive=False`). A function disabled at its definition costs only the second one."
    )
    example = (
        "def log_stats(t):\n    print(t.mean())\n\n@torch.compile\ndef f(x):\n    y = x.relu()\n"
        "    torch.compiler.disable(log_stats)(y)\n    return y * 2\n"
    )
    fixed_example = (
        "@torch.compiler.disable\ndef log_stats(t):\n    print(t.mean())\n\n@torch.compile\ndef f(x):\n"
        "    y = x.relu()\n    log_stats(y)\n    return y * 2\n"
    )
    invalid = (
        Example("def g(t):\n    return t + 1\n\n@torch.compile\ndef f(x):\n    return torch._dynamo.disable(g)(x)\n"),
        Example(
            "def g(t):\n    return t + 1\n\nclass M(nn.Module):\n    def forward(self, x):\n"
            "        eager_g = torch.compiler.disable(g, recursive=False)\n        return eager_g(x)\n"
        ),
    )
    valid = (
        Example("def g(t):\n    return t + 1\n\neager_g = torch.compiler.disable(g)\n\n@torch.compile\ndef f(x):\n    return x\n"),
        Example("@torch.compiler.disable\ndef g(t):\n    return t + 1\n\ndef eager(x):\n    return torch.compiler.disable(g)(x)\n"),
    )  # fmt: skip

    def _disabled_names(self, ctx: RuleContext, code: str) -> set[str]:
        return ctx.names(self, f"disabled-{code}")

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        value = node.value
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            for code in (SKIP_CALLING, SKIP_INLINING):
                self._disabled_names(ctx, code).discard(name)
            if isinstance(value, cst.Call) and ctx.resolve(value.func) in DISABLE:
                self._disabled_names(ctx, calling_code(value)).add(name)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Call) and (full := ctx.resolve(func.func)) in DISABLE:
            assert full is not None
            wrap, call = wrapping_code(full, ctx.torch_version), calling_code(func)
            ctx.report(  # reported on the disable() call, which the visit of it then skips
                self,
                func,
                f"`{dotted_code(func.func)}(...)` runs inside the region, where Dynamo cannot trace it ({wrap}), "
                f"and the call of its result runs eagerly ({call}): two breaks on this line",
                gb_codes=(wrap, call),
            )
        elif (full := ctx.resolve(func)) in DISABLE and id(node) not in ctx.reported:
            assert full is not None
            wrap = wrapping_code(full, ctx.torch_version)
            ctx.report(
                self,
                node,
                f"`{dotted_code(func)}(...)` runs inside the region, where Dynamo cannot trace it: graph break ({wrap})",
                gb_codes=(wrap,),
            )
        elif isinstance(func, cst.Name):
            for code in (SKIP_CALLING, SKIP_INLINING):
                if func.value in self._disabled_names(ctx, code):
                    ctx.report(
                        self,
                        node,
                        f"`{func.value}` holds a `torch.compiler.disable`d function: Dynamo ends the graph at "
                        f"this call and runs it eagerly ({code})",
                        gb_codes=(code,),
                    )


RULE = InlineDisable()
