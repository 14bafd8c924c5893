"""TCL307: running autograd (`torch.autograd.grad`, `.backward()`) inside a compiled region."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.values import Cond
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

AUTOGRAD_GRAD = "GB9186"  # using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`
TENSOR_BACKWARD = "GB0123"  # Unsupported Tensor.backward() call
SKIPPED = "GB0007"  # Attempted to call function marked as skipped: torch.autograd.backward
REQUIRES_GRAD_CALL = "GB0125"  # Unsupported Tensor.requires_grad_() call (an input or a parameter)
REQUIRES_GRAD_LEAK = "GB8985"  # requires_grad_() intermediate leaked as output
REQUIRES_GRAD_SET = "GB0206"  # setattr() on Tensor.requires_grad
REQUIRES_GRAD_FACTORY = "GB0225"  # Attempted to use tensor creation function with requires_grad=True
REQUIRES_GRAD_FIX = (
    "Set `requires_grad` outside the compiled function: freeze parameters once before compiling, and "
    "pass inputs that already require grad."
)
BACKWARD_FIX = (
    "Return the loss and call `.backward()` on it outside the compiled function (torch.compile still "
    "compiles the matching backward graph); for gradients inside the region use `torch.func.grad`."
)


class AutogradInRegion(Rule):
    code = "TCL307"
    name = "autograd-in-region"
    summary = (
        "Autograd run inside a compiled region (`torch.autograd.grad`, `.backward()`, `requires_grad` changes) "
        "breaks the graph"
    )
    gb_codes = (
        AUTOGRAD_GRAD,
        TENSOR_BACKWARD,
        SKIPPED,
        REQUIRES_GRAD_CALL,
        REQUIRES_GRAD_LEAK,
        REQUIRES_GRAD_SET,
        REQUIRES_GRAD_FACTORY,
    )
    fix = BACKWARD_FIX
    what = (
        "Flags `torch.autograd.grad(...)`, `torch.autograd.backward(...)` and `t.backward()` on tensors "
        "inside compiled regions, and changes of `requires_grad`: `t.requires_grad = ...` on any tensor, "
        "`t.requires_grad_(...)` on an input or a parameter (`self.lin.weight`), and `t.requires_grad_()` "
        "(True) on a tensor computed in the region, and tensors created with `requires_grad=True` "
        "(`torch.zeros(4, requires_grad=True)`, `torch.tensor(0.0, requires_grad=True)`)."
    )
    why = (
        "Dynamo traces the forward computation; running the backward pass from inside it is not "
        "something it puts in a graph. `t.backward()` is unsupported (GB0123), `torch.autograd.grad` "
        "breaks unless `torch._dynamo.config.trace_autograd_ops = True` (GB9186), and "
        "`torch.autograd.backward` is on the skip list (GB0007). The graph ends, autograd runs eagerly "
        "and a new graph starts after it. `torch.func.grad` traces without a break. Measured with torch "
        "2.13 and 2.14: setting `.requires_grad` breaks (GB0206); `requires_grad_()` on an input or a "
        "parameter breaks (GB0125), even with False; on a tensor computed in the region it breaks (GB8985) "
        "when gradients are enabled and the tensor is used, and under `torch.no_grad()` only when the region "
        "returns it or a view of it (the finding is then on the default path, else on the training path). A graph "
        "break while the tensor is in use makes it an output of the graph before the break, which breaks too "
        "(GB8985, under `torch.no_grad()` as well); inside `with torch.enable_grad():` so does a tensor computed "
        "from it (torchsde's `y.detach().requires_grad_(True)` before `misc.vjp(outputs=g, inputs=y)`); "
        "`requires_grad_(False)` there traces. A torch factory called with `requires_grad=True` "
        "(`torch.tensor`, `torch.zeros`, `torch.zeros_like`, ...) breaks on its line (GB0225)."
    )
    example = (
        "@torch.compile\ndef train_step(model, x, y):\n    loss = (model(x) - y).pow(2).mean()\n"
        "    loss.backward()\n    return loss\n"
    )
    fixed_example = (
        "@torch.compile\ndef compute_loss(model, x, y):\n    return (model(x) - y).pow(2).mean()\n\n"
        "def train_step(model, x, y):\n    loss = compute_loss(model, x, y)\n    loss.backward()\n    return loss\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    y = (x * x).sum()\n    (g,) = torch.autograd.grad(y, x)\n    return g\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        loss = x.pow(2).sum()\n        loss.backward()\n        return loss.detach()\n"),
        Example("from torch.autograd import backward\n\n@torch.compile\ndef f(x):\n    y = (x * 3).sum()\n    backward(y)\n    return y\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        self.lin.weight.requires_grad_(False)\n        return self.lin(x)\n"),
        Example("@torch.compile\ndef f(x):\n    y = x.detach()\n    y.requires_grad = True\n    return y\n"),
        Example("@torch.compile\ndef f(x):\n    loss = torch.tensor(0.0, requires_grad=True)\n    return loss + x.sum()\n"),
        Example("@torch.compile\ndef f(x):\n    with torch.enable_grad():\n        y = x.detach().requires_grad_(True)\n        (g,) = torch.autograd.grad((y * y).sum(), y)\n    return g\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    return torch.func.grad(lambda t: (t * t).sum())(x)\n"),
        Example("def train(model, x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n"),
        Example("@torch.compile\ndef f(x):\n    y = (x * 2).requires_grad_(False)\n    return y\n"),
        Example("@torch.compile\ndef f(x):\n    return x + torch.zeros(4, requires_grad=False)\n"),
        Example("class Runner(nn.Module):\n    def forward(self, x):\n        return self.backward(x)\n\n    def backward(self, x):\n        return x * 2\n"),
    )  # fmt: skip

    def _inputs(self, ctx: RuleContext) -> set[str]:
        """The function's parameters not rebound yet: tensors Dynamo got from outside the region."""
        return ctx.names(self, "inputs")

    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: RuleContext) -> None:
        params = node.params
        names = (p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))
        self._inputs(ctx).update(name for name in names if name != "self")

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                self._inputs(ctx).discard(target.target.value)
            elif (
                isinstance(target.target, cst.Attribute)
                and target.target.attr.value == "requires_grad"
                and ctx.facts.may_be_tensor(target.target.value)
            ):
                ctx.report(
                    self,
                    target.target,
                    f"Setting `{dotted_code(target.target)}` inside the compiled region breaks the graph "
                    f"({REQUIRES_GRAD_SET})",
                    gb_codes=(REQUIRES_GRAD_SET,),
                    fix=REQUIRES_GRAD_FIX,
                )

    def _from_outside(self, node: cst.BaseExpression, ctx: RuleContext) -> bool:
        """An input (`x`) or state reached through `self` (`self.lin.weight`)."""
        if isinstance(node, cst.Name):
            return node.value in self._inputs(ctx)
        while isinstance(node, cst.Attribute):
            node = node.value
        return isinstance(node, cst.Name) and node.value == "self"

    def _check_requires_grad(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "requires_grad_":
            return
        receiver = func.value
        cond = 0
        if self._from_outside(receiver, ctx):
            code, where = REQUIRES_GRAD_CALL, "on a tensor from outside the region (an input or a parameter)"
        elif node.args and dotted_code(node.args[0].value) == "False":
            return
        elif ctx.facts.may_be_tensor(receiver):
            code = REQUIRES_GRAD_LEAK
            live = _live_at_later_break(node, ctx)
            if _returned(node, ctx):
                where = "on a tensor computed in the region, which the region returns"
            elif live == "leaf" or (live == "derived" and _under_enable_grad(node, ctx)):
                where = "on a tensor computed in the region, still in use when a later call breaks the graph"
            else:
                where = "on a tensor computed in the region, used when gradients are on"
                cond = Cond.TRAINING  # under no_grad only the tensor itself (or a view of it) as an output breaks
        else:
            return
        ctx.report(
            self,
            node,
            f"`{dotted_code(func)}(...)` {where}: the graph breaks here ({code})",
            gb_codes=(code,),
            fix=REQUIRES_GRAD_FIX,
            cond=cond,
        )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        self._check_requires_grad(node, ctx)
        full = ctx.resolve(node.func)
        if full is not None and full.count(".") == 1 and full.startswith("torch.") and _requires_grad_true(node):
            ctx.report(
                self,
                node,
                f"`{dotted_code(node.func)}(..., requires_grad=True)` creates a leaf that requires grad inside the "
                f"compiled region: the graph breaks here ({REQUIRES_GRAD_FACTORY})",
                gb_codes=(REQUIRES_GRAD_FACTORY,),
                fix="Create the tensor outside the compiled function and pass it in, or create it without "
                "`requires_grad` (a tensor computed from inputs that require grad requires grad too).",
            )
            return
        if full == "torch.autograd.grad":
            ctx.report(
                self,
                node,
                f"`{dotted_code(node.func)}(...)` runs autograd inside the compiled region: the graph breaks "
                f"here ({AUTOGRAD_GRAD})",
                gb_codes=(AUTOGRAD_GRAD,),
                fix="Use `torch.func.grad` (or `torch.func.vjp`), which Dynamo traces, or set "
                "`torch._dynamo.config.trace_autograd_ops = True` (no break in torch 2.13).",
            )
        elif full == "torch.autograd.backward":
            ctx.report(
                self,
                node,
                f"`{dotted_code(node.func)}(...)` runs the backward pass inside the compiled region; Dynamo "
                f"skips it and the graph breaks here ({SKIPPED})",
                gb_codes=(SKIPPED,),
            )
        elif self._is_tensor_backward(node, ctx):
            receiver = node.func.value  # type: ignore[attr-defined]
            ctx.report(
                self,
                node,
                f"`{dotted_code(receiver)}.backward()` runs the backward pass inside the compiled region: "
                f"the graph breaks here ({TENSOR_BACKWARD})",
                gb_codes=(TENSOR_BACKWARD,),
            )

    @staticmethod
    def _is_tensor_backward(node: cst.Call, ctx: RuleContext) -> bool:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "backward":
            return False
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return False  # a module's own `backward` method
        return ctx.facts.may_be_tensor(receiver)


def _requires_grad_true(node: cst.Call) -> bool:
    return any(
        arg.keyword is not None and arg.keyword.value == "requires_grad" and dotted_code(arg.value) == "True"
        for arg in node.args
    )


# Tensor methods that return a view of their receiver: a view of the leaf as an output leaks it too.
VIEWS = frozenset(
    {"view", "reshape", "expand", "transpose", "permute", "squeeze", "unsqueeze", "flatten", "unflatten",
     "narrow", "select", "view_as", "expand_as", "t"}
)  # fmt: skip


def _returned(call: cst.Call, ctx: RuleContext) -> bool:
    """Does the region return the tensor `call` made (or a view of it), or hook it? Measured on 2.13 and 2.14:
    under `torch.no_grad()` only that breaks (GB8985); with gradients on, any use of the tensor does. A helper
    returning it hands it to its caller, which usually computes on (an attention fallback of zeros): that counts
    only in the region's own function."""
    function = ctx.function
    if function is None or (ctx.reach is not None and ctx.reach.via):
        return False
    names: set[str] = set()
    for node in iter_nodes(function.node.body):
        if isinstance(node, cst.Assign) and _leaf_of(node.value) is call:
            names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
    for node in iter_nodes(function.node.body):
        if isinstance(node, cst.Return) and node.value is not None:
            values = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
            for value in values:
                leaf = _leaf_of(value)
                if leaf is call or (isinstance(leaf, cst.Name) and leaf.value in names):
                    return True
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            hooked = node.func.value
            if node.func.attr.value == "register_hook" and isinstance(hooked, cst.Name) and hooked.value in names:
                return True
    return False


def _live_at_later_break(call: cst.Call, ctx: RuleContext) -> str | None:
    """Measured on 2.13 and 2.14: a graph break makes every tensor still in use an output of the graph before it,
    so the leaf `call` made leaks (GB8985 at `call`) when it is used at or after a later statement that breaks;
    with gradients on, so does a tensor computed from it. "leaf" when the leaf itself is used then, "derived"
    when only tensors computed from it (not through `.detach()`) are; None without such a break. Breaks seen:
    autograd calls and calls of user functions that break (`misc.vjp(outputs=g, inputs=y)` in torchsde)."""
    function = ctx.function
    if function is None:
        return None
    statements = list(_simple_statements(function.node))
    start = next((i for i, s in enumerate(statements) if any(n is call for n in iter_nodes(s))), None)
    if start is None:
        return None
    leaf = _assigned_names(statements[start])
    derived: set[str] = set()
    for index in range(start + 1, len(statements)):
        statement = statements[index]
        if _breaks(statement, ctx):
            used = {n.value for later in statements[index:] for n in iter_nodes(later) if isinstance(n, cst.Name)}
            return "leaf" if used & leaf else "derived" if used & derived else None
        if _reads_any(statement, leaf | derived):
            derived |= _assigned_names(statement)
    return None


def _simple_statements(function: cst.FunctionDef) -> Iterator[cst.SimpleStatementLine]:
    """The function's own statement lines in source order (not those of nested functions or classes)."""
    for node in iter_nodes(function.body, prune=(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        if isinstance(node, cst.SimpleStatementLine):
            yield node


def _assigned_names(statement: cst.SimpleStatementLine) -> set[str]:
    names: set[str] = set()
    for small in statement.body:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                names.update(n.value for n in iter_nodes(target.target) if isinstance(n, cst.Name))
    return names


def _reads_any(statement: cst.SimpleStatementLine, names: set[str]) -> bool:
    """Does an assignment compute from one of `names` other than through `.detach()`?"""
    for small in statement.body:
        if isinstance(small, cst.Assign):
            detached = {
                id(n.func.value)
                for n in iter_nodes(small.value)
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "detach"
            }
            if any(
                isinstance(n, cst.Name) and n.value in names and id(n) not in detached for n in iter_nodes(small.value)
            ):
                return True
    return False


def _breaks(statement: cst.SimpleStatementLine, ctx: RuleContext) -> bool:
    for node in iter_nodes(statement):
        if isinstance(node, cst.Call) and (
            ctx.resolve(node.func) in AUTOGRAD_CALLS or ctx.breaking_target(node) is not None
        ):
            return True
    return False


AUTOGRAD_CALLS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})


def _under_enable_grad(call: cst.Call, ctx: RuleContext) -> bool:
    """Inside `with torch.enable_grad():`, where gradients are on whatever the caller's mode."""
    function = ctx.function
    if function is None:
        return False
    return any(
        isinstance(node, cst.With)
        and any(isinstance(i.item, cst.Call) and ctx.resolve(i.item.func) == "torch.enable_grad" for i in node.items)
        and any(n is call for n in iter_nodes(node.body))
        for node in iter_nodes(function.node.body)
    )


def _leaf_of(value: cst.BaseExpression) -> cst.BaseExpression:
    """`y[:2].view(4)` -> `y`: through subscripts and view methods to the tensor they view."""
    while True:
        if isinstance(value, cst.Subscript):
            value = value.value
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in VIEWS:
            value = value.func.value
        else:
            return value


RULE = AutogradInRegion()
