"""TCL202: `input()`, `open()` and `breakpoint()` inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

BUILTINS = {"input": "input", "builtins.input": "input", "open": "open", "builtins.open": "open",
            "io.open": "open", "breakpoint": "breakpoint", "builtins.breakpoint": "breakpoint"}  # fmt: skip
FIXES = {
    "input": "Read the input before calling the compiled function and pass the value in as an argument.",
    "open": (
        "Read the file once outside the compiled region (e.g. in `__init__`: `self.table = json.load(f)`) "
        "and use the loaded value inside it."
    ),
    "breakpoint": (
        "Remove `breakpoint()`; to step through this code run it eagerly with "
        '`torch.compiler.set_stance("force_eager")`, or write '
        "`if not torch.compiler.is_compiling(): breakpoint()` (then it only stops in eager runs)."
    ),
}


def io_builtin(node: cst.Call, ctx: RuleContext) -> str | None:
    """`input`/`open`/`breakpoint` when `node` calls that builtin (not a same-named import or local)."""
    func = node.func
    if isinstance(func, cst.Name) and (func.value in ctx.imports.aliases or func.value in ctx.facts.env):
        return None  # e.g. `from gzip import open`, or a parameter named `open`
    name = ctx.resolve(func)
    return BUILTINS.get(name) if name else None


class InteractiveIO(Rule):
    code = "TCL202"
    name = "io-in-region"
    summary = "`input()`, `open()` or `breakpoint()` in a compiled region breaks the graph"
    gb_codes = ("GB0059", "GB0142", "GB0156")
    fix = "Do the I/O outside the compiled region and pass the result in."
    what = (
        "Flags calls to the builtins `input()`, `open()` (including `with open(...) as f:` and "
        "`open(...).read()`) and `breakpoint()` inside compiled regions."
    )
    why = (
        "Dynamo cannot trace these builtins: it ends the graph at the call, runs it eagerly and resumes "
        "in a new graph (GB0059, failed to trace builtin operator). A file object is opaque to Dynamo too: "
        "each method call on it (`.read()`, `.close()`) breaks again (GB0156), and `with open(...)` is "
        "worse: Dynamo cannot enter the file's context manager, so it gives up on the rest of the "
        "function, which runs eagerly (GB0142). `input()` and `breakpoint()` are not traced first and then "
        "executed: Dynamo breaks before the call, and the eager call then really waits for input."
    )
    example = (
        'class Vocab(nn.Module):\n    def forward(self, x):\n        with open("scale.txt") as f:\n'
        "            scale = float(f.read())\n        return x * scale\n"
    )
    fixed_example = (
        "class Vocab(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        '        with open("scale.txt") as f:\n            self.scale = float(f.read())\n\n'
        "    def forward(self, x):\n        return x * self.scale\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    s = input()\n    return x + len(s)\n"),
        Example("@torch.compile\ndef f(x):\n    breakpoint()\n    return x\n"),
        Example(
            "@torch.compile\ndef f(x):\n    with open('cfg.txt') as fh:\n        n = len(fh.read())\n    return x + n\n"
        ),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        text = open('cfg.txt').read()\n        return x\n"
        ),
    )
    valid = (
        Example(
            "@torch.compile\ndef f(x):\n    if not torch.compiler.is_compiling():\n        breakpoint()\n    return x\n"
        ),
        Example("@torch.compile\ndef f(x, store):\n    handle = store.open('weights')\n    return x\n"),
        Example("@torch.compile\ndef f(x, open):\n    return open(x)\n"),
        Example("def load(path):\n    with open(path) as fh:\n        return fh.read()\n"),
    )

    def visit_With(self, node: cst.With, ctx: RuleContext) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and io_builtin(call, ctx) == "open":
                ctx.report(
                    self,
                    call,
                    "`with open(...)` breaks the graph at `open` (GB0059), then Dynamo cannot enter the file's "
                    "context manager and runs the rest of the function eagerly (GB0142)",
                    gb_codes=("GB0059", "GB0142"),
                    fix=FIXES["open"],
                )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            opened = func.value  # `open(path).read()`: the method call on the file breaks as well
            if io_builtin(opened, ctx) == "open" and id(opened) not in ctx.reported:
                ctx.report(
                    self,
                    opened,
                    f"`open(...).{func.attr.value}()` breaks the graph twice: at `open` (GB0059) and at the "
                    "method call on the file object (GB0156)",
                    gb_codes=("GB0059", "GB0156"),
                    fix=FIXES["open"],
                )
            return
        if id(node) in ctx.reported:
            return
        builtin = io_builtin(node, ctx)
        if builtin is None:
            return
        message = {
            "input": "`input()` breaks the graph (GB0059) and blocks the compiled call waiting for stdin",
            "open": "`open()` breaks the graph (GB0059); every method call on the file object breaks again (GB0156)",
            "breakpoint": "`breakpoint()` breaks the graph (GB0059); the debugger stops between two graphs, "
            "not inside the traced code",
        }[builtin]
        ctx.report(self, node, message, gb_codes=("GB0059",), fix=FIXES[builtin])


RULE = InteractiveIO()
