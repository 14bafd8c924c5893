"""Ruff-like text output: location, code, message, the source line with the span marked, GB and fix."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.text import Text

from compile_lint.finding import Finding, gb_page

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
        console.print(head, soft_wrap=True)
        source = _source_line(finding.path, finding.line, sources)
        if source is not None:
            gutter = f"{finding.line:>5} | "
            console.print(Text(gutter, style="dim") + Text(source), soft_wrap=True, highlight=False)
            end = finding.end_col if finding.end_line == finding.line else len(source) + 1
            width = max(1, end - finding.col)
            console.print(Text(" " * (len(gutter) + finding.col - 1) + "^" * width, style=STYLE[finding.severity]))
        if finding.gb_codes:
            pages = ", ".join(f"{code} ({gb_page(code)})" for code in finding.gb_codes)
            console.print(Text("      = predicts: ", style="dim") + Text(pages), soft_wrap=True)
        if finding.fix:
            console.print(Text("      = fix: ", style="dim") + Text(finding.fix, style="green"), soft_wrap=True)
        console.print()
    console.print(summary_line(findings, files))


def summary_line(findings: list[Finding], files: int) -> Text:
    if not findings:
        return Text(f"All clear: no findings in {files} file{'s' * (files != 1)}.", style="bold green")
    counts = Counter(f.code for f in findings)
    detail = ", ".join(f"{code} x{count}" for code, count in sorted(counts.items()))
    plural = "s" * (len(findings) != 1)
    return Text(f"Found {len(findings)} finding{plural} in {files} file{'s' * (files != 1)} ({detail}).", style="bold")
