"""TCL303: `id(t)` / `hash(t)` on a tensor makes Dynamo skip the whole frame."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

IDENTITY_BUILTINS = frozenset({"id", "hash"})


class ObjectIdentity(Rule):
    code = "TCL303"
    name = "tensor-identity"
    summary = "`id(t)` / `hash(t)` on a tensor: using the value makes Dynamo skip the whole frame"
    # Measured (fixtures/object_identity.py), all blamed on the line that uses the value: GB0055
    # (arithmetic with a tensor), GB0088 (int arithmetic such as `% 7` in torch 2.13; GB0055 in 2.14),
    # GB4501 (the value is returned or stored in a global), GB9316 (compared with `==`, then GB4501).
    gb_codes = ("GB0055", "GB0088", "GB4501", "GB9316")
    frame_skip = True
    fix = (
        "Don't use tensor identity inside the region: test identity with `a is b`, and key caches "
        "outside the compiled function (or by a name or index you pass in)."
    )
    what = "Flags `id(t)` and `hash(t)` where `t` is a tensor, inside compiled regions (a tensor's hash is its id)."
    why = (
        "While tracing, a tensor is a fake object: Dynamo can only give `id()`/`hash()` a compile-time "
        "stand-in. As soon as the value is used (arithmetic, `==`, returned, stored in a global dict) "
        "it cannot continue, and instead of a graph break it skips the whole frame: the function runs "
        "fully eagerly, with no graph at all. Dynamo blames the line that uses the value, one or two "
        "lines after the call (GB0055/GB0088/GB4501). `torch._dynamo.explain` reports no break at all. "
        "On an input tensor it traces, but guards on that exact object, so every call with a new "
        "tensor recompiles."
    )
    example = "CACHE = {}\n\n@torch.compile\ndef f(x):\n    y = x.relu()\n    CACHE[id(y)] = y\n    return y * 2\n"
    fixed_example = (
        "CACHE = {}\n\n@torch.compile\ndef f(x):\n    return x.relu() * 2\n\n"
        "def cached_f(x):\n    y = f(x)\n    CACHE[id(y)] = y\n    return y\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    y = x + 1\n    i = id(y)\n    return y + i\n"),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        h = hash(x.sum())\n        return x * (h % 7)\n"
        ),
    )
    valid = (
        Example("@torch.compile\ndef f(x, w):\n    y = x + 1\n    if y is w:\n        return y\n    return y * 2\n"),
        Example("@torch.compile\ndef f(x):\n    return x * id(3)\n"),
        Example("def eager(x):\n    return id(x)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Name) or func.value not in IDENTITY_BUILTINS or func.value in ctx.imports.aliases:
            return
        if len(node.args) != 1 or not ctx.facts.is_tensor(node.args[0].value):
            return
        ctx.report(
            self,
            node,
            f"`{dotted_code(node)}` reads a tensor's identity, for which Dynamo has only a stand-in: once the "
            "value is used, Dynamo skips the whole frame and it runs eagerly with no graph (`id()` of an input "
            "tensor instead recompiles for every new tensor)",
        )


RULE = ObjectIdentity()
