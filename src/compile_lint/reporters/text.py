"""Ruff-like text output: location, code, message, the source line with the span marked, GB and fix."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from compile_lint.analysis.values import Cond, cond_label
from compile_lint.finding import Finding, gb_reference

if TYPE_CHECKING:
    from compile_lint.confirm.session import TargetReport
    from compile_lint.project import Project

STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}


def _source_line(path: str, line: int, cache: dict[str, list[str]]) -> str | None:
    if path not in cache:
        try:
            cache[path] = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            cache[path] = []
    lines = cache[path]
    return lines[line - 1] if 0 < line <= len(lines) else None


def render(console: Console, findings: list[Finding], files: int) -> None:
    sources: dict[str, list[str]] = {}
    for finding in findings:
        head = Text()
        head.append(f"{finding.path}:{finding.line}:{finding.col}: ", style="bold")
        head.append(finding.code, style=STYLE[finding.severity])
        if finding.status != "static":
            head.append(f" [{finding.status}]", style="magenta")
        head.append(f" {finding.message}")
        where = "default path" if finding.path_condition == "default" else f"only when: {finding.path_condition}"
        head.append(f" [{where}]", style="cyan" if finding.path_condition == "default" else "dim")
        console.print(head, soft_wrap=True)
        source = _source_line(finding.path, finding.line, sources)
        if source is not None:
            gutter = f"{finding.line:>5} | "
            console.print(Text(gutter, style="dim") + Text(source), soft_wrap=True, highlight=False)
            end = finding.end_col if finding.end_line == finding.line else len(source) + 1
            width = max(1, end - finding.col)
            console.print(Text(" " * (len(gutter) + finding.col - 1) + "^" * width, style=STYLE[finding.severity]))
        if finding.gb_codes:
            pages = ", ".join(gb_reference(code) for code in finding.gb_codes)
            label = "observed" if finding.status in ("confirmed", "dynamic-only") else "predicts"
            console.print(Text(f"      = {label}: ", style="dim") + Text(pages), soft_wrap=True)
        if finding.fix:
            console.print(Text("      = fix: ", style="dim") + Text(finding.fix, style="green"), soft_wrap=True)
        if "fix_check" in finding.details:
            console.print(Text("      = ", style="dim") + fix_check_line(finding.details["fix_check"]), soft_wrap=True)
        console.print()
    console.print(summary_line(findings, files))


def fix_check_line(check: dict[str, Any]) -> Text:
    """`--confirm`'s verdict on the automatic fix, run under Dynamo in a temporary copy."""
    if "not_checked" in check:
        return Text(f"fix not checked: {check['not_checked']}", style="yellow")
    if check["compiles_without_break"]:
        return Text(f"fix checked ({check['fix']}): compiles without this break", style="green")
    still = check["still_breaks"]
    where = f"line {still['line']} of the fixed code ({still['gb_code']})"
    return Text(f"fix checked ({check['fix']}): still breaks at {where}", style="red")


def summary_line(findings: list[Finding], files: int) -> Text:
    if not findings:
        return Text(f"All clear: no findings in {files} file{'s' * (files != 1)}.", style="bold green")
    counts = Counter(f.code for f in findings)
    detail = ", ".join(f"{code} x{count}" for code, count in sorted(counts.items()))
    plural = "s" * (len(findings) != 1)
    default = sum(f.path_condition == "default" for f in findings)
    return Text(
        f"Found {len(findings)} finding{plural} in {files} file{'s' * (files != 1)}, {default} on the default "
        f"path ({detail}).",
        style="bold",
    )


def render_regions(console: Console, project: Project) -> None:
    """`--show-regions`: each compiled region, then every function it reaches and how."""
    for root in project.root_list:
        console.print(
            Text(f"{root.key[0]}:{root.key[1]}", style="bold") + Text(f"  region: {root.reason}"), soft_wrap=True
        )
    reached = [(key, reach) for key, reach in project.reached.items() if reach.via]
    if reached:
        console.print()
    for (path, qualname), reach in sorted(reached):
        where = "" if not reach.cond else f" [only when: {cond_label(Cond(reach.cond))}]"
        how = f"reached from {reach.root} via {' -> '.join(reach.via)}{where}"
        if reach.nested_only:
            how += " (its nested wrapper functions only)"
        console.print(Text(f"{path}:{qualname}", style="bold") + Text(f"  {how}"), soft_wrap=True)
    errors = project.errors
    for error in errors:
        console.print(Text(f"{error.path}: not analysed: {error.message}", style="yellow"), soft_wrap=True)
    console.print(Text(f"{len(project.root_list)} regions, {len(reached)} more functions reached.", style="bold"))


class ConfirmProgress:
    """`--confirm`'s progress bar over targets, on stderr and only on a terminal."""

    def __init__(self, console: Console) -> None:
        self.bar = Progress(
            TextColumn("confirming"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self.task = self.bar.add_task("starting a worker (imports torch)", total=None)

    def start(self, total: int) -> None:
        self.bar.update(self.task, total=total)
        self.bar.start()

    def advance(self, label: str) -> None:
        self.bar.update(self.task, advance=1, description=label)

    def stop(self) -> None:
        self.bar.stop()


def render_confirm_summary(console: Console, targets: list[TargetReport], findings: list[Finding]) -> None:
    """Per-target table and notes, what the recompile probe saw, and the totals `--confirm` is about."""
    per_target = Table(title="Targets run under torch.compile", title_justify="left")
    for column in ("target", "outcome", "graphs", "breaks", "one graph", "recompiles"):
        per_target.add_column(column, overflow="fold")
    for target in targets:
        outcome = Text(target.outcome, style="green" if target.outcome == "ok" else "red")
        cells = ["", "", "", ""]
        if target.outcome == "ok":
            one_graph = {True: "yes", False: "no", None: "? (--deep)"}[target.one_graph]
            recompiles = sum(v["recompiled_calls"] for v in target.recompiles)
            cells = [str(target.graphs), str(target.breaks), one_graph, str(recompiles)]
        per_target.add_row(target.label, outcome, *cells)
    console.print(per_target)
    for target in targets:
        if target.error:
            console.print(Text(f"  {target.label}: {target.outcome}: {target.error}"), soft_wrap=True)
        elif target.fullgraph_error:
            note = f"  {target.label}: fullgraph=True stops at {target.fullgraph_error}"
            console.print(Text(note, style="dim"), soft_wrap=True)
        for variation in target.recompiles:
            reason = f" ({variation['reasons'][0]})" if variation["reasons"] else ""
            counts = f"{variation['recompiled_calls']}/{variation['calls']} calls recompiled{reason}"
            seen = "no recompile" if variation["free_dims"] else counts
            line = f"  {target.label}: varying {variation['trigger']}: {seen}"
            console.print(Text(line), soft_wrap=True)
            suggestion = Text("      = suggest: ", style="dim") + Text(variation["suggestion"], style="green")
            console.print(suggestion, soft_wrap=True)
    statuses = Counter(f.status for f in findings)
    totals = Table(title="Summary", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    columns = ("targets", "graphs", "breaks", "confirmed", "refuted", "not run", "dynamic-only", "recompiles")
    for column in columns:
        totals.add_column(column, justify="right", no_wrap=True)
    totals.add_row(
        str(len(targets)),
        str(sum(t.graphs for t in targets)),
        str(sum(t.breaks for t in targets)),
        str(statuses["confirmed"]),
        str(statuses["not-reproduced"]),
        str(statuses["not-run"]),
        str(statuses["dynamic-only"]),
        str(sum(v["recompiled_calls"] for t in targets for v in t.recompiles)),
    )
    console.print(totals)
