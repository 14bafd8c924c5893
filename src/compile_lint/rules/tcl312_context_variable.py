"""TCL312: `contextvars.ContextVar` read or set inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import TENSOR_LIKE, External, Instance, Mapping, Module, Seq
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

UNSUPPORTED_METHOD = "GB0156"  # torch 2.13: Unsupported method call (get, set and reset)
CONTEXT_VAR_SET = "GB6815"  # torch 2.14: set/reset of a ContextVar; `get` is traced
NON_CONSTANT_DEFAULT = "GB6066"  # torch 2.14: `get(default)` with a default that is no Python constant
CONTEXT_VAR = "contextvars.ContextVar()"  # an instance, in the analysis' values
# Defaults Dynamo 2.14 does not take for constants (measured: `{}`, `[]`, a tensor, an object; None, numbers,
# strings, tuples and sizes are constants).
CONTAINER_DISPLAYS = (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)


class ContextVariable(Rule):
    code = "TCL312"
    name = "context-variable"
    summary = "`ContextVar.get/set/reset` in a compiled region (`get` traces from torch 2.14 on)"
    gb_codes = (UNSUPPORTED_METHOD, CONTEXT_VAR_SET, NON_CONSTANT_DEFAULT)
    gb_codes_by_version = {(2, 13): (UNSUPPORTED_METHOD,), (2, 14): (CONTEXT_VAR_SET, NON_CONSTANT_DEFAULT)}
    fix = "Read the context variable before the compiled call and pass its value in; set it after the call returns."
    what = (
        "Flags `.get()`, `.set()` and `.reset()` of a `contextvars.ContextVar` (a module global, an attribute, or a "
        "local) inside compiled regions; with torch 2.14 only `.set()`, `.reset()` and a `.get(default)` whose default "
        "is a tensor, a list, a dict or an object."
    )
    why = (
        "Measured: torch 2.13 cannot trace any method of a ContextVar (GB0156); torch 2.14 traces `get` (and "
        "guards on the value) when its default is a Python constant (GB6066 otherwise) but not `set` or `reset` "
        "(GB6815). Each untraced call ends the graph."
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
        Example("from contextvars import ContextVar\n\nV = ContextVar('v')\n\n@torch.compile\n"
                "def f(x):\n    return x * len(V.get([]))\n"),
    )  # fmt: skip
    valid = (
        Example("from contextvars import ContextVar\n\nV = ContextVar('v', default=1.0)\n\n@torch.compile\n"
                "def f(x):\n    return x * V.get()\n", versions=((2, 14),)),
        Example("from contextvars import ContextVar\n\nV = ContextVar('v')\n\n@torch.compile\n"
                "def f(x):\n    return x * V.get(1.0)\n", versions=((2, 14),)),
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
        what = ", which Dynamo cannot trace"
        if ctx.torch_version < (2, 14):
            code = UNSUPPORTED_METHOD
        elif method != "get":
            code = CONTEXT_VAR_SET
        elif node.args and _non_constant(node.args[0].value, ctx):
            code, what = NON_CONSTANT_DEFAULT, " with a default that is no constant, which Dynamo cannot trace"
        else:
            return
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` {method}s a context variable{what}: the graph breaks here ({code})",
            gb_codes=(code,),
        )


def _non_constant(default: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A default Dynamo cannot take for a constant: a list, dict or set, a tensor, an object."""
    if isinstance(default, CONTAINER_DISPLAYS):
        return True
    value = ctx.facts.value(default)
    return bool(value) and all(_non_constant_atom(atom) for atom in value)


def _non_constant_atom(atom: object) -> bool:
    return atom in TENSOR_LIKE or isinstance(atom, (Instance, Module, Seq, Mapping))


RULE = ContextVariable()
