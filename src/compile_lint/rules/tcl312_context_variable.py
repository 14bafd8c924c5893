"""TCL312: `contextvars.ContextVar` read or set inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import External
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

UNSUPPORTED_METHOD = "GB0156"  # torch 2.13: Unsupported method call (get, set and reset)
CONTEXT_VAR_SET = "GB6815"  # torch 2.14: set/reset of a ContextVar; `get` is traced
CONTEXT_VAR = "contextvars.ContextVar()"  # an instance, in the analysis' values


class ContextVariable(Rule):
    code = "TCL312"
    name = "context-variable"
    summary = "`ContextVar.get/set/reset` in a compiled region (`get` traces from torch 2.14 on)"
    gb_codes = (UNSUPPORTED_METHOD, CONTEXT_VAR_SET)
    gb_codes_by_version = {(2, 13): (UNSUPPORTED_METHOD,), (2, 14): (CONTEXT_VAR_SET,)}
    fix = "Read the context variable before the compiled call and pass its value in; set it after the call returns."
    what = (
        "Flags `.get()`, `.set()` and `.reset()` of a `contextvars.ContextVar` (a module global, an attribute, or a "
        "local) inside compiled regions; with torch 2.14 only `.set()` and `.reset()`."
    )
    why = (
        "Measured: torch 2.13 cannot trace any method of a ContextVar (GB0156); torch 2.14 traces `get` (and "
        "guards on the value) but not `set` or `reset` (GB6815). Each untraced call ends the graph."
    )
    example = (
        "import contextvars\n\nSCALE = contextvars.ContextVar('scale', default=1.0)\n\n"
        "@torch.compile\ndef f(x):\n    token = SCALE.set(2.0)\n    return x + 1\n"
    )
    fixed_example = (
        "import contextvars\n\nSCALE = contextvars.ContextVar('scale', default=1.0)\n\n"
        "@torch.compile\ndef f(x, scale):\n    return x * scale\n\ndef run(x):\n    return f(x, SCALE.get())\n"
    )
    invalid = (
        Example("import contextvars\n\nV = contextvars.ContextVar('v')\n\n@torch.compile\ndef f(x):\n"
                "    t = V.set(1)\n    V.reset(t)\n    return x\n"),
        Example("from contextvars import ContextVar\n\nV = ContextVar('v', default=1.0)\n\n@torch.compile\n"
                "def f(x):\n    return x * V.get()\n", versions=((2, 13),)),
    )  # fmt: skip
    valid = (
        Example("from contextvars import ContextVar\n\nV = ContextVar('v', default=1.0)\n\n@torch.compile\n"
                "def f(x):\n    return x * V.get()\n", versions=((2, 14),)),
        Example("import contextvars\n\nV = contextvars.ContextVar('v')\n\ndef eager(x):\n    V.set(1)\n    return x\n"),
        Example("@torch.compile\ndef f(x, cache):\n    return x * cache.get('scale', 1.0)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("get", "set", "reset"):
            return
        if External(CONTEXT_VAR) not in ctx.facts.value(func.value):
            return
        method = func.attr.value
        if ctx.torch_version >= (2, 14):
            if method == "get":
                return
            code = CONTEXT_VAR_SET
        else:
            code = UNSUPPORTED_METHOD
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` {method}s a context variable, which Dynamo cannot trace: the graph breaks here ({code})",
            gb_codes=(code,),
        )


RULE = ContextVariable()
