"""`--format github`: GitHub Actions workflow commands, read back the way the runner reads them.

The runner's grammar (actions/runner ActionCommand): `::name k=v,k=v::data`; in data `%25`, `%0D`,
`%0A` stand for `%`, CR, LF; in property values also `%3A` and `%2C` for `:` and `,`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from compile_lint.finding import Finding, Severity, gb_page
from compile_lint.reporters import github
from fixture_support import ROOT

COMMAND = re.compile(r"^::(?P<name>\w+) (?P<properties>[^:]*)::(?P<data>.*)$")


def unescape(value: str, *, in_property: bool) -> str:
    pairs = [("%0D", "\r"), ("%0A", "\n")] + ([("%3A", ":"), ("%2C", ",")] if in_property else [])
    for escaped, raw in [*pairs, ("%25", "%")]:
        value = value.replace(escaped, raw)
    return value


def parse(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    properties = dict(item.split("=", 1) for item in match["properties"].split(","))
    properties = {key: unescape(value, in_property=True) for key, value in properties.items()}
    return match["name"], properties, unescape(match["data"], in_property=False)


def test_seed_fixture_annotation() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "compile_lint", "--no-cache", "--format", "github", "fixtures/seed_step.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
    assert result.returncode == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("::warning file=fixtures/seed_step.py,line=9,col=8,endLine=9,endColumn=22,title=TCL101::")
    name, properties, message = parse(line)
    assert name == "warning" and properties["title"] == "TCL101"
    first, predicts, fix = message.split("\n")
    assert predicts == "predicts: GB0124 (https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html)"
    assert "`.item()`" in first and fix.startswith(
        "fix: Keep the condition a tensor: select with `torch.where(y.sum() > 0"
    )


@pytest.mark.parametrize(("severity", "command"), [("error", "error"), ("warning", "warning"), ("info", "notice")])
def test_severity_picks_the_command(severity: Severity, command: str) -> None:
    finding = Finding("m.py", 1, 1, 1, 2, "TCL101", "m", severity=severity)
    assert parse(github.render([finding]))[0] == command


def test_escaping_round_trips_through_the_runner_grammar() -> None:
    path = "we,ird:dir/100%/m.py"
    message = "50% of x\r\nis :: lost, maybe"
    finding = Finding(path, 3, 5, 4, 7, "TCL103", message, ["GB0170"], fix="a, b: c", status="confirmed")
    (line,) = github.render([finding]).splitlines()
    _, properties, data = parse(line)
    assert properties == {
        "file": path,
        "line": "3",
        "col": "5",
        "endLine": "4",
        "endColumn": "7",
        "title": "TCL103 [confirmed]",
    }
    assert data == f"{message}\npredicts: GB0170 ({gb_page('GB0170')})\nfix: a, b: c"


def test_one_command_per_finding_and_nothing_when_clean() -> None:
    findings = [Finding("a.py", n, 1, n, 2, "TCL201", "print") for n in (1, 2, 3)]
    assert len(github.render(findings).splitlines()) == 3
    assert github.render([]) == ""
