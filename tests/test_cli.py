"""The command line as users run it: a subprocess, real files, exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.engine import lint
from fixture_support import FIXTURES

BAD_STEP = "import torch\n\n@torch.compile\ndef step(x):\n    return x * x.sum().item(){noqa}\n"
FINDING_KEYS = {
    "path",
    "line",
    "col",
    "end_line",
    "end_col",
    "code",
    "message",
    "gb_codes",
    "severity",
    "fix",
    "status",
}


def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compile_lint", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=120,
    )


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_findings_exit_1_with_location_gb_code_and_fix(tmp_path: Path) -> None:
    write(tmp_path, "step.py", BAD_STEP.format(noqa=""))
    result = run("step.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 1
    assert "step.py:5:16: TCL101" in result.stdout
    assert "GB0124" in result.stdout and "fix:" in result.stdout
    assert "^^^^" in result.stdout  # the span is marked under the source line
    assert "Found 1 finding" in result.stdout


def test_exit_zero_reports_findings_but_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "step.py", BAD_STEP.format(noqa=""))
    result = run("step.py", "--no-cache", "--exit-zero", cwd=tmp_path)
    assert result.returncode == 0 and "TCL101" in result.stdout


def test_clean_file_exits_0(tmp_path: Path) -> None:
    write(tmp_path, "ok.py", "import torch\n\n@torch.compile\ndef f(x):\n    return x + 1\n")
    result = run("ok.py", "--no-cache", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert "All clear" in result.stdout


def test_usage_error_exits_2() -> None:
    result = run("--format", "yaml")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_unparsable_and_undecodable_files_get_one_diagnostic_each_and_the_run_goes_on(tmp_path: Path) -> None:
    write(tmp_path, "broken.py", "def forward(self, x)\n    return x\n")
    write(tmp_path, "latin.py", b"x = '\xff\xfe'\n")
    write(tmp_path, "step.py", BAD_STEP.format(noqa=""))
    result = run(".", "--no-cache", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    findings = json.loads(result.stdout)["findings"]
    by_file = {(Path(f["path"]).name, f["code"]) for f in findings}
    assert by_file == {("broken.py", "TCL000"), ("latin.py", "TCL000"), ("step.py", "TCL101")}
    broken = next(f for f in findings if f["path"].endswith("broken.py"))
    assert broken["severity"] == "error" and "syntax error" in broken["message"] and broken["line"] == 1


def test_json_schema(tmp_path: Path) -> None:
    write(tmp_path, "step.py", BAD_STEP.format(noqa=""))
    document = json.loads(run("step.py", "--no-cache", "--format", "json", cwd=tmp_path).stdout)
    assert set(document) == {"version", "findings"}
    (finding,) = document["findings"]
    assert set(finding) >= FINDING_KEYS
    assert finding["code"] == "TCL101" and finding["gb_codes"] == ["GB0124"] and finding["status"] == "static"
    assert (finding["line"], finding["col"], finding["end_line"], finding["end_col"]) == (5, 16, 5, 30)


@pytest.mark.parametrize(
    ("noqa", "reported"), [("  # noqa", False), ("  # noqa: TCL101", False), ("  # noqa: TCL201", True)]
)
def test_noqa(tmp_path: Path, noqa: str, reported: bool) -> None:
    write(tmp_path, "step.py", BAD_STEP.format(noqa=noqa))
    result = run("step.py", "--no-cache", cwd=tmp_path)
    assert ("TCL101" in result.stdout) is reported
    assert result.returncode == int(reported)


def test_select_and_ignore_by_prefix() -> None:
    target = str(FIXTURES / "printing.py")
    assert run(target, "--no-cache", "--select", "TCL2").returncode == 1
    assert run(target, "--no-cache", "--select", "TCL1").returncode == 0
    assert run(target, "--no-cache", "--ignore", "TCL20").returncode == 0


def test_static_path_never_imports_torch(tmp_path: Path) -> None:
    """A torch that refuses to import, first on the path: linting must not notice."""
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('compile-lint imported torch on the static path')\n")
    env = {"PYTHONPATH": f"{tmp_path / 'fake'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = run(str(FIXTURES), "--no-cache", env=env)
    assert result.returncode == 1, result.stderr
    assert "TCL101" in result.stdout and "Traceback" not in result.stderr
    assert run("rules", env=env).returncode == 0


def test_cache_gives_the_same_findings_and_notices_changes(tmp_path: Path) -> None:
    path = write(tmp_path, "step.py", BAD_STEP.format(noqa=""))
    config = Config(root=tmp_path)
    cold = lint([str(tmp_path)], config)
    warm = lint([str(tmp_path)], config)
    assert (cold.cached, warm.cached) == (0, 1)
    assert warm.findings == cold.findings and len(cold.findings) == 1
    path.write_text(BAD_STEP.format(noqa="") + "\nprint('changed')\n")
    changed = lint([str(tmp_path)], config)
    assert changed.cached == 0 and changed.findings == cold.findings
    assert (tmp_path / ".compile_lint_cache" / ".gitignore").exists()


def test_parallel_jobs_give_the_same_findings() -> None:
    config = Config(root=FIXTURES)
    serial = lint([str(FIXTURES)], config, jobs=1, use_cache=False)
    parallel = lint([str(FIXTURES)], config, jobs=2, use_cache=False)
    assert parallel.findings == serial.findings and len(serial.findings) > 5


CONTEXT_GET = (
    "import contextvars\n\nimport torch\n\nV = contextvars.ContextVar('v', default=1.0)\n\n\n"
    "@torch.compile\ndef f(x):\n    return x * V.get()\n"
)


def test_torch_version_option_predicts_for_that_release_over_the_config(tmp_path: Path) -> None:
    """`ContextVar.get()` breaks on torch 2.13 (GB0156) and traces on 2.14: the option decides, whatever
    `torch-version` the pyproject.toml says, and a version that is no release is refused."""
    write(tmp_path, "pyproject.toml", '[tool.compile-lint]\ntorch-version = "2.14"\n')
    write(tmp_path, "step.py", CONTEXT_GET)
    older = run("step.py", "--no-cache", "--format", "json", "--torch-version", "2.13", cwd=tmp_path)
    newer = run("step.py", "--no-cache", "--format", "json", "--torch-version", "2.14.1", cwd=tmp_path)
    assert [f["gb_codes"] for f in json.loads(older.stdout)["findings"]] == [["GB0156"]]
    assert json.loads(newer.stdout)["findings"] == []
    refused = run("step.py", "--torch-version", "latest", cwd=tmp_path)
    assert refused.returncode == 2 and "--torch-version" in refused.stderr
