"""TCL707: a comprehension in or after a `try` block that breaks the graph: it is compiled on its own and skipped."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from compile_lint.analysis.index import FunctionInfo
from compile_lint.analysis.tensors import param_names, short_code
from compile_lint.analysis.values import Mapping, Seq, Tup, Value
from compile_lint.analysis.walker import Pending, RuleContext, iter_nodes
from compile_lint.config import OPT_IN
from compile_lint.rules.base import Example, Rule

MISSING_ITERNEXT = "GB4347"  # torch 2.13: Missing tp_iternext
NO_TRACKER = "GB9493"  # torch 2.14: C-implemented special method without VariableTracker model
COMPREHENSIONS = (cst.ListComp, cst.DictComp, cst.SetComp)


class EagerComprehension(Rule):
    code = "TCL707"
    name = "eager-comprehension"
    summary = "A list/dict/set comprehension that runs eagerly after a break (in a `try`, or in code with no tensor op): Dynamo skips its frame"
    gb_codes = (MISSING_ITERNEXT, NO_TRACKER)
    gb_codes_by_version = {(2, 13): (MISSING_ITERNEXT,), (2, 14): (NO_TRACKER,)}
    frame_skip = True
    fix = (
        "Remove the break inside the `try` block (its own finding says how), or move the `try` into a helper "
        "that the compiled code calls, so the rest of this function is traced."
    )
    what = (
        "Flags a list, dict or set comprehension that uses a tensor, a module or `torch`, in a function of a "
        "compiled region with a `try` statement whose block calls a function that breaks the graph (or breaks "
        "itself): inside or after the `try`, and before it unless a comprehension before the `try` computes on "
        "tensors. In a decorator's wrapper, the call of the decorated function breaks when every function it decorates does. "
        "Also flags one that runs after a graph break when the rest of its function computes nothing on tensors "
        "(only names, containers, `is None` tests, a few builtins, and calls of functions that compute nothing "
        "either, where the comprehension may be). Not one over a tuple or a `range`."
    )
    why = (
        "Dynamo cannot resume a graph in the middle of a `try` block: at the break the rest of the function "
        "runs eagerly, and all of it when nothing could be kept (measured: a comprehension computing on tensors "
        "before the `try` keeps a graph up to it, other tensor code does not). A comprehension is a frame of "
        "its own (Python 3.11), so Dynamo then compiles it alone, starting from the iterator its caller made, "
        "and has no model of that iterator. Measured with torch 2.13 (GB4347, missing tp_iternext) and 2.14 "
        "(GB9493): it gives up on the comprehension's frame. Dynamo skips a comprehension that uses no tensor "
        "without a report. After a graph break Dynamo compiles the rest of the function as a frame of its own; "
        "when it traces no operation there it skips that frame and runs it eagerly, and a function that code calls "
        "is compiled alone, skipped the same way when it computes nothing (measured on both versions). Dynamo "
        "does model the iterator of a tuple or a `range` (measured): such a comprehension is traced."
    )
    example = (
        "@torch.compile\ndef f(x, keys):\n    try:\n        print(x)\n    finally:\n        pass\n"
        "    return [x * k for k in keys]\n"
    )
    fixed_example = "@torch.compile\ndef f(x, keys):\n    out = [x * k for k in keys]\n    print(x)\n    return out\n"
    invalid = (
        Example("def show(x):\n    print(x)\n\n@torch.compile\ndef f(x, keys):\n    try:\n        show(x)\n"
                "        parts = {k: x * k for k in keys}\n    except ValueError:\n        parts = {}\n    return parts\n"),
        Example("def fill(values, like):\n    return [torch.zeros_like(q) if p is None else p for p, q in zip(values, like)]\n\n"
                "@torch.compile\ndef f(x):\n    print(x)\n    return fill([x], [x])\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x, keys):\n    try:\n        y = x + 1\n    finally:\n        pass\n"
                "    return [y * k for k in keys]\n"),
        Example("@torch.compile\ndef f(x, keys):\n    try:\n        print(x)\n    finally:\n        pass\n"
                "    return x, [k * 2 for k in keys]\n"),
        Example("@torch.compile\ndef f(x, keys):\n    print(x)\n    return [x * k for k in keys]\n"),
        Example("@torch.compile\ndef f(x):\n    try:\n        print(x)\n    finally:\n        pass\n"
                "    return [x * k for k in (1, 2)]\n"),
    )  # fmt: skip

    def visit_ListComp(self, node: cst.ListComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def visit_DictComp(self, node: cst.DictComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def visit_SetComp(self, node: cst.SetComp, ctx: RuleContext) -> None:
        self._check(node, ctx)

    def _check(self, node: cst.ListComp | cst.DictComp | cst.SetComp, ctx: RuleContext) -> None:
        if ctx.function is None:
            return
        frame = _Frame.of(node, ctx)
        if frame is None or not _uses_tensors(node, frame, ctx) or _resumed_iterable(node, ctx):
            return
        here = frame.order.get(id(node))
        if here is None:
            return
        code = NO_TRACKER if ctx.torch_version >= (2, 14) else MISSING_ITERNEXT
        tail = f"compiles this comprehension alone, then gives up on its iterator ({code})"
        if _after_breaking_try(here, frame, ctx):
            why = "breaks the graph in a `try` block, where Dynamo cannot resume: it runs the function eagerly, "
            ctx.report(self, node, f"`{short_code(node)}` is in a function that {why}{tail}", gb_codes=(code,))
            return
        cond = _eager_remainder(node, frame, ctx)
        if cond is not None:
            why = (
                "runs after a graph break, in code that computes nothing on tensors: Dynamo finds no operation to "
                "compile there, runs that code eagerly, "
            )
            ctx.report(self, node, f"`{short_code(node)}` {why}{tail}", gb_codes=(code,), cond=cond)


def _after_breaking_try(here: int, frame: _Frame, ctx: RuleContext) -> bool:
    if not any(isinstance(n, cst.Try) for n in frame.nodes):
        return False
    tries = _breaking_tries(frame, ctx)
    return any(_runs_eagerly(here, frame.order[id(block)], frame.nodes, ctx) for block in tries)


def _resumed_iterable(node: cst.ListComp | cst.DictComp | cst.SetComp, ctx: RuleContext) -> bool:
    """Measured: Dynamo models the iterator of a tuple or a `range` it is handed (the comprehension is then
    traced), not that of a list, dict, set, string, `zip` or `enumerate`, nor that of an empty tuple (a
    `table.get(key, ())` default: GB4347 / GB9493 on 2.13 / 2.14, `fixtures/eager_comprehension_in_wrapper.py`)."""
    iterable = node.for_in.iter
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range":
        return True
    atoms = list(ctx.facts.value(iterable))
    return bool(atoms) and all(isinstance(atom, Tup) and atom.items for atom in atoms)


@dataclass
class _Frame:
    """The function whose frame holds the comprehension: the walked function, or a function nested in it (a
    decorator's `wrapper`), with the parameters of the functions around it (`func` of `def decorator(func)`)."""

    node: cst.FunctionDef
    outer_params: set[str]
    nodes: list[cst.CSTNode]
    order: dict[int, int]

    @staticmethod
    def of(node: cst.CSTNode, ctx: RuleContext) -> _Frame | None:
        assert ctx.function is not None
        chain = _enclosing_defs(ctx.function.node, node)
        if not chain:
            return None
        outer_params = {p.name.value for d in chain[:-1] for p in param_names(d.params)}
        nodes = _own_nodes(chain[-1])
        return _Frame(chain[-1], outer_params, nodes, {id(n): i for i, n in enumerate(nodes)})

    @property
    def params(self) -> list[str]:
        return [p.name.value for p in param_names(self.node.params)]


def _runs_eagerly(here: int, start: int, nodes: list[cst.CSTNode], ctx: RuleContext) -> bool:
    """Does the comprehension at position `here` run eagerly when the `try` at `start` breaks? Measured: one in
    or after the `try` always does. One before it does when Dynamo gives up on the whole function, which it
    does unless a comprehension before the `try` computes on tensors (then it keeps the graph up to the
    `try`); tensor code outside comprehensions does not change that."""
    if start < here:
        return True
    return not any(isinstance(n, COMPREHENSIONS) and _computes_on_tensors(n, ctx) for n in nodes[:start])


def _breaking_tries(frame: _Frame, ctx: RuleContext) -> list[cst.Try]:
    """The frame's `try` statements whose block calls a function that breaks the graph, or holds a finding
    of another rule that predicts a break on the default path (seen when the block comes first)."""
    own = {id(p.node) for p in ctx.pending if p.gb_codes and p.rule.code not in OPT_IN}
    found = []
    for block in frame.nodes:
        if isinstance(block, cst.Try):
            inner = list(iter_nodes(block.body))
            calls = [n for n in inner if isinstance(n, cst.Call)]
            if any(id(n) in own for n in inner) or any(_call_breaks(n, frame, ctx) for n in calls):
                found.append(block)
    return found


def _call_breaks(call: cst.Call, frame: _Frame, ctx: RuleContext) -> bool:
    """Whether a function the call runs breaks the graph (remembered for the walk of this function)."""
    breaking, quiet = ctx.names(RULE, "breaking calls"), ctx.names(RULE, "quiet calls")
    key = str(id(call))
    if key in quiet or key in breaking:
        return key in breaking
    if ctx.breaking_target(call) is not None or _calls_breaking_decorated(call, frame, ctx):
        breaking.add(key)
        return True
    quiet.add(key)
    return False


def _calls_breaking_decorated(call: cst.Call, frame: _Frame, ctx: RuleContext) -> bool:
    """`func(self, *args, **kwargs)` in the wrapper of `def decorator(func)`: it calls the functions the decorator
    is applied to (`func` is a parameter of a function around the wrapper); do all of them break?"""
    name = call.func
    if not isinstance(name, cst.Name) or name.value not in frame.outer_params or name.value in frame.params:
        return False
    breaks = [ctx.breaks_in(info.key) for info in _decorated(ctx)]
    if None in breaks:
        ctx.revisit = True  # known once every reached function has been walked
    # Every one: the wrapper's line is shared, and a finding there would be wrong for each function that does
    # not break (measured on the corpus: a wrapper around 170 module methods, 4 of them breaking).
    return bool(breaks) and all(breaks)


def _decorated(ctx: RuleContext) -> list[FunctionInfo]:
    """The reached functions that the walked function decorates (`@capture` or `@capture(...)`)."""
    if ctx.reach is None or ctx.program is None:
        return []
    return [info for key in ctx.reach.decorates if (info := ctx.program.function(key)) is not None]


def _wraps_module_methods(frame: _Frame, ctx: RuleContext) -> bool:
    """Is the frame a decorator's wrapper around methods of nn.Module classes only (its first parameter,
    `self`, is then the module)?"""
    decorated = _decorated(ctx) if frame.outer_params and ctx.program is not None else []
    program = ctx.program
    return bool(decorated) and all(
        info.kind == "method" and info.class_key is not None and program is not None
        and program.is_module_class(info.class_key)
        for info in decorated
    )  # fmt: skip


def _eager_remainder(node: cst.CSTNode, frame: _Frame, ctx: RuleContext) -> int | None:
    """The path condition of the break after which the comprehension runs eagerly, if it does (else None).
    Measured: after a graph break Dynamo compiles the rest of the function as a frame of its own; when that
    rest computes nothing on tensors it finds no operation, skips the frame and runs it eagerly. A
    comprehension in it, or in a function it calls that computes nothing either (skipped the same way), is
    then compiled alone."""
    assert ctx.function is not None
    if frame.node is not ctx.function.node:
        return None
    statements = _statements(frame.node)
    own = _breaking_nodes(ctx.pending)
    for index, statement in enumerate(statements):
        if any(n is node for n in iter_nodes(statement)):
            found = _last_break(statements[:index], own, ctx)
            if found is not None and all(_computes_nothing(s) for s in statements[found[0] + 1 :]):
                return found[1]
            break
    if not all(_computes_nothing(s) for s in statements):
        return None
    return _called_in_eager_remainder(ctx)


def _called_in_eager_remainder(ctx: RuleContext) -> int | None:
    """Is the walked function (which computes nothing) called in the rest of a caller after a break, a rest
    that computes nothing but that call? The path condition of that break."""
    assert ctx.function is not None and ctx.program is not None
    callers = ctx.callers(ctx.function.key)
    if callers is None:
        ctx.revisit = True  # known once every reached function has been walked
        return None
    name = ctx.function.name
    for key in sorted(callers):
        info, reports = ctx.program.function(key), ctx.reports_in(key)
        if info is None or reports is None:
            continue
        statements = _statements(info.node)
        for index, statement in enumerate(statements):
            if not any(isinstance(n, cst.Call) and _called_name(n) == name for n in iter_nodes(statement)):
                continue
            found = _last_break(statements[:index], _breaking_nodes(reports), None)
            if found is not None and all(_computes_nothing(s, name) for s in statements[found[0] + 1 :]):
                return found[1]
    return None


def _statements(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    body = function.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


def _breaking_nodes(reports: list[Pending]) -> dict[int, int]:
    """The nodes another rule predicts a break at (on the default path or under a condition): id -> condition."""
    return {id(p.node): p.path_cond for p in reports if p.gb_codes and p.rule.code not in OPT_IN}


def _last_break(
    statements: list[cst.BaseStatement], breaking: dict[int, int], ctx: RuleContext | None
) -> tuple[int, int] | None:
    """The last of these statements that is a call (alone or assigned) where the graph breaks: its index and
    the break's path condition. With `ctx`, also a call of a user function that breaks."""
    for index in range(len(statements) - 1, -1, -1):
        call = _statement_call(statements[index])
        if call is None:
            continue
        conds = [breaking[id(n)] for n in iter_nodes(call) if id(n) in breaking]
        if conds:
            return index, min(conds)
        if ctx is not None and any(
            ctx.breaking_target(n) is not None for n in iter_nodes(call) if isinstance(n, cst.Call)
        ):
            return index, ctx.cond
    return None


def _statement_call(statement: cst.BaseStatement) -> cst.Call | None:
    """`f(...)`, `y = f(...)` or `y, = f(...)`: after a break in the call the rest of the statement only
    stores its result."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
    return value if isinstance(value, cst.Call) else None


SAFE_BUILTINS = frozenset({"zip", "enumerate", "len", "list", "tuple", "dict", "isinstance", "range", "iter"})


def _computes_nothing(node: cst.CSTNode, callee: str | None = None) -> bool:
    """Does this code only move values (names, attributes, containers, `is None` tests, a few builtins, and
    calls of `callee`), so that Dynamo traces no operation in it? In `a if p is None else p` only the branch
    taken when `p` is not None counts (the default path)."""
    if isinstance(node, cst.SimpleStatementLine):
        return all(
            isinstance(small, (cst.Return, cst.Assign, cst.Expr, cst.Pass)) and _computes_nothing(small, callee)
            for small in node.body
        )
    if isinstance(node, cst.BaseCompoundStatement):
        return False
    if isinstance(node, cst.IfExp) and _is_none_test(node.test):
        taken = node.orelse if isinstance(node.test, cst.Comparison) and _is_op(node.test, cst.Is) else node.body
        return _computes_nothing(taken, callee)
    if isinstance(node, cst.Call):
        name = _called_name(node)
        safe = (isinstance(node.func, cst.Name) and name in SAFE_BUILTINS) or (callee is not None and name == callee)
        if not safe:
            return False
    elif isinstance(node, cst.Comparison):
        if not all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in node.comparisons):
            return False
    elif isinstance(node, FORBIDDEN):
        return False
    return all(_computes_nothing(child, callee) for child in node.children)


FORBIDDEN = (cst.BinaryOperation, cst.UnaryOperation, cst.BooleanOperation, cst.Subscript, cst.AugAssign,
             cst.Lambda, cst.Yield, cst.Await, cst.FunctionDef, cst.ClassDef)  # fmt: skip


def _is_none_test(test: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, (cst.Is, cst.IsNot))
        and isinstance(test.comparisons[0].comparator, cst.Name)
        and test.comparisons[0].comparator.value == "None"
    )


def _is_op(test: cst.Comparison, kind: type) -> bool:
    return isinstance(test.comparisons[0].operator, kind)


def _called_name(call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        return func.value
    return func.attr.value if isinstance(func, cst.Attribute) else None


def _computes_on_tensors(node: cst.ListComp | cst.DictComp | cst.SetComp, ctx: RuleContext) -> bool:
    """`[x * k for k in keys]`: its element is a tensor it computes (not a name or attribute it only reads).
    Measured: such a comprehension before the `try` lets Dynamo keep a graph up to the `try` and run only the
    rest of the function eagerly; tensor code outside comprehensions does not."""
    element = node.value if isinstance(node, cst.DictComp) else node.elt
    if isinstance(element, (cst.Name, cst.Attribute)):
        return False
    return ctx.facts.value(element).is_tensor_like


def _own_nodes(function: cst.FunctionDef) -> list[cst.CSTNode]:
    """The function's nodes in source order, without those of nested functions, lambdas and classes."""
    nested = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
    return list(iter_nodes(function.body, prune=nested))


def _enclosing_defs(root: cst.FunctionDef, target: cst.CSTNode) -> list[cst.FunctionDef]:
    """The functions from `root` down to the innermost one that holds `target` ([] if `root` does not)."""
    if target is root:
        return [root]
    for child in root.children:
        if child is target:
            return [root]
        for node in iter_nodes(child, prune=(cst.FunctionDef,)):
            if node is target:
                return [root]
            if isinstance(node, cst.FunctionDef):
                inner = _enclosing_defs(node, target)
                if inner:
                    return [root, *inner]
    return []


def _uses_tensors(node: cst.ListComp | cst.DictComp | cst.SetComp, frame: _Frame, ctx: RuleContext) -> bool:
    """Dynamo compiles a frame only if, when it starts, it holds a tensor or a module (also inside a list, tuple
    or dict) or reads a torch module: here the names the comprehension reads from its function (its first
    iterable is evaluated by the function, and its loop variables are not bound yet). In a decorator's wrapper
    around module methods, the wrapper's first parameter is the module."""
    bound: set[str] = set()
    clause: cst.CompFor | None = node.for_in
    while clause is not None:
        bound.update(n.value for n in iter_nodes(clause.target) if isinstance(n, cst.Name))
        clause = clause.inner_for_in
    outer_iterable = {id(n) for n in iter_nodes(node.for_in.iter)}
    module_param = frame.params[0] if frame.params and _wraps_module_methods(frame, ctx) else None
    for name in iter_nodes(node):
        if not isinstance(name, cst.Name) or name.value in bound or id(name) in outer_iterable:
            continue
        if name.value == module_param:
            return True
        if (ctx.resolve(name) or "").startswith("torch") or _holds_tensors(ctx.facts.value(name)):
            return True
    return False


def _holds_tensors(value: Value) -> bool:
    if value.is_tensor_like or value.modules():
        return True
    for atom in value:
        if isinstance(atom, (Seq, Tup)) and _holds_tensors(atom.item):
            return True
        if isinstance(atom, Mapping) and _holds_tensors(atom.value):
            return True
    return False


RULE = EagerComprehension()
