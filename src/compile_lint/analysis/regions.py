"""Compiled regions and everything they reach.

Roots: `forward` of nn.Module classes, the methods torch calls on a torch.distributions Transform,
`@torch.compile` functions, `torch.compile(...)` targets,
forward hooks, and the config's `extra-regions`. From them the walk follows every call into user
code (direct calls, methods through the receiver's class, constructors, modules called as
functions, functions stored in dicts, callbacks such as `checkpoint(fn)`, `__setattr__`), and the
wrappers of user decorators. A function reached from several call sites is walked with the join of
their argument values, and again whenever a new call site adds to them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from compile_lint.analysis.flow import CallSite, Env, join_envs
from compile_lint.analysis.index import FileIndex, FunctionInfo
from compile_lint.analysis.names import dotted
from compile_lint.analysis.nodes import iter_nodes, string_value
from compile_lint.analysis.program import Program
from compile_lint.analysis.tensors import TensorFacts
from compile_lint.analysis.values import ClassKey, Cond, FunctionKey, Value

MAX_WALKS = 4  # a function re-walked this often keeps its last parameter values
MAX_DELEGATION = 3  # a decorator handing the work to another one, followed this deep
# What torch.distributions runs of a Transform: `t(x)` runs `_call`, `t.inv(y)` runs `_inverse`, and a
# TransformedDistribution's `sample`/`rsample`/`log_prob` run them and `log_abs_det_jacobian`.
TRANSFORM_METHODS = ("_call", "_inverse", "log_abs_det_jacobian")


@dataclass
class Root:
    key: FunctionKey
    reason: str
    cond: int = 0
    receivers: list[ClassKey] = field(default_factory=list)  # classes whose instances run it (`self`)


@dataclass
class Reach:
    """How a function is reached: its root region, the calls leading there, and its inputs."""

    root: str
    reason: str  # why the root is a region, or how this function is entered
    via: list[str] = field(default_factory=list)
    cond: int = 0  # path condition of the least restricted call site
    params: Env = field(default_factory=dict)
    nested_only: bool = False  # a decorator: only the wrapper functions it defines run in the region
    walks: int = 0
    # A decorator whose file is not linted: where it is applied in linted code (decorated function, the
    # decorator expression), so that what its wrapper does on every call is reported there.
    applied_at: list[tuple[FunctionKey, cst.BaseExpression]] = field(default_factory=list)
    decorates: list[FunctionKey] = field(default_factory=list)  # a decorator: the reached functions it wraps

    def describe(self) -> str:
        return f"reached from {self.root} via {' -> '.join(self.via)}" if self.via else ""


def find_roots(program: Program, extra: Iterable[str] = (), excluded: Iterable[str] = ()) -> list[Root]:
    extra, excluded = set(extra), set(excluded)
    roots: dict[FunctionKey, Root] = {}

    def add(info: FunctionInfo, reason: str, cond: int = 0, receiver: ClassKey | None = None) -> None:
        if info.disabled or not program.is_linted(info.path):
            return
        if info.enclosing is not None and not info.compiled:  # nested: walked with the function it is in
            return
        if info.qualname in excluded or info.name in excluded or (info.class_key and info.class_key[1] in excluded):
            return
        root = roots.setdefault(info.key, Root(info.key, reason, cond))
        root.cond &= cond
        if receiver is not None and receiver not in root.receivers:
            root.receivers.append(receiver)

    for info in program.functions():
        if info.compiled:
            add(info, "decorated @torch.compile")
        elif info.qualname in extra or info.name in extra:
            add(info, "named in extra-regions")
    for cls in program.classes():
        forward = program.method(cls.key, "forward") if program.is_linted(cls.path) else None
        reason = program.module_reason(cls.key) if forward is not None else None
        if forward is None or reason is None or cls.name in excluded or cls.key[1] in excluded:
            continue
        replaced = _forward_replacer(program, cls.path, cls.decorators)
        cond = Cond.ALTERNATIVE if replaced else 0
        note = f"; class decorator `{replaced}` may replace it" if replaced else ""
        inherited = "" if forward[1].startswith(cls.key[1] + ".") else f", inherited by {cls.name}"
        text = f"forward of an nn.Module ({cls.name} {reason}){note}{inherited}"
        add(program.function(forward), text, cond, cls.key)  # type: ignore[arg-type]
    for cls in program.classes():
        base = program.transform_base(cls.key) if program.is_linted(cls.path) else None
        if base is None or cls.name in excluded or cls.key[1] in excluded:
            continue
        for name in TRANSFORM_METHODS:
            method = program.method(cls.key, name)
            if method is not None:
                text = f"`{name}` of a torch.distributions Transform ({cls.name} derives from {base})"
                add(program.function(method), text, 0, cls.key)  # type: ignore[arg-type]
    for path in program.linted:
        index = program.index_of(path)
        for target in index.compile_targets:
            for info in _compile_target(program, index, target):
                add(info, "passed to torch.compile")
        for hook in index.hooks:
            for info in _hook_functions(program, index, hook.target, hook.owner):
                add(info, f"registered with {hook.registrar}")
    return list(roots.values())


def _compile_target(program: Program, index: FileIndex, target: cst.BaseExpression) -> list[FunctionInfo]:
    """What `torch.compile(target)` compiles: a function, a module's forward, or a method by name."""
    if isinstance(target, cst.Call):
        target = target.func
    found: list[FunctionInfo] = []
    if isinstance(target, cst.Name):
        name = index.instances.get(target.value, target.value)
        function = index.functions.get(name)
        if function is not None:
            found.append(function)
        cls = index.classes.get(name)
        if cls is not None and "forward" in cls.methods:
            found.append(program.function(cls.methods["forward"]))  # type: ignore[arg-type]
        for value_atom in (program.global_value(index.path, target.value) or Value({})).modules():
            if value_atom.cls is not None and program.method(value_atom.cls, "forward"):
                found.append(program.function(program.method(value_atom.cls, "forward")))  # type: ignore[arg-type]
    elif isinstance(target, cst.Attribute):
        name = target.attr.value
        for cls in index.classes.values():
            if name in cls.methods:
                found.append(program.function(cls.methods[name]))  # type: ignore[arg-type]
    return [f for f in found if f is not None]


def _hook_functions(
    program: Program, index: FileIndex, target: cst.BaseExpression, owner: FunctionKey | None
) -> list[FunctionInfo]:
    if isinstance(target, cst.Call) and dotted(target.func) in ("partial", "functools.partial") and target.args:
        target = target.args[0].value
    info = program.function(owner) if owner else None
    env = {}
    if info is not None and info.class_key is not None:
        params = info.node.params.params
        if params:
            env[params[0].name.value] = program.instance_value(info.class_key)
    facts = TensorFacts(index.imports, program, index.path, info.class_key if info else None, env)
    functions = [program.function(atom.key) for atom in facts.value(target).functions()]
    return [f for f in functions if f is not None]


def _forward_replacer(program: Program, path: str, decorators: list[cst.BaseExpression]) -> str | None:
    """The class decorator (if any) whose code assigns `forward`: the method may not be what runs."""
    facts = TensorFacts(program.index_of(path).imports, program, path)
    for decorator in decorators:
        callee = decorator.func if isinstance(decorator, cst.Call) else decorator
        for atom in facts.value(callee).functions():
            info = program.function(atom.key)
            if info is not None and _assigns_forward(info.node):
                return dotted(callee) or info.name
    return None


def _assigns_forward(node: cst.FunctionDef) -> bool:
    for inner in iter_nodes(node.body):
        if isinstance(inner, cst.Assign) and any(
            isinstance(t.target, cst.Attribute) and t.target.attr.value == "forward" for t in inner.targets
        ):
            return True
        if isinstance(inner, cst.Call) and dotted(inner.func) == "setattr" and len(inner.args) >= 2:
            name = inner.args[1].value
            if isinstance(name, cst.SimpleString) and string_value(name) == "forward":
                return True
    return False


Analyze = Callable[[FunctionInfo, Reach], list[CallSite]]


class Reachability:
    """The worklist over reached functions; `analyze` walks one (running the rules) and returns its calls."""

    def __init__(self, program: Program, roots: list[Root]) -> None:
        self.program = program
        self.roots = roots
        self.reached: dict[FunctionKey, Reach] = {}
        self._queue: deque[FunctionKey] = deque()
        self._queued: set[FunctionKey] = set()
        # Forwards a class decorator may replace: an alternative implementation however they are reached
        # (a MoE block calling `self.experts(...)` runs what the decorator chose).
        self._replaced = {root.key for root in roots if root.cond & Cond.ALTERNATIVE}
        for root in roots:
            info = program.function(root.key)
            assert info is not None
            classes = root.receivers or ([info.class_key] if info.class_key else [])
            receivers: list[Value | None] = [program.instance_value(cls) for cls in classes] or [None]
            params = join_envs([program.entry_params(info, receiver) for receiver in receivers])
            if info.enclosing is not None:  # a compiled closure: the enclosing function's names as well
                params = {**program.closure_env(info), **params}
            self._push(root.key, Reach(info.qualname, root.reason, [], root.cond, params))

    def run(self, analyze: Analyze) -> None:
        while self._queue:
            key = self._queue.popleft()
            self._queued.discard(key)
            reach = self.reached[key]
            info = self.program.function(key)
            if info is None or not (self.program.is_linted(info.path) or reach.applied_at):
                continue
            reach.walks += 1
            calls = analyze(info, reach)
            self._decorators(info, reach)
            for site in calls:
                for target in site.targets:
                    cond = reach.cond | site.cond | (Cond.TRAINING if target.how == "checkpoint" else 0)
                    how = target.text if target.how == "call" else f"{target.text} ({target.how})"
                    self._offer(target.key, target.params, cond, reach, how)

    def _decorators(self, info: FunctionInfo, reach: Reach) -> None:
        """A user decorator's wrapper runs around the function: its nested functions are in the region."""
        if not info.decorators:
            return
        facts = TensorFacts(self.program.index_of(info.path).imports, self.program, info.path)
        for decorator in info.decorators:
            callee = decorator.func if isinstance(decorator, cst.Call) else decorator
            # `@fast_path(fused_forward)`: the wrapper may call what the decorator was given (a dispatch
            # decorator choosing another implementation). A bare `@log_calls` is given the function itself,
            # which is left unknown: the wrapper's `func(*args, **kwargs)` would reach it again with unknown
            # arguments, and its optional inputs (`pixel_values=None`) would look passed.
            for atom in facts.value(callee).functions():
                target = self.program.function(atom.key)
                if target is None or target.enclosing is not None or self.program.passes_through(atom.key):
                    continue  # passing through: the decorator's code ran once, at definition
                if isinstance(decorator, cst.Call):
                    params = self.program.bind_params(target, *facts.arguments(decorator), None)
                else:
                    params = self.program.entry_params(target, None, entry=False)
                for key, key_params in [(atom.key, params), *self._delegates(target)]:
                    self._offer(key, key_params, reach.cond, reach, f"@{dotted(callee)} (decorator)", nested_only=True)
                    applied = self.reached.get(key)
                    if applied is not None and info.key not in applied.decorates:
                        applied.decorates.append(info.key)
                    if (
                        applied is not None
                        and not self.program.is_linted(key[0])
                        and all(done != info.key for done, _ in applied.applied_at)
                    ):
                        applied.applied_at.append((info.key, decorator))

    def _delegates(self, decorator: FunctionInfo, depth: int = MAX_DELEGATION) -> list[tuple[FunctionKey, Env]]:
        """The decorators a decorator hands the work to: `return _cached(method, name=name)` or
        `return functools.partial(_cached, name=name)`; their wrappers are what runs on every call."""
        if depth == 0:
            return []
        facts = TensorFacts(self.program.index_of(decorator.path).imports, self.program, decorator.path)
        found: list[tuple[FunctionKey, Env]] = []
        for node in iter_nodes(decorator.node.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if not isinstance(node, cst.Return) or not isinstance(node.value, cst.Call):
                continue
            call = node.value
            callee: cst.BaseExpression = call.func
            if dotted(callee) in ("partial", "functools.partial") and call.args:
                callee = call.args[0].value
            for atom in facts.value(callee).functions():
                target = self.program.function(atom.key)
                if target is None or target.enclosing is not None or atom.key == decorator.key:
                    continue
                found.append((atom.key, self.program.entry_params(target, None, entry=False)))
                found.extend(self._delegates(target, depth - 1))
        return found

    def _offer(
        self, key: FunctionKey, params: Env, cond: int, caller: Reach, how: str, nested_only: bool = False
    ) -> None:
        info = self.program.function(key)
        if info is None or info.disabled or info.enclosing is not None:
            return  # disabled: the call is an intended break (TCL302); nested: walked with its parent
        if key in self._replaced:
            cond |= Cond.ALTERNATIVE
        current = self.reached.get(key)
        if current is None:
            reason = "decorator wrapper" if nested_only else "called from a region"
            self._push(key, Reach(caller.root, reason, [*caller.via, how], cond, params, nested_only))
            return
        merged = join_envs([current.params, params])
        new_cond = current.cond & cond
        if (merged != current.params or new_cond != current.cond) and current.walks < MAX_WALKS:
            current.params, current.cond = merged, new_cond
            current.nested_only = current.nested_only and nested_only
            self._queue_again(key)

    def _push(self, key: FunctionKey, reach: Reach) -> None:
        self.reached[key] = reach
        self._queue_again(key)

    def _queue_again(self, key: FunctionKey) -> None:
        if key not in self._queued:
            self._queued.add(key)
            self._queue.append(key)
