"""`--format github`: one GitHub Actions workflow command per finding, shown as a PR annotation.

`::warning file=F,line=L,col=C,endLine=EL,endColumn=EC,title=TCL101::message`; severity error
and info become `::error` and `::notice`. Columns are 1-based, endColumn one past the span (as
in the other formats); GitHub uses the columns only for single-line spans. A notebook finding
annotates the file as a whole and names its cell, line and column in the title.
"""

from __future__ import annotations

from compile_lint.finding import Finding, gb_reference

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(value: str) -> str:
    """The message: the runner reads `%`, CR and LF as escapes or the end of the command."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """A property value: `,` separates properties and `:` would end them, so both are escaped too."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command(finding: Finding) -> str:
    """A notebook's lines are not those of its JSON file: its findings annotate the file, the cell in the title."""
    title = finding.code if finding.status == "static" else f"{finding.code} [{finding.status}]"
    properties: dict[str, str | int] = {"file": finding.path}
    if finding.cell is None:
        properties.update(line=finding.line, col=finding.col, endLine=finding.end_line, endColumn=finding.end_col)
    else:
        title += f" (cell {finding.cell}, line {finding.line}, column {finding.col})"
    properties["title"] = title
    listed = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    return f"::{COMMAND[finding.severity]} {listed}::{escape_data(annotation(finding))}"


def annotation(finding: Finding) -> str:
    lines = [finding.message]  # the code is the title
    if finding.path_condition != "default":
        lines.append(f"only when: {finding.path_condition}")
    if finding.gb_codes:
        lines.append(f"predicts: {', '.join(gb_reference(code) for code in finding.gb_codes)}")
    if finding.fix:
        lines.append(f"fix: {finding.fix}")
    return "\n".join(lines)


def render(findings: list[Finding]) -> str:
    return "\n".join(command(finding) for finding in findings)
