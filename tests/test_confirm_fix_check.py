"""`--confirm` checks each confirmed break's automatic fix under real Dynamo, in a temporary copy."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compile_lint.confirm.report.fix_check import fix_for
from compile_lint.engine import lint_source
from fixture_support import ROOT

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="--confirm needs torch")

# Three confirmed breaks with a fixable code: an `.item()` branch whose else-branch keeps an `.item()`
# (no rewrite is proven there), an `.item()` branch no codemod can rewrite (its body is a print), and
# that print, which the guard fix removes. Line 10 never runs.
MODEL = """\
import torch


@torch.compile
def step(x):
    y = x * 2
    if y.sum().item() > 0:
        z = y * 3
    else:
        z = y / y.norm().item()
    return z


@torch.compile
def talk(x):
    if x.sum().item() > 0:
        print("positive")
    return x + 1


def make():
    return [(step, (torch.ones(4, 8),)), (talk, (torch.ones(3),))]
"""


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--confirm", "--deep", "--no-cache", *args],  # fix checks: --deep
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def findings_by_line(process: subprocess.CompletedProcess[str]) -> dict[int, dict[str, Any]]:
    assert process.stdout.strip(), process.stderr
    return {f["line"]: f for f in json.loads(process.stdout)["findings"]}


PROVEN = """\
import torch


@torch.compile
def step(x: torch.Tensor):
    y = x * 2
    if y.sum().item() > 0:
        return y + 1
    return y * 3


def make():
    return (step, (torch.ones(4, 8),))
"""


@needs_torch
@pytest.mark.dynamo
def test_a_proven_torch_where_fix_compiles_without_its_break(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(PROVEN)
    process = run_cli(tmp_path, "--format", "json", "--target", "model:make", "model.py")
    finding = findings_by_line(process)[7]
    assert finding["status"] == "confirmed"
    check = finding["details"]["fix_check"]
    assert check["fix"] == "unsafe" and "torch.where" in check["title"]
    assert check["compiles_without_break"] is True
    assert check["fixed_lines"] == [7, 7]  # the if/return/return became one `return torch.where(...)`
    assert (tmp_path / "model.py").read_text() == PROVEN


@needs_torch
@pytest.mark.dynamo
def test_a_fix_that_keeps_the_break_and_a_site_without_a_fix(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    findings = findings_by_line(run_cli(tmp_path, "--format", "json", "--target", "model:make", "model.py"))
    for line in (7, 16):
        assert findings[line]["status"] == "confirmed"
        assert findings[line]["details"]["fix_check"] == {
            "fix": "none",
            "not_checked": "no automatic fix applies to this site",
        }
    guarded = findings[17]["details"]["fix_check"]
    assert guarded["fix"] == "unsafe" and guarded["compiles_without_break"] is True
    assert guarded["fixed_lines"] == [17, 18]
    assert findings[10]["status"] == "not-run" and "fix_check" not in findings[10]["details"]
    assert (tmp_path / "model.py").read_text() == MODEL

    text = run_cli(tmp_path, "--target", "model:make", "model.py").stdout
    assert "fix not checked: no automatic fix applies to this site" in text
    assert "fix checked (unsafe): compiles without this break" in text


@needs_torch
@pytest.mark.dynamo
def test_a_fixed_helper_is_seen_by_the_module_that_imports_it(tmp_path: Path) -> None:
    """The fixed file is loaded under its module's name, so the target in another module uses it."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(
        "import torch\n\n\ndef helper(y: torch.Tensor):\n    if y.sum().item() > 0:\n        return y + 1\n    return y * 3\n"
    )
    (package / "model.py").write_text(
        "import torch\n\nfrom pkg.helpers import helper\n\n\n@torch.compile\ndef run(x):\n    return helper(x * 2)\n"
    )
    finding = findings_by_line(run_cli(tmp_path, "--format", "json", "pkg"))[5]
    assert finding["path"] == "pkg/helpers.py" and finding["status"] == "confirmed"
    assert finding["details"]["fix_check"]["compiles_without_break"] is True


@pytest.mark.parametrize("flag", ["--fix", "--unsafe-fixes", "--diff"])
def test_fix_flags_with_confirm_are_a_usage_error(flag: str) -> None:
    process = run_cli(ROOT, flag, "fixtures/seed_step.py")
    assert process.returncode == 2
    assert len(process.stderr.strip().splitlines()) == 1 and "do not combine with --confirm" in process.stderr
    assert not process.stdout


def test_rewritten_lines_skip_the_added_torch_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from torch import compile\n\n\n@compile\ndef f(x):\n    print(x)\n    return x + 1\n")
    (finding,) = lint_source(path.read_text(), str(path))
    fixed = fix_for(finding)
    assert not isinstance(fixed, str)
    lines = fixed.text.splitlines()
    assert lines[0] == "import torch"
    assert [lines[n - 1].strip() for n in range(fixed.lines[0], fixed.lines[1] + 1)] == [
        "if not torch.compiler.is_compiling():",
        "print(x)",
    ]


def test_a_fix_whose_rewritten_lines_still_break_is_reported_as_such(tmp_path: Path) -> None:
    """No codemod is known to keep its break any more (the unsafe ones need proofs); the verdict stays checked."""
    from compile_lint.confirm.report.fix_check import FixedFile, _judge

    (finding,) = [f for f in lint_source(MODEL, "model.py") if f.line == 7]
    fixed = FixedFile("unsafe", "torch.where", MODEL, "utf-8", (7, 7))
    copy = str(tmp_path / "model.py")
    brk = {"user_file": copy, "user_line": 7, "user_function": "step", "frame_skip": False, "chain": []}
    reply = {"outcome": "ok", "runs": [{"outcome": "ok", "breaks": [{**brk, "gb_code": "GB0124", "gb_type": "t"}]}]}
    verdict = _judge(finding, fixed, copy, reply)
    assert verdict["compiles_without_break"] is False
    assert verdict["still_breaks"] == {"line": 7, "gb_code": "GB0124", "gb_type": "t"}
    no_break = {"outcome": "ok", "runs": [{"outcome": "ok", "breaks": [], "executed": {copy: [7]}}]}
    assert _judge(finding, fixed, copy, no_break)["compiles_without_break"] is True
