"""The pre-commit hooks as users get them: real `pre-commit try-repo` against this repository.

try-repo clones the repository (HEAD plus uncommitted changes to tracked files) into a temporary
store and pip-installs it into a fresh virtualenv, so these tests need PyPI (libcst, rich) but
not GitHub. About 10 s per try-repo run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pre_commit.clientlib import load_manifest

from fixture_support import FIXTURES, ROOT

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's git repository with one file that breaks the graph and one that does not."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(FIXTURES / "seed_step.py", repo / "bad.py")
    shutil.copy(FIXTURES / "clean_static_branches.py", repo / "good.py")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    return repo


def try_repo(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_IDENTITY, "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"), "NO_COLOR": "1"}
    # the confirm hook is `language: system`: it runs the compile-lint of the user's own environment
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), *args],
        capture_output=True,
        text=True,
        cwd=repo,
        env=env,
        timeout=600,
    )


def test_manifest_declares_a_static_hook_and_a_manual_confirm_hook() -> None:
    hooks = {hook["id"]: hook for hook in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    static, confirm = hooks["compile-lint"], hooks["compile-lint-confirm"]
    assert static["types_or"] == ["python", "pyi", "jupyter"] and static["language"] == "python"
    assert static["entry"] == "compile-lint --force-exclude"
    assert static["require_serial"] is True and static["pass_filenames"] is True and not static["stages"]
    assert confirm["entry"] == "compile-lint --confirm" and confirm["stages"] == ["manual"]
    assert confirm["pass_filenames"] is False and confirm["require_serial"] is True


@pytest.mark.slow
def test_hook_fails_on_a_file_with_findings(user_repo: Path) -> None:
    result = try_repo(user_repo, "compile-lint", "--files", "bad.py", "good.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "compile-lint" in result.stdout and "Failed" in result.stdout
    assert "bad.py:9:8: TCL101" in result.stdout and "good.py:" not in result.stdout


@pytest.mark.slow
def test_hook_lints_notebooks_and_honours_exclude_for_the_files_it_is_given(user_repo: Path) -> None:
    code = (FIXTURES / "seed_step.py").read_text()
    cell = {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [], "source": code}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (user_repo / "demo.ipynb").write_text(json.dumps(notebook, indent=1) + "\n")
    (user_repo / "pyproject.toml").write_text('[tool.compile-lint]\nextend-exclude = ["bad.py"]\n')
    subprocess.run(["git", "add", "."], cwd=user_repo, check=True)
    result = try_repo(user_repo, "compile-lint", "--files", "bad.py", "demo.ipynb", "pyproject.toml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "demo.ipynb:cell 1:9:8: TCL101" in result.stdout and "bad.py:" not in result.stdout


@pytest.mark.slow
def test_clean_file_passes_and_the_confirm_hook_waits_for_the_manual_stage(user_repo: Path) -> None:
    result = try_repo(user_repo, "--files", "good.py")  # every hook in the manifest
    assert result.returncode == 0, result.stdout + result.stderr
    assert "compile-lint....." in result.stdout and "Passed" in result.stdout
    assert "compile-lint --confirm" not in result.stdout.split("=" * 79)[-1]


@pytest.mark.slow
@pytest.mark.dynamo
def test_manual_confirm_hook_confirms_the_whole_project_in_the_users_environment(user_repo: Path) -> None:
    """Given only the clean file, it still lints and runs the whole repository (pass_filenames: false)."""
    result = try_repo(user_repo, "compile-lint-confirm", "--hook-stage", "manual", "--files", "good.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "compile-lint --confirm" in result.stdout and "Failed" in result.stdout
    assert "bad.py:9:8: TCL101 [confirmed]" in result.stdout
