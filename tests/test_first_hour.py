"""A new user's first hour, as they would see it: the real `compile-lint` command run in a throwaway git
repository with its output piped (as in CI logs, `| less` or `> file`), the real pre-commit running the
configuration copied from the README, with torch installed (this venv) and without (pre-commit's own
environment for the hook)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}
# A narrow COLUMNS, as CI runners and `ssh` sessions set it: piped output must not wrap at it.
PIPED = {"COLUMNS": "40", "NO_COLOR": "1", "TERM": "dumb"}

STEP = """import torch


@torch.compile
def step(x, lengths):
    scale_of_the_whole_batch_for_this_step = x.abs().max().item()
    if x.sum() > 0:
        x = x + 1
    print("a rather long message so that the header of this finding passes forty columns", x.shape)
    return x / scale_of_the_whole_batch_for_this_step
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user's throwaway git repository with one compiled step that breaks the graph."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "step.py").write_text(STEP)
    git(folder, "init", "-q")
    git(folder, "add", ".")
    return folder


def compile_lint(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, stdout and stderr piped."""
    return subprocess.run(
        [sys.executable, "-m", "compile_lint", *args],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, **PIPED, **(env or {})},
        timeout=600,
    )


# -- 1. piped output does not wrap ------------------------------------------------------------------------------


def test_piped_report_keeps_each_header_caret_and_summary_on_one_line(repo: Path) -> None:
    result = compile_lint(repo, "step.py", "--no-cache")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    headers = [line for line in lines if re.match(r"step\.py:\d+:\d+: TCL\d{3} ", line)]
    assert len(headers) == 3 and all(line.endswith("[default path]") for line in headers)
    source = STEP.splitlines()
    for index, line in enumerate(lines):
        if line.strip() and set(line.strip()) == {"^"}:  # the carets sit under the span of the line above
            gutter, code = lines[index - 1].split(" | ", 1)
            number = int(gutter)
            assert code == source[number - 1]
            start = line.index("^") - len(gutter) - 3
            header = next(h for h in headers if h.startswith(f"step.py:{number}:"))
            assert start == int(header.split(":")[2]) - 1
    assert sum(set(line.strip()) == {"^"} for line in lines) == 3
    summary = lines[-1]
    assert summary.startswith("Found 3 findings") and summary.endswith("TCL201 x1).")
    assert all(len(line) > 40 for line in headers)  # longer than COLUMNS, and not wrapped


def test_piped_rules_table_is_plain_one_rule_a_line_and_has_json_and_markdown(repo: Path) -> None:
    from compile_lint.rules import all_rules

    result = compile_lint(repo, "rules")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["code", "name", "family", "GB", "codes", "fixable", "summary"]
    assert len(lines) == 1 + len(all_rules())  # one line a rule, nothing dropped or cut
    for rule, line in zip(all_rules(), lines[1:], strict=True):
        assert line.startswith(rule.code) and line.endswith(rule.summary) and "│" not in line
    as_json = json.loads(compile_lint(repo, "rules", "--format", "json").stdout)
    assert [row["code"] for row in as_json] == [rule.code for rule in all_rules()]
    assert {"fixable", "summary", "gb_codes"} <= set(as_json[0])
    markdown = compile_lint(repo, "rules", "--format", "markdown").stdout.splitlines()
    assert markdown[0] == "| code | name | family | GB codes | fixable | summary |"
    assert sum(line.startswith("| TCL") for line in markdown) == len(all_rules())


def test_report_written_to_a_file_does_not_wrap_either(repo: Path) -> None:
    result = compile_lint(repo, "step.py", "--no-cache", "-o", "report.txt")
    assert result.returncode == 1 and result.stdout == ""
    written = (repo / "report.txt").read_text().splitlines()
    assert written == compile_lint(repo, "step.py", "--no-cache").stdout.splitlines()


@pytest.mark.dynamo
def test_piped_confirm_tables_keep_a_target_per_line(repo: Path) -> None:
    (repo / "target.py").write_text(
        STEP + "\n\ndef make_a_step_with_a_long_name():\n    return step, (torch.randn(4, 8), None)\n"
    )
    target = "target.py:make_a_step_with_a_long_name"
    result = compile_lint(repo, "target.py", "--confirm", "--no-cache", "--target", target)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    row = next(line for line in lines if "target.py:make_a_step_with_a_long_name" in line and "ok" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells[:2] == ["target.py:make_a_step_with_a_long_name", "ok"] and cells[2].isdigit(), row
    assert any(
        line.startswith("graphs: graphs compiled on the target's call;") and line.endswith("not counted)")
        for line in lines
    )


# -- 2. fix texts follow the codemods' analysis ----------------------------------------------------------------

FIX_TEXTS = """import torch


@torch.compile
def step(x, loss, seq_end_pos):
    if not torch.isfinite(x).all():
        print("non-finite activations")
    masked = loss[loss > 0].mean()
    max_len = seq_end_pos.amax().item()
    y = x[:, :max_len] + torch.arange(seq_end_pos.sum().item())
    return y * masked
"""


def fixes_by_line(report: str) -> dict[int, str]:
    """The `= fix:` text under each finding header, by line."""
    fixes: dict[int, str] = {}
    line = 0
    for text in report.splitlines():
        if match := re.match(r"step\.py:(\d+):\d+: TCL", text):
            line = int(match.group(1))
        elif text.startswith("      = fix: "):
            fixes[line] = text.removeprefix("      = fix: ")
    return fixes


def test_fix_texts_say_what_would_hold(repo: Path) -> None:
    (repo / "step.py").write_text(FIX_TEXTS)
    fixes = fixes_by_line(compile_lint(repo, "step.py", "--no-cache").stdout)
    # a branch whose body only prints: no torch.where, an eager-only check
    assert "torch.where" not in fixes[6].split("cannot select")[1]
    assert "`if not torch.compiler.is_compiling() and not torch.isfinite(x).all():`" in fixes[6]
    # a masked mean keeps its numerics: divided by the selected count
    assert "`torch.where(loss > 0, loss, 0).sum() / (loss > 0).sum()`" in fixes[8]
    assert "`(loss * (loss > 0)).sum() / (loss > 0).sum()`" in fixes[8]
    # `.item()` values used as a slice bound or an arange size: `.detach()` would not hold there
    for line, use in ((9, "`max_len` is then a slice bound"), (10, "The value is a size of `torch.arange`")):
        assert fixes[line].startswith(use) and "`.detach()` would not hold" in fixes[line]
        assert "capture_scalar_outputs = True" in fixes[line]
    # and the codemods agree: nothing to rewrite for those
    diff = compile_lint(repo, "step.py", "--diff", "--unsafe-fixes", "--no-cache")
    assert "detach" not in diff.stdout and "torch.where" not in diff.stdout


# -- 3. one truth for fixability -------------------------------------------------------------------------------

FIXABLE = """import torch


@torch.compile
def step(x, lengths):
    print(x)
    x = x / x.abs().max().item()
    n = lengths.max().item()
    return x[:n]
"""


def test_statistics_show_fixes_diff_and_fix_count_the_same_fixes(repo: Path) -> None:
    (repo / "step.py").write_text(FIXABLE)
    (repo / "clean.py").write_text("def f():\n    return 1\n")
    statistics = compile_lint(repo, ".", "--statistics").stdout.splitlines()
    assert statistics == [
        "2  TCL101  [*]       tensor-item (1 of 2 with --fix)",  # the slice-bound one has no rewrite
        "1  TCL201  [*unsafe] print-in-region",
        "[*] fixable with --fix, [*unsafe] with --unsafe-fixes",
    ]
    shown = compile_lint(repo, ".", "--show-fixes").stdout
    assert re.findall(r"TCL\d+ (\[\*\w*\])", shown) == ["[*unsafe]", "[*]"]  # the same marks, the same findings
    assert "Found 3 findings in 1 file (2 linted)" in shown
    diff = compile_lint(repo, ".", "--diff")
    assert diff.stderr.strip() == "Would fix 1 finding in 1 file (1 more fix with --unsafe-fixes)."
    unsafe = compile_lint(repo, ".", "--diff", "--unsafe-fixes")
    assert unsafe.stderr.strip() == "Would fix 2 findings in 1 file."
    fixed = compile_lint(repo, ".", "--fix")
    assert "Fixed 1 finding (1 more fix with --unsafe-fixes)." in fixed.stdout
    assert "Found 2 findings in 1 file (2 linted)" in fixed.stdout


# -- 4. the README's pre-commit configuration, as written, against a local clone -------------------------------

ROOT = Path(__file__).resolve().parent.parent
RANDOM_STEP = """import random

import torch


@torch.compile
def step(x):
    return x * random.random()
"""


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A local clone of this project whose `main` is the working tree as it is now (what users clone)."""
    folder = tmp_path_factory.mktemp("clone") / "compile-lint"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    for name in filter(None, tracked.decode().split("\0")):
        source, target = ROOT / name, folder / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "snapshot")
    return folder


def readme_pre_commit_config(clone: Path) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("### pre-commit\n\n```yaml\n", 1)[1].split("```", 1)[0]
    assert "rev: main" in block
    return block.replace("https://github.com/OWNER/compile-lint", str(clone))


def pre_commit(repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_IDENTITY, **PIPED, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        capture_output=True,
        text=True,
        cwd=repo,
        env=env,
        timeout=900,
    )


def finding_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.match(r"(step|random_step|other\d)\.py:\d+:\d+: TCL", line)]


@pytest.mark.slow
def test_readme_pre_commit_config_runs_as_written_with_one_report_worded_for_one_torch(
    repo: Path, clone: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.getbasetemp() / "pre-commit-home"
    (repo / "random_step.py").write_text(RANDOM_STEP)
    for number in range(6):  # enough files for pre-commit to split them into batches, were it allowed to
        (repo / f"other{number}.py").write_text(STEP)
    (repo / ".pre-commit-config.yaml").write_text(readme_pre_commit_config(clone))
    (repo / "pyproject.toml").write_text('[tool.compile-lint]\ntorch-version = "2.13"\n')
    git(repo, "add", ".")
    hook = pre_commit(repo, home)  # the hook's own environment: compile-lint without torch
    assert hook.returncode == 1, hook.stdout + hook.stderr
    assert "did not match" not in hook.stdout + hook.stderr
    assert re.search(r"^compile-lint\.+Failed$", hook.stdout, re.M), hook.stdout
    assert len(re.findall(r"^Found \d+ findings", hook.stdout, re.M)) == 1  # one run, one report
    assert "Found 22 findings in 8 files (8 linted)" in hook.stdout
    # this venv has torch 2.13 installed: the same words as the hook's, since torch-version says 2.13
    here = compile_lint(repo, *sorted(p.name for p in repo.glob("*.py")), "--no-cache")
    assert finding_lines(hook.stdout) == finding_lines(here.stdout)
    assert any("random_step.py:8:16: TCL301" in line for line in finding_lines(hook.stdout))
    assert "worded for torch" not in hook.stdout + here.stderr
    # without torch-version, the hook says which torch it assumed
    (repo / "pyproject.toml").write_text("[tool.compile-lint]\n")
    git(repo, "add", ".")
    unset = pre_commit(repo, home)
    assert "compile-lint: findings are worded for torch 2.14, the default: no torch is installed here" in unset.stdout


# -- 5. fixes that need torch respect how the module imports it -------------------------------------------------

TORCH_OPTIONAL = """import logging
from importlib.util import find_spec

if find_spec("torch") is not None:
    import torch

logger = logging.getLogger(__name__)


def scale(x):
    logger.info("scaling")
    return x * 2


if find_spec("torch") is not None:
    compiled = torch.compile(scale)
"""
TYPE_CHECKED = """from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def scale(x: torch.Tensor) -> torch.Tensor:
    logger.info("scaling")
    return x * 2


def compile_it(torch_module):
    return torch_module.compile(scale)
"""
SORTED_IMPORTS = '''"""A model whose imports are sorted as isort and ruff sort them."""

import logging
import os

import numpy as np
from torch import nn
from tqdm import tqdm

from .helpers import helper

logger = logging.getLogger(__name__)


class Net(nn.Module):
    def forward(self, x):
        logger.info("shape %s", os.sep)
        return x
'''


def test_unsafe_fixes_leave_torch_optional_modules_importable_without_torch(repo: Path) -> None:
    (repo / "optional.py").write_text(TORCH_OPTIONAL)
    (repo / "typed.py").write_text(TYPE_CHECKED)
    fixed = compile_lint(repo, "optional.py", "typed.py", "--unsafe-fixes", "--no-cache")
    assert "Fixed 0 findings." in fixed.stdout, fixed.stdout
    assert (repo / "optional.py").read_text() == TORCH_OPTIONAL and (repo / "typed.py").read_text() == TYPE_CHECKED
    assert "[*unsafe]" not in compile_lint(repo, "optional.py", "--show-fixes", "--no-cache").stdout
    # without torch installed (the system's python, which has none) the module still imports and runs
    without_torch = subprocess.run(
        ["python3", "-I", "-c", "import importlib.util as u; assert u.find_spec('torch') is None; "
         "import sys; sys.path.insert(0, '.'); import optional; print(optional.scale(3))"],
        capture_output=True, text=True, cwd=repo,
    )  # fmt: skip
    if "AssertionError" in without_torch.stderr:
        pytest.skip("the system python has torch installed")
    assert without_torch.returncode == 0 and without_torch.stdout == "6\n", without_torch.stderr


def test_an_added_torch_import_lands_where_isort_puts_it(repo: Path) -> None:
    (repo / "model.py").write_text(SORTED_IMPORTS)
    fixed = compile_lint(repo, "model.py", "--unsafe-fixes", "--no-cache")
    assert "Fixed 1 finding." in fixed.stdout, fixed.stdout
    text = (repo / "model.py").read_text()
    assert "import numpy as np\nimport torch\nfrom torch import nn\n" in text
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "model.py"],
        capture_output=True, text=True, cwd=repo,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout
    # a module with only standard-library and first-party imports: torch gets a section of its own between them
    (repo / "base.py").write_text("import torch\n\n\nclass Base(torch.nn.Module):\n    pass\n")
    (repo / "block.py").write_text(
        SORTED_IMPORTS.replace("import numpy as np\nfrom torch import nn\nfrom tqdm import tqdm\n\n", "")
        .replace("from .helpers import helper", "from base import Base")
        .replace("class Net(nn.Module):", "class Net(Base):")
    )
    fixed = compile_lint(repo, "base.py", "block.py", "--unsafe-fixes", "--no-cache")
    assert "Fixed 1 finding." in fixed.stdout, fixed.stdout
    assert "import logging\nimport os\n\nimport torch\n\nfrom base import Base\n" in (repo / "block.py").read_text()
    ruff = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I", "model.py", "block.py"],
        capture_output=True, text=True, cwd=repo,
    )  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout


# -- 6. a bad path named on the command line ---------------------------------------------------------------------


@pytest.mark.parametrize("extra", [[], ["--fix"], ["--statistics"], ["--format", "json"]])
def test_a_symlink_loop_or_missing_path_is_a_diagnostic_and_the_run_goes_on(repo: Path, extra: list[str]) -> None:
    (repo / "self").symlink_to("self")
    result = compile_lint(repo, "self", "missing.py", "step.py", "--no-cache", *extra)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    if extra == ["--format", "json"]:
        found = {(f["path"], f["code"]) for f in json.loads(result.stdout)["findings"]}
        assert {("self", "TCL000"), ("missing.py", "TCL000"), ("step.py", "TCL101")} <= found
    elif extra == ["--statistics"]:
        rows = [line.split()[:2] for line in result.stdout.splitlines()]
        assert ["2", "TCL000"] in rows and ["1", "TCL101"] in rows
    else:
        assert (
            "self:1:1: TCL000 File could not be read, decoded or parsed; it was not linted: cannot read: Too many levels of symbolic links"
            in result.stdout
        )
        assert "missing.py:1:1: TCL000" in result.stdout and "cannot read: No such file or directory" in result.stdout
        assert re.search(r"^step\.py:6:\d+: TCL101", result.stdout, re.M)
