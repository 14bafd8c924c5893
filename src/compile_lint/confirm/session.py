"""`compile-lint --confirm`: the static pass, then every target in a worker, then the matching.

This side never imports torch; the worker does, once per process.
"""

from __future__ import annotations

import importlib.util
import os
import queue
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from compile_lint.config import Config
from compile_lint.confirm import GIVE_INPUTS
from compile_lint.confirm.measure.measure import Measured, MeasureOptions, measure_all
from compile_lint.confirm.plan import TargetSpec, Unrunnable, UsageError, automatic_specs, explicit_specs
from compile_lint.confirm.report.fix_check import check_fixes
from compile_lint.confirm.report.match import Observed, match
from compile_lint.confirm.report.repro import write_all
from compile_lint.confirm.run.explain import explanation_text
from compile_lint.confirm.run.runner import GB, Limits, WorkerPool
from compile_lint.engine import apply_filters, build_project, discover
from compile_lint.finding import Finding
from compile_lint.project import Project


@dataclass
class ConfirmOptions:
    targets: list[str]
    backend: str
    timeout: float
    shape: list[int]
    memory_limit: float  # GB per worker
    max_auto_targets: int
    auto_targets: bool = False  # run the automatic targets even when some are named
    repro_dir: Path | None = None
    jobs: int = 1
    use_cache: bool = True
    measure: MeasureOptions | None = None  # --timing / --coverage
    deep: bool = False  # also the probes that compile again (fullgraph, dynamic sizes) and the fix checks
    nested_graph_breaks: bool = False  # also count the cascade under torch._dynamo.config.nested_graph_breaks


@dataclass
class TargetReport:
    """One row of the summary: a target (or one entry of a factory's list) and what happened."""

    label: str
    outcome: str  # ok, raised, timed-out, memory-limit, crashed, not-run, error
    error: str = ""
    graphs: int = 0
    breaks: int = 0
    own_recompiles: int = 0  # during the target's own call; the probe's deliberate ones are not counted
    own_explained: list[dict[str, Any]] = field(default_factory=list)  # each of those: function, guard, line, why
    replayed_logging: int = 0  # torch 2.14's harmless breaks inside `logging` (not findings)
    one_graph: bool | None = None
    fullgraph_error: str = ""
    recompiles: list[dict[str, Any]] = field(default_factory=list)
    cascade: dict[str, Any] | None = None  # frames, eager frames, resume functions, graphs (cascade.py)
    timing: dict[str, Any] | None = None  # --timing (see measure.py)
    coverage: dict[str, Any] | None = None  # --coverage


@dataclass
class ConfirmResult:
    findings: list[Finding]
    files: int
    targets: list[TargetReport]
    environment: dict[str, Any]
    repro_scripts: list[Path] = field(default_factory=list)
    output_errors: list[str] = field(default_factory=list)  # outputs that failed after the work (findings stand)

    @property
    def unchecked(self) -> list[TargetReport]:
        """Targets that did not run to the end (or, when none exist, why nothing ran)."""
        if not self.targets:
            return [TargetReport("(no target)", "not-run", NOTHING_TO_RUN)]
        return [t for t in self.targets if t.outcome != "ok"]


NOTHING_TO_RUN = f"no compiled region can be called and no target is named; {GIVE_INPUTS}"


class Progress(Protocol):
    def start(self, total: int) -> None: ...

    def advance(self, label: str) -> None: ...


def confirm(paths: list[str], config: Config, options: ConfirmOptions, progress: Progress) -> ConfirmResult:
    if importlib.util.find_spec("torch") is None:
        raise UsageError(
            "--confirm runs your code under torch.compile and needs torch: pip install 'compile-lint[confirm]'"
        )
    limits = Limits(options.timeout, int(min(options.memory_limit * GB, sys.maxsize)))
    pools = [WorkerPool(options.backend, limits) for _ in range(max(1, options.jobs))]
    pools[0].start()  # torch imports in the worker while the static pass runs here
    try:
        files, specs, unrunnable, project = _plan(paths, config, options)
        pools[0].describe()
        if pools[0].backend_error:
            raise UsageError(pools[0].backend_error)
        for pool in pools[1 : len(specs)]:
            pool.start()
        static = _static_findings(project, config)
        linted = {os.path.realpath(f): f for f in files}
        observed = Observed()
        reports: list[TargetReport] = [TargetReport(u.label, "not-run", u.reason) for u in unrunnable]
        runs: dict[str, dict[str, Any]] = {}
        spec_of_run: dict[str, TargetSpec] = {}
        covered: set[tuple[str, str]] = set()

        def request(spec: TargetSpec) -> dict[str, Any]:
            target = {
                **spec.request(options.backend, options.shape),
                "deep": options.deep,
                "nested_graph_breaks": options.nested_graph_breaks,
            }
            return {"target": target, "files": list(linted)}

        def run_all(batch: list[TargetSpec]) -> None:
            for spec, reply in zip(batch, _run_each(batch, pools, request, progress), strict=True):
                collected = _collect(spec, reply, observed, runs, covered, options.backend)
                spec_of_run.update((report.label, spec) for report in collected)
                reports.extend(collected)

        progress.start(len(specs))
        run_all([spec for spec in specs if spec.region is None])  # explicit factories first: they cover regions
        automatic = [spec for spec in specs if spec.region is not None]
        for spec in automatic:
            if spec.region in covered:
                progress.advance(spec.label)
        run_all([spec for spec in automatic if spec.region not in covered])
        matched = match(static, observed, linted)
        if options.deep:  # a fix check compiles the target again
            confirmed_runs = ((finding, run) for finding, _, run in matched.confirmed_by)
            check_fixes(confirmed_runs, spec_of_run, pools[0].run, request)
        versions = pools[0].describe()
        measured = Measured()
        if options.measure is not None:
            pools[0].close()  # measuring runs in a fresh worker: free this one's memory first
            measured = measure_all(spec_of_run, reports, matched.findings, options, linted)
    finally:
        for pool in pools:
            pool.close()
    result = ConfirmResult(matched.findings, len(files), reports, {**versions, "targets": [vars(r) for r in reports]})
    if options.repro_dir is not None:
        confirmed = [(finding, brk, runs[run]) for finding, brk, run in matched.confirmed_by]
        try:
            result.repro_scripts = write_all(options.repro_dir, confirmed, versions) + measured.scripts
        except OSError as error:
            result.output_errors.append(f"cannot write to --repro-dir {options.repro_dir}: {error.strerror or error}")
    return result


def _run_each(
    specs: list[TargetSpec],
    pools: list[WorkerPool],
    request: Callable[[TargetSpec], dict[str, Any]],
    progress: Progress,
) -> list[dict[str, Any]]:
    """Each spec's reply, in order; with several workers (`-j N`), N targets run at once."""
    free: queue.Queue[WorkerPool] = queue.Queue()
    for pool in pools:
        free.put(pool)

    def run_one(spec: TargetSpec) -> dict[str, Any]:
        pool = free.get()
        try:
            return pool.run(request(spec))
        finally:
            free.put(pool)
            progress.advance(spec.label)

    if len(pools) == 1:
        return [run_one(spec) for spec in specs]
    with ThreadPoolExecutor(max_workers=len(pools)) as executor:
        futures = [executor.submit(run_one, spec) for spec in specs]
        try:
            return [future.result() for future in futures]
        except BaseException:  # Ctrl-C or SIGTERM: start no other target, end the running ones now
            executor.shutdown(wait=False, cancel_futures=True)
            for pool in pools:
                pool.stop()
            raise


def _plan(
    paths: list[str], config: Config, options: ConfirmOptions
) -> tuple[list[str], list[TargetSpec], list[Unrunnable], Project]:
    """Named targets alone; the automatic ones (capped) when none is named or with --auto-targets.
    Named factories come first, so the automatic targets they already cover are skipped."""
    files = discover(paths, config)
    project = build_project(paths, config)
    named = explicit_specs(options.targets, Path.cwd()) + explicit_specs(config.confirm.targets, config.root)
    if named and not options.auto_targets:
        return files, named, [], project
    automatic, unrunnable = automatic_specs(project)
    if len(automatic) > options.max_auto_targets:
        over = len(automatic) - options.max_auto_targets
        reason = (
            f"not run: {over} more automatic targets than the cap of {options.max_auto_targets} "
            "(raise it with --max-auto-targets N or `max-auto-targets`, or name the targets to run with --target)"
        )
        unrunnable.append(Unrunnable(f"{over} more automatic target{'s' * (over != 1)}", reason))
        automatic = automatic[: options.max_auto_targets]
    return files, named + automatic, unrunnable, project


def _static_findings(project: Project, config: Config) -> list[Finding]:
    """The selected findings, and every file that could not be parsed even if --select hides
    TCL000: nothing in it was checked (only `ignore` can silence that)."""
    findings = project.findings()
    kept = apply_filters(findings, config)
    unparsed = [f for f in findings if f.code == "TCL000" and f not in kept]
    return kept + [f for f in unparsed if not f.code.startswith(tuple(config.ignore))]


def _collect(
    spec: TargetSpec,
    reply: dict[str, Any],
    observed: Observed,
    runs: dict[str, dict[str, Any]],
    covered: set[tuple[str, str]],
    backend: str,
) -> list[TargetReport]:
    if reply["outcome"] != "ok":
        return [TargetReport(spec.label, reply["outcome"], reply.get("error", ""))]
    reports = []
    several = len(reply["runs"]) > 1
    for index, run in enumerate(reply["runs"]):
        label = (
            f"{spec.label} [{f'#{index} ' if several else ''}{run['name']}]" if spec.kind == "factory" else spec.label
        )
        report = TargetReport(label, run["outcome"], run.get("error", ""))
        reports.append(report)
        if run["outcome"] != "ok":
            continue
        runs[label] = {**run, "backend": backend, "root": spec.root, "module": spec.module}
        if run["covers"]:
            covered.add((run["covers"][0], run["covers"][1]))
        for path, lines in run["executed"].items():
            observed.executed.setdefault(path, set()).update(lines)
        for path, lines in run["traced"].items():
            observed.traced.setdefault(path, set()).update(lines)
        for variation in run.get("recompiles", []):
            explained = variation.get("explained") or []
            variation["why"] = explanation_text(explained[0], variation.get("limit_after", 0)) if explained else ""
        for explained in run.get("own_explained", []):
            explained["why"] = explanation_text(explained)
        breaks = [brk for brk in run["breaks"] if not brk["replayed_logging"]]
        observed.breaks.extend((brk, label) for brk in breaks)
        observed.recompiles.extend((variation, label) for variation in run.get("recompiles", []))
        report.graphs = run["graphs"]
        report.breaks = len(breaks)
        report.replayed_logging = len(run["breaks"]) - len(breaks)
        report.own_recompiles = run["own_recompiles"]
        report.own_explained = run.get("own_explained", [])
        report.one_graph = run["one_graph"]
        report.fullgraph_error = run["fullgraph_error"]
        report.recompiles = run.get("recompiles", [])
        report.cascade = run.get("cascade")
    return reports
