"""`--timing` / `--coverage` on the host: after `--confirm`, every target that ran is measured in a
fresh worker (so its first compile is the process's first), with backend inductor unless
`--backend` names another compiler: timing the eager backend would measure nothing.

Results land on each target's report (`timing`, `coverage`); each measured break is joined to the
static finding on its line, and the Chrome trace is kept beside the `--html` page. What makes the
timings doubtful is said here once, as `timing.warnings`, which every reporter prints as it is.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compile_lint.confirm.measure.timing_repro import write_timing_script
from compile_lint.confirm.plan import TargetSpec
from compile_lint.confirm.report.match import blames
from compile_lint.confirm.run.runner import GB, Limits, WorkerPool
from compile_lint.finding import Finding
from compile_lint.rules import rule_by_code

if TYPE_CHECKING:
    from compile_lint.confirm.session import TargetReport

MEASURING_BACKEND = "inductor"
DISAGREE = 3.0  # two measurements of one call this many times apart: the timings are not to be trusted
TIMEOUT_FACTOR = 5  # an inductor compile, two timed modes and a profile cost more than one --confirm run


@dataclass
class MeasureOptions:
    coverage: bool = False
    tolerance: list[float] | None = None  # [rtol, atol]; None: assert_close's per-dtype defaults
    compile_mode: str | None = None  # torch.compile(mode=...), e.g. "reduce-overhead" (CUDA graphs)
    html_dir: Path | None = None
    threads: int | None = None  # --threads: intra-op CPU threads while measuring; None: torch's default


@dataclass
class Measured:
    scripts: list[Path] = field(default_factory=list)


def measuring_backend(backend: str) -> str:
    return MEASURING_BACKEND if backend == "eager" else backend


def measure_all(
    spec_of_run: dict[str, TargetSpec],
    reports: list[TargetReport],
    findings: list[Finding],
    options: Any,  # ConfirmOptions (session imports this module)
    linted: dict[str, str],
) -> Measured:
    """Measure every spec that ran under --confirm; attach the results to its reports."""
    measure: MeasureOptions = options.measure
    backend = measuring_backend(options.backend)
    by_label = {report.label: report for report in reports}
    specs = list({spec.label: spec for label, spec in spec_of_run.items() if by_label[label].outcome == "ok"}.values())
    limits = Limits(options.timeout * TIMEOUT_FACTOR, int(min(options.memory_limit * GB, sys.maxsize)))
    pool = WorkerPool(backend, limits)
    measured = Measured()
    with tempfile.TemporaryDirectory(prefix="compile-lint-trace-") as scratch:
        trace_dir = measure.html_dir or Path(scratch)
        trace_dir.mkdir(parents=True, exist_ok=True)
        try:
            for spec in specs:
                request = {
                    "job": "measure",
                    "target": spec.request(backend, options.shape),
                    "files": list(linted),
                    "measure": {
                        "coverage": measure.coverage,
                        "tolerance": measure.tolerance,
                        "mode": measure.compile_mode,
                        "trace_dir": str(trace_dir),
                        "threads": measure.threads,
                    },
                }
                reply = pool.run(request)
                for report, run in _pair(spec, reply, by_label):
                    _attach(report, run, findings, linted, trace_dir if measure.html_dir else None, pool.environment)
                    if options.repro_dir is not None and "error" not in (report.timing or {}):
                        script = write_timing_script(
                            options.repro_dir, report.label, spec, run, backend, measure, pool.environment
                        )
                        measured.scripts.append(script)
        finally:
            pool.close()
    return measured


def _pair(
    spec: TargetSpec, reply: dict[str, Any], by_label: dict[str, TargetReport]
) -> list[tuple[TargetReport, dict[str, Any]]]:
    """Each measured run with the --confirm report it belongs to (same label scheme)."""
    if reply["outcome"] != "ok":
        failed = {"outcome": reply["outcome"], "error": reply.get("error", "")}
        return [
            (r, failed) for label, r in by_label.items() if label == spec.label or label.startswith(spec.label + " [")
        ]
    pairs = []
    for run in reply["runs"]:
        if spec.kind != "factory":
            labels = [spec.label]
        else:
            labels = [f"{spec.label} [#{run['index']} {run['name']}]", f"{spec.label} [{run['name']}]"]
        report = next((by_label[label] for label in labels if label in by_label), None)
        if report is not None:
            pairs.append((report, run))
    return pairs


def _attach(
    report: TargetReport,
    run: dict[str, Any],
    findings: list[Finding],
    linted: dict[str, str],
    keep_traces: Path | None,
    environment: dict[str, Any],
) -> None:
    if run["outcome"] != "ok":
        report.timing = {"error": f"{run['outcome']}: {run.get('error', '')}"}
        return
    report.timing = {**run["timing"], "backend": run["backend"], "mode": run["mode"], "setup": run["setup"]}
    report.timing["environment"] = {k: environment.get(k) for k in ("python", "torch", "device", "cuda_version")}
    report.timing["disagreement"] = disagreement(run["timing"], run.get("coverage"))
    report.timing["warnings"] = timing_warnings(report.timing)
    coverage = run.get("coverage")
    if coverage is None:
        return
    if "error" not in coverage:
        for item in [*coverage["breaks"], *coverage["gaps"], *coverage["timeline"]["gaps"]]:
            if item.get("break"):
                item["break"] = _described(item["break"], findings, linted)
        coverage["fix_first"] = _fix_first(coverage["breaks"])
        coverage["trace"] = _keep_trace(coverage["trace"], report.label, keep_traces)
    report.coverage = coverage


def _described(brk: dict[str, Any], findings: list[Finding], linted: dict[str, str]) -> dict[str, Any]:
    """The break with its place as the user wrote the path, and the static finding on that line."""
    path = linted.get(brk.get("user_file") or "", brk.get("user_file") or brk["file"])
    line = brk.get("user_line") or brk["line"]
    described = {**brk, "where": f"{path}:{line}"}
    for finding in findings:
        rule = rule_by_code(finding.code)
        if rule is not None and blames(finding, rule, brk, os.path.realpath(finding.path)):
            described["finding"] = {
                "code": finding.code,
                "message": finding.message,
                "status": finding.status,
                "fix": finding.fix,
                "where": f"{finding.path}:{finding.line}",
            }
            break
    return described


def _fix_first(ranked: list[dict[str, Any]]) -> str:
    if not ranked:
        return ""
    top = ranked[0]
    brk = top["break"]
    finding = brk.get("finding")
    what = f"{finding['code']} ({finding['fix']})" if finding and finding["fix"] else brk["gb_type"]
    return (
        f"{brk['where']} {brk.get('gb_code') or ''}: {top['ms_per_step']:.3f} ms per step "
        f"({top['share_of_step']:.0%} of the step, {top['gaps_per_step']:g} gaps) outside compiled graphs; fix: {what}"
    )


def _keep_trace(name: str, label: str, directory: Path | None) -> str | None:
    """Rename the worker's trace after the target inside the --html directory; otherwise drop it."""
    if directory is None:
        return None
    kept = f"trace-{slug(label)}.json"
    shutil.move(directory / name, directory / kept)
    return kept


def slug(label: str) -> str:
    return re.sub(r"\W+", "_", label).strip("_")[:80] or "target"


def disagreement(timing: dict[str, Any], coverage: dict[str, Any] | None) -> dict[str, Any] | None:
    """Two measurements of the same compiled call more than DISAGREE times apart (steady state, the
    profiled step, the first input set, which is the same inputs): what they are and what to do."""
    figures = {"steady state": timing["compiled"]["median_ms"]}
    if coverage and "error" not in coverage:
        figures["profiled step"] = coverage["step_ms"]
    sets = timing.get("input_sets") or []
    if sets and sets[0].get("median_ms"):
        figures["input set #0 (same inputs)"] = sets[0]["median_ms"]
    low, high = min(figures.values()), max(figures.values())
    if len(figures) < 2 or low <= 0 or high / low <= DISAGREE:
        return None
    machine = timing.get("machine", {})
    load = machine.get("load_average", [None])[0]
    cpus, threads = machine.get("cpus_usable"), machine.get("threads")
    loaded = load is not None and cpus is not None and load > cpus
    why = (
        f"the machine was loaded (load average {load:.2f} on {cpus} usable CPUs) and {threads} threads were used"
        if loaded
        else f"the machine's load varied while measuring ({threads} threads)"
    )
    advice = "rerun with --threads 1" if threads != 1 else "rerun on an idle machine"
    shown = ", ".join(f"{name} {value:.3g} ms" for name, value in figures.items())
    return {
        "figures_ms": figures,
        "ratio": high / low,
        "message": f"the same compiled call measured {shown}: {high / low:.1f}x apart, so these timings measure the "
        f"machine, not the model: {why}; {advice} and compare the speed-up only between runs that agree",
    }


def timing_warnings(timing: dict[str, Any]) -> list[str]:
    """Plain warnings: a steady-state figure that cannot be trusted, measurements of one call that
    disagree, a load above the usable CPUs (with several threads the timings may measure the machine;
    with one, every call is slower than on an idle one)."""
    warnings = []
    for mode in ("eager", "compiled"):
        if timing[mode].get("unreliable"):
            warnings.append(
                f"the {mode} time ({timing[mode]['median_ms']:.3g} ms) could not be measured reliably: "
                f"{timing[mode]['unreliable']}; it and the speed-up measure the machine, not the model: rerun "
                "when the machine is less busy"
            )
    if timing.get("disagreement"):
        warnings.append(timing["disagreement"]["message"])
    machine = timing.get("machine")
    if machine:
        warnings += load_warnings(machine)
    return warnings


def load_warnings(machine: dict[str, Any]) -> list[str]:
    """The higher load average read (before or after the steady state) against the usable CPUs."""
    load, cpus = max(machine["load_average"][0], machine["load_average_after"][0]), machine["cpus_usable"]
    if load <= cpus:
        return []
    if machine["threads"] > 1:
        return [
            f"load average {load:.2f} above the {cpus} usable CPUs while {machine['threads']} threads compete "
            "for them: the timings may measure the machine; --threads 1 is what it can measure"
        ]
    return [
        f"load average {load:.2f} above the {cpus} usable CPUs: measured with one thread, which such a machine "
        "can measure, but other processes share its caches and memory, so every call runs slower than on an "
        "idle machine; compare the speed-up (both modes measured in this run), not the times across runs"
    ]
