"""TCL103: a branch whose condition is a tensor (data-dependent control flow)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from compile_lint.analysis.flow import compares_config_strings, half_check
from compile_lint.analysis.names import dotted
from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.tensors import (
    Kind,
    TensorFacts,
    coarse_kind,
    join_kinds,
    param_names,
    short_code,
    without_item,
)
from compile_lint.analysis.values import EVIDENT_TENSORS, NONE, PYTHON_NUMBERS, TENSOR_LIKE, Cond
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import CAPTURE_SCALAR, Example, Rule
from compile_lint.rules.tcl106_tensor_to_bool import python_bool_call


def traced_part(test: cst.BaseExpression, facts: TensorFacts) -> cst.BaseExpression:
    """The part of a condition Dynamo evaluates: `and`/`or` stop at a left operand whose truth is constant
    under Dynamo (`not is_tracing(x) and t.all()` never reads `t.all()`; `is_compiling() or t.any()` neither)."""
    if isinstance(test, cst.BooleanOperation):
        truth = facts.truth(test.left)
        if truth is not None:
            stops = truth != isinstance(test.operator, cst.And)
            return traced_part(test.left, facts) if stops else traced_part(test.right, facts)
    return test


def _operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands a condition jumps on, in evaluation order, through `not`, `and` and `or`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _operands(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return [*_operands(test.left), *_operands(test.right)]
    return [test]


def jump_anchor(test: cst.BaseExpression, start: cst.CSTNode, facts: TensorFacts) -> cst.CSTNode:
    """The node whose first line is the line Dynamo blames for the jump on the first tensor operand of `test`.

    CPython 3.11 gives the conditional jump after an operand the line of that operand when it is a comparison,
    else the line in force before it: the last comparison's in the same condition, or else `start`'s (the `if`,
    `elif` or `while` statement, or the conditional expression). Measured: fixtures/condition_lines.py."""
    current = start
    for operand in _operands(test):
        if isinstance(operand, cst.Comparison):
            current = operand
        if facts.kind(operand) in (Kind.TENSOR, Kind.SCALAR):
            break
    return current


TRUTH_BUILTINS = frozenset({"all", "any"})


def tested_tensor_items(node: cst.Call, ctx: RuleContext) -> bool:
    """`all(x < y for ...)`, `any(t > 0)`: the builtin takes the truth of each item, and the items are tensors.
    A list comprehension is left out: Dynamo blames that break on its own frame, not this line (measured)."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value not in TRUTH_BUILTINS or func.value in ctx.imports.aliases:
        return False
    if func.value in ctx.facts.env or len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
        return False
    argument = node.args[0].value
    if isinstance(argument, cst.ListComp):
        return False
    items = ctx.facts.value(argument).items()  # a generator expression binds its loop names here
    return coarse_kind(items) is Kind.TENSOR and items.any_of(EVIDENT_TENSORS)


def condition_kind(test: cst.BaseExpression, facts: TensorFacts) -> Kind:
    """Kind of the value Python takes the truth of; `not` and `and`/`or` pass it through."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return condition_kind(test.expression, facts)
    if isinstance(test, cst.BooleanOperation):
        return join_kinds(condition_kind(test.left, facts), condition_kind(test.right, facts))
    return facts.kind(test)


def without_not(test: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    return test


def as_tensor_condition(test: cst.BaseExpression) -> str:
    """The test written as a tensor expression for `torch.where`: Python's `not`/`and`/`or` become tensor ops."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return f"torch.logical_not({as_tensor_condition(test.expression)})"
    if isinstance(test, cst.BooleanOperation):
        op = "and" if isinstance(test.operator, cst.And) else "or"
        return f"torch.logical_{op}({as_tensor_condition(test.left)}, {as_tensor_condition(test.right)})"
    return short_code(without_item(test), limit=60)


def has_evidence(test: cst.BaseExpression, facts: TensorFacts) -> bool:
    """Is some tensor operand of the test a tensor for a reason beyond being an un-annotated parameter?

    `if start > last:` in a helper taking plain numbers must stay silent; `if h.sum() > 0:` must not.
    """
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return has_evidence(test.expression, facts)
    if isinstance(test, cst.BooleanOperation):
        return has_evidence(test.left, facts) or has_evidence(test.right, facts)
    return facts.kind(test) is Kind.TENSOR and facts.has_evidence(test)


def _rebinding_blocks(body: cst.CSTNode, name: str) -> Iterator[tuple[cst.BaseExpression, tuple[cst.CSTNode, ...]]]:
    """Each value assigned to `name` in a function body, with the compound statements around it (nested
    functions and classes left out)."""
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(body, ())]
    while stack:
        node, around = stack.pop()
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                yield node.value, around
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and around:
            continue
        inner = (*around, node) if isinstance(node, (cst.If, cst.For, cst.While, cst.Try, cst.With)) else around
        stack.extend((child, inner) for child in node.children)


def _tensor_only_in_branch(operand: cst.BaseExpression, at: cst.CSTNode, ctx: RuleContext) -> bool:
    """`flag = False`, then `if len(self.jumps): flag = t0 < jumps[0] < t1`, then `if flag:`: a Python bool
    unless an `if` on something other than tensor data was taken, which the static pass cannot tell (an input,
    a configuration). Measured on the corpus (issue 19): such names were the bool on every run that reached
    them. When that `if` is one the path conditions name (`if self.training:`), the finding stays, labelled
    with it. A tensor assigned in a loop stays flagged (the next iteration branches on it), and so does one
    assigned outside any `if` and replaced by a Python value only in some (`accept = err <= 1`, then
    `if dt > dt_max: accept = False`)."""
    value = ctx.facts.value(operand)
    if not isinstance(operand, cst.Name) or not value.any_of(PYTHON_NUMBERS) or ctx.function is None:
        return False
    if value.cond_of(TENSOR_LIKE):  # the `if` is one the path conditions know (training, a config flag...)
        return False
    assigned = _rebinding_blocks(ctx.function.node.body, operand.value)
    computed = [around for value, around in assigned if not _is_literal(value)]
    return bool(computed) and all(
        around
        and all(isinstance(block, cst.If) for block in around)
        and not any(_encloses(block, at) for block in around)
        for around in computed
    )


def _is_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.Name) and node.value in ("True", "False", "None")
    )


def _encloses(block: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(inner is node for inner in iter_nodes(block))


def _claim_operators(test: cst.BaseExpression, ctx: RuleContext) -> None:
    """Mark the `not`/`and`/`or` nodes of a flagged test so no other rule reports them again."""
    while True:
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            ctx.reported.add(id(test))
            test = test.expression
        elif isinstance(test, cst.BooleanOperation):
            ctx.reported.add(id(test))
            _claim_operators(test.right, ctx)
            test = test.left
        else:
            return


class TensorCondition(Rule):
    code = "TCL103"
    name = "tensor-condition"
    summary = "Branch on a tensor value (`if`/`while`/ternary/`and`/`or`/comprehension filter/`assert not`)"
    gb_codes = ("GB0170",)
    fix = (
        "Compute both sides and select with `torch.where(cond, a, b)`, or use "
        "`torch.cond(pred, true_fn, false_fn, operands)` when the branches are expensive."
    )
    what = (
        "Flags `if`, `while`, conditional expressions, `and`/`or` operands and comprehension filters "
        "whose condition is a tensor, such as `if x.sum() > 0:` or `if mask.any():`. With "
        "`capture_scalar_outputs=True` it also flags branches on values read with `.item()`. A name that is a "
        "Python bool unless an `if` on something other than tensor data was taken (`on_jump = False`, then "
        "`if len(self.jumps): on_jump = t < jumps[0]`) is not flagged: which inputs are given decides, and on "
        "the corpus (issue 19) it was the bool on every run; such a branch breaks when that `if` ran."
    )
    why = (
        "Which way Python goes depends on tensor data that does not exist while Dynamo traces, so it "
        "ends the graph before the condition, runs it eagerly and resumes in a new graph: GB0170."
    )
    example = "@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        y = x + 1\n    else:\n        y = x - 1\n    return y\n"
    fixed_example = "@torch.compile\ndef f(x):\n    y = torch.where(x.sum() > 0, x + 1, x - 1)\n    return y\n"
    invalid = (
        Example("@torch.compile\ndef f(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"),
        Example("@torch.compile\ndef f(x):\n    while (x > 0).all():\n        x = x - 1\n    return x\n"),
        Example("@torch.compile\ndef f(x):\n    return x + 1 if x.sum() > 0 else x - 1\n"),
        Example("@torch.compile\ndef f(x):\n    assert (x > 0).all(), f'bad input {x.shape}'\n    return x\n"),
        Example("@torch.compile\ndef f(x, u):\n    z = (x.sum() > 0) and (u.sum() > 0)\n    return z\n"),
        Example("@torch.compile\ndef f(x):\n    assert not (x > 100).any()\n    return x\n"),
        Example("@torch.compile\ndef f(x):\n    if any(x.sum(0) > 0):\n        return x\n    return -x\n"),
        Example(
            "@torch.compile\ndef f(x):\n    if x.sum().item() > 0:\n        return x\n    return -x\n",
            flags=(CAPTURE_SCALAR,),
        ),
    )
    valid = (
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        return self._pad(x, 2, 3)\n\n    def _pad(self, x, start, last):\n        if start > last:\n            return x\n        return -x\n"
        ),
        Example("@torch.compile\ndef f(x):\n    if x.shape[0] > 4:\n        return x\n    return -x\n"),
        Example(
            "@torch.compile\ndef f(x):\n    if x.dtype == torch.float32 and x.dim() == 2:\n        return x\n    return -x\n"
        ),
        Example("@torch.compile\ndef f(x, mask=None):\n    if mask is not None:\n        x = x * mask\n    return x\n"),
        Example("@torch.compile\ndef f(x):\n    assert (x > 0).all()\n    return x\n"),
        Example(
            "@torch.compile\ndef f(x, jumps):\n    on_jump = False\n    if len(jumps):\n        on_jump = x.sum() > jumps[0]\n    if on_jump:\n        return -x\n    return x\n"
        ),
        Example("@torch.compile\ndef f(x):\n    return torch.where(x.sum() > 0, x + 1, x - 1)\n"),
        Example(
            "@torch.compile\ndef f(x):\n    if all(size > 0 for size in x.shape):\n        return x\n    return -x\n"
        ),
        Example("@torch.compile\ndef f(x):\n    if x.sum().item() > 0:\n        return x\n    return -x\n"),
    )

    def _check(
        self,
        test: cst.BaseExpression,
        node: cst.CSTNode,
        construct: str,
        ctx: RuleContext,
        reporter: str = "",
        start: cst.CSTNode | None = None,
    ) -> None:
        """`start`: the statement or expression whose line CPython gives the jumps of `test` (see jump_anchor)."""
        test = traced_part(test, ctx.facts)
        kind = condition_kind(test, ctx.facts)
        if python_bool_call(without_not(test), ctx) is not None:
            return  # `if torch.equal(a, b):` breaks at the call, before any branch (TCL106)
        tensors = [o for o in _operands(test) if ctx.facts.kind(o) is Kind.TENSOR]
        if tensors and start is not None and all(_tensor_only_in_branch(o, start, ctx) for o in tensors):
            return
        if kind is Kind.TENSOR and has_evidence(test, ctx.facts):
            condition = "always"
            message = f"{CONSTRUCTS[construct]} on the tensor value `{short_code(test)}`: the graph breaks here"
        elif kind is Kind.SCALAR:  # an `.item()` value: breaks at `.item()` unless it is captured
            condition = f"only:{CAPTURE_SCALAR}"
            message = f"{CONSTRUCTS[construct]} on `{short_code(test)}`, a value read from a tensor ({CAPTURE_SCALAR})"
        else:
            return
        fix = FIXES[construct].format(cond=as_tensor_condition(test))
        if reporter:
            fix = REPORT_FIX.format(test=short_code(test, limit=60), call=reporter)
        anchor = jump_anchor(test, start, ctx.facts) if start is not None else None
        ctx.report(
            self, node, message, condition=condition, fix=fix, cond=_low_precision_first(test, ctx), anchor=anchor
        )
        _claim_operators(test, ctx)

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        self._check(node.test, node.test, "if", ctx, _only_reports(node), start=node)

    def visit_While(self, node: cst.While, ctx: RuleContext) -> None:
        self._check(node.test, node.test, "while", ctx, start=node)

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        self._check(node.test, node.test, "ternary", ctx, start=node.body)

    def visit_CompIf(self, node: cst.CompIf, ctx: RuleContext) -> None:
        self._check(node.test, node.test, "filter", ctx)

    def visit_Assert(self, node: cst.Assert, ctx: RuleContext) -> None:
        # `assert t` is traced as a runtime assert, but `assert not t` jumps on the tensor (measured: GB0170).
        # So does `assert t, message` when the message is not a constant (it is built only on failure).
        test = node.test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self._check(test.expression, test, "assert", ctx)
        elif node.msg is not None and not isinstance(node.msg, cst.SimpleString):
            self._check(test, test, "assert-message", ctx)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if id(node) in ctx.reported or not tested_tensor_items(node, ctx):
            return
        builtin = node.func.value  # type: ignore[attr-defined]
        ctx.report(
            self,
            node,
            f"`{short_code(node)}` takes the truth of each tensor item: the graph breaks here",
            fix=f"Reduce with tensor ops instead: `torch.stack([...]).{builtin}()` (one tensor, no Python branch), "
            "or check it outside the compiled function.",
        )

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx: RuleContext) -> None:
        if id(node) in ctx.reported:
            return
        self._check(node.left, node, "and" if isinstance(node.operator, cst.And) else "or", ctx)


def _low_precision_first(test: cst.BaseExpression, ctx: RuleContext) -> int:
    """What an `and` checks before it reads the tensor: `x.dtype == torch.float16 and ...` reads it only in
    half precision, not with the default float32 weights; `audio is not None and ...` only when the optional
    input is passed; `self.rope_type != "default" and ...` only in a mode the config picks."""
    cond = 0
    while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        if _is_half_check(test.left, ctx):
            cond |= Cond.HALF_PRECISION
        elif _passed_optional(test.left, ctx):
            cond |= Cond.OPTIONAL_INPUT
        elif _config_mode(test.left, ctx):
            cond |= Cond.CONFIG
        test = test.left
    return cond


def _config_mode(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`self.rope_type != "default"`, `self.config.rope_parameters["rope_type"] != "default"`: a mode string of
    the config or the module, as an `if` on it is."""
    if not isinstance(node, cst.Comparison) or ctx.function is None:
        return False
    params = frozenset(param.name.value for param in param_names(ctx.function.node.params))
    if compares_config_strings(node, ctx.facts, params):
        return True
    operands = [node.left, *(target.comparator for target in node.comparisons)]
    strings = [o for o in operands if isinstance(o, (cst.SimpleString, cst.ConcatenatedString))]
    return len(operands) == 2 and len(strings) == 1 and all(_reads_config(o) for o in operands if o not in strings)


def _reads_config(node: cst.BaseExpression) -> bool:
    """An attribute or item read off `self.config` (or any `config` object)."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and node.attr.value == "config":
            return True
        node = node.value
    return isinstance(node, cst.Name) and node.value == "config"


def _passed_optional(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`name is not None` for a name that is None by default (an optional input)."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return False
    target = node.comparisons[0]
    none = isinstance(target.comparator, cst.Name) and target.comparator.value == "None"
    subject = node.left
    return (
        none
        and isinstance(target.operator, cst.IsNot)
        and isinstance(subject, cst.Name)
        and NONE in ctx.facts.value(subject)
    )


def _is_half_check(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.And):
        return _is_half_check(node.left, ctx) or _is_half_check(node.right, ctx)
    return half_check(node, ctx.resolve) is True


REPORTERS = frozenset({"print", "warnings.warn"})
REPORTER_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
REPORT_FIX = (
    "The branch only reports (`{call}`): `torch.where` cannot select a side effect. Run the check only in eager "
    "mode, `if not torch.compiler.is_compiling() and {test}:` (`and` stops before the tensor is read under "
    "compile), or move it out of the compiled function."
)


def _only_reports(branch: cst.If) -> str:
    """`if t.isnan().any(): print(...)` (no else): the first reporting call's name, or "" when the branch
    does anything else."""
    if branch.orelse is not None or not isinstance(branch.body, cst.IndentedBlock):
        return ""
    names = []
    for statement in branch.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return ""
        for small in statement.body:
            call = small.value if isinstance(small, cst.Expr) else None
            name = dotted(call.func) if isinstance(call, cst.Call) else None
            if name is None or not (name in REPORTERS or name.rsplit(".", 1)[-1] in REPORTER_METHODS):
                return ""
            names.append(name)
    return names[0] if names else ""


CONSTRUCTS = {
    "if": "`if`",
    "while": "`while`",
    "ternary": "Conditional expression",
    "filter": "Comprehension filter",
    "assert": "`assert not`",
    "assert-message": "`assert` with a computed message",
    "and": "`and`",
    "or": "`or`",
}
FIXES = {
    "if": "Compute both branches and select: `y = torch.where({cond}, a, b)`; or "
    "`torch.cond({cond}, true_fn, false_fn, (x,))` when the branches are expensive or run different code.",
    "while": "A loop whose exit depends on tensor data cannot be traced: run a fixed number of steps and freeze "
    "finished values with `x = torch.where({cond}, step(x), x)`, or run the loop outside the compiled function.",
    "ternary": "Select without branching: `torch.where({cond}, a, b)` (both sides are computed).",
    "filter": "Keep every item and zero the unwanted ones with `torch.where({cond}, item, 0)`, or stack them and "
    "use a mask (a data-dependent size: see TCL402).",
    "assert": "Assert a tensor instead, which Dynamo traces: `assert torch.logical_not({cond}).all()`.",
    "assert-message": 'Give the assert a constant message (Dynamo traces `assert {cond}, "..."` as a runtime '
    'check), or use `torch._assert({cond}, "...")`.',
    "and": "Combine conditions as tensors: `torch.logical_and(a, b)` (or `a & b`) instead of `and`.",
    "or": "Combine conditions as tensors: `torch.logical_or(a, b)` (or `a | b`) instead of `or`.",
}


RULE = TensorCondition()
