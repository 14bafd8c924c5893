"""TCL320: a generator expression unpacked into a call (`f(*(... for ...))`) that breaks the graph."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

UNINITIALIZED_CELL = "GB0091"  # Read uninitialized cell
GENERATOR_RECONSTRUCTION = "GB8335"  # Generator reconstruction with mutations


class StarGenerator(Rule):
    code = "TCL320"
    name = "star-generator"
    summary = (
        "A generator expression unpacked into a call that breaks the graph: Dynamo cannot hand the half-run "
        "generator back to Python and runs the whole function eagerly"
    )
    gb_codes = (UNINITIALIZED_CELL, GENERATOR_RECONSTRUCTION)
    gb_codes_by_version = {
        (2, 13): (UNINITIALIZED_CELL, GENERATOR_RECONSTRUCTION),
        (2, 14): (GENERATOR_RECONSTRUCTION,),
    }
    frame_skip = True
    fix = (
        "Unpack a list instead (`f(*[g(x) for x in xs])`) or a tuple (`f(*tuple(...))`): the items are then "
        "computed before the call, and a break inside the call is an ordinary graph break."
    )
    what = (
        "Flags a call in a compiled region with a generator expression as `*args` (`Composed(*(t(c) for t in "
        "parts))`) when the call breaks the graph (the function or constructor it runs does). On torch 2.13 at "
        "the call; on torch 2.14 where computing the first item mutates something: at the first construction of "
        "a user class in the item expression, or at the call when the generator iterates a local name (a "
        "construction in a function the items call also breaks there on 2.14, and is not flagged: that "
        "function's line runs for its other callers too)."
    )
    why = (
        "Dynamo keeps `*(generator)` as a lazy generator on its stack. When the call it is passed to breaks, the "
        "stack has to be rebuilt for eager Python, generator included, which Dynamo cannot do: it gives up on "
        "the whole function, which then runs eagerly on every call. Measured with torch 2.13: 'Read "
        "uninitialized cell' (GB0091) when the items read a local of the function, 'Generator reconstruction "
        "with mutations' (GB8335) otherwise, both at the call. Torch 2.14 replays a generator without side "
        "effects and resumes; one that built an object or advanced a list iterator fails with GB8335 at that "
        "point. Unpacking a list or a tuple built first has no such generator and only breaks at the call."
    )
    example = (
        "class Whole:\n    def __init__(self, *parts):\n        print(len(parts))\n        self.parts = parts\n\n"
        "class Part:\n    def __init__(self, x):\n        self.x = x\n\n"
        "@torch.compile\ndef f(x):\n    return Whole(*(Part(x + i) for i in range(3))).parts[0].x\n"
    )
    fixed_example = (
        "class Whole:\n    def __init__(self, *parts):\n        print(len(parts))\n        self.parts = parts\n\n"
        "class Part:\n    def __init__(self, x):\n        self.x = x\n\n"
        "@torch.compile\ndef f(x):\n    return Whole(*[Part(x + i) for i in range(3)]).parts[0].x\n"
    )
    invalid = (
        Example("class Whole:\n    def __init__(self, *parts):\n        print(len(parts))\n        self.parts = parts\n\n"
                "@torch.compile\ndef f(xs: list):\n    return Whole(*(t * 2 for t in xs)).parts[0]\n"),
        Example("def show(*parts):\n    print(len(parts))\n    return parts[0]\n\n"
                "@torch.compile\ndef f(x):\n    return show(*(x + i for i in range(3)))\n", versions=((2, 13),)),
    )  # fmt: skip
    valid = (
        Example("def show(*parts):\n    print(len(parts))\n    return parts[0]\n\n"
                "@torch.compile\ndef f(x):\n    return show(*[x + i for i in range(3)])\n"),
        Example("def total(*parts):\n    return sum(parts)\n\n"
                "@torch.compile\ndef f(x):\n    return total(*(x + i for i in range(3)))\n"),
        Example("def show(*parts):\n    print(len(parts))\n    return parts[0]\n\n"
                "@torch.compile\ndef f(x):\n    return show(*(x + i for i in range(3)))\n", versions=((2, 14),)),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        generator = next(
            (arg.value for arg in node.args if arg.star == "*" and isinstance(arg.value, cst.GeneratorExp)), None
        )
        if generator is None or ctx.program is None or ctx.breaking_target(node) is None:
            return
        ctx.facts.value(generator)  # binds the generator's loop names for the items below
        if ctx.torch_version < (2, 14):
            code = UNINITIALIZED_CELL if _reads_enclosing_locals(generator, ctx) else GENERATOR_RECONSTRUCTION
            ctx.report(self, node, _message(node, code), gb_codes=(code,))
            return
        codes = (GENERATOR_RECONSTRUCTION,)
        construction = _first_construction(generator, ctx)
        if construction is not None:
            ctx.report(self, construction, _message(node, GENERATOR_RECONSTRUCTION), gb_codes=codes)
        elif isinstance(generator.for_in.iter, cst.Name):
            ctx.report(self, node, _message(node, GENERATOR_RECONSTRUCTION), gb_codes=codes)


def _message(node: cst.Call, code: str) -> str:
    return (
        f"`{short_code(node.func)}(*(...))` breaks the graph with a generator expression as its arguments: Dynamo "
        f"cannot rebuild the generator and runs the whole function eagerly ({code})"
    )


def _loop_names(generator: cst.GeneratorExp) -> set[str]:
    names: set[str] = set()
    comp: cst.CompFor | None = generator.for_in
    while comp is not None:
        names.update(node.value for node in iter_nodes(comp.target) if isinstance(node, cst.Name))
        comp = comp.inner_for_in
    return names


def _reads_enclosing_locals(generator: cst.GeneratorExp, ctx: RuleContext) -> bool:
    """Do the items (or the conditions and inner loops) read a local of the function: a closure cell."""
    own = _loop_names(generator)
    body: list[cst.CSTNode] = [generator.elt, *generator.for_in.ifs]
    if generator.for_in.inner_for_in is not None:
        body.append(generator.for_in.inner_for_in)
    return any(
        isinstance(node, cst.Name) and node.value not in own and node.value in ctx.facts.env
        for part in body
        for node in iter_nodes(part)
    )


def _first_construction(generator: cst.GeneratorExp, ctx: RuleContext) -> cst.Call | None:
    """The first construction of a user class in the item expression."""
    for node in iter_nodes(generator.elt):
        if isinstance(node, cst.Call) and ctx.facts.value(node.func).classes():
            return node
    return None


RULE = StarGenerator()
