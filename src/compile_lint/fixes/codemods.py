"""libcst codemods, keyed by the rule code they fix. Each one rewrites only its finding's own
statement or expression; everything else in the file stays byte-identical.

A codemod gets a `Site` (the node a finding points at, its parents, and the tensor facts the
rules saw there) and returns an `Edit`, or None when the pattern is not one it can rewrite
mechanically. Safe edits keep behaviour; unsafe ones change evaluation (see each docstring).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import libcst as cst

from compile_lint.analysis.names import dotted
from compile_lint.analysis.tensors import Kind, TensorFacts
from compile_lint.finding import Finding
from compile_lint.fixes.proofs import (
    BOOL,
    FLOATING_DTYPES,
    Prover,
    const_dtype,
    exact_in_every_dtype,
    may_alias,
    mutated_in,
    proven_tensor,
)

Safety = Literal["safe", "unsafe"]
Replacement = cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.BaseStatement]

# No-argument methods whose result has the receiver's dtype and device (unlike `sum`/`prod`,
# which widen integers to int64): `x / x.abs().max().detach()` keeps x's dtype exactly.
SAME_DTYPE_METHODS = frozenset({"abs", "max", "min", "amax", "amin", "mean", "median", "std", "var", "norm"})
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


@dataclass
class Site:
    """Where a finding points: the node, its parents, and the tensor facts in force there."""

    finding: Finding
    node: cst.CSTNode
    parents: Mapping[cst.CSTNode, cst.CSTNode]
    facts: TensorFacts

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)


@dataclass
class Edit:
    finding: Finding
    safety: Safety
    title: str  # what the rewrite does, for the report
    changes: list[tuple[cst.CSTNode, Replacement]]  # original node -> its replacement
    needs_torch: bool = True
    guards: list[cst.If] = field(default_factory=list)  # new `if not is_compiling()` blocks


Codemod = Callable[[Site], "Edit | None"]


# -- small builders ------------------------------------------------------------------------------
def _attr(*names: str) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(names[0])
    for name in names[1:]:
        expr = cst.Attribute(expr, cst.Name(name))
    return expr


def _call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func, [cst.Arg(_unparen(a)) for a in args])


def _unparen(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Drop redundant parentheses around a call argument (tuples and generators need theirs)."""
    if expr.lpar and not isinstance(expr, (cst.Tuple, cst.GeneratorExp, cst.Yield)):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def _where(cond: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression) -> cst.Call:
    return _call(_attr("torch", "where"), cond, a, b)


def comments_in(node: cst.CSTNode) -> list[cst.Comment]:
    found: list[cst.Comment] = []

    class _Collect(cst.CSTVisitor):
        def visit_Comment(self, comment: cst.Comment) -> None:
            found.append(comment)

    node.visit(_Collect())
    return found


def names_in(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    node.visit(_Collect())
    return found


def _small_statements(block: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The statements of a block, if each is a simple one on its own line (or all on the `if` line)."""
    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    assert isinstance(block, cst.IndentedBlock)
    statements: list[cst.BaseSmallStatement] = []
    for line in block.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        statements.append(line.body[0])
    return statements


def _line(statement: cst.BaseSmallStatement, template: cst.If) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([statement], leading_lines=template.leading_lines)


def _carry_header_comment(line: cst.SimpleStatementLine, if_node: cst.If) -> cst.SimpleStatementLine:
    """Keep the comment of the `if ...:` line (e.g. a noqa) on the line that replaces it."""
    header = if_node.body.header if isinstance(if_node.body, cst.IndentedBlock) else None
    if header is None or header.comment is None:
        return line
    return line.with_changes(trailing_whitespace=header)


# -- TCL103: data-dependent branches -> torch.where ----------------------------------------------
def where_condition(test: cst.BaseExpression, prover: Prover) -> cst.BaseExpression | None:
    """`test` as a 0-d bool tensor for torch.where, or None unless it provably is a 0-d tensor.

    `not`/`and`/`or` become logical_not/_and/_or (every operand a proven tensor: on a Python bool
    they raise); a non-bool tensor `t` becomes `t.bool()`, the truth value `if t:` takes. Only a
    0-d condition leaves the branches' shape alone (`if` also takes shape-(1, 1) tensors). Scalar
    reads (`t.item() > 0`, `bool(t)`) are dropped where that keeps the comparison exact.
    """
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = where_condition(test.expression, prover)
        return None if inner is None else _call(_attr("torch", "logical_not"), inner)
    if isinstance(test, cst.BooleanOperation):
        left, right = where_condition(test.left, prover), where_condition(test.right, prover)
        if left is None or right is None:
            return None
        name = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return _call(_attr("torch", name), left, right)
    read = scalar_read(test)
    if read is not None:
        return where_condition(read, prover)
    tensor_test = _comparison_without_read(test)
    if tensor_test is None:
        return None
    signature = prover.signature(tensor_test, reductions=True)
    if signature is None or signature.shape:
        return None
    if signature.dtype == BOOL:
        return tensor_test
    if not (isinstance(tensor_test, (cst.Name, cst.Attribute, cst.Call)) or tensor_test.lpar):
        tensor_test = tensor_test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(cst.Attribute(tensor_test, cst.Name("bool")))


def _comparison_without_read(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """`t.item() > 0` -> `t > 0` when the other side is a literal every dtype holds exactly (else
    None: `float(t) > 0.1` compares in float64, `t > 0.1` in t's dtype); other tests unchanged."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return test
    target = test.comparisons[0]
    left, right = scalar_read(test.left), scalar_read(target.comparator)
    if left is not None and right is None and exact_in_every_dtype(target.comparator):
        return test.with_changes(left=left)
    if right is not None and left is None and exact_in_every_dtype(test.left):
        return test.with_changes(comparisons=[target.with_changes(comparator=right)])
    return test if left is None and right is None else None


def _assignments(block: cst.BaseSuite) -> list[tuple[str, cst.BaseExpression]] | None:
    """`[(name, value)]` if the block only assigns single names, each once."""
    statements = _small_statements(block)
    if not statements:
        return None
    pairs: list[tuple[str, cst.BaseExpression]] = []
    for statement in statements:
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
            return None
        target = statement.targets[0].target
        if not isinstance(target, cst.Name):
            return None
        pairs.append((target.value, statement.value))
    names = [name for name, _ in pairs]
    return pairs if len(set(names)) == len(names) else None


def _single_return(block: cst.BaseSuite) -> cst.BaseExpression | None:
    statements = _small_statements(block)
    if statements and len(statements) == 1 and isinstance(statements[0], cst.Return):
        return statements[0].value
    return None


def _only_header_comment(if_node: cst.If) -> bool:
    """A rewrite of `if_node` may drop no comment except the `if` line's own (which it carries)."""
    header = if_node.body.header if isinstance(if_node.body, cst.IndentedBlock) else None
    allowed = header.comment if header else None
    return all(comment is allowed for comment in comments_in(if_node.with_changes(leading_lines=())))


def same_tensor_kind(prover: Prover, *exprs: cst.BaseExpression) -> bool:
    """Every expr is a side-effect-free tensor expression of one shape, dtype and failure set."""
    signatures = {prover.signature(expr) for expr in exprs}
    return None not in signatures and len(signatures) == 1


def prover_at(site: Site) -> Prover:
    return Prover(site.facts, site.facts.imports)


UNSAFE_WHERE = "evaluates both branches"


def where_for_if(site: Site) -> Edit | None:
    """`if c: y = a else: y = b` -> `y = torch.where(c, a, b)` (also `if c: y = a` alone, keeping y
    otherwise), and `if c: return a else: return b` or `if c: return a` + `return b` ->
    `return torch.where(c, a, b)`. Offered only when `c` is a 0-d tensor and both sides pure tensor
    expressions of one shape and dtype (see proofs.py). Unsafe still: both branches are computed
    (cost), and a non-finite value in the branch not taken can reach the gradient."""
    if_node = site.parent(site.node)
    if not isinstance(if_node, cst.If) or if_node.test is not site.node:
        return None
    return _where_for_if(site, if_node, if_node.test)


def _where_for_if(site: Site, if_node: cst.If, test: cst.BaseExpression) -> Edit | None:
    if not _only_header_comment(if_node):
        return None
    if not isinstance(site.parent(if_node), (cst.IndentedBlock, cst.Module)):
        return None  # an `elif`: its parent is the `if` before it
    prover = prover_at(site)
    cond = where_condition(test, prover)
    if cond is None:
        return None
    return _where_assign(site, prover, if_node, cond) or _where_return(site, prover, if_node, cond)


def scalar_read(node: cst.CSTNode) -> cst.BaseExpression | None:
    """`t` for `t.item()`, `float(t)` or `bool(t)`: reads that keep the value (unlike `int(t)`,
    which truncates), so a condition on them means the same on `t` itself."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
        return func.value
    if isinstance(func, cst.Name) and func.value in ("float", "bool") and len(node.args) == 1:
        arg = node.args[0]
        return arg.value if arg.keyword is None and not arg.star else None
    return None


def _where_assign(site: Site, prover: Prover, if_node: cst.If, cond: cst.BaseExpression) -> Edit | None:
    taken = _assignments(if_node.body)
    if taken is None:
        return None
    if isinstance(if_node.orelse, cst.Else):
        other = _assignments(if_node.orelse.body)
        if other is None or [n for n, _ in other] != [n for n, _ in taken]:
            return None
        pairs = [(name, a, b) for (name, a), (_, b) in zip(taken, other, strict=True)]
    elif if_node.orelse is None:  # `if c: y = f(y)`: y keeps its value otherwise
        pairs = [(name, a, cst.Name(name)) for name, a in taken]
    else:
        return None  # elif chains
    names = [name for name, _, _ in pairs]
    if len(pairs) > 1 and names_in(if_node.test) & set(names):
        return None  # the condition would change between the assignments
    if any(names_in(a) & set(names[:i]) or names_in(b) & set(names[:i]) for i, (_, a, b) in enumerate(pairs)):
        return None  # a later value reads an earlier one: the facts at the `if` do not describe it
    if not all(same_tensor_kind(prover, a, b) for _, a, b in pairs):
        return None
    if _identity_matters(site, if_node, [*names, *(e for _, a, b in pairs for e in (a, b))], escapes=False):
        return None
    lines = [
        cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], _where(cond, a, b))])
        for name, a, b in pairs
    ]
    lines[0] = _carry_header_comment(lines[0].with_changes(leading_lines=if_node.leading_lines), if_node)
    replacement: Replacement = cst.FlattenSentinel(lines)
    return Edit(
        site.finding,
        "unsafe",
        f"`{', '.join(names)}` selected with torch.where ({UNSAFE_WHERE})",
        [(if_node, replacement)],
    )


def _identity_matters(site: Site, node: cst.CSTNode, exprs: Sequence[str | cst.BaseExpression], escapes: bool) -> bool:
    """Could replacing the selected value by a new tensor be told apart? The original may hold the very
    object (`y = x`) or a view of it (`x.detach()`, `x.float()` of a float32 x) where torch.where makes
    a new tensor: then an in-place change anywhere in the function, or handing the value to the caller
    (`escapes`), would see the difference. Otherwise: are the names involved changed in place?"""
    function = _enclosing_function(site, node)
    if function is None:
        return True
    mutated = mutated_in(function)
    values = [e for e in exprs if not isinstance(e, str)]
    if any(may_alias(e) for e in values) and (escapes or mutated):
        return True
    keys = {name for e in exprs for name in ({e} if isinstance(e, str) else names_in(e))}
    return bool(keys & mutated)


def _where_return(site: Site, prover: Prover, if_node: cst.If, cond: cst.BaseExpression) -> Edit | None:
    taken = _single_return(if_node.body)
    if taken is None:
        return None
    changes: list[tuple[cst.CSTNode, Replacement]] = []
    if isinstance(if_node.orelse, cst.Else):
        other = _single_return(if_node.orelse.body)
    elif if_node.orelse is None:  # `if c: return a` then `return b`
        following = _next_statement(site, if_node)
        other = _single_return_line(following)
        if following is not None and other is not None:
            changes.append((following, cst.RemovalSentinel.REMOVE))
    else:
        return None
    if other is None or not same_tensor_kind(prover, taken, other):
        return None
    if _identity_matters(site, if_node, [taken, other], escapes=True):
        return None
    line = _carry_header_comment(_line(cst.Return(_where(cond, taken, other)), if_node), if_node)
    changes.insert(0, (if_node, line))
    return Edit(site.finding, "unsafe", f"return selected with torch.where ({UNSAFE_WHERE})", changes)


def _next_statement(site: Site, statement: cst.BaseStatement) -> cst.BaseStatement | None:
    block = site.parent(statement)
    body: Sequence[cst.BaseStatement] = getattr(block, "body", ())
    for index, sibling in enumerate(body[:-1]):
        if sibling is statement:
            return body[index + 1]
    return None


def _single_return_line(statement: cst.BaseStatement | None) -> cst.BaseExpression | None:
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1 or comments_in(statement):
        return None
    only = statement.body[0]
    return only.value if isinstance(only, cst.Return) else None


def where_for_ternary(site: Site) -> Edit | None:
    """`a if c else b` -> `torch.where(c, a, b)`, under the same proofs as `where_for_if`."""
    ternary = site.parent(site.node)
    if not isinstance(ternary, cst.IfExp) or ternary.test is not site.node:
        return None
    return _where_for_ternary(site, ternary, ternary.test)


def _where_for_ternary(site: Site, ternary: cst.IfExp, test: cst.BaseExpression) -> Edit | None:
    if comments_in(ternary):
        return None
    prover = prover_at(site)
    cond = where_condition(test, prover)
    if cond is None or not same_tensor_kind(prover, ternary.body, ternary.orelse):
        return None
    assign = site.parent(ternary)
    targets = assign.targets if isinstance(assign, cst.Assign) and assign.value is ternary else []
    names = [t.target.value for t in targets if isinstance(t.target, cst.Name)]
    values: list[str | cst.BaseExpression] = [*names, ternary.body, ternary.orelse]
    if len(names) != len(targets) or _identity_matters(site, ternary, values, escapes=not names):
        return None
    call = _where(cond, ternary.body, ternary.orelse).with_changes(lpar=ternary.lpar, rpar=ternary.rpar)
    title = f"conditional expression -> torch.where ({UNSAFE_WHERE})"
    return Edit(site.finding, "unsafe", title, [(ternary, call)])


# Nodes a condition's value passes through on its way from `.item()` up to the `if` test.
CONDITION_PARTS = (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation)


def where_for_scalar_test(site: Site) -> Edit | None:
    """`if t.item() > 0:` / `if bool(t):` / `... if float(t) > 0 else ...` -> drop the read, then
    select with torch.where as for TCL103 (the seed example), under the same proofs; the read is
    dropped only where the comparison stays exact (see `where_condition`)."""
    call = site.node
    if scalar_read(call) is None:
        return None
    child: cst.CSTNode = call
    parent = site.parent(call)
    while isinstance(parent, CONDITION_PARTS):
        child, parent = parent, site.parent(parent)
    if not isinstance(parent, (cst.If, cst.IfExp)) or parent.test is not child:
        return None
    test = parent.test
    edit = _where_for_if(site, parent, test) if isinstance(parent, cst.If) else _where_for_ternary(site, parent, test)
    if edit is not None:
        edit.title = f"scalar read dropped from the condition; {edit.title}"
    return edit


# -- TCL104: `not t` as a value -> torch.logical_not ---------------------------------------------
def logical_not(site: Site) -> Edit | None:
    """`not t` -> `torch.logical_not(t)`: no more whole-frame skip. Offered only where the 0-d bool
    tensor gives what the Python bool gave: `t` a proven 0-d tensor, and the value (or the one name
    it is assigned to) only added to or multiplied with proven tensors, which a bool scalar and a
    0-d bool tensor promote alike (`-` raises on a bool tensor; `is True`, `range()` and a caller
    expecting a bool would see the difference). Unsafe: it changes what the value is."""
    node = site.node
    if not (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)) or comments_in(node):
        return None
    prover = prover_at(site)
    inner = prover.signature(node.expression, reductions=True)
    accept = partial(proven_tensor, site.facts)
    if inner is None or inner.shape or not _only_operand(site, node, SUM_OR_PRODUCT, accept):
        return None
    call = _call(_attr("torch", "logical_not"), node.expression).with_changes(lpar=node.lpar, rpar=node.rpar)
    return Edit(site.finding, "unsafe", "`not` -> torch.logical_not (the value stays a bool tensor)", [(node, call)])


SUM_OR_PRODUCT = (cst.Add, cst.Multiply)


Operators = tuple[type[cst.BaseBinaryOp], ...]


def _only_operand(
    site: Site, value: cst.BaseExpression, operators: Operators, accept: Callable[[cst.BaseExpression], bool]
) -> bool:
    """Is `value` used only as one side of an `operators` operation whose other side `accept`s:
    directly, or through the single name it is assigned to (every other occurrence of which is such a use)?"""
    parent = site.parent(value)
    if isinstance(parent, cst.BinaryOperation):
        return _operand(site, value, operators, accept)
    if not (isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1):
        return False
    target = parent.targets[0].target
    function = _enclosing_function(site, parent)
    if not isinstance(target, cst.Name) or function is None:
        return False
    uses = [n for n in _names(function.body, target.value) if n is not target]
    return bool(uses) and all(_operand(site, use, operators, accept) for use in uses)


def _operand(
    site: Site, node: cst.BaseExpression, operators: Operators, accept: Callable[[cst.BaseExpression], bool]
) -> bool:
    operation = site.parent(node)
    if not isinstance(operation, cst.BinaryOperation) or not isinstance(operation.operator, operators):
        return False
    return accept(operation.right if operation.left is node else operation.left)


# -- TCL201/TCL204/TCL205: print, logging and warnings -> skipped while compiling ---------------------------------
# Calls that may appear in a guarded call's arguments: reads without side effects. Anything else
# (`print(x.add_(1))`, `log(f"{self.step()}")`) would stop running under compile with the call.
PURE_BUILTINS = frozenset(
    {"len", "str", "repr", "format", "type", "round", "abs", "min", "max", "int", "float", "bool",
     "isinstance", "tuple", "list", "sorted", "sum", "any", "all", "id"}
)  # fmt: skip
PURE_METHODS = frozenset(
    {"item", "tolist", "size", "dim", "numel", "mean", "sum", "max", "min", "amax", "amin", "std", "var", "norm",
     "abs", "float", "double", "detach", "cpu", "numpy", "clone", "any", "all", "isnan", "isinf", "isfinite",
     "format", "join", "upper", "lower", "strip", "get", "keys", "values", "items"}
)  # fmt: skip


def pure_arguments(call: cst.Call) -> bool:
    """The call's arguments read values only: names, attributes, literals, operators, subscripts,
    and calls to the pure builtins and methods above."""
    impure: list[cst.CSTNode] = []

    class _Check(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            method = func.attr.value if isinstance(func, cst.Attribute) else None
            builtin = func.value if isinstance(func, cst.Name) else None
            out = any(arg.keyword is not None and arg.keyword.value == "out" for arg in node.args)
            if out or not (method in PURE_METHODS or builtin in PURE_BUILTINS):
                impure.append(node)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            impure.append(node)

        def visit_Await(self, node: cst.Await) -> None:
            impure.append(node)

        def visit_Yield(self, node: cst.Yield) -> None:
            impure.append(node)

    for arg in call.args:
        arg.visit(_Check())
    return not impure


def guard_call(site: Site) -> Edit | None:
    """`print(...)` / `logger.info(...)` as a statement -> `if not torch.compiler.is_compiling():`
    around it, when its arguments have no side effects (those would stop happening under compile
    too). Unsafe: the call itself no longer runs under torch.compile."""
    expr = site.parent(site.node)
    line = site.parent(expr) if expr is not None else None
    if not isinstance(expr, cst.Expr) or expr.value is not site.node or not isinstance(site.node, cst.Call):
        return None
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if not isinstance(site.parent(line), cst.IndentedBlock) or not pure_arguments(site.node):
        return None
    test = cst.UnaryOperation(cst.Not(), cst.Call(_attr("torch", "compiler", "is_compiling")))
    guard = cst.If(test, cst.IndentedBlock([line.with_changes(leading_lines=())]), leading_lines=line.leading_lines)
    title = "call skipped while compiling (it no longer runs under torch.compile)"
    return Edit(site.finding, "unsafe", title, [(line, guard)], guards=[guard])


def guard_breakpoint(site: Site) -> Edit | None:
    """`breakpoint()` -> stops only in eager runs (TCL202 also covers `input()`/`open()`, whose
    results matter: those are left alone)."""
    call = site.node
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "breakpoint":
        return guard_call(site)
    return None


# -- TCL101: `.item()` feeding tensor arithmetic -> `.detach()` ----------------------------------
def _same_dtype_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Strip trailing dtype-preserving no-argument method calls: `x.abs().max()` -> `x`."""
    while (
        isinstance(expr, cst.Call)
        and not expr.args
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in SAME_DTYPE_METHODS
    ):
        expr = expr.func.value
    return expr


def detach_item(site: Site) -> Edit | None:
    """`x / x.abs().max().item()` -> `x / x.abs().max().detach()`: the value stays a 0-d tensor.

    Safe when the other operand is the very tensor the value was reduced from with
    dtype-preserving methods: dtype, device, shape, values and gradients are unchanged. With
    another operand a 0-d tensor takes part in type promotion where a Python number did not (an int
    tensor times a float64 0-d tensor is float64, times a float is float32; complex values differ
    too): offered, unsafe, only when that operand is provably floating and the value provably real
    (then both promote to the operand's dtype)."""
    call = site.node
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "item"):
        return None
    operation = site.parent(call)
    if not isinstance(operation, cst.BinaryOperation) or not isinstance(operation.operator, ARITHMETIC):
        return None
    other = operation.right if operation.left is call else operation.left
    if site.facts.kind(other) is not Kind.TENSOR:
        return None
    root = _same_dtype_root(call.func.value)
    safe = isinstance(root, cst.Name) and _same_dtype_root(_unparen(other)).deep_equals(root)
    prover = prover_at(site)
    if not safe and not (_known_dtype(prover, call.func.value) and _floating(prover, other)):
        return None
    detached = call.with_changes(func=call.func.with_changes(attr=cst.Name("detach")))
    title = "`.item()` -> `.detach()`: the value stays a tensor"
    if not safe:
        title += " (a 0-d tensor on another tensor's device)"
    return Edit(site.finding, "safe" if safe else "unsafe", title, [(call, detached)], needs_torch=False)


def detach_item_variable(site: Site) -> Edit | None:
    """`scale = x.float().abs().max().item()` -> `... .detach()` when every use of `scale` in the
    function is an operand of arithmetic with a provably floating tensor (`y.float() / scale`), the
    value provably real. Unsafe as the unsafe case of `detach_item`."""
    call = site.node
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "item"):
        return None
    assign = site.parent(call)
    if not (isinstance(assign, cst.Assign) and assign.value is call):
        return None
    prover = prover_at(site)
    if not _known_dtype(prover, call.func.value):
        return None
    if not _only_operand(site, call, ARITHMETIC, partial(_floating, prover)):
        return None
    detached = call.with_changes(func=call.func.with_changes(attr=cst.Name("detach")))
    name = dotted(assign.targets[0].target)
    title = f"`.item()` -> `.detach()`: `{name}` stays a tensor (a 0-d tensor on another tensor's device)"
    return Edit(site.finding, "unsafe", title, [(call, detached)], needs_torch=False)


def _known_dtype(prover: Prover, expr: cst.BaseExpression) -> bool:
    """A tensor of one known real dtype (`x.float().max()`)."""
    signature = prover.signature(expr, reductions=True)
    return signature is not None and const_dtype(signature.dtype) is not None


def _floating(prover: Prover, expr: cst.BaseExpression) -> bool:
    signature = prover.signature(expr)
    return signature is not None and signature.dtype <= FLOATING_DTYPES


def _enclosing_function(site: Site, node: cst.CSTNode) -> cst.FunctionDef | None:
    parent = site.parent(node)
    while parent is not None and not isinstance(parent, cst.FunctionDef):
        parent = site.parent(parent)
    return parent


def _names(node: cst.CSTNode, value: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if name.value == value:
                found.append(name)

    node.visit(_Collect())
    return found


CODEMODS: dict[str, tuple[Codemod, ...]] = {
    "TCL101": (detach_item, detach_item_variable, where_for_scalar_test),
    "TCL102": (where_for_scalar_test,),
    "TCL103": (where_for_if, where_for_ternary),
    "TCL104": (logical_not,),
    "TCL201": (guard_call,),
    "TCL202": (guard_breakpoint,),
    "TCL204": (guard_call,),
    "TCL205": (guard_call,),
}
