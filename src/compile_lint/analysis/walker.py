"""What a rule sees: the context of the node it visits, and the dispatch of nodes to rules.

The flow analysis (flow.py) walks each reached function in evaluation order; for every node it
calls the rules registered for that node type with a `RuleContext` whose `facts` are the values
in force at that point and whose `cond` is the path condition of the line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst

from compile_lint.analysis.flow import NodeVisitor
from compile_lint.analysis.index import FunctionInfo
from compile_lint.analysis.names import ImportMap
from compile_lint.analysis.nodes import child_fields, iter_nodes
from compile_lint.analysis.program import Program
from compile_lint.analysis.regions import Reach
from compile_lint.analysis.tensors import CallTarget, TensorFacts
from compile_lint.analysis.values import FunctionKey
from compile_lint.finding import Severity
from compile_lint.versions import NEWEST, TorchVersion

__all__ = ["Pending", "ReportingRule", "RuleContext", "Visitor", "child_fields", "iter_nodes", "rule_visitor"]


class ReportingRule(Protocol):
    """What the context needs to know of a rule to record its finding (rules/base.py defines rules)."""

    @property
    def code(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def severity(self) -> Severity: ...
    @property
    def gb_codes(self) -> tuple[str, ...]: ...
    @property
    def fix(self) -> str: ...
    @property
    def silenced_by(self) -> str | None: ...


Visitor = Callable[[cst.CSTNode, "RuleContext"], None]


@dataclass
class Pending:
    """A rule's report before positions are computed and the project decides which ones count."""

    rule: ReportingRule
    node: cst.CSTNode
    message: str
    severity: Severity
    owner: str | None
    condition: str  # "always", "unless:<capture flag>" or "only:<capture flag>"
    gb_codes: tuple[str, ...]
    fix: str
    path_cond: int  # the path condition under which the line runs (values.Cond flags)
    anchor: cst.CSTNode | None = None  # where the finding starts, when not at `node` (the line Dynamo blames)
    # The function `node` is in, when not the one walked: a line Dynamo blames in code it runs as a frame of its
    # own because of what the walked function does (a metaclass `__call__` run eagerly).
    elsewhere: FunctionKey | None = None


@dataclass
class RuleContext:
    """What a rule may ask while it visits a node."""

    path: str
    imports: ImportMap
    facts: TensorFacts
    program: Program | None = None
    function: FunctionInfo | None = None
    reach: Reach | None = None
    torch_version: TorchVersion = NEWEST  # the torch the project runs: codes and fixes depend on it
    cond: int = 0  # path condition of the line being visited
    # Whether a reached function breaks the graph (in itself or a function it calls); None while the
    # regions are still being walked. A rule that needs it sets `revisit`: the function is walked again.
    breaks_in: Callable[[tuple[str, str]], bool | None] = lambda key: None
    # The reached functions that call a reached function; None while the regions are still being walked.
    callers: Callable[[tuple[str, str]], frozenset[tuple[str, str]] | None] = lambda key: None
    # Whether Dynamo gives up on a reached function's whole frame (a reconstruction failure in it), which then
    # runs eagerly; None while the regions are still being walked (set `revisit`).
    frame_skipped: Callable[[tuple[str, str]], bool | None] = lambda key: None
    # The reports of a reached function's last walk; None while the regions are still being walked.
    reports_in: Callable[[tuple[str, str]], list[Pending] | None] = lambda key: None
    revisit: bool = False
    reported: set[int] = field(default_factory=set)  # ids of nodes some rule claimed already
    pending: list[Pending] = field(default_factory=list)
    _names: dict[tuple[str, str, str | None], set[str]] = field(default_factory=dict)
    _bindings: dict[tuple[str, str, str | None], dict[str, cst.CSTNode]] = field(default_factory=dict)
    _resolved: dict[int, str | None] = field(default_factory=dict)  # by node id (the walked tree outlives this)

    @property
    def in_forward(self) -> bool:
        return self.function is not None and self.function.class_key is not None and self.function.name == "forward"

    @property
    def is_entry(self) -> bool:
        """The function is a region entry (torch.compile calls it with the caller's own arguments)."""
        return self.reach is not None and not self.reach.via

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """`node`'s name through the file's imports; once per node, as a dozen rules ask it of every call."""
        key = id(node)
        if key in self._resolved:
            return self._resolved[key]
        found = self._resolved[key] = self.imports.resolve(node)
        return found

    def call_targets(self, node: cst.Call) -> list[CallTarget]:
        """The user functions `node` calls (with what their parameters receive)."""
        return self.program.call_targets(self.facts, node) if self.program is not None else []

    def breaking_target(self, node: cst.Call) -> CallTarget | None:
        """The first user function `node` calls that breaks the graph; None if none does, or if that is not
        known yet (then `revisit` is set: known once every reached function has been walked)."""
        for target in self.call_targets(node):
            breaks = self.breaks_in(target.key)
            if breaks is None:
                self.revisit = True
            elif breaks:
                return target
        return None

    def names(self, rule: ReportingRule, kind: str) -> set[str]:
        """A rule's own set of local names (e.g. those bound to a list of tensors) in the function
        being walked; fresh for every function and file."""
        return self._names.setdefault(self._scope(rule, kind), set())

    def bindings(self, rule: ReportingRule, kind: str) -> dict[str, cst.CSTNode]:
        """A rule's own map of local names to the nodes they were bound to, fresh like `names`."""
        return self._bindings.setdefault(self._scope(rule, kind), {})

    def _scope(self, rule: ReportingRule, kind: str) -> tuple[str, str, str | None]:
        """The rule, the kind of names and the function being walked: a rule's names are fresh for each."""
        return (rule.code, kind, self.function.qualname if self.function else None)

    def report(
        self,
        rule: ReportingRule,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        condition: str | None = None,
        severity: Severity | None = None,
        gb_codes: tuple[str, ...] | None = None,
        fix: str | None = None,
        cond: int = 0,
        anchor: cst.CSTNode | None = None,
        elsewhere: FunctionInfo | None = None,
    ) -> None:
        """Report `node`; the keyword arguments override the rule's defaults for this one finding (`cond`: a
        path condition the line itself adds, e.g. the half-precision check an `and` evaluates first; `anchor`:
        a node before `node` where the finding starts instead, the line Dynamo blames; `elsewhere`: the function
        `node` is in, when not the walked one)."""
        if condition is None:
            condition = f"unless:{rule.silenced_by}" if rule.silenced_by else "always"
        owner = elsewhere.qualname if elsewhere else self.function.qualname if self.function else None
        path_cond = self.cond | cond
        if isinstance(node, cst.BaseExpression):
            path_cond |= self.facts.cond_of(node)
        self.pending.append(
            Pending(
                rule,
                node,
                message or rule.summary,
                severity or rule.severity,
                owner,
                condition,
                rule.gb_codes if gb_codes is None else gb_codes,
                fix or rule.fix,
                path_cond,
                anchor if anchor is not node else None,
                elsewhere.key if elsewhere else None,
            )
        )
        if condition == "always":  # a report that a flag may drop must not hide others' findings
            self.reported.add(id(node))


def rule_visitor(dispatch: dict[type[cst.CSTNode], list[Visitor]], ctx: RuleContext) -> NodeVisitor:
    """The flow's node callback: hand each node to the rules that asked for its type."""

    def visit(node: cst.CSTNode, facts: TensorFacts, cond: int) -> None:
        handlers = dispatch.get(type(node))
        if handlers:
            ctx.facts = facts
            ctx.cond = cond
            for handler in handlers:
                handler(node, ctx)

    return visit
