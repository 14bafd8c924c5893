"""The flake8 plugin as users run it: real flake8 in a subprocess, on fixtures and small files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.engine import CACHE_DIR, lint
from compile_lint.versions import target_version
from fixture_support import FIXTURES, ROOT, expected_codes

SEED = FIXTURES / "seed_step.py"
STEP = "import torch\n\n\n@torch.compile\ndef step(x):\n    return x * x.sum().item(){noqa}\n"


def flake8(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--no-show-source", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        input=stdin,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
    )


def reported(result: subprocess.CompletedProcess[str]) -> list[tuple[int, int, str]]:
    """(line, col, code) of every flake8 line; fails on anything but findings (e.g. a traceback)."""
    assert not result.stderr, result.stderr
    found = []
    for line in result.stdout.splitlines():
        _, number, col, message = line.split(":", 3)
        found.append((int(number), int(col), message.split()[0]))
    return found


def test_seed_fixture_gives_tcl101_at_its_position() -> None:
    result = flake8("--select", "TCL", str(SEED))
    assert reported(result) == [(9, 8, "TCL101")]
    assert "`.item()`" in result.stdout and "[GB0124]" in result.stdout
    assert result.returncode == 1


def test_plugin_is_on_by_default_next_to_flake8s_own_checks(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text("import os\n" + STEP.format(noqa=""))
    codes = {code for _, _, code in reported(flake8(str(path), cwd=tmp_path))}
    assert codes == {"F401", "TCL101"}


@pytest.mark.parametrize(
    "path", [p for p in sorted(FIXTURES.glob("*.py")) if not p.name.startswith("_")], ids=lambda p: p.name
)
def test_single_file_fixtures_match_their_expectations(path: Path, tmp_path: Path) -> None:
    # fixtures run half-precision inputs: a project that does says so in its pyproject
    (tmp_path / "pyproject.toml").write_text("[tool.compile-lint]\nhalf-precision = true\n")
    shutil.copy(path, tmp_path / path.name)
    found: dict[int, set[str]] = {}
    for line, _, code in reported(flake8("--select", "TCL", path.name, cwd=tmp_path)):
        found.setdefault(line, set()).add(code)
    assert found == expected_codes(path, target_version())  # the plugin targets the installed torch


@pytest.mark.parametrize(
    ("options", "codes"),
    [
        (["--select", "TCL103"], {"TCL103"}),
        (["--select", "TCL", "--ignore", "TCL103"], {"TCL101", "TCL201"}),
        (["--select", "E9", "--extend-select", "TCL2"], {"TCL201"}),
        (["--extend-ignore", "TCL1"], {"TCL201"}),
    ],
)
def test_select_ignore_and_extend_select(tmp_path: Path, options: list[str], codes: set[str]) -> None:
    path = tmp_path / "model.py"
    path.write_text(
        "import torch\n\n\n@torch.compile\ndef step(x):\n"
        "    print(x)\n    if x.sum() > 0:\n        return x.sum().item()\n    return x\n"
    )
    assert {code for _, _, code in reported(flake8(*options, str(path), cwd=tmp_path))} == codes


def test_opt_in_codes_are_in_flake8s_default_ignore(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(
        "import torch\n\n\n@torch.compile\ndef step(x):\n    if x.dim() != 2:\n        raise ValueError('2d')\n    return x\n"
    )
    assert reported(flake8(str(path), cwd=tmp_path)) == []
    assert reported(flake8("--extend-select", "TCL703", str(path), cwd=tmp_path)) == [(7, 9, "TCL703")]


@pytest.mark.parametrize(
    ("noqa", "silenced"),
    [("  # noqa", True), ("  # noqa: TCL101", True), ("  # noqa:TCL1", True), ("  # noqa: E501", False), ("", False)],
)
def test_noqa_is_flake8s_own(tmp_path: Path, noqa: str, silenced: bool) -> None:
    path = tmp_path / "model.py"
    path.write_text(STEP.format(noqa=noqa))
    assert reported(flake8("--select", "TCL", str(path), cwd=tmp_path)) == ([] if silenced else [(6, 16, "TCL101")])


def test_lints_the_lines_flake8_read_not_the_file_on_disk(tmp_path: Path) -> None:
    """From stdin there is no file to read again: the findings can only come from flake8's lines."""
    source = "\n\n" + SEED.read_text()  # two lines lower than the file on disk
    result = flake8("--select", "TCL", "--stdin-display-name", str(SEED), "-", stdin=source)
    assert reported(result) == [(11, 8, "TCL101")]


def test_flake8_with_the_plugin_never_imports_torch() -> None:
    probe = (
        "import sys\nfrom flake8.main.cli import main\n"
        f"try:\n    main(['--select', 'TCL', {str(FIXTURES)!r}])\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules, 'compile_lint.flake8_plugin' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.stdout.splitlines()[-1] == "False True", result.stdout + result.stderr


def test_regions_reached_from_another_file_are_out_of_flake8s_sight() -> None:
    """flake8 lints file by file: a helper called from a forward in another file is not known to
    be compiled. `compile-lint` lints the folder as one project and reports it (see the docs)."""
    folder = FIXTURES / "crossfile"
    helper = folder / "routing.py"
    expected = {line for line, codes in expected_codes(helper, target_version()).items() if "TCL103" in codes}
    assert expected, "the cross-file fixture lost its expectation"
    flake8_lines = {line for line, _, _ in reported(flake8("--select", "TCL", str(helper)))}
    assert not flake8_lines & expected
    project = lint([str(folder)], Config(root=ROOT), use_cache=False)
    assert expected <= {f.line for f in project.findings if f.path == str(helper)}


def _project(tmp_path: Path, table: str, source: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[tool.compile-lint]\n{table}\n")
    package = tmp_path / "pkg"
    package.mkdir()
    path = package / "model.py"
    path.write_text(source)
    return path


def test_capture_flag_from_pyproject_applies(tmp_path: Path) -> None:
    path = _project(tmp_path, "capture-scalar-outputs = true", STEP.format(noqa=""))
    assert reported(flake8("--select", "TCL", str(path), cwd=tmp_path)) == []


def test_extra_regions_from_pyproject_apply(tmp_path: Path) -> None:
    source = "def train_step(x):\n    return x * x.sum().item()\n"
    path = _project(tmp_path, 'extra-regions = ["train_step"]', source)
    assert reported(flake8("--select", "TCL", str(path), cwd=tmp_path)) == [(2, 16, "TCL101")]


def test_config_error_is_one_flake8_line_naming_the_key(tmp_path: Path) -> None:
    path = _project(tmp_path, 'selcet = ["TCL1"]', STEP.format(noqa=""))
    result = flake8("--select", "TCL", str(path), cwd=tmp_path)
    assert reported(result) == [(1, 1, "TCL000")]
    assert "unknown key `selcet`" in result.stdout and "Traceback" not in result.stdout


BASE = "def scale(x):\n    return 2\n"
MODEL = """import torch
from torch import nn

from .base import scale


class Model(nn.Module):
    def forward(self, x):
        if scale(x) > 1:
            return x * 2
        return x
"""
# flake8 in this process, then whether it imported libcst (it must not when the findings cache answers).
PROBE = (
    "import sys\nfrom flake8.main.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print('libcst imported:', 'libcst' in sys.modules)\n"
)


def test_unchanged_files_are_answered_from_the_findings_cache_and_edits_invalidate_it(tmp_path: Path) -> None:
    """Cold, warm (no parse, libcst not imported), after an edit of the module the file imports, after an
    edit of the file: each the findings of a cold run (no cache) of the same tree; and an entry written by
    `compile-lint` over the same file answers flake8 too (a pre-commit config running both)."""
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0"\n')
    (project / "pkg" / "__init__.py").write_text("")
    base, model = project / "pkg" / "base.py", project / "pkg" / "model.py"
    base.write_text(BASE)
    model.write_text(MODEL)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_CACHE_HOME": str(tmp_path / "user-cache")}

    def run(*command: str) -> tuple[list[str], bool]:
        result = subprocess.run(command, capture_output=True, text=True, cwd=project, env=env, timeout=120)
        assert not result.stderr, result.stderr
        *lines, imported = result.stdout.splitlines()
        return lines, imported == "libcst imported: True"

    def flake8_run() -> tuple[list[str], bool]:
        return run(sys.executable, "-c", PROBE, "--select", "TCL", "pkg/model.py")

    def cold_run() -> list[str]:
        shutil.rmtree(project / CACHE_DIR, ignore_errors=True)
        found, imported = flake8_run()
        assert imported
        return found

    assert flake8_run() == ([], True)
    assert list((project / CACHE_DIR).rglob("*.json")), "no findings cache entry written"
    assert flake8_run() == ([], False)

    base.write_text(BASE.replace("return 2", "return x.sum()"))  # scale() now returns a tensor: TCL103
    edited, imported = flake8_run()
    assert imported and [line.split()[1] for line in edited] == ["TCL103"]
    assert flake8_run() == (edited, False)
    assert cold_run() == edited

    model.write_text("\n" + MODEL)  # the finding moves a line down
    moved, imported = flake8_run()
    assert imported and moved != edited and flake8_run() == (moved, False)
    assert cold_run() == moved

    shutil.rmtree(project / CACHE_DIR)
    subprocess.run([sys.executable, "-m", "compile_lint", "pkg/model.py"], cwd=project, env=env, capture_output=True)
    assert flake8_run() == (moved, False)


def test_a_file_in_another_encoding_is_linted_without_the_findings_cache(tmp_path: Path) -> None:
    """Its text as UTF-8 is not what the engine would read back from those bytes (the cookie names Latin-1), so
    it cannot key a findings entry: linted each time, with the same findings."""
    path = tmp_path / "model.py"
    path.write_bytes(("# -*- coding: latin-1 -*-\n# caf\u00e9\n" + STEP.format(noqa="")).encode("latin-1"))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-m", "flake8", "--select", "TCL", str(path)],
            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
        )  # fmt: skip
        assert reported(result) == [(8, 16, "TCL101")]
    assert list((tmp_path / CACHE_DIR).rglob("*.json")) == []
