"""`--confirm --baseline FILE` as a CI gate, end to end: a clean baseline passes, an added `.item()` branch
or per-call counter fails naming its line, a removed break passes and `--update-baseline` records it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.confirm.report.baseline import compare, snapshot
from compile_lint.finding import Finding

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        y = self.lin(x)
        print("step")
        return y


def make():
    return (Net(), (torch.randn(4, 8),))
"""
ITEM_BRANCH = "        if y.sum().item() > 0:\n            y = y + 1\n"
COUNTER = "        self.calls += 1\n"


COMMAND = [sys.executable, "-m", "compile_lint.cli", "model.py", "--confirm", "--target", "model.py:make"]
COMMAND += ["--no-cache", "--format", "json", "-j", "1", "--baseline", "baseline.json"]


def gate(folder: Path, *extra: str) -> tuple[int, str]:
    process = subprocess.run(
        [*COMMAND, *extra],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    return process.returncode, process.stderr


def write(folder: Path, after_print: str = "", keep_print: bool = True, first: str = "") -> None:
    body = MODEL.replace('        print("step")\n', ('        print("step")\n' if keep_print else "") + after_print)
    body = body.replace("        y = self.lin(x)\n", first + "        y = self.lin(x)\n")
    (folder / "model.py").write_text(body, encoding="utf-8")


@pytest.mark.dynamo
def test_the_gate_fails_only_on_what_got_worse(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    write(tmp_path)
    code, stderr = gate(tmp_path)
    assert code == 0 and "wrote baseline.json" in stderr, stderr
    recorded = json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))
    assert recorded["torch"] and next(iter(recorded["regions"].values()))["breaks"] == 1
    assert [e["line"] for e in recorded["lines"].values()] == [13]  # the print
    code, stderr = gate(tmp_path)
    assert code == 0 and "nothing worse" in stderr, stderr

    write(tmp_path, ITEM_BRANCH)
    code, stderr = gate(tmp_path)
    assert code == 1, stderr
    assert "worse: model.py:14 `if y.sum().item() > 0:`: new break (0 -> 1)" in stderr, stderr

    write(tmp_path, first=COUNTER)  # before the break: after it, the resume function has no graph to guard
    code, stderr = gate(tmp_path)
    assert code == 1, stderr
    assert "worse: model.py:12 `self.calls += 1`: new recompile (0 -> 1)" in stderr, stderr

    write(tmp_path, keep_print=False)
    code, stderr = gate(tmp_path)
    assert code == 0, stderr
    assert 'better: model.py:13 `print("step")`: gone (1 breaks)' in stderr and "breaks 1 -> 0" in stderr, stderr
    code, stderr = gate(tmp_path, "--update-baseline")
    assert code == 0 and "wrote baseline.json" in stderr
    assert json.loads((tmp_path / "baseline.json").read_text(encoding="utf-8"))["lines"] == {}


def _finding(line: int, code: str, status: str = "confirmed") -> Finding:
    return Finding("m.py", line, 1, line, 2, code, "", status=status, function="Net.forward")


def test_lines_are_keyed_by_code_so_an_added_line_above_moves_nothing() -> None:
    source = {"m.py": ["def f():", "    print(1)"]}
    old = snapshot([_finding(2, "TCL201")], [], "2.13.0", source)
    shifted = {"m.py": ["def f():", "    x = 1", "    print(1)"]}
    new = snapshot([_finding(3, "TCL201"), _finding(2, "TCL101", "static")], [], "2.14.1", shifted)
    comparison = compare(old, new)
    assert comparison.worse == [] and comparison.better == []
    assert comparison.notes == ["the baseline was recorded with torch 2.13.0, this run uses 2.14.1"]
