"""`--html DIR`: one self-contained page (inline CSS and SVG, no script, nothing fetched when viewed).

Per measured target: a timeline of one profiled step (compiled graphs against the gaps between
them, each gap labelled with the break that caused it), bars of eager against compiled time and
of time per break, the input sets, and the findings. The profiler's Chrome traces sit beside it.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compile_lint import __version__, atomic
from compile_lint.finding import Finding
from compile_lint.reporters.text import cascade_note, owner_note
from compile_lint.reporters.timing_text import (
    agreement_detail,
    compile_cost,
    machine_line,
    ms,
    spread_line,
)

if TYPE_CHECKING:
    from compile_lint.confirm.session import TargetReport

WIDTH = 900  # SVG width in pixels
LABEL_WIDTH = 260
COLOURS = {"graph": "#2e7d32", "gap": "#e65100", "glue": "#ffb74d", "region": "#90caf9", "eager": "#607d8b"}

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f4f4f4; } .bad { color: #b71c1c; font-weight: bold; } .good { color: #2e7d32; }
.fix { background: #e8f5e9; padding: .5em 1em; border-left: 4px solid #2e7d32; }
.muted { color: #666; } .warn { color: #e65100; font-weight: bold; } svg text { font: 12px system-ui, sans-serif; }
"""


def write(directory: Path, targets: list[TargetReport], findings: list[Finding], environment: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    page = directory / "report.html"
    atomic.write_text(page, render(targets, findings, environment))
    return page


def render(targets: list[TargetReport], findings: list[Finding], environment: dict[str, Any]) -> str:
    measured = [t for t in targets if t.timing is not None]
    versions = (
        f"python {environment.get('python', '?')}, torch {environment.get('torch', '?')}, "
        f"device {environment.get('device', '?')}, compile-lint {__version__}"
    )
    body = [f"<h1>compile-lint: timing and coverage</h1><p class=muted>{escape(versions)}</p>"]
    if not measured:
        body.append("<p>No target was measured (none ran under --confirm).</p>")
    body += [section(target) for target in measured]
    body.append(findings_table(findings))
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>compile-lint timing</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>"
    )


def section(target: TargetReport) -> str:
    timing = target.timing or {}
    parts = [f"<h2>{escape(target.label)}</h2>"]
    if "error" in timing:
        return parts[0] + f"<p class=bad>not measured: {escape(timing['error'])}</p>"
    coverage = target.coverage
    if coverage and coverage.get("fix_first"):
        parts.append(f"<p class=fix><b>Fix first:</b> {escape(coverage['fix_first'])}</p>")
    parts.append(speed_summary(timing))
    parts.append(f"<p class=muted>{escape(machine_line(timing))}</p>")
    if "preempted" in timing["eager"]:
        parts.append(f"<p class=muted>{escape(spread_line(timing))}</p>")
    parts += [f"<p class=warn>Warning: {escape(warning)}</p>" for warning in timing.get("warnings", [])]
    parts.append("<h3>Eager vs compiled, median per call</h3>")
    parts.append(bars([("eager", timing["eager"]["median_ms"]), ("compiled", timing["compiled"]["median_ms"])]))
    if coverage and "error" not in coverage:
        shares = coverage["shares"]
        parts.append(
            f"<h3>One profiled step ({escape(ms(coverage['step_ms']))})</h3><p>{shares['compiled']:.0%} inside "
            f"compiled graphs, {shares['in_regions_eager']:.0%} in compiled regions but eager, "
            f"{shares['outside_regions']:.0%} outside any region; {coverage['graphs_per_step']} graphs and "
            f"{coverage['region_entries_per_step']} region entries per step.</p>"
        )
        parts.append(timeline(coverage["timeline"]))
        if coverage["breaks"]:
            parts.append("<h3>Time per graph break (per step)</h3>")
            parts.append(bars([(break_label(b["break"]), b["ms_per_step"]) for b in coverage["breaks"]]))
            parts.append(breaks_table(coverage["breaks"]))
        if coverage.get("trace"):
            trace = escape(coverage["trace"])
            parts.append(
                f"<p class=muted>Profiler trace: <a href='{trace}'>{trace}</a> "
                "(open it in Perfetto, ui.perfetto.dev, or chrome://tracing).</p>"
            )
    if timing.get("input_sets"):
        parts.append(input_sets_table(timing["input_sets"]))
    return "".join(parts)


def speed_summary(timing: dict[str, Any]) -> str:
    compiled, agreement = timing["compiled"], timing["agreement"]
    if agreement["ok"] is None:
        agree = f"<span class=warn>outputs not compared: {escape(agreement['message'])}</span>"
    elif agreement["ok"]:
        agree = "<span class=good>outputs agree</span>"
    else:
        agree = f"<span class=bad>outputs differ: {escape(agreement['message'])}</span>"
    unreliable = timing["eager"].get("unreliable") or compiled.get("unreliable")
    flag = " <span class=warn>(unreliable)</span>" if unreliable else ""
    return (
        f"<p>Speed-up <b>{timing['speedup']:.2f}x</b>{flag} ({escape(timing['backend'])}, "
        f"mode {escape(timing['mode'])}); "
        f"first compiled call {escape(ms(compiled['first_ms']))}: {escape(ms(compiled['compile_ms']))} compiling "
        f"({escape(compiled['cache'])} cache) and {escape(ms(compiled['run_ms']))} running; warm-cache compile "
        f"{escape(ms(timing['warm_compile']['compile_ms']))}; {agree} ({escape(agreement_detail(agreement))}).</p>"
    )


def break_label(brk: dict[str, Any]) -> str:
    return f"{brk['where']} {brk.get('gb_code') or brk['gb_type']}"


def bars(values: list[tuple[str, float]]) -> str:
    """A horizontal bar chart, one bar per (label, milliseconds)."""
    top = max((v for _, v in values), default=0.0) or 1.0
    row = 26
    height = row * len(values) + 6
    span = WIDTH - LABEL_WIDTH - 90
    shapes = []
    for index, (label, value) in enumerate(values):
        y = index * row + 3
        width = max(1.0, value / top * span)
        colour = COLOURS["graph"] if label == "compiled" else COLOURS["eager"] if label == "eager" else COLOURS["gap"]
        shapes.append(
            f"<text x=0 y={y + 16}>{escape(label[:40])}</text>"
            f"<rect class=bar x={LABEL_WIDTH} y={y} width={width:.1f} height={row - 6} fill='{colour}'>"
            f"<title>{escape(label)}: {escape(ms(value))}</title></rect>"
            f"<text x={LABEL_WIDTH + width + 6:.1f} y={y + 16}>{escape(ms(value))}</text>"
        )
    return f"<svg class=chart width={WIDTH} height={height} role=img>{''.join(shapes)}</svg>"


def timeline(data: dict[str, Any]) -> str:
    """Regions on top, compiled graphs (green) and gaps (orange: a break's; pale: region glue) below,
    gaps numbered and listed under the chart with their break."""
    step = data["step_ms"] or 1.0
    scale = WIDTH / step

    def x(value: float) -> float:
        return value * scale

    shapes = []
    for compile_id, start, end in data["regions"]:
        shapes.append(
            f"<rect class=region x={x(start):.1f} y=4 width={max(1.0, x(end - start)):.1f} height=10 "
            f"fill='{COLOURS['region']}' opacity=0.6><title>compiled region {escape(compile_id)}</title></rect>"
        )
    for start, end in data["graphs"]:
        shapes.append(
            f"<rect class=graph x={x(start):.1f} y=20 width={max(1.0, x(end - start)):.1f} height=30 "
            f"fill='{COLOURS['graph']}'><title>compiled graph: {escape(ms(end - start))}</title></rect>"
        )
    legend = []
    for number, gap in enumerate(data["gaps"], start=1):
        brk = gap.get("break")
        colour = COLOURS["gap"] if brk else COLOURS["glue"]
        label = break_label(brk) if brk else "region entry (no break)"
        ops = ", ".join(f"{name} {ms(value)}" for name, value in gap["ops"])
        shapes.append(
            f"<rect class=gap x={x(gap['start_ms']):.1f} y=20 width={max(1.0, x(gap['ms'])):.1f} height=30 "
            f"fill='{colour}'><title>gap {number}: {escape(ms(gap['ms']))}, {escape(label)}</title></rect>"
        )
        if brk:
            shapes.append(f"<text x={x(gap['start_ms']):.1f} y=66>{number}</text>")
            legend.append(
                f"<li>gap {number}: {escape(ms(gap['ms']))} at {escape(label)}; eager ops: {escape(ops)}; "
                f"Dynamo runtime (guards, graph entry): {escape(ms(gap['runtime_ms']))}</li>"
            )
    svg = f"<svg class=timeline width={WIDTH} height=72 role=img>{''.join(shapes)}</svg>"
    key = (
        f"<p class=muted><span style='color:{COLOURS['graph']}'>&#9632;</span> compiled graph "
        f"<span style='color:{COLOURS['gap']}'>&#9632;</span> gap after a graph break "
        f"<span style='color:{COLOURS['glue']}'>&#9632;</span> region glue "
        f"<span style='color:{COLOURS['region']}'>&#9632;</span> compiled region; "
        f"step {escape(ms(step))}</p>"
    )
    return svg + key + (f"<ol class=gaps>{''.join(legend)}</ol>" if legend else "")


def breaks_table(ranked: list[dict[str, Any]]) -> str:
    rows = []
    for rank, item in enumerate(ranked, start=1):
        brk = item["break"]
        finding = brk.get("finding")
        static = (
            f"{escape(finding['code'])} [{escape(finding['status'])}] {escape(finding['message'])}"
            f"<br><i>fix:</i> {escape(finding['fix'])}"
            if finding
            else "no static finding on this line"
        )
        ops = ", ".join(f"{escape(name)} {escape(ms(value))}" for name, value in item["ops"][:3])
        rows.append(
            f"<tr><td>{rank}</td><td>{escape(brk['where'])}</td><td>{escape(brk.get('gb_code') or '')} "
            f"{escape(brk['gb_type'])}</td><td>{escape(ms(item['ms_per_step']))} ({item['share_of_step']:.0%}), "
            f"{item['gaps_per_step']:g} gaps</td>"
            f"<td>{ops}</td><td>{escape(ms(item['runtime_ms_per_step']))}</td>"
            f"<td>{escape(compile_cost(item.get('compile')))}</td><td>{static}</td></tr>"
        )
    columns = ("#", "break", "GB", "cost per step", "eager ops", "Dynamo runtime", "compile", "static finding")
    head = "<tr>" + "".join(f"<th>{column}</th>" for column in columns) + "</tr>"
    return f"<table class=breaks>{head}{''.join(rows)}</table>"


def input_sets_table(rows: list[dict[str, Any]]) -> str:
    head = (
        "<tr><th>set</th><th>inputs</th><th>first call</th><th>recompiled</th><th>median</th>"
        "<th>cache entries</th><th>RSS</th><th>device peak</th><th>flags</th></tr>"
    )
    body = []
    for row in rows:
        reason = f": {row['recompile_reasons'][0]}" if row["recompile_reasons"] else ""
        recompiled = f"yes, {ms(row['compile_ms'])}{reason}" if row["recompiled"] else "no"
        device = "-" if row["device_peak_mb"] is None else f"{row['device_peak_mb']:.0f} MB"
        flags = ", ".join(row["flags"])
        inputs = "; ".join(row["inputs"]) + (f" ({row['error']})" if "error" in row else "")
        body.append(
            f"<tr><td>#{row['index']}</td><td>{escape(inputs)}</td><td>{escape(ms(row['first_ms']))}</td>"
            f"<td>{escape(recompiled)}</td><td>{escape(ms(row['median_ms']))}</td><td>{row['cache_entries']}</td>"
            f"<td>{row['rss_mb']:.0f} MB (+{row['rss_growth_mb']:.0f})</td><td>{device}</td>"
            f"<td class={'bad' if flags else 'good'}>{escape(flags or 'ok')}</td></tr>"
        )
    return f"<h3>Input sets (in order, one compiled function)</h3><table class=sets>{head}{''.join(body)}</table>"


def findings_table(findings: list[Finding]) -> str:
    if not findings:
        return "<h2>Findings</h2><p>No findings.</p>"
    rows = "".join(
        f"<tr><td>{escape(f.path)}:{f.line}</td><td>{escape(f.code)}</td><td>{escape(f.status)}</td>"
        f"<td>{escape(f.message)}</td><td>{_owner(f)}</td><td>{_cascade(f)}</td></tr>"
        for f in findings
    )
    head = "<tr><th>where</th><th>code</th><th>status</th><th>message</th><th>owner</th><th>cascade</th></tr>"
    return f"<h2>Findings</h2><table class=findings>{head}{rows}</table>"


def _owner(finding: Finding) -> str:
    owner = finding.details.get("owner")
    return escape(owner_note(owner, finding.details.get("fix_at"))) if owner else ""


def _cascade(finding: Finding) -> str:
    cascade = finding.details.get("cascade")
    return escape(cascade_note(cascade)) if cascade else ""
