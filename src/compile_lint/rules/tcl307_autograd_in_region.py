"""TCL307: running autograd (`torch.autograd.grad`, `.backward()`) inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

AUTOGRAD_GRAD = "GB9186"  # using `torch.autograd.grad` with `torch._dynamo.config.trace_autograd_ops=False`
TENSOR_BACKWARD = "GB0123"  # Unsupported Tensor.backward() call
SKIPPED = "GB0007"  # Attempted to call function marked as skipped: torch.autograd.backward
BACKWARD_FIX = (
    "Return the loss and call `.backward()` on it outside the compiled function (torch.compile still "
    "compiles the matching backward graph); for gradients inside the region use `torch.func.grad`."
)


class AutogradInRegion(Rule):
    code = "TCL307"
    name = "autograd-in-region"
    summary = "Autograd run inside a compiled region (`torch.autograd.grad`, `.backward()`) breaks the graph"
    gb_codes = (AUTOGRAD_GRAD, TENSOR_BACKWARD, SKIPPED)
    fix = BACKWARD_FIX
    what = (
        "Flags `torch.autograd.grad(...)`, `torch.autograd.backward(...)` and `t.backward()` on tensors "
        "inside compiled regions."
    )
    why = (
        "Dynamo traces the forward computation; running the backward pass from inside it is not "
        "something it puts in a graph. `t.backward()` is unsupported (GB0123), `torch.autograd.grad` "
        "breaks unless `torch._dynamo.config.trace_autograd_ops = True` (GB9186), and "
        "`torch.autograd.backward` is on the skip list (GB0007). The graph ends, autograd runs eagerly "
        "and a new graph starts after it. `torch.func.grad` traces without a break."
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
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    return torch.func.grad(lambda t: (t * t).sum())(x)\n"),
        Example("def train(model, x):\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n"),
        Example("class Runner(nn.Module):\n    def forward(self, x):\n        return self.backward(x)\n\n    def backward(self, x):\n        return x * 2\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        full = ctx.resolve(node.func)
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


RULE = AutogradInRegion()
