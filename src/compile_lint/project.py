"""The project phase: the rules run over every function the compiled regions reach, and their
reports become findings (with the path condition of their line and how the function is reached)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import cache

import libcst as cst

from compile_lint.analysis.flow import CallSite, Flow
from compile_lint.analysis.index import FileIndex, FunctionInfo
from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.positions import Span, function_starts, spans_in_function, spans_of
from compile_lint.analysis.program import Program, SourceLoader
from compile_lint.analysis.regions import Reach, Reachability, Root, find_roots
from compile_lint.analysis.sharing import SharedSummaries, SharingProgram
from compile_lint.analysis.tensors import TensorFacts
from compile_lint.analysis.values import Cond, cond_label
from compile_lint.analysis.walker import Pending, RuleContext, Visitor, rule_visitor
from compile_lint.config import HALF_PRECISION, OPT_IN, Options
from compile_lint.finding import Finding
from compile_lint.rules import all_rules

RECONSTRUCTION = "GB0092"  # Reconstruction failure: Dynamo gives up on the frame it is blamed in


@cache
def dispatch_tables() -> tuple[dict[type[cst.CSTNode], list[Visitor]], dict[type[cst.CSTNode], list[Visitor]]]:
    """(region rules, module rules) by the node types they visit."""
    region: dict[type[cst.CSTNode], list[Visitor]] = {}
    module: dict[type[cst.CSTNode], list[Visitor]] = {}
    for rule in all_rules():
        table = module if rule.scope == "module" else region
        for node_type, method in rule.visitors():
            table.setdefault(node_type, []).append(method)
    return region, module


@cache
def module_triggers() -> tuple[str, ...]:
    """Text a file must contain for a module-scope rule to find anything in it (skips the walk)."""
    return tuple(t for rule in all_rules() if rule.scope == "module" for t in rule.triggers)


class Cancelled(Exception):
    """The analysis was given up: the `cancelled` callback of the Project said so."""


class Project:
    """All linted files: regions, reachability, and the findings of the rules. `cancelled` is asked before
    each function is walked; once it says True the analysis stops and raises Cancelled (the language
    server gives up linting the files that import an open document when its text changes). `shared`: summaries
    this project may take from, and adds to, for the next project of the process (see analysis/sharing.py)."""

    def __init__(
        self,
        indexes: list[FileIndex],
        options: Options,
        errors: Iterable[Finding] = (),
        load: SourceLoader | None = None,
        cancelled: Callable[[], bool] | None = None,
        shared: SharedSummaries | None = None,
    ) -> None:
        self.options = options
        self._cancelled = cancelled
        self.errors = list(errors)
        self.program = (
            Program(indexes, options.mode, load)
            if shared is None
            else SharingProgram(indexes, options.mode, load, shared)
        )
        self.root_list: list[Root] = find_roots(self.program, options.extra_regions, options.exclude_regions)
        self.reachability = Reachability(self.program, self.root_list)
        self._reports: dict[tuple[str, str], list[Pending]] = {}
        self._callees: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._revisit: set[tuple[str, str]] = set()
        self._breaking: set[tuple[str, str]] | None = None
        self._skipped: set[tuple[str, str]] = set()  # reached functions whose frame Dynamo gives up on
        self._skip_asked: set[tuple[str, str]] = set()  # functions whose rules asked it of themselves
        self._callers: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self._flags_by_folder: dict[str, set[str]] = {}
        self.reachability.run(self._analyze)
        self._second_pass()

    @property
    def reached(self) -> dict[tuple[str, str], Reach]:
        return self.reachability.reached

    def roots(self) -> list[tuple[str, str]]:
        return [root.key for root in self.root_list]

    def function(self, key: tuple[str, str]) -> FunctionInfo | None:
        return self.program.function(key)

    def is_module(self, cls: tuple[str, str]) -> bool:
        return self.program.is_module_class(cls)

    # -- walking -------------------------------------------------------------------------------------
    def _context(self, index: FileIndex, info: FunctionInfo | None, reach: Reach | None) -> RuleContext:
        facts = TensorFacts(index.imports, self.program, index.path)
        return RuleContext(
            path=index.path,
            imports=index.imports,
            facts=facts,
            program=self.program,
            function=info,
            reach=reach,
            torch_version=self.options.torch_version,
        )

    def _second_pass(self) -> None:
        """Once every reached function is walked, we know which ones break the graph (in themselves or in
        what they call); the functions whose rules asked (`ctx.revisit`) are walked again knowing it."""
        # Opt-in rules predict no break on the default path (a `raise` of input validation).
        breaking = {
            key
            for key, reports in self._reports.items()
            if any(p.gb_codes and p.rule.code not in OPT_IN for p in reports)
        }
        callers = self._callers
        for caller, callees in self._callees.items():
            for callee in callees:
                callers.setdefault(callee, set()).add(caller)
        pending = list(breaking)
        while pending:
            for caller in callers.get(pending.pop(), ()):
                if caller not in breaking:
                    breaking.add(caller)
                    pending.append(caller)
        self._breaking = breaking
        self._skipped = self._reconstruction_failures()
        self._walk_again(sorted(self._revisit))
        # A reconstruction failure the second walk found (TCL311 needs `breaking`) makes its function run eagerly:
        # the functions that asked whether it does are walked once more.
        before, self._skipped = self._skipped, self._reconstruction_failures()
        self._walk_again(sorted(key for key in self._skip_asked if key in self._skipped and key not in before))

    def _walk_again(self, keys: list[tuple[str, str]]) -> None:
        for key in keys:
            info = self.program.function(key)
            if info is not None:
                self._analyze(info, self.reached[key])

    def _reconstruction_failures(self) -> set[tuple[str, str]]:
        """The reached functions with a finding that predicts a reconstruction failure: Dynamo gives up on them."""
        return {key for key, reports in self._reports.items() if any(RECONSTRUCTION in p.gb_codes for p in reports)}

    def _breaks_in(self, key: tuple[str, str]) -> bool | None:
        return None if self._breaking is None else key in self._breaking

    def _frame_skipped(self, key: tuple[str, str]) -> bool | None:
        if self._breaking is None:
            return None
        self._skip_asked.add(key)
        return key in self._skipped

    def _callers_of(self, key: tuple[str, str]) -> frozenset[tuple[str, str]] | None:
        return None if self._breaking is None else frozenset(self._callers.get(key, ()))

    def _reports_in(self, key: tuple[str, str]) -> list[Pending] | None:
        return None if self._breaking is None else self._reports.get(key, [])

    def _analyze(self, info: FunctionInfo, reach: Reach) -> list[CallSite]:
        """Walk one reached function with the region rules; its reports replace those of an earlier walk."""
        if self._cancelled is not None and self._cancelled():
            raise Cancelled
        index = self.program.index_of(info.path)
        ctx = self._context(index, info, reach)
        ctx.breaks_in = self._breaks_in
        ctx.callers = self._callers_of
        ctx.frame_skipped = self._frame_skipped
        ctx.reports_in = self._reports_in
        region_rules, _ = dispatch_tables()
        flow = Flow(
            self.program,
            index,
            info,
            reach.params,
            reach.cond,
            rule_visitor(region_rules, ctx),
            record_calls=True,
            nested_only=reach.nested_only,
        )
        flow.run()
        self._reports[info.key] = ctx.pending
        self._callees[info.key] = {target.key for site in flow.calls for target in site.targets}
        if ctx.revisit and self._breaking is None:
            self._revisit.add(info.key)
        return flow.calls

    def _module_reports(self, index: FileIndex) -> list[Pending]:
        """Module-scope rules see every node of the file (e.g. a config flag set anywhere)."""
        _, module_rules = dispatch_tables()
        if not module_rules or not any(trigger in index.text for trigger in module_triggers()):
            return []
        ctx = self._context(index, None, None)
        visit = rule_visitor(module_rules, ctx)
        for node in iter_nodes(index.tree):
            visit(node, ctx.facts, 0)
        return ctx.pending

    def facts_at(self, path: str, wanted: set[int]) -> dict[int, TensorFacts]:
        """The facts in force at each wanted node of `path` (for the codemods), walking its reached functions."""
        found: dict[int, TensorFacts] = {}

        def visit(node: cst.CSTNode, facts: TensorFacts, cond: int) -> None:
            if id(node) in wanted and id(node) not in found:
                found[id(node)] = facts.snapshot()

        index = self.program.index_of(path)
        for key, reach in self.reached.items():
            info = self.program.function(key)
            if key[0] == path and info is not None:
                Flow(self.program, index, info, reach.params, reach.cond, visit, nested_only=reach.nested_only).run()
        return found

    # -- findings ------------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        found = list(self.errors)
        by_path: dict[str, list[tuple[Pending, Reach | None]]] = {}
        for key, pending in self._reports.items():
            reach = self.reached[key]
            if not self.program.is_linted(key[0]):
                for path, report in self._at_decorators(key, pending, reach):
                    by_path.setdefault(path, []).append((report, None))
                continue
            by_path.setdefault(key[0], []).extend((report, reach) for report in pending if report.elsewhere is None)
            for report in pending:  # a line of another function (linted or not: the site is in its file)
                if report.elsewhere is not None and self.program.is_linted(report.elsewhere[0]):
                    by_path.setdefault(report.elsewhere[0], []).append((report, None))
        for path in sorted(self.program.linted):
            index = self.program.index_of(path)
            module_reports: list[tuple[Pending, Reach | None]] = [(r, None) for r in self._module_reports(index)]
            found.extend(self._to_findings(index, by_path.get(path, []) + module_reports))
        return sorted(found, key=lambda f: f.sort_key)

    def _at_decorators(
        self, key: tuple[str, str], reports: list[Pending], reach: Reach
    ) -> Iterator[tuple[str, Pending]]:
        """What the wrapper of a decorator from a file that is not linted does on every call, reported at
        each place linted code applies it (`@capture_outputs` above a `forward`)."""
        kept = [p for p in reports if self._holds(p, key[0])]
        if not kept:
            return
        source = self.program.index_of(key[0])
        spans = self._spans(source, kept)
        name = os.path.basename(key[0])
        for decorated, decorator in reach.applied_at:
            for pending in kept:
                line = spans[id(pending.anchor or pending.node)][0]
                yield (
                    decorated[0],
                    replace(
                        pending,
                        node=decorator,
                        anchor=None,
                        owner=decorated[1],
                        message=f"in the wrapper this decorator puts around every call ({name}:{line}): "
                        f"{pending.message}",
                    ),
                )

    def _to_findings(self, index: FileIndex, reports: list[tuple[Pending, Reach | None]]) -> Iterator[Finding]:
        kept = [(p, reach) for p, reach in reports if self._holds(p, index.path)]
        spans = self._spans(index, [p for p, _ in kept])
        seen: set[tuple[int, int, str]] = set()
        shifts = index.column_shifts or {}  # back to the file's columns where odd whitespace was made plain
        for pending, reach in kept:
            line, col, end_line, end_col = spans[id(pending.node)]
            if pending.anchor is not None and spans[id(pending.anchor)][0] != line:
                line, col = spans[id(pending.anchor)][:2]  # the finding starts where Dynamo blames it
            col, end_col = col + shifts.get(line, 0), end_col + shifts.get(end_line, 0)
            if (line, col, pending.rule.code) in seen:
                continue  # one finding per node and rule, even when a helper is reached twice
            seen.add((line, col, pending.rule.code))
            message = pending.message
            if reach is not None and reach.via:
                message = f"{message} ({reach.describe()})"
            yield Finding(
                path=index.path,
                line=line,
                col=col + 1,
                end_line=end_line,
                end_col=end_col + 1,
                code=pending.rule.code,
                message=message,
                gb_codes=list(pending.gb_codes),
                severity=pending.severity,
                fix=pending.fix,
                function=pending.owner,
                path_condition=cond_label(pending.path_cond),
            )

    def _spans(self, index: FileIndex, reports: list[Pending]) -> dict[int, Span]:
        """Positions of the reported nodes, generating code only for the functions that hold them (a
        whole module's code generation costs more than the rest of the analysis)."""
        by_owner: dict[str | None, list[cst.CSTNode]] = {}
        for pending in reports:
            by_owner.setdefault(pending.owner, []).append(pending.node)
            if pending.anchor is not None:
                by_owner[pending.owner].append(pending.anchor)
        starts: dict[str, tuple[int, str]] = {}
        if any(owner is not None for owner in by_owner):
            starts = index.starts if index.starts is not None else function_starts(index.text)
        spans: dict[int, Span] = {}
        whole: list[cst.CSTNode] = []
        for owner, nodes in by_owner.items():
            info = index.functions.get(owner) if owner is not None else None
            if info is not None and owner in starts:
                spans.update(spans_in_function(index.tree, info.node, starts[owner], nodes))
            else:
                whole.extend(nodes)
        spans.update(spans_of(index.tree, whole))
        return spans

    def _holds(self, pending: Pending, path: str) -> bool:
        if self.options.mode == "inference" and pending.path_cond & Cond.TRAINING:
            return False
        if pending.path_cond & Cond.HALF_PRECISION and HALF_PRECISION not in self.flags_for(path):
            return False  # float32 weights by default: a break behind a half-precision check never happens
        if pending.condition == "always":
            return True
        mode, _, flag = pending.condition.partition(":")
        return (flag in self.flags_for(path)) == (mode == "only")

    def flags_for(self, path: str) -> set[str]:
        """Capture flags in force for `path`: the config's, plus those set in the source of a file in
        the same folder or above (a flag set by `train.py` covers the model package it imports)."""
        folder = os.path.dirname(os.path.abspath(path))
        if folder in self._flags_by_folder:
            return self._flags_by_folder[folder]
        flags = self._flags_by_folder[folder] = set(self.options.flags)
        for linted in self.program.linted:
            index = self.program.index_of(linted)
            if index.flags:
                setter = os.path.dirname(os.path.abspath(linted))
                if folder == setter or folder.startswith(setter + os.sep):
                    flags.update(index.flags)
        return flags
