"""The flow-sensitive walk over one function's statements, as Dynamo would trace them.

Branches are walked with their own copy of the names and joined after; `x is None` narrows;
guards that are constant under Dynamo (`is_compiling()`, `torch.jit.is_scripting()`, ...) leave
only the branch it traces; code after a `return` is not walked. Each line carries its path
condition (training, loss, optional input, config). A visitor sees every node in evaluation
order with the facts in force there (this is how rules run), and the calls into the user's own
functions are collected for reachability.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.analysis.annotations import annotation_value
from compile_lint.analysis.index import FileIndex, FunctionInfo
from compile_lint.analysis.names import dotted
from compile_lint.analysis.nodes import children, string_value
from compile_lint.analysis.tensors import CallTarget, TensorFacts, class_names, combine, param_names
from compile_lint.analysis.values import (
    BOOL_VALUE,
    FLOAT_VALUE,
    INT_VALUE,
    NONE,
    NONE_VALUE,
    OBJECT_VALUE,
    STR,
    TENSOR_LIKE,
    TENSOR_VALUE,
    UNKNOWN_VALUE,
    Cond,
    Function,
    FunctionKey,
    Seq,
    Value,
    join_all,
)

if TYPE_CHECKING:
    from compile_lint.analysis.program import Program

NodeVisitor = Callable[[cst.CSTNode, TensorFacts, int], None]  # node, facts in force, path condition
Env = dict[str, Value]
LOSS_NAMES = re.compile(r"(^|_)(labels?|targets?|loss|start_positions|end_positions)$")
TRAINING_NAMES = re.compile(
    r"(^|[._])(training|gradient_checkpointing|use_checkpoint|checkpointing|grad_checkpointing)$"
)
TENSOR_CLASSES = frozenset({"torch.Tensor", "torch.nn.Parameter"})
NUMBER_CLASSES = {"int": INT_VALUE, "float": FLOAT_VALUE, "bool": BOOL_VALUE, "complex": FLOAT_VALUE}
REGISTER = frozenset({"register_buffer", "register_parameter"})
GROWING = frozenset({"append", "extend", "insert", "add"})


@dataclass
class CallSite:
    node: cst.Call
    targets: list[CallTarget]
    cond: int


@dataclass
class _Loop:
    breaks: list[Env] = field(default_factory=list)
    continues: list[Env] = field(default_factory=list)


class Flow:
    """One walk of one function body (or module body) with given parameter values."""

    def __init__(
        self,
        program: Program,
        index: FileIndex,
        function: FunctionInfo | None,
        params: Env,
        cond: int = 0,
        visitor: NodeVisitor | None = None,
        record_calls: bool = False,
        nested_only: bool = False,
    ) -> None:
        self.program = program
        self.index = index
        self.function = function
        self.facts = TensorFacts(
            index.imports, program, index.path, function.class_key if function else None, dict(params), cond
        )
        self.optional = {name for name, value in params.items() if NONE in value}
        self.params = frozenset(params)
        self.star_kwargs = _star_kwargs(function.node if function else None)
        self.defaults_truthy = _truthy_defaults(function)
        self.flag_params = _flag_params(function)
        self.visitor = visitor
        self.record_calls = record_calls
        self.nested_depth = 0 if not nested_only else -1  # nested_only: rules only inside nested functions
        self.returns: list[Value] = []
        self.calls: list[CallSite] = []
        self.loops: list[_Loop] = []
        self.closures: dict[FunctionKey, Env] = {}  # the names in scope where each nested function is defined

    @property
    def cond(self) -> int:
        return self.facts.cond

    @cond.setter
    def cond(self, value: int) -> None:
        self.facts.cond = value

    @property
    def env(self) -> Env:
        return self.facts.env

    @env.setter
    def env(self, value: Env) -> None:
        self.facts.env = value
        self.facts.forget()

    @property
    def watching(self) -> bool:
        return (self.visitor is not None or self.record_calls) and self.nested_depth >= 0

    # -- entry points --------------------------------------------------------------------------------
    def run(self) -> Value:
        """Walk the function; return what it returns."""
        assert self.function is not None
        node = self.function.node
        if self.watching:
            self.emit(node)
        falls = self.block(_body(node.body))
        if self.visitor is None and self.function.is_generator:
            return Value.of(Seq(UNKNOWN_VALUE))
        returned = join_all(self.returns)
        return returned.join(NONE_VALUE) if falls else returned

    def run_module(self, body: Sequence[cst.BaseStatement]) -> Env:
        """Walk a module body (bindings only): its global names' values."""
        self.block(body)
        return self.env

    # -- statements ----------------------------------------------------------------------------------
    def block(self, body: Sequence[cst.BaseStatement]) -> bool:
        """Walk statements in order; False when control cannot fall through the end."""
        return all(self.statement(statement) for statement in body)

    def statement(self, node: cst.BaseStatement) -> bool:
        if type(node) is cst.SimpleStatementLine:  # exact types: isinstance against libcst's ABCs is slow
            return all(self.small(small) for small in node.body)
        handler = _COMPOUND.get(type(node))
        return handler(self, node) if handler else True

    def small(self, node: cst.BaseSmallStatement) -> bool:
        self.visit(node)
        facts = self.facts
        if type(node) is cst.Assign:  # exact types, as in `statement`
            value = facts.value(node.value)
            for target in node.targets:
                facts.bind(target.target, value)
                self._setattr_hook(target.target)
        elif type(node) is cst.AnnAssign:
            if node.value is not None:
                value = facts.value(node.value)
            else:
                value = annotation_value(node.annotation.annotation, self.index.imports)
            facts.bind(node.target, value)
        elif type(node) is cst.AugAssign:
            operator = _BINARY_OF_AUGMENTED.get(type(node.operator), cst.Add)()
            facts.bind(node.target, combine(facts.value(node.target), facts.value(node.value), operator))
        elif type(node) is cst.Return:
            self.returns.append((facts.value(node.value) if node.value else NONE_VALUE).under(self.cond))
            return False
        elif type(node) is cst.Raise:
            return False
        elif type(node) is cst.Expr:
            self._expression_statement(node.value)
        elif type(node) is cst.Assert:
            self._narrow(node.test, True)
        elif type(node) is cst.Break:
            if self.loops:
                self.loops[-1].breaks.append(dict(self.env))
            return False
        elif type(node) is cst.Continue:
            if self.loops:
                self.loops[-1].continues.append(dict(self.env))
            return False
        elif type(node) is cst.Del:
            for name in _deleted(node.target):
                self.env.pop(name, None)
            self.facts.forget()
        return True

    def _expression_statement(self, value: cst.BaseExpression) -> None:
        """Calls kept for their effect: `self.register_buffer("x", t)`, `items.append(t)`."""
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Attribute):
            if self.visitor is None and not self.record_calls:
                self.facts.value(value)  # e.g. a walrus
            return
        method = value.func.attr.value
        receiver = value.func.value
        args = value.args
        if method in REGISTER and _is_self(receiver) and args and isinstance(args[0].value, cst.SimpleString):
            name = string_value(args[0].value)
            if isinstance(name, str) and self.facts.self_class is not None:
                self.program.record_attribute(self.facts.self_class, name, TENSOR_VALUE)
        elif method == "__init__" and _is_super(receiver) and any(arg.star == "**" for arg in args):
            # The base class's `__init__` run with the subclass's forwarded keywords records the attributes it
            # sets now, before the methods that read them are walked (`Solver(scale=t)` into `Base.__init__`).
            self.facts.value(value)
        elif method in GROWING and args and isinstance(receiver, (cst.Name, cst.Attribute)):
            current = self.facts.value(receiver)
            instances = current.instances()
            if any(isinstance(atom, Seq) for atom in current) or instances:
                added = self.facts.value(args[-1].value)
                item = added.items() if method == "extend" else added
                for instance in instances:  # an instance of a `list` subclass: its class keeps the items
                    self.program.record_list_items(instance.cls, item.widen(1))
                if any(isinstance(atom, Seq) for atom in current):
                    self.facts.bind(receiver, current.join(Value.of(Seq(item.widen(1)))))

    def _setattr_hook(self, target: cst.BaseExpression) -> None:
        """`obj.x = v` on a class with its own `__setattr__` runs it."""
        if not self.record_calls or not isinstance(target, cst.Attribute) or self.nested_depth < 0:
            return
        receiver = self.facts.value(target.value)
        targets = self.program.setattr_targets(receiver)
        if targets:
            self.calls.append(CallSite(cst.Call(func=target), targets, self.cond))

    # -- compound statements ---------------------------------------------------------------------------
    def _if(self, node: cst.If) -> bool:
        self.emit(node)
        self.visit(node.test)
        truth = self.facts.truth(node.test)
        body_cond, else_cond = self.branch_conds(node.test) if truth is None else (0, 0)
        entry, cond = self.env, self.cond
        ends: list[Env] = []
        if truth is not False:
            self.env, self.cond = dict(entry), cond | body_cond
            self._narrow(node.test, True)
            if self.block(_body(node.body)):
                ends.append(self.env)
        if truth is not True:
            self.env, self.cond = dict(entry), cond | else_cond
            self._narrow(node.test, False)
            orelse = node.orelse
            falls = True
            if isinstance(orelse, cst.If):
                falls = self._if(orelse)
            elif isinstance(orelse, cst.Else):
                falls = self.block(_body(orelse.body))
            if falls:
                ends.append(self.env)
        self.cond = cond
        if not ends:
            self.env = entry
            return False
        self.env = join_envs(ends)
        return True

    def _loop(self, node: cst.For | cst.While, bind: Callable[[], None]) -> bool:
        """A loop body, walked once silently to find what it rebinds, then for real from the join."""
        entry = self.env
        if self.watching:
            saved = (self.visitor, self.record_calls, self.returns, self.calls)
            self.visitor, self.record_calls, self.returns, self.calls = None, False, [], []
            self.loops.append(_Loop())
            self.env = dict(entry)
            bind()
            falls = self.block(_body(node.body))
            loop = self.loops.pop()
            self.visitor, self.record_calls, self.returns, self.calls = saved
            entry = join_envs([entry, *([self.env] if falls else []), *loop.continues])
        self.env = dict(entry)
        bind()
        self.loops.append(_Loop())
        falls = self.block(_body(node.body))
        loop = self.loops.pop()
        ends = [entry, *([self.env] if falls else []), *loop.continues]
        self.env = join_envs(ends)
        infinite = isinstance(node, cst.While) and self.facts.truth(node.test) is True
        if node.orelse is not None and not infinite:
            ends = [self.env] if self.block(_body(node.orelse.body)) else []
        elif infinite:
            ends = []
        else:
            ends = [self.env]
        ends.extend(loop.breaks)
        if not ends:
            return False
        self.env = join_envs(ends)
        return True

    def _for(self, node: cst.For) -> bool:
        self.emit(node)
        self.visit(node.iter)
        items = self.facts.iterated(node.iter)

        def bind() -> None:
            self.facts.bind(node.target, items)
            self.visit(node.target)

        return self._loop(node, bind)

    def _while(self, node: cst.While) -> bool:
        self.emit(node)
        self.visit(node.test)
        if self.facts.truth(node.test) is False:
            return self.block(_body(node.orelse.body)) if node.orelse else True
        return self._loop(node, lambda: self._narrow(node.test, True))

    def _try(self, node: cst.Try | cst.TryStar) -> bool:
        self.emit(node)
        entry = self.env
        self.env = dict(entry)
        falls = self.block(_body(node.body))
        after_body = self.env
        ends: list[Env] = []
        if falls and node.orelse is not None:
            falls = self.block(_body(node.orelse.body))
        if falls:
            ends.append(self.env)
        for handler in node.handlers:
            self.env = join_envs([entry, after_body])
            self.emit(handler)
            if handler.type is not None:
                self.visit(handler.type)
            if handler.name is not None:
                self.facts.bind(handler.name.name, OBJECT_VALUE)
            if self.block(_body(handler.body)):
                ends.append(self.env)
        if node.finalbody is not None:
            self.env = join_envs(ends or [entry])
            if not self.block(_body(node.finalbody.body)):
                return False
            return bool(ends)
        if not ends:
            return False
        self.env = join_envs(ends)
        return True

    def _with(self, node: cst.With) -> bool:
        self.emit(node)
        for item in node.items:
            self.visit(item.item)
            if item.asname is not None:
                self.facts.bind(item.asname.name, self._entered(item.item))
        return self.block(_body(node.body))

    def _entered(self, manager: cst.BaseExpression) -> Value:
        value = self.facts.value(manager)
        return value if value.is_tensor_like else UNKNOWN_VALUE

    def _match(self, node: cst.Match) -> bool:
        self.emit(node)
        self.visit(node.subject)
        entry = self.env
        ends: list[Env] = []
        for case in node.cases:
            self.env = dict(entry)
            if case.guard is not None:
                self.visit(case.guard)
            if self.block(_body(case.body)):
                ends.append(self.env)
        ends.append(entry)  # no case may match
        self.env = join_envs(ends)
        return True

    def _nested_function(self, node: cst.FunctionDef) -> bool:
        """A function defined here: bound to its name, and its body walked now as part of this one
        (it usually runs here too: closures, `custom_forward`, decorator wrappers)."""
        key = (self.index.path, self._nested_qualname(node.name.value))
        info = self.program.function(key)
        self.closures[key] = join_envs([self.closures[key], self.env]) if key in self.closures else dict(self.env)
        self.emit(node)
        for decorator in node.decorators:
            self.visit(decorator.decorator)
        if self.watching or self.nested_depth < 0:
            self._walk_nested(node)
        self.facts.bind(node.name, Value.of(Function(key)) if info else OBJECT_VALUE)
        return True

    def _walk_nested(self, node: cst.FunctionDef) -> None:
        saved = (self.env, self.returns, self.loops, self.optional)
        saved_stars = self.star_kwargs
        self.star_kwargs = saved_stars | _star_kwargs(node)
        env = dict(self.env)
        for param in param_names(node.params):
            annotation = param.annotation
            value = annotation_value(annotation.annotation, self.index.imports) if annotation else UNKNOWN_VALUE
            env[param.name.value] = value
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param):
                env[star.name.value] = UNKNOWN_VALUE
        self.env, self.returns, self.loops = env, [], []
        self.nested_depth += 1
        try:
            self.block(_body(node.body))
        finally:
            self.nested_depth -= 1
            self.env, self.returns, self.loops, self.optional = saved
            self.star_kwargs = saved_stars

    def _nested_qualname(self, name: str) -> str:
        owner = self.function.qualname if self.function else ""
        return f"{owner}.<locals>.{name}" if owner else name

    def _nested_class(self, node: cst.ClassDef) -> bool:
        self.emit(node)
        for base in node.bases:
            self.visit(base.value)
        if self.function is None:  # module level: the index already knows the class
            key = (self.index.path, node.name.value)
            self.facts.bind(node.name, self.program.class_value(key))
            return True
        saved = self.env
        self.env = dict(saved)
        self.block(_body(node.body))
        self.env = saved
        key = (self.index.path, self._nested_qualname(node.name.value))
        known = self.program.class_info(key) is not None
        self.facts.bind(node.name, self.program.class_value(key) if known else OBJECT_VALUE)
        return True

    def _module_function(self, node: cst.FunctionDef) -> bool:
        if self.function is None:
            info = self.program.function((self.index.path, node.name.value))
            self.facts.bind(node.name, Value.of(Function(info.key)) if info else OBJECT_VALUE)
            return True
        return self._nested_function(node)

    # -- path conditions and narrowing -------------------------------------------------------------
    def branch_conds(self, test: cst.BaseExpression) -> tuple[int, int]:
        """(condition added in the body, condition added in the else branch) of `if test:` (exact types, as in
        `_narrow`)."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            body, orelse = self.branch_conds(test.expression)
            return orelse, body
        if type(test) is cst.BooleanOperation:
            left, right = self.branch_conds(test.left), self.branch_conds(test.right)
            if type(test.operator) is cst.And:
                return left[0] | right[0], left[1] & right[1]
            return left[0] & right[0], left[1] | right[1]
        return self._atomic_conds(test)

    def _atomic_conds(self, test: cst.BaseExpression) -> tuple[int, int]:
        written = dotted(test)
        if written is not None and TRAINING_NAMES.search(written):
            return Cond.TRAINING, 0
        if type(test) is cst.Call and dotted(test.func) == "torch.is_grad_enabled":
            return Cond.TRAINING, 0
        half = half_check(test, self.index.imports.resolve)
        if half is not None:
            return (Cond.HALF_PRECISION, 0) if half else (0, Cond.HALF_PRECISION)
        if self._keyword_flag(test):
            return Cond.OPTIONAL_INPUT, 0
        subject, negated = _none_test(test, self)
        if subject is not None:
            cond = self._optional_cond(subject)
            return (0, cond) if negated else (cond, 0)
        if self.facts.value(test).is_tensor_like:
            return 0, 0  # data-dependent: a break, not a configuration
        if written is not None:
            cond = self._optional_cond(test)
            if isinstance(test, cst.Name) and test.value in self.defaults_truthy:
                return 0, cond
            return cond, 0
        if isinstance(test, cst.Comparison):
            if compares_config_strings(test, self.facts, self.params):
                return Cond.CONFIG, 0  # `if "dynamic" in rope_type:` a mode chosen by a config string
            return self._optional_cond(test.left) & Cond.CONFIG, 0
        return 0, 0

    def _keyword_flag(self, test: cst.BaseExpression) -> bool:
        """`kwargs.get("debug_io", False)` on the function's `**kwargs`: an option the caller did not pass
        by default (a missing key gives the falsy default)."""
        if type(test) is not cst.Call or type(test.func) is not cst.Attribute:  # exact types, as in `_narrow`
            return False
        receiver = test.func.value
        if not isinstance(receiver, cst.Name) or receiver.value not in self.star_kwargs:
            return False
        if test.func.attr.value not in ("get", "pop") or not test.args:
            return False
        default = test.args[1].value if len(test.args) > 1 else None
        return default is None or (isinstance(default, cst.Name) and default.value in ("False", "None"))

    def _optional_cond(self, subject: cst.BaseExpression) -> int:
        written = dotted(subject) or ""
        last = written.rsplit(".", 1)[-1]
        if LOSS_NAMES.search(last) and (written in self.optional or written.startswith("self.")):
            return Cond.LOSS
        if isinstance(subject, cst.Name) and subject.value in self.optional:
            return Cond.OPTIONAL_INPUT
        if isinstance(subject, cst.Name) and subject.value in self.defaults_truthy | self.flag_params:
            return Cond.OPTIONAL_INPUT
        if written.startswith("self.") or "config" in written.split("."):
            return Cond.CONFIG
        return 0

    def _narrow(self, test: cst.BaseExpression, truth: bool) -> None:
        """What `test` being `truth` says about the names in it (None-ness, isinstance). Exact types: libcst's
        node classes are ABCs, and an isinstance that fails costs several dict lookups (tests are narrowed often)."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            self._narrow(test.expression, not truth)
            return
        if type(test) is cst.BooleanOperation:
            if (type(test.operator) is cst.And) == truth:  # `a and b` true / `a or b` false: both
                self._narrow(test.left, truth)
                self._narrow(test.right, truth)
            return
        subject, negated = _none_test(test, self)
        if subject is not None:
            self._narrow_none(subject, is_none=(truth == negated))
            return
        if type(test) in (cst.Name, cst.Attribute) and truth:
            self._narrow_none(test, is_none=False)
        elif isinstance(test, cst.Call) and dotted(test.func) == "isinstance" and len(test.args) == 2:
            self._narrow_isinstance(test.args[0].value, test.args[1].value, truth)

    def _rebind(self, subject: cst.BaseExpression, narrowed: Value) -> None:
        """What a test says of a name: not an assignment (no attribute recorded, no branch condition)."""
        saved = self.cond
        self.cond = 0
        self.facts.bind(subject, narrowed, record=False)
        self.cond = saved

    def _narrow_isinstance(self, subject: cst.BaseExpression, classes: cst.BaseExpression, truth: bool) -> None:
        """`isinstance(x, torch.Tensor)` makes x a tensor; `isinstance(x, (int, float))` makes it a number."""
        if not isinstance(subject, cst.Name):
            return
        names = set(class_names(classes, self.index.imports))
        current = self.facts.value(subject)
        if names <= TENSOR_CLASSES:
            narrowed = TENSOR_VALUE if truth else current.without(*TENSOR_LIKE)
        elif names <= set(NUMBER_CLASSES):
            numbers = join_all(NUMBER_CLASSES[name] for name in names)
            narrowed = numbers if truth else current
        else:
            return
        self._rebind(subject, narrowed or UNKNOWN_VALUE)

    def _narrow_none(self, subject: cst.BaseExpression, is_none: bool) -> None:
        if not isinstance(subject, (cst.Name, cst.Attribute)) or dotted(subject) is None:
            return
        current = self.facts.value(subject)
        narrowed = NONE_VALUE if is_none else (current.without(NONE) or UNKNOWN_VALUE)
        if narrowed == current:
            return
        self._rebind(subject, narrowed)

    # -- nodes ---------------------------------------------------------------------------------------
    def emit(self, node: cst.CSTNode) -> None:
        if self.visitor is not None and self.nested_depth >= 0:
            self.visitor(node, self.facts, self.cond)

    def visit(self, root: cst.CSTNode) -> None:
        """Show the visitor `root` and the nodes below it in evaluation order, skipping what Dynamo
        never traces (`a if is_compiling() else b`), and collect calls into user code. The operands that
        run only sometimes (`self.training and f(x)`, `a if labels is not None else b`) get that condition."""
        if not self.watching:
            return
        facts = self.facts
        base = self.cond
        stack: list[tuple[cst.CSTNode, int]] = [(root, base)]
        while stack:
            node, cond = stack.pop()
            self.cond = cond
            node_type = type(node)
            if node_type is cst.IfExp:
                test, body, orelse = node.test, node.body, node.orelse  # type: ignore[attr-defined]
                truth = facts.truth(test)
                if truth is not None:
                    stack.append((body if truth else orelse, cond))
                    continue
                self.emit(node)
                body_cond, else_cond = self.branch_conds(test)
                stack.extend([(orelse, cond | else_cond), (body, cond | body_cond), (test, cond)])
                continue
            if node_type is cst.BooleanOperation:
                left, right = node.left, node.right  # type: ignore[attr-defined]
                is_and = isinstance(node.operator, cst.And)  # type: ignore[attr-defined]
                truth = facts.truth(left)
                self.emit(node)
                if truth is not None and truth != is_and:
                    stack.append((left, cond))  # the right operand never runs
                    continue
                body_cond, else_cond = self.branch_conds(left) if truth is None else (0, 0)
                stack.extend([(right, cond | (body_cond if is_and else else_cond)), (left, cond)])
                continue
            if node_type is cst.CompFor:
                facts.bind(node.target, facts.value(node.iter).items())  # type: ignore[attr-defined]
            elif node_type is cst.NamedExpr:
                facts.value(node)  # type: ignore[arg-type]  # binds the target
            elif node_type is cst.Lambda:
                for param in param_names(node.params):  # type: ignore[attr-defined]
                    facts.env.setdefault(param.name.value, UNKNOWN_VALUE)
            elif node_type is cst.Call and self.record_calls:
                targets = self.program.call_targets(facts, node)  # type: ignore[arg-type]
                if targets:
                    self.calls.append(CallSite(node, targets, cond))  # type: ignore[arg-type]
            self.emit(node)
            kept = children(node)
            if node_type is cst.Call and _is_check(node):  # type: ignore[arg-type]
                kept = [c for c in kept if not (isinstance(c, cst.Arg) and isinstance(c.value, cst.Lambda))]
            stack.extend((child, cond) for child in reversed(kept))
        self.cond = base


_COMPOUND: dict[type[cst.CSTNode], Callable[[Flow, cst.BaseStatement], bool]] = {
    cst.If: Flow._if,  # type: ignore[dict-item]
    cst.For: Flow._for,  # type: ignore[dict-item]
    cst.While: Flow._while,  # type: ignore[dict-item]
    cst.Try: Flow._try,  # type: ignore[dict-item]
    cst.TryStar: Flow._try,  # type: ignore[dict-item]
    cst.With: Flow._with,  # type: ignore[dict-item]
    cst.Match: Flow._match,  # type: ignore[dict-item]
    cst.FunctionDef: Flow._module_function,  # type: ignore[dict-item]
    cst.ClassDef: Flow._nested_class,  # type: ignore[dict-item]
}


_BINARY_OF_AUGMENTED: dict[type[cst.BaseAugOp], type[cst.BaseBinaryOp]] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power, cst.MatrixMultiplyAssign: cst.MatrixMultiply, cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr, cst.BitXorAssign: cst.BitXor, cst.LeftShiftAssign: cst.LeftShift,
    cst.RightShiftAssign: cst.RightShift,
}  # fmt: skip


def _body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    return (cst.SimpleStatementLine(body=suite.body),) if isinstance(suite, cst.SimpleStatementSuite) else ()


def join_envs(envs: list[Env]) -> Env:
    if len(envs) == 1:
        return envs[0]
    result = dict(envs[0])
    for env in envs[1:]:
        for name, value in env.items():
            current = result.get(name)
            result[name] = value if current is None else current.join(value)
    return result


def _none_test(test: cst.BaseExpression, flow: Flow) -> tuple[cst.BaseExpression | None, bool]:
    """(x, False) for `x is not None` / `exists(x)`, (x, True) for `x is None` / `not exists(x)`. Exact types,
    as in `Flow._narrow`."""
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if type(target.comparator) is cst.Name and target.comparator.value == "None":
            if type(target.operator) in (cst.IsNot, cst.NotEqual):
                return test.left, False
            if type(target.operator) in (cst.Is, cst.Equal):
                return test.left, True
    if type(test) is cst.Call and len(test.args) == 1 and not test.args[0].keyword:
        kind = flow.program.none_check(flow.facts.value(test.func))
        if kind is not None:
            return test.args[0].value, kind == "is-none"
    return None, False


HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})


def half_check(node: cst.BaseExpression, resolve: Callable[[cst.BaseExpression], str | None]) -> bool | None:
    """True for `x.dtype == torch.float16` (or `is`, or `in (torch.float16, torch.bfloat16)`), False for its
    negation (`!=`, `is not`, `not in`), None for anything else. Dynamo guards on dtypes: under compile the
    test is a constant, and with the default float32 weights a half-precision test is False."""
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1:
        return None
    target = node.comparisons[0]
    right = target.comparator
    operator = target.operator
    if isinstance(operator, (cst.Equal, cst.Is, cst.NotEqual, cst.IsNot)):
        named = [resolve(right)]
    elif isinstance(operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        named = [resolve(e.value) for e in right.elements]
    else:
        return None
    dtype = dotted(node.left) or ""
    if not (dtype.endswith("dtype") and named and all(name in HALF_DTYPES for name in named)):
        return None
    return isinstance(operator, (cst.Equal, cst.Is, cst.In))


def _is_super(node: cst.BaseExpression) -> bool:
    """`super()` or `super(Cls, self)`."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "super"


def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def _deleted(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _deleted(element.value)]
    written = dotted(target)
    return [written] if written else []


def _truthy_defaults(function: FunctionInfo | None) -> set[str]:
    """Parameters whose default is truthy (`return_dict=True`): their `if` body is the default path."""
    if function is None:
        return set()
    found = set()
    for param in param_names(function.node.params):
        default = param.default  # exact types, as in `Flow._narrow` (most parameters have no default)
        true_name = type(default) is cst.Name and default.value == "True"
        number = (type(default) is cst.Integer or type(default) is cst.Float) and default.value not in ("0", "0.0")
        if true_name or number:
            found.add(param.name.value)
    return found


def _star_kwargs(node: cst.FunctionDef | None) -> frozenset[str]:
    star = node.params.star_kwarg if node is not None else None
    return frozenset({star.name.value}) if isinstance(star, cst.Param) else frozenset()


def _flag_params(function: FunctionInfo | None) -> set[str]:
    """Parameters with a literal default: `if use_cache:` is a choice of the caller."""
    if function is None:
        return set()
    return {
        p.name.value
        for p in param_names(function.node.params)
        if type(p.default) in (cst.Name, cst.Integer, cst.Float, cst.SimpleString)  # exact: see `Flow._narrow`
        and not (type(p.default) is cst.Name and p.default.value == "None")
    }


def compares_config_strings(test: cst.Comparison, facts: TensorFacts, params: frozenset[str]) -> bool:
    """A string literal compared with (or looked up in) a str value that is not a parameter of the function:
    a mode string read from the config or the module (`rope_type = self.rope_type`)."""
    operands = [test.left, *(t.comparator for t in test.comparisons)]
    literals = [o for o in operands if isinstance(o, (cst.SimpleString, cst.ConcatenatedString))]
    others = [o for o in operands if o not in literals]
    if any(isinstance(o, cst.Name) and o.value in params for o in others):
        return False  # `if mode == "train":` on an argument: the caller picks, either side may be the default
    return bool(literals) and bool(others) and all(facts.value(o).only((STR,)) for o in others)


def _is_check(call: cst.Call) -> bool:
    """A library's `compilable_check(cond, lambda: f"... {int(n)}")`: the message lambda runs only when the
    check fails, never on the default path. Not `torch._check` itself: Dynamo breaks on a message closure
    that captures a tensor (GB9158, measured with 2.13 and 2.14), so what the lambda reads stays linted."""
    name = dotted(call.func) or ""
    if name.startswith("torch."):
        return False
    return name.rsplit(".", 1)[-1].lstrip("_").startswith("check") or name.endswith("_check")
