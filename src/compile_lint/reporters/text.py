"""Ruff-like text output: location, code, message, the source line with the span marked, GB and fix."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compile_lint import notebooks
from compile_lint.analysis.source import source_lines
from compile_lint.analysis.values import cond_label
from compile_lint.finding import Finding, gb_reference
from compile_lint.reporters.escape import printable
from compile_lint.reporters.styled import Output, Styled

if TYPE_CHECKING:
    from rich.console import Console

    from compile_lint.confirm.session import TargetReport
    from compile_lint.project import Project

MARKS = {"safe": "[*]", "unsafe": "[*unsafe]"}  # the same in --statistics, --show-fixes and their legend
FIX_LEGEND = "[*] fixable with --fix, [*unsafe] with --unsafe-fixes"
STYLE = {"error": "bold red", "warning": "bold yellow", "info": "bold blue"}
TARGET_LEGEND = (
    "graphs: graphs compiled on the target's call; breaks: graph breaks Dynamo logged; one graph: whether "
    "fullgraph=True compiles; recompiles: during the target's own call (the probe's deliberate ones are not counted)"
)
REPLAYED = "torch 2.14 replays reorderable logging calls after the graph"


def _source_line(finding: Finding, cache: dict[str, Callable[[Finding], str | None]]) -> str | None:
    """The finding's line as written (in a notebook: the line of its cell)."""
    if finding.path not in cache:
        cache[finding.path] = _line_reader(finding.path)
    return cache[finding.path](finding)


def _line_reader(path: str) -> Callable[[Finding], str | None]:
    if notebooks.is_notebook(path):
        try:
            notebook = notebooks.load(path)
        except (OSError, notebooks.NotebookError):
            return lambda finding: None
        return lambda finding: notebook.cell_line(finding.cell or 0, finding.line)
    try:
        lines = source_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        lines = []
    return lambda finding: lines[finding.line - 1] if 0 < finding.line <= len(lines) else None


def location(finding: Finding) -> str:
    """`path:line:col`, or `path:cell N:line:col` in a notebook."""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return printable(f"{finding.path}:{cell}{finding.line}:{finding.col}")


def _head(finding: Finding) -> Styled:
    head = Styled()
    head.append(f"{location(finding)}: ", style="bold")
    head.append(finding.code, style=STYLE[finding.severity])
    if finding.status != "static":
        head.append(f" [{finding.status}]", style="magenta")
    autofix = finding.details.get("autofix")
    if autofix:
        head.append(f" {MARKS[autofix['safety']]}", style="green")
    head.append(f" {printable(finding.message)}")
    return head


def render_concise(console: Output | Console, findings: list[Finding], files: int) -> None:
    """`--output-format concise`: one line per finding, then the summary."""
    for finding in findings:
        console.print(_head(finding), soft_wrap=True)
    console.print(summary_line(findings, files))


def render(console: Output | Console, findings: list[Finding], files: int, unchecked: int = 0) -> None:
    """The findings, then one summary line; `unchecked`: --confirm targets that did not run to the end."""
    sources: dict[str, Callable[[Finding], str | None]] = {}
    for finding in findings:
        head = _head(finding)
        where = "default path" if finding.path_condition == "default" else f"only when: {finding.path_condition}"
        head.append(f" [{where}]", style="cyan" if finding.path_condition == "default" else "dim")
        console.print(head, soft_wrap=True)
        source = _source_line(finding, sources)
        if source is not None:
            gutter = f"{finding.line:>5} | "
            console.print(Styled(gutter, style="dim") + Styled(printable(source)), soft_wrap=True, highlight=False)
            end = finding.end_col if finding.end_line == finding.line else len(source) + 1
            before = len(printable(source[: finding.col - 1]))  # an escaped character takes six columns
            width = max(1, len(printable(source[finding.col - 1 : end - 1])))
            console.print(Styled(" " * (len(gutter) + before) + "^" * width, style=STYLE[finding.severity]))
        observed = finding.details.get("observed_gb_code")
        codes = [observed] if finding.status == "confirmed" and observed else finding.gb_codes
        if codes:
            pages = ", ".join(gb_reference(code) for code in codes)
            label = "observed" if finding.status in ("confirmed", "dynamic-only") else "predicts"
            console.print(Styled(f"      = {label}: ", style="dim") + Styled(pages), soft_wrap=True)
        if finding.fix:
            console.print(
                Styled("      = fix: ", style="dim") + Styled(printable(finding.fix), style="green"), soft_wrap=True
            )
        autofix = finding.details.get("autofix")
        if autofix:
            flag = "--fix" if autofix["safety"] == "safe" else "--unsafe-fixes"
            line = Styled(f"      = {flag} would: ", style="dim") + Styled(autofix["title"], style="green")
            console.print(line, soft_wrap=True)
        if "fix_check" in finding.details:
            console.print(
                Styled("      = ", style="dim") + fix_check_line(finding.details["fix_check"]), soft_wrap=True
            )
        for label, note in confirm_notes(finding):
            console.print(Styled(f"      = {label}: ", style="dim") + Styled(printable(note)), soft_wrap=True)
        console.print()
    console.print(summary_line(findings, files, unchecked))


def confirm_notes(finding: Finding) -> list[tuple[str, str]]:
    """What `--confirm` saw at a finding: why a line was not traced, the calls that led to a
    break and Dynamo's explanation of one nobody predicted."""
    details = finding.details
    notes = []
    if finding.status == "not-traced":
        cause = details.get("not_traced_because")
        because = (
            f"after the break at {cause['file']}:{cause['line']} ({cause['observed_gb_code']} {cause['gb_type']})"
            if cause
            else "after an earlier break"
        )
        notes.append(("not traced", f"Dynamo ran this frame eagerly {because}; fix that one, then run again"))
    chain = details.get("chain", [])
    if finding.status in ("confirmed", "dynamic-only") and len(chain) > 1:
        notes.append(("called from", " <- ".join(chain[1:])))
    if finding.status == "dynamic-only" and details.get("explanation"):
        notes.append(("explanation", details["explanation"]))
    if details.get("owner"):
        notes.append(("owner", owner_note(details["owner"], details.get("fix_at"))))
    if details.get("cascade"):
        notes.append(("cascade", cascade_note(details["cascade"])))
    return notes


def owner_note(owner: dict[str, Any], fix_at: dict[str, Any] | None) -> str:
    """Who owns the file the break is in; for code the user does not own, where they can act."""
    name = "user code" if owner["kind"] == "user" else f"{owner['name']} {owner.get('version') or ''}".rstrip()
    if fix_at is None:
        return name
    return f"{name}; fix at {fix_at['file']}:{fix_at['line']} (your call to `{fix_at['calls']}`)"


def cascade_note(cascade: dict[str, Any]) -> str:
    """What the break cost beyond its line; with --nested-graph-breaks, the same under that mode."""

    def counts(one: dict[str, Any]) -> str:
        eager, own, callers = one["eager_frames"], one["resume_own"], one["resume_in_callers"]
        text = f"{len(eager)} frame{'s' * (len(eager) != 1)} run eagerly"
        if eager:
            text += f" ({', '.join(eager)})"
        text += f", {len(own)} resume function{'s' * (len(own) != 1)} in its frame"
        text += f", {len(callers)} in callers" + (f" ({', '.join(callers)})" if callers else "")
        return text

    text = counts(cascade)
    if "nested" in cascade:
        nested = cascade["nested"]
        text += "; with nested graph breaks: " + (counts(nested) if nested else "not a break")
    return text


def totals_note(cascade: dict[str, Any]) -> str:
    """A target's compiled frames, eager frames, resume functions and graphs, and the same with nested
    graph breaks when asked for."""

    def counts(one: dict[str, int]) -> str:
        return (
            f"{one['frames']} frames compiled, {one['eager_frames']} run eagerly, {one['resume_functions']} resume "
            f"functions, {one['graphs']} graphs"
        )

    text = "cascade: " + counts(cascade["default"])
    if "nested" in cascade:
        text += "; with nested graph breaks: " + counts(cascade["nested"])
    elif "nested_error" in cascade:
        text += f"; nested graph breaks not measured: {cascade['nested_error']}"
    return text


def statistics(findings: list[Finding]) -> list[dict[str, Any]]:
    """`--statistics`: per code, how many findings, the rule's name, and how many of them an automatic fix
    removes (`details["autofix"]`, from the plan that --fix, --unsafe-fixes and --diff apply)."""
    from compile_lint.rules import rule_by_code  # the rules load libcst: only for this table

    counts = Counter(f.code for f in findings)
    fixes = Counter((f.code, f.details["autofix"]["safety"]) for f in findings if "autofix" in f.details)
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = rule_by_code(code)
        rows.append(
            {"code": code, "name": rule.name if rule else "", "count": count,
             "fix": fixes[code, "safe"], "unsafe_fix": fixes[code, "unsafe"]}
        )  # fmt: skip
    return rows


def render_statistics(console: Output | Console, findings: list[Finding]) -> None:
    rows = statistics(findings)
    width = max((len(str(row["count"])) for row in rows), default=1)
    fixable = any(row["fix"] or row["unsafe_fix"] for row in rows)
    mark_width = max(len(mark) for mark in MARKS.values()) + 1 if fixable else 0  # no blank column without fixes
    for row in rows:
        safe, unsafe, count = row["fix"], row["unsafe_fix"], row["count"]
        mark = MARKS["safe"] if safe else MARKS["unsafe"] if unsafe else ""
        parts = [(safe, "--fix")] * bool(safe) + [(unsafe, "--unsafe-fixes")] * bool(unsafe)
        detail = ", ".join(f"{n} of {count} with {flag}" for n, flag in parts)
        detail = f" ({detail})" if mark and count not in (safe, unsafe) else ""
        line = f"{row['count']:>{width}}  {row['code']}  {mark:<{mark_width}}{row['name']}{detail}"
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if fixable:
        console.print(FIX_LEGEND, style="dim", highlight=False, markup=False)


def fix_check_line(check: dict[str, Any]) -> Styled:
    """`--confirm`'s verdict on the automatic fix, run under Dynamo in a temporary copy."""
    if "not_checked" in check:
        return Styled(f"fix not checked: {check['not_checked']}", style="yellow")
    if check["compiles_without_break"]:
        return Styled(f"fix checked ({check['fix']}): compiles without this break", style="green")
    still = check["still_breaks"]
    where = f"line {still['line']} of the fixed code ({still['gb_code']})"
    return Styled(f"fix checked ({check['fix']}): still breaks at {where}", style="red")


def summary_line(findings: list[Finding], files: int, unchecked: int = 0) -> Styled:
    not_checked = f"; {unchecked} target{'s' * (unchecked != 1)} could not be checked (see below)" if unchecked else ""
    if not findings and unchecked:
        return Styled(f"No findings in {files} file{'s' * (files != 1)}{not_checked}.", style="bold yellow")
    if not findings:
        return Styled(f"All clear: no findings in {files} file{'s' * (files != 1)}.", style="bold green")
    counts = Counter(f.code for f in findings)
    detail = ", ".join(f"{code} x{count}" for code, count in sorted(counts.items()))
    plural = "s" * (len(findings) != 1)
    default = sum(f.path_condition == "default" for f in findings)
    with_findings = len({f.path for f in findings})
    return Styled(
        f"Found {len(findings)} finding{plural} in {with_findings} file{'s' * (with_findings != 1)} ({files} "
        f"linted), {default} on the default path ({detail}){not_checked}.",
        style="bold",
    )


def render_regions(console: Output | Console, project: Project) -> None:
    """`--show-regions`: each compiled region, then every function it reaches and how."""
    for root in project.root_list:
        console.print(
            Styled(printable(f"{root.key[0]}:{root.key[1]}"), style="bold")
            + Styled(printable(f"  region: {root.reason}")),
            soft_wrap=True,
        )
    reached = [(key, reach) for key, reach in project.reached.items() if reach.via]
    if reached:
        console.print()
    for (path, qualname), reach in sorted(reached):
        where = "" if not reach.cond else f" [only when: {cond_label(reach.cond)}]"
        how = f"reached from {reach.root} via {' -> '.join(reach.via)}{where}"
        if reach.nested_only:
            how += " (its nested wrapper functions only)"
        console.print(
            Styled(printable(f"{path}:{qualname}"), style="bold") + Styled(printable(f"  {how}")), soft_wrap=True
        )
    errors = project.errors
    for error in errors:
        console.print(Styled(printable(f"{error.path}: not analysed: {error.message}"), style="yellow"), soft_wrap=True)
    console.print(Styled(f"{len(project.root_list)} regions, {len(reached)} more functions reached.", style="bold"))


class ConfirmProgress:
    """`--confirm`'s progress bar over targets, on stderr and only on a terminal."""

    def __init__(self, console: Console) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

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
        self.bar.update(self.task, advance=1, description=printable(label))

    def stop(self) -> None:
        self.bar.stop()


def render_confirm_summary(console: Console, targets: list[TargetReport], findings: list[Finding]) -> None:
    """Per-target table and notes, what the recompile probe saw, and the totals `--confirm` is about."""
    from rich import box
    from rich.table import Table

    per_target = Table(title="Targets run under torch.compile", title_justify="left")
    for column in ("target", "outcome", "graphs", "breaks", "one graph", "recompiles"):
        per_target.add_column(column, overflow="fold")
    for target in targets:
        outcome = Styled(target.outcome, style="green" if target.outcome == "ok" else "red")
        cells = ["", "", "", ""]
        if target.outcome == "ok":
            one_graph = {True: "yes", False: "no", None: "? (--deep)"}[target.one_graph]
            cells = [str(target.graphs), str(target.breaks), one_graph, str(target.own_recompiles)]
        per_target.add_row(Styled(printable(target.label)), outcome, *cells)
    console.print(per_target)
    console.print(Styled(TARGET_LEGEND, style="dim"))  # not a caption: that would wrap to the table's width
    for target in targets:
        if target.error:
            console.print(Styled(printable(f"  {target.label}: {target.outcome}: {target.error}")), soft_wrap=True)
        elif target.fullgraph_error:
            note = printable(f"  {target.label}: fullgraph=True stops at {target.fullgraph_error}")
            console.print(Styled(note, style="dim"), soft_wrap=True)
        if target.cascade and target.outcome == "ok":
            console.print(Styled(f"  {target.label}: {totals_note(target.cascade)}", style="dim"), soft_wrap=True)
        if target.replayed_logging:
            count = target.replayed_logging
            note = printable(f"  {target.label}: {count} harmless breaks inside `logging` not counted: {REPLAYED}")
            console.print(Styled(note, style="dim"), soft_wrap=True)
        for variation in target.recompiles:
            if variation.get("not_probed"):
                line = printable(
                    f"  {target.label}: varying {variation['trigger']}: not probed: {variation['not_probed']}"
                )
                console.print(Styled(line, style="yellow"), soft_wrap=True)
                continue
            reason = f" ({variation['reasons'][0]})" if variation["reasons"] else ""
            counts = f"{variation['recompiled_calls']}/{variation['calls']} calls recompiled{reason}"
            seen = "no recompile" if variation["free_dims"] else counts
            line = printable(f"  {target.label}: varying {variation['trigger']}: {seen}")
            console.print(Styled(line), soft_wrap=True)
            if variation.get("why"):
                console.print(
                    Styled("      = why: ", style="dim") + Styled(printable(variation["why"])), soft_wrap=True
                )
            suggestion = Styled("      = suggest: ", style="dim") + Styled(
                printable(variation["suggestion"]), style="green"
            )
            console.print(suggestion, soft_wrap=True)
        for number, explained in enumerate(target.own_explained, 1):
            line = printable(f"  {target.label}: recompile {number} of its own call: {explained['why']}")
            console.print(Styled(line), soft_wrap=True)
    statuses = Counter(f.status for f in findings)
    totals = Table(title="Summary", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column, justify in (("", "left"), ("count", "right"), ("meaning", "left")):
        totals.add_column(column, justify=justify)  # type: ignore[arg-type]  # rich's Literal
    rows = [
        ("targets", len(targets), "run under torch.compile"),
        ("not checked", sum(t.outcome != "ok" for t in targets), "targets that did not run to the end (see above)"),
        ("breaks", sum(t.breaks for t in targets), "graph breaks Dynamo logged"),
        ("confirmed", statuses["confirmed"], "findings where Dynamo broke the graph"),
        ("not reproduced", statuses["not-reproduced"], "findings Dynamo traced without a break"),
        ("not traced", statuses["not-traced"], "findings that ran eagerly after an earlier break"),
        ("not run", statuses["not-run"], "findings these inputs never reached"),
        ("dynamic-only", statuses["dynamic-only"], "breaks and recompiles no rule predicted"),
        ("recompiles", sum(t.own_recompiles for t in targets), "during the targets' own calls (not the probe's)"),
    ]
    for name, count, meaning in rows:
        totals.add_row(name, str(count), Styled(meaning, style="dim"))
    console.print(totals)
