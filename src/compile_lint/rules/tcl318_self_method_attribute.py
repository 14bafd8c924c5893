"""TCL318: an object made in the compiled function that keeps a bound method of itself, alive across a break."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.program import Program
from compile_lint.analysis.values import ClassKey
from compile_lint.analysis.walker import RuleContext, iter_nodes
from compile_lint.config import OPT_IN
from compile_lint.rules.base import Example, Rule

RECONSTRUCTION = "GB0092"  # Reconstruction failure


class SelfMethodAttribute(Rule):
    code = "TCL318"
    name = "self-method-attribute"
    summary = (
        "A break while an object made in this function holds a bound method of itself: Dynamo cannot rebuild it "
        "and runs the whole function eagerly"
    )
    gb_codes = (RECONSTRUCTION,)
    frame_skip = True
    fix = (
        "Create the object outside the compiled function and pass it in, store the method's name (or look the "
        "method up when calling) instead of the bound method, or remove the break (its own finding says how)."
    )
    what = (
        "Flags, in a compiled region, the first call that breaks the graph (or breaks itself) after "
        "`obj = Cls(...)` written in the function's own body (not in a branch, loop or `try`) when a constructor of `Cls` (or of a base class) assigns a bound method of the object "
        "to one of its attributes (`self.f = self._default`, also inside a dict, a `getattr` default or a "
        "conditional) and `obj` is used after the call."
    )
    why = (
        "At a graph break Dynamo hands the live locals to eager Python, rebuilding the objects it created while "
        "tracing. A bound method of such an object has no source to rebuild it from. Measured with torch 2.13 "
        "and 2.14: the break is followed by a reconstruction failure at the breaking line (GB0092) and Dynamo "
        "gives up on the whole function, which then runs eagerly on every call; an object without such an "
        "attribute, or one no longer used after the break, is rebuilt and the function resumes."
    )
    example = (
        "class Stepper:\n    def __init__(self):\n        self.step = self._euler\n\n"
        "    def _euler(self, x):\n        return x * 2\n\n"
        "@torch.compile\ndef f(x):\n    stepper = Stepper()\n    print(x)\n    return stepper.step(x)\n"
    )
    fixed_example = (
        "class Stepper:\n    def __init__(self):\n        self.step_name = '_euler'\n\n"
        "    def _euler(self, x):\n        return x * 2\n\n"
        "@torch.compile\ndef f(x):\n    stepper = Stepper()\n    print(x)\n"
        "    return getattr(stepper, stepper.step_name)(x)\n"
    )
    invalid = (
        Example("class Stepper:\n    def __init__(self, kind):\n        self.step = {'euler': self._euler}.get(kind, self._zero)\n\n"
                "    def _euler(self, x):\n        return x * 2\n\n    def _zero(self, x):\n        return x * 0\n\n"
                "def check(x):\n    print(x)\n\n@torch.compile\ndef f(x):\n    stepper = Stepper('euler')\n"
                "    check(x)\n    return stepper.step(x)\n"),
    )  # fmt: skip
    valid = (
        Example("class Stepper:\n    def __init__(self):\n        self.step = self._euler\n\n"
                "    def _euler(self, x):\n        return x * 2\n\n"
                "@torch.compile\ndef f(x):\n    stepper = Stepper()\n    y = stepper.step(x)\n    print(y)\n    return y\n"),
        Example("class Stepper:\n    def __init__(self, x):\n        self.x = x\n\n    def scale(self):\n        return self.x * 2\n\n"
                "@torch.compile\ndef f(x):\n    stepper = Stepper(x)\n    print(x)\n    return stepper.scale()\n"),
    )  # fmt: skip

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        holders, constructions = ctx.names(self, "holders"), ctx.names(self, "constructions")
        value = node.value
        holds = False
        if isinstance(value, cst.Call) and ctx.program is not None and _unconditional(node, ctx):
            classes = [atom.cls for atom in ctx.facts.value(value.func).classes()]
            holds = any(_keeps_own_method(ctx.program, cls) for cls in classes)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if holds:
                    holders.add(target.target.value)
                    constructions.add(str(id(value)))
                else:
                    holders.discard(target.target.value)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        holders = ctx.names(self, "holders")
        if not holders or ctx.function is None or ctx.names(self, "reported"):
            return
        if str(id(node)) in ctx.names(self, "constructions") or not _breaks(node, ctx):
            return
        live = sorted(_used_after(node, holders, ctx.function.node))
        if not live:
            return
        ctx.names(self, "reported").add(str(id(node)))  # Dynamo gives up on the function at the first one
        ctx.report(
            self,
            node,
            f"this call breaks the graph while `{live[0]}`, made in this function, holds a bound method of itself: "
            f"Dynamo cannot rebuild it for eager Python and runs this whole function eagerly ({RECONSTRUCTION})",
        )


def _unconditional(node: cst.Assign, ctx: RuleContext) -> bool:
    """A statement of the function's own body, not under an `if`, loop or `try`: every later line of the
    function runs after it (an object made in a branch may not exist when the break comes)."""
    if ctx.function is None:
        return False
    body = ctx.function.node.body
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    return any(isinstance(line, cst.SimpleStatementLine) and any(s is node for s in line.body) for line in lines)


def _breaks(node: cst.Call, ctx: RuleContext) -> bool:
    """The call breaks: a user function it runs does, or another rule predicts a break at it (a rule with a
    lower code, so already seen). A reconstruction failure found there already (TCL311) is not reported again."""
    own = [p for p in ctx.pending if p.node is node and p.gb_codes and p.rule.code not in OPT_IN]
    if any(RECONSTRUCTION in p.gb_codes for p in own):
        return False
    return bool(own) or ctx.breaking_target(node) is not None


def _used_after(node: cst.Call, names: set[str], function: cst.FunctionDef) -> set[str]:
    """The names read in the function after `node` starts (its own arguments count: they are live at the break)."""
    nested = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    seen = False
    used: set[str] = set()
    for current in iter_nodes(function.body, prune=nested):
        if current is node:
            seen = True
        elif seen and isinstance(current, cst.Name) and current.value in names:
            used.add(current.value)
    return used


def _keeps_own_method(program: Program, cls: ClassKey) -> bool:
    """A constructor of the class or a base assigns a bound method of `self` (not a call of it) to an attribute."""
    for key in program.mro(cls):
        info = program.class_info(key)
        init = info.methods.get("__init__") if info is not None else None
        function = program.function(init) if init is not None else None
        if function is None:
            continue
        for statement in iter_nodes(function.node.body):
            if (
                isinstance(statement, cst.Assign)
                and _assigns_self_attribute(statement)
                and any(_is_plain_method(program, cls, name) for name in _bound_self_methods(statement.value))
            ):
                return True
    return False


def _is_plain_method(program: Program, cls: ClassKey, name: str) -> bool:
    """`self.name` is bound to the object (not a property's value, a static function or a class method)."""
    key = program.method(cls, name)
    function = program.function(key) if key is not None else None
    return function is not None and function.kind == "method"


def _assigns_self_attribute(node: cst.Assign) -> bool:
    return any(
        isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) and t.target.value.value == "self"
        for t in node.targets
    )


def _bound_self_methods(value: cst.BaseExpression) -> set[str]:
    """`self.name` read in the value and not called there: the bound methods the attribute may keep."""
    called = {id(n.func) for n in iter_nodes(value) if isinstance(n, cst.Call)}
    return {
        n.attr.value
        for n in iter_nodes(value)
        if isinstance(n, cst.Attribute)
        and isinstance(n.value, cst.Name)
        and n.value.value == "self"
        and id(n) not in called
    }


RULE = SelfMethodAttribute()
