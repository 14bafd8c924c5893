"""`--timing` / `--coverage` as rich tables: speed, shapes and input sets, coverage, breaks by cost."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from compile_lint.reporters.escape import printable

if TYPE_CHECKING:
    from compile_lint.confirm.session import TargetReport


def ms(value: float | None) -> str:
    if value is None or value != value:  # None or NaN
        return "-"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 1:
        return f"{value:.2f} ms"
    return f"{value * 1e3:.1f} us"


def add_row(table: Table, *cells: str | Text) -> None:
    """Cells as plain text: labels, guard reasons and statuses may hold `[...]`, which is not markup."""
    table.add_row(*(Text(printable(cell)) if isinstance(cell, str) else cell for cell in cells))


def render(console: Console, targets: list[TargetReport]) -> None:
    measured = [t for t in targets if t.timing is not None]
    if not measured:
        console.print(Text("No target was measured (none ran under --confirm).", style="yellow"))
        return
    render_speed(console, measured)
    for target in measured:
        if target.timing and "input_sets" in target.timing:
            render_input_sets(console, target.label, target.timing["input_sets"])
    covered = [t for t in measured if t.coverage is not None]
    if covered:
        render_coverage(console, covered)
        for target in covered:
            render_breaks(console, target)


def render_speed(console: Console, targets: list[TargetReport]) -> None:
    table = Table(title="Eager vs compiled (same inputs; median of steady-state calls)", title_justify="left")
    for column in ("target", "backend", "eager", "compiled", "speed-up", "first call", "warm-cache compile", "outputs"):
        table.add_column(column, overflow="fold")
    notes: list[Text] = []
    for target in targets:
        timing = target.timing or {}
        if "error" in timing:
            add_row(table, target.label, "", "", "", "", "", "", Text("not measured", style="red"))
            notes.append(Text(f"  {target.label}: {timing['error']}", style="red"))
            continue
        eager, compiled, agreement = timing["eager"], timing["compiled"], timing["agreement"]
        first = f"{ms(compiled['first_ms'])} ({ms(compiled['compile_ms'])} compile, {compiled['cache']})"
        warm = timing["warm_compile"]
        agree = agreement_cell(agreement)
        unreliable = bool(eager.get("unreliable") or compiled.get("unreliable"))
        speedup = Text(
            f"{timing['speedup']:.2f}x" + " (unreliable)" * unreliable,
            style="yellow" if unreliable else "green" if timing["speedup"] >= 1 else "red",
        )
        add_row(
            table,
            target.label,
            f"{timing['backend']} ({timing['mode']})",
            ms(eager["median_ms"]) + " ~" * eager["noisy"] + " !" * bool(eager.get("unreliable")),
            ms(compiled["median_ms"]) + " ~" * compiled["noisy"] + " !" * bool(compiled.get("unreliable")),
            speedup,
            first,
            f"{ms(warm['compile_ms'])} ({warm['cache']})",
            agree,
        )
        for mode in ("eager", "compiled"):
            if timing[mode]["noisy"]:
                spread = f"IQR {ms(timing[mode]['iqr_ms'])} over {timing[mode]['calls']} calls"
                notes.append(Text(f"  {target.label}: {mode} timing is noisy (~): {spread}", style="yellow"))
        notes.append(Text(f"  {target.label}: {machine_line(timing)}", style="dim"))
        if "preempted" in eager:
            notes.append(Text(f"  {target.label}: {spread_line(timing)}", style="dim"))
        for warning in timing.get("warnings", []):  # measure.py's timing_warnings
            notes.append(Text(f"  {target.label}: warning: {warning}", style="bold yellow"))
        if agreement["ok"] is False:
            notes.append(Text(f"  {target.label}: outputs differ: {agreement['message']}", style="red"))
        notes.append(Text(f"  {target.label}: {agreement_detail(agreement)}", style="dim"))
    console.print(table)
    for note in notes:
        console.print(Text(printable(note.plain), style=note.style), soft_wrap=True)


def machine_line(timing: dict[str, Any]) -> str:
    """The load, CPUs and threads the timings were taken with."""
    machine = timing.get("machine")
    if not machine:
        return "machine state not recorded"
    load = ", ".join(f"{value:.2f}" for value in machine["load_average"])
    after = machine["load_average_after"][0]
    threads = machine["threads"]
    affinity = machine.get("cpu_affinity")
    pinned = f" (CPUs {', '.join(map(str, affinity))})" if affinity else ""
    return (
        f"measured with {threads} thread{'s' * (threads != 1)} ({machine['threads_from']}), load average {load} "
        f"(1, 5, 15 min; {after:.2f} after the steady state), {machine['cpus_usable']} usable CPUs{pinned} "
        f"of {machine['cpus']}"
    )


def spread_line(timing: dict[str, Any]) -> str:
    """How each mode's steady state was taken: calls, the share preempted and left out, the blocks' spread."""
    parts = []
    for mode in ("eager", "compiled"):
        figure = timing[mode]
        low, high = figure["block_quartiles_ms"]
        parts.append(
            f"{mode} {figure['calls']} calls, {figure['preempted']:.0%} preempted by other processes and left out "
            f"of the median, {figure['blocks']} blocks (quartiles of their medians {ms(low)}, {ms(high)})"
        )
    return "steady state: " + "; ".join(parts)


def agreement_cell(agreement: dict[str, Any]) -> Text:
    """agree / DIFFER / not compared (nothing in the outputs could be compared: not a difference)."""
    if agreement["ok"] is None:
        return Text("not compared", style="yellow")
    return Text("agree", style="green") if agreement["ok"] else Text("DIFFER", style="bold red")


def agreement_detail(agreement: dict[str, Any]) -> str:
    """The errors over what was compared, and what was not."""
    compared = agreement.get("tensors_compared")
    over = f" over {compared} tensor{'s' * (compared != 1)}" if compared is not None else ""
    text = (
        f"max abs error {agreement['max_abs_error']:.3g}, max rel error {agreement['max_rel_error']:.3g}{over} "
        f"({_tolerance(agreement['tolerance'])})"
    )
    skipped = agreement.get("not_compared") or []
    if skipped:
        shown = ", ".join(skipped[:3]) + (f" and {len(skipped) - 3} more" if len(skipped) > 3 else "")
        text += f"; not compared (neither agreeing nor differing): {shown}"
    return text


def _tolerance(tolerance: Any) -> str:
    return tolerance if isinstance(tolerance, str) else f"rtol {tolerance['rtol']:g}, atol {tolerance['atol']:g}"


def render_input_sets(console: Console, label: str, rows: list[dict[str, Any]]) -> None:
    table = Table(title=printable(f"Input sets of {label} (in order, one compiled function)"), title_justify="left")
    for column in ("set", "inputs", "first call", "recompiled", "median", "cache entries", "RSS", "flags"):
        table.add_column(column, overflow="fold")
    for row in rows:
        recompiled = "no"
        if row["recompiled"]:
            reason = f": {row['recompile_reasons'][0]}" if row["recompile_reasons"] else ""
            recompiled = f"yes, {ms(row['compile_ms'])}{reason}"
        memory = f"{row['rss_mb']:.0f} MB (+{row['rss_growth_mb']:.0f})"
        if row["device_peak_mb"] is not None:
            memory += f", device peak {row['device_peak_mb']:.0f} MB"
        flags = Text(", ".join(row["flags"]) or "ok", style="red" if row["flags"] else "green")
        inputs = "; ".join(row["inputs"]) + (f" ({row['error']})" if "error" in row else "")
        cells = [f"#{row['index']}", inputs, ms(row["first_ms"]), recompiled, ms(row["median_ms"])]
        add_row(table, *cells, str(row["cache_entries"]), memory, flags)
    console.print(table)


def render_coverage(console: Console, targets: list[TargetReport]) -> None:
    table = Table(title="Coverage of a profiled steady-state step", title_justify="left")
    for column in ("target", "step", "in compiled graphs", "in regions, eager", "outside regions", "graphs", "entries"):
        table.add_column(column, overflow="fold")
    for target in targets:
        coverage = target.coverage or {}
        if "error" in coverage:
            add_row(table, target.label, Text(coverage["error"], style="red"), "", "", "", "", "")
            continue
        shares = coverage["shares"]
        add_row(
            table,
            target.label,
            ms(coverage["step_ms"]),
            f"{shares['compiled']:.0%}",
            f"{shares['in_regions_eager']:.0%}",
            f"{shares['outside_regions']:.0%}",
            str(coverage["graphs_per_step"]),
            str(coverage["region_entries_per_step"]),
        )
    console.print(table)


def render_breaks(console: Console, target: TargetReport) -> None:
    coverage = target.coverage or {}
    ranked = coverage.get("breaks", [])
    if not ranked:
        return
    title = printable(f"Graph breaks of {target.label} by measured cost per step")
    table = Table(title=title, title_justify="left")
    for column in ("#", "break", "cost", "eager ops in its gaps", "Dynamo runtime", "compile", "static finding"):
        table.add_column(column, overflow="fold")
    for rank, item in enumerate(ranked, start=1):
        brk = item["break"]
        finding = brk.get("finding")
        ops = ", ".join(f"{name} {ms(value)}" for name, value in item["ops"][:3])
        add_row(
            table,
            str(rank),
            f"{brk['where']} {brk.get('gb_code') or ''} {brk['gb_type']}",
            f"{ms(item['ms_per_step'])} ({item['share_of_step']:.0%}), {item['gaps_per_step']:g} gaps",
            ops,
            ms(item["runtime_ms_per_step"]),
            compile_cost(item.get("compile")),
            f"{finding['code']} [{finding['status']}]" if finding else "none",
        )
    console.print(table)
    if coverage.get("fix_first"):
        fix_first = Text(printable(coverage["fix_first"]), style="green")
        console.print(Text("  fix first: ", style="bold") + fix_first, soft_wrap=True)


def compile_cost(compile_: dict[str, Any] | None) -> str:
    """The compile seconds of the frames a break was logged in and of the resume frames it created."""
    if not compile_:
        return "-"
    parts = [f"frame {f['compile_id']} {f['seconds']:.2f} s" for f in compile_["frames"]]
    parts += [f"resume {f['compile_id']} {f['seconds']:.2f} s" for f in compile_["resume_frames"]]
    return f"{compile_['compile_s']:.2f} s ({', '.join(parts)})" if parts else "-"
