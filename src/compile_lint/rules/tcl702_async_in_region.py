"""TCL702: `await`, `async for` or `async with` in a compiled coroutine function."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.rules.base import Example, Rule


def is_async(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Await):
        return True
    return isinstance(node, (cst.For, cst.With)) and node.asynchronous is not None


class AsyncInRegion(Rule):
    code = "TCL702"
    name = "async-in-region"
    summary = "`await` / `async for` / `async with` in a compiled coroutine: Dynamo skips the whole frame"
    gb_codes = ("GB0082",)  # Missing bytecode handler
    frame_skip = True
    fix = "Compile the synchronous tensor code (a helper the coroutine awaits around), not the coroutine itself."
    what = (
        "Flags the first `await`, `async for` or `async with` of an `async def` that is a compiled region "
        "(the rest of that coroutine runs eagerly anyway). Async functions merely defined inside a region "
        "are not flagged."
    )
    why = (
        "Dynamo has no handler for the bytecodes of `await` and `async for`. Measured with torch 2.13 and "
        "2.14: it gives up on the whole coroutine when it meets the first one (GB0082, missing bytecode "
        "handler), so nothing in it is compiled. A coroutine without any await compiles."
    )
    example = "@torch.compile\nasync def serve(x, queue):\n    y = x.relu()\n    await queue.put(y)\n    return y * 2\n"
    fixed_example = (
        "@torch.compile\ndef compute(x):\n    return x.relu()\n\n"
        "async def serve(x, queue):\n    y = compute(x)\n    await queue.put(y)\n    return y * 2\n"
    )
    invalid = (
        Example("@torch.compile\nasync def f(x, stream):\n    async for item in stream:\n        x = x + item\n    return x\n"),
        Example("@torch.compile\nasync def f(x, lock):\n    async with lock:\n        return x * 2\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\nasync def f(x):\n    return x * 2\n"),
        Example("@torch.compile\ndef f(x):\n    async def later(t):\n        await t\n    return x * 2\n"),
        Example("async def eager(x, q):\n    await q.put(x)\n"),
    )  # fmt: skip

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: RuleContext) -> None:
        if ctx.function is not None and node.name.value != ctx.function.name:
            # A coroutine defined inside the region only runs when awaited, outside this frame.
            ctx.reported.update(id(n) for n in iter_nodes(node.body) if is_async(n))

    def _check(self, node: cst.CSTNode, shown: str, ctx: RuleContext) -> None:
        seen = ctx.names(self, "reported")
        if not is_async(node) or id(node) in ctx.reported or seen:
            return
        seen.add(shown)
        ctx.report(
            self,
            node,
            f"`{shown}` has no bytecode handler in Dynamo: it skips the whole coroutine, which runs eagerly "
            "with no graph (GB0082)",
        )

    def visit_Await(self, node: cst.Await, ctx: RuleContext) -> None:
        self._check(node, "await", ctx)

    def visit_For(self, node: cst.For, ctx: RuleContext) -> None:
        self._check(node, "async for", ctx)

    def visit_With(self, node: cst.With, ctx: RuleContext) -> None:
        self._check(node, "async with", ctx)


RULE = AsyncInRegion()
