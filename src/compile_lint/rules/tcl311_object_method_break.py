"""TCL311: a graph break inside a method of an object made in the same compiled function."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.values import Instance
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

RECONSTRUCTION = "GB0092"  # Reconstruction failure


class ObjectMethodBreak(Rule):
    code = "TCL311"
    name = "object-method-break"
    summary = (
        "A method that breaks the graph, called on an object made in the same compiled function: all of it runs eagerly"
    )
    gb_codes = (RECONSTRUCTION,)
    frame_skip = True
    fix = (
        "Create the object outside the compiled function and pass it in (Dynamo then runs the method eagerly "
        "at the break and resumes), or remove the break inside the method (its own finding says how)."
    )
    what = (
        "Flags `obj.method(...)` in a compiled region when `obj` was constructed in the same function "
        "(`obj = Solver(...)`, including through a dict of classes, or by a call of a function whose every "
        "`return` constructs one, such as a conditional flow's `condition(context)`) and the method, or a "
        "function it calls, has a finding that predicts a graph break. `t._inv_call(y)` on a torch.distributions "
        "Transform runs its `_inverse`."
    )
    why = (
        "At a graph break inside an inlined method, Dynamo must hand the object to eager Python; an object it "
        "created itself while tracing cannot be rebuilt. Measured with torch 2.13 and 2.14: the method's own "
        "break is followed by a reconstruction failure at the call (GB0092), and Dynamo gives up on the whole "
        "calling function, which then runs eagerly on every call."
    )
    example = (
        "class Stepper:\n    def __init__(self, x):\n        self.x = x\n\n    def run(self):\n"
        "        if self.x.sum() > 0:\n            return self.x + 1\n        return self.x\n\n"
        "@torch.compile\ndef f(x):\n    stepper = Stepper(x)\n    return stepper.run()\n"
    )
    fixed_example = (
        "class Stepper:\n    def __init__(self, x):\n        self.x = x\n\n    def run(self):\n"
        "        return torch.where(self.x.sum() > 0, self.x + 1, self.x)\n\n"
        "@torch.compile\ndef f(x):\n    stepper = Stepper(x)\n    return stepper.run()\n"
    )
    invalid = (
        Example(
            "class Logger:\n    def __init__(self, x):\n        self.x = x\n\n    def show(self):\n"
            "        print(self.x)\n        return self.x\n\n@torch.compile\ndef f(x):\n    log = Logger(x)\n    return log.show()\n"
        ),
    )  # fmt: skip
    valid = (
        Example(
            "class Stepper:\n    def __init__(self, x):\n        self.x = x\n\n    def run(self):\n        return self.x * 2\n\n"
            "@torch.compile\ndef f(x):\n    stepper = Stepper(x)\n    return stepper.run()\n"
        ),
        Example(
            "class Stepper:\n    def run(self, x):\n        print(x)\n        return x\n\n"
            "@torch.compile\ndef f(x, stepper):\n    return stepper.run(x)\n"
        ),
    )  # fmt: skip

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        # Whether the call makes the object is asked when a method of it is called: asking it of every assignment
        # cost up to an eighth of a run.
        calls = ctx.bindings(self, "call results")
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if isinstance(node.value, cst.Call):
                    calls[target.target.value] = node.value
                else:
                    calls.pop(target.target.value, None)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
            return
        call = ctx.bindings(self, "call results").get(func.value.value)
        if not isinstance(call, cst.Call):
            return
        if not any(isinstance(atom, Instance) for atom in ctx.facts.value(func.value)) or not _makes_object(call, ctx):
            return
        target = ctx.breaking_target(node)
        if target is not None:
            ctx.report(
                self,
                node,
                f"`{target.text}()` breaks the graph inside a method of `{func.value.value}`, an object made in "
                f"this function: Dynamo cannot rebuild it for eager Python and runs this whole function eagerly "
                f"({RECONSTRUCTION})",
            )


def _makes_object(call: cst.Call, ctx: RuleContext) -> bool:
    """A construction (`Solver(...)`), or a call of factories that each return one (`self.spline.condition(x)`)."""
    if ctx.facts.value(call.func).classes():
        return True
    targets = ctx.call_targets(call)
    return (
        ctx.program is not None
        and bool(targets)
        and all(ctx.program.returns_new_object(target.key) for target in targets)
    )


RULE = ObjectMethodBreak()
