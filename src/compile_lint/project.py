"""Across all linted files: which functions are compiled regions, and which findings count."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from compile_lint.analysis.source import read_source
from compile_lint.analysis.summary import CallEdge, ClassSummary, FileSummary, FunctionSummary
from compile_lint.analysis.walker import locate_calls
from compile_lint.finding import Finding
from compile_lint.rules import all_rules

FunctionKey = tuple[str, str]  # (path, qualname)
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})


@dataclass
class Reach:
    """How a function is reached: its root region and the calls that lead from it."""

    root: str
    via: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"reached from {self.root} via {' -> '.join(self.via)}" if self.via else ""


@dataclass
class ProjectContext:
    summaries: list[FileSummary]
    flags: set[str]  # capture flags from the config: they hold for every file
    extra_regions: list[str] = field(default_factory=list)
    read_source: Callable[[str], str] = read_source  # to locate calls into disabled functions
    functions: dict[FunctionKey, FunctionSummary] = field(default_factory=dict)
    reached: dict[FunctionKey, Reach] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_file = {s.path: s for s in self.summaries}
        self._located: dict[str, dict[str, FunctionSummary]] = {}
        self._flags_by_folder: dict[str, set[str]] = {}
        self._classes: dict[str, list[tuple[FileSummary, ClassSummary]]] = {}
        for summary in self.summaries:
            for qualname, function in summary.functions.items():
                self.functions[(summary.path, qualname)] = function
            for name, cls in summary.classes.items():
                self._classes.setdefault(name.rsplit(".", 1)[-1], []).append((summary, cls))
        self._reach_all()

    # -- classes and regions -------------------------------------------------------------------
    def is_module_class(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        """Does the class (by simple name) derive from nn.Module, directly or via linted classes?"""
        for _, cls in self._classes.get(name, ()):
            for base in cls.bases:
                if base in NN_MODULE or (base.startswith("torch.nn.") and base.rsplit(".", 1)[-1][:1].isupper()):
                    return True
                simple = base.rsplit(".", 1)[-1]
                if simple not in seen and self.is_module_class(simple, seen | {name}):
                    return True
        return False

    def roots(self) -> list[FunctionKey]:
        found: list[FunctionKey] = []
        for summary in self.summaries:
            targets = set(summary.compile_targets)
            for qualname, function in summary.functions.items():
                if function.disabled:
                    continue
                cls = function.class_name
                simple_cls = cls.rsplit(".", 1)[-1] if cls else None
                if (
                    function.compiled
                    or (function.name == "forward" and simple_cls and self.is_module_class(simple_cls))
                    or qualname in targets
                    or (function.name == "forward" and simple_cls in targets)
                    or (cls and f".{function.name}" in targets)
                    or qualname in self.extra_regions
                    or function.name in self.extra_regions
                ):
                    found.append((summary.path, qualname))
        return found

    # -- calls ---------------------------------------------------------------------------------
    def resolve(self, caller: FunctionKey, edge: CallEdge) -> FunctionKey | None:
        path = caller[0]
        summary = self._by_file[path]
        if edge.kind == "self":
            cls = self.functions[caller].class_name
            if cls is None:
                return None
            own = (path, f"{cls}.{edge.target}")  # the caller's own class first: names repeat across files
            return own if own in self.functions else self._method(cls.rsplit(".", 1)[-1], edge.target, frozenset())
        if edge.kind == "name" and edge.target in summary.functions:
            return (path, edge.target)
        module, _, name = edge.target.rpartition(".")
        if not module:
            return None
        return self._module_function(module, name)

    def _method(self, class_name: str, method: str, seen: frozenset[str]) -> FunctionKey | None:
        for summary, cls in self._classes.get(class_name, ()):
            if method in cls.methods:
                return (summary.path, f"{cls.name}.{method}")
            for base in cls.bases:
                simple = base.rsplit(".", 1)[-1]
                if simple not in seen:
                    hit = self._method(simple, method, seen | {class_name})
                    if hit:
                        return hit
        return None

    def _module_function(self, module: str, name: str) -> FunctionKey | None:
        """A top-level function `name` in a linted file whose module name ends like `module`."""
        module = module.lstrip(".")
        for summary in self.summaries:
            if name in summary.functions and (summary.module == module or summary.module.endswith("." + module)):
                return (summary.path, name)
        return None

    def _reach_all(self) -> None:
        queue: deque[FunctionKey] = deque()
        for key in self.roots():
            self.reached[key] = Reach(root=key[1])
            queue.append(key)
        while queue:
            key = queue.popleft()
            reach = self.reached[key]
            for edge in self.functions[key].calls:
                callee = self.resolve(key, edge)
                if callee is not None and self.functions[callee].disabled:
                    self._locate(key, edge)
                if callee is None or callee in self.reached or self.functions[callee].disabled:
                    continue
                self.reached[callee] = Reach(reach.root, [*reach.via, edge.text])
                queue.append(callee)

    def _locate(self, caller: FunctionKey, edge: CallEdge) -> None:
        """Give `edge` its span: summaries leave call spans out, since nearly none is reported."""
        path, qualname = caller
        if path not in self._located:
            summary = self._by_file[path]
            self._located[path] = locate_calls(path, summary.module, self.read_source(path))
        edges = self.functions[caller].calls
        edge.span = self._located[path][qualname].calls[edges.index(edge)].span

    # -- findings ------------------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        found: list[Finding] = []
        rules = {rule.code: rule for rule in all_rules()}
        for summary in self.summaries:
            if summary.error:
                found.append(summary.error)
            for candidate in summary.candidates:
                if not self._holds(candidate.condition, summary.path):
                    continue
                finding = candidate.finding
                if rules[finding.code].scope == "region":
                    if candidate.owner is None:
                        continue
                    reach = self.reached.get((summary.path, candidate.owner))
                    if reach is None:
                        continue
                    if reach.via:
                        finding = replace(finding, message=f"{finding.message} ({reach.describe()})")
                found.append(finding)
        for rule in rules.values():
            found.extend(rule.check_project(self))
        return found

    def flags_for(self, path: str) -> set[str]:
        """Capture flags in force for `path`: the config's, plus those set in the source of a file in
        the same folder or above (a flag set by `train.py` covers the model package it imports)."""
        folder = os.path.dirname(os.path.abspath(path))
        if folder in self._flags_by_folder:
            return self._flags_by_folder[folder]
        flags = self._flags_by_folder[folder] = set(self.flags)
        for summary in self.summaries:
            if summary.flags:
                setter = os.path.dirname(os.path.abspath(summary.path))
                if folder == setter or folder.startswith(setter + os.sep):
                    flags.update(summary.flags)
        return flags

    def _holds(self, condition: str, path: str) -> bool:
        if condition == "always":
            return True
        mode, _, flag = condition.partition(":")
        return (flag in self.flags_for(path)) == (mode == "only")
