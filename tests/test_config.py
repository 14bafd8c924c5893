"""`[tool.compile-lint]`: found by walking up, and every key changes what the CLI reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.config import ConfirmConfig, find_pyproject, load_config
from compile_lint.rules import all_rules

HEADER = "import torch\nfrom torch import nn\n\n"  # as in the rules' own example tests
ITEM_AND_PRINT = "import torch\n\n\n@torch.compile\ndef step(x):\n    print(x)\n    return x * x.sum().item()\n"


def run(paths: list[str], cwd: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compile_lint", "--no-cache", "--format", "json", *options, *paths],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )


def codes(result: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    """(path, code) of each finding; fails on anything but a normal run."""
    assert result.returncode in (0, 1), result.stderr
    return {(Path(f["path"]).as_posix(), f["code"]) for f in json.loads(result.stdout)["findings"]}


def project(root: Path, table: str, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f"[project]\nname = 'demo'\n\n[tool.compile-lint]\n{table}\n")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_found_by_walking_up_from_a_nested_path_past_a_pyproject_without_the_table(tmp_path: Path) -> None:
    root = project(tmp_path / "proj", 'ignore = ["TCL101"]', {"a/b/c/m.py": ITEM_AND_PRINT})
    (root / "a" / "pyproject.toml").write_text("[project]\nname = 'sub'\n")  # no [tool.compile-lint]
    assert find_pyproject(root / "a" / "b" / "c" / "m.py") == (root / "pyproject.toml").resolve()
    assert codes(run(["proj/a/b/c/m.py"], tmp_path)) == {("proj/a/b/c/m.py", "TCL201")}
    (root / "pyproject.toml").unlink()
    assert codes(run(["proj/a/b/c/m.py"], tmp_path)) == {("proj/a/b/c/m.py", "TCL201"), ("proj/a/b/c/m.py", "TCL101")}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('select = ["TCL2"]', {"TCL201"}),
        ('select = ["tcl1"]', {"TCL101"}),
        ('ignore = ["TCL201"]', {"TCL101"}),
        ('select = ["TCL1", "TCL2"]\nignore = ["TCL101"]', {"TCL201"}),
    ],
)
def test_select_and_ignore(tmp_path: Path, table: str, expected: set[str]) -> None:
    project(tmp_path, table, {"m.py": ITEM_AND_PRINT})
    assert {code for _, code in codes(run(["m.py"], tmp_path))} == expected


def test_command_line_select_replaces_and_ignore_adds(tmp_path: Path) -> None:
    project(tmp_path, 'select = ["TCL2"]\nignore = ["TCL9"]', {"m.py": ITEM_AND_PRINT})
    assert {code for _, code in codes(run(["m.py"], tmp_path, "--select", "TCL1"))} == {"TCL101"}
    assert codes(run(["m.py"], tmp_path, "--ignore", "TCL201")) == set()


def test_per_file_ignores_match_globs_relative_to_the_pyproject(tmp_path: Path) -> None:
    files = {"tests/test_m.py": ITEM_AND_PRINT, "src/m.py": ITEM_AND_PRINT}
    project(tmp_path, '[tool.compile-lint.per-file-ignores]\n"tests/*" = ["TCL1", "TCL201"]', files)
    assert codes(run(["."], tmp_path)) == {("src/m.py", "TCL101"), ("src/m.py", "TCL201")}
    # from a subfolder the globs still match paths relative to the pyproject, not to the cwd
    assert codes(run(["../tests", "."], tmp_path / "src")) == {("m.py", "TCL101"), ("m.py", "TCL201")}


def test_extra_regions_by_name_and_qualified_name(tmp_path: Path) -> None:
    source = (
        "def train_step(x):\n    return x.sum().item()\n\n\n"
        "class Trainer:\n    def step(self, x):\n        print(x)\n\n    def other(self, x):\n        print(x)\n"
    )
    project(tmp_path, "", {"m.py": source})
    assert codes(run(["m.py"], tmp_path)) == set()
    project(tmp_path, 'extra-regions = ["train_step", "Trainer.step"]', {"m.py": source})
    findings = json.loads(run(["m.py"], tmp_path).stdout)["findings"]
    assert {(f["line"], f["code"]) for f in findings} == {(2, "TCL101"), (7, "TCL201")}


@pytest.mark.parametrize(
    ("key", "flag"),
    [
        ("capture-scalar-outputs", "capture_scalar_outputs"),
        ("capture-dynamic-output-shape-ops", "capture_dynamic_output_shape_ops"),
    ],
)
def test_capture_flags_silence_the_rules_they_make_moot(tmp_path: Path, key: str, flag: str) -> None:
    """Each rule's own examples documented as silent under the flag: reported without it, silent with."""
    files = {
        f"{rule.code.lower()}_{n}.py": HEADER + example.code
        for rule in all_rules()
        for n, example in enumerate(rule.valid)
        if flag in example.flags
    }
    assert files, f"no rule documents an example silenced by {flag}"
    expected = {(name, name[:6].upper()) for name in files}
    project(tmp_path, f"{key} = false", files)
    assert expected <= codes(run(["."], tmp_path))
    project(tmp_path, f"{key} = true", files)
    assert not expected & codes(run(["."], tmp_path))


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ('selct = ["TCL1"]', "unknown key `selct` in [tool.compile-lint]"),
        ('[tool.compile-lint.confirm]\ntarget = ["m:f"]', "unknown key `target` in [tool.compile-lint.confirm]"),
        ('select = "TCL1"', "`select` must be a list of strings, got 'TCL1'"),
        ("ignore = [101]", "`ignore` must be a list of strings, got [101]"),
        ('[tool.compile-lint.per-file-ignores]\n"a.py" = "TCL1"', "`per-file-ignores.a.py` must be a list of strings"),
        ('capture-scalar-outputs = "yes"', "`capture-scalar-outputs` must be a boolean"),
        ("[tool.compile-lint.confirm]\ntimeout = true", "`confirm.timeout` must be a number"),
        ('[tool.compile-lint.confirm]\nshape = ["4"]', "`confirm.shape` must be a list of integers"),
        ("[tool.compile-lint.confirm]\nmemory-limit = 0", "`confirm.memory-limit` must be greater than 0"),
        ("[tool.compile-lint.confirm]\nmax-auto-targets = 2.5", "`confirm.max-auto-targets` must be a integer"),
        ("select = [", "cannot read"),
    ],
)
def test_a_bad_pyproject_is_one_line_naming_the_key_and_exit_2(tmp_path: Path, table: str, named: str) -> None:
    project(tmp_path, table, {"m.py": ITEM_AND_PRINT})
    result = run(["m.py"], tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"compile-lint: configuration error: {tmp_path / 'pyproject.toml'}")
    assert named in line


def test_confirm_table_is_parsed_with_defaults(tmp_path: Path) -> None:
    project(tmp_path, '[tool.compile-lint.confirm]\ntargets = ["pkg.models:make"]\ntimeout = 30', {})
    config = load_config([str(tmp_path)])
    assert config.source == (tmp_path / "pyproject.toml").resolve()
    assert config.confirm == ConfirmConfig(targets=["pkg.models:make"], timeout=30.0, shape=[4, 8], backend="eager")
    assert config.confirm.memory_limit is None and not config.confirm.auto_targets


def test_confirm_limits_and_automatic_targets_are_read(tmp_path: Path) -> None:
    table = "[tool.compile-lint.confirm]\nauto-targets = true\nmax-auto-targets = 5\nmemory-limit = 2.5"
    project(tmp_path, table, {})
    confirm = load_config([str(tmp_path)]).confirm
    assert (confirm.auto_targets, confirm.max_auto_targets, confirm.memory_limit) == (True, 5, 2.5)


def test_no_pyproject_means_defaults_rooted_at_the_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config([str(tmp_path)])
    assert config.source is None and config.root == Path.cwd()
    assert config.flags() == set() and config.select == config.ignore == []
