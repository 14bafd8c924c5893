"""`--fix`, `--unsafe-fixes` and `--diff` through the real command line, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SOURCE = """import torch


@torch.compile
def step(x: torch.Tensor):
    x = x / x.abs().max().item()
    if x.sum() > 0:
        y = x + 1
    else:
        y = x * 2
    print("step done")
    return y
"""
SAFE_LINE = "    x = x / x.abs().max().detach()\n"
UNSAFE_LINES = ("    y = torch.where(x.sum() > 0, x + 1, x * 2)\n", "    if not torch.compiler.is_compiling():\n")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "compile_lint.cli", "--no-cache", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def write(tmp_path: Path, text: str, name: str = "model.py", newline: str = "\n", encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


def test_fix_applies_only_safe_fixes(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE)
    done = run("--fix", path.name, cwd=tmp_path)
    text = path.read_text()
    assert SAFE_LINE in text
    assert "    if x.sum() > 0:\n" in text and '    print("step done")\n' in text
    assert not any(line in text for line in UNSAFE_LINES)
    assert done.returncode == 1, done.stdout  # the unsafe ones are still findings
    assert "Fixed 1 finding (2 more fixes with --unsafe-fixes)." in done.stdout
    assert "Found 2 findings in 1 file (1 linted), 2 on the default path (TCL103 x1, TCL201 x1)." in done.stdout


def test_unsafe_fixes_apply_the_rest_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE)
    done = run("--unsafe-fixes", path.name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Fixed 3 findings." in done.stdout and "All clear" in done.stdout
    text = path.read_text()
    assert SAFE_LINE in text and all(line in text for line in UNSAFE_LINES)
    after_first = path.read_bytes()
    again = run("--unsafe-fixes", path.name, cwd=tmp_path)
    assert again.returncode == 0 and "Fixed 0 findings." in again.stdout
    assert path.read_bytes() == after_first


def test_diff_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE)
    before = path.read_bytes(), path.stat().st_mtime_ns
    done = run("--diff", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("--- a/model.py\n+++ b/model.py\n")
    assert "\n-    x = x / x.abs().max().item()\n" in done.stdout and "\n+" + SAFE_LINE in done.stdout
    assert "Would fix 3 findings in 1 file." in done.stderr
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    run("--unsafe-fixes", path.name, cwd=tmp_path)
    clean = run("--diff", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert clean.returncode == 0 and clean.stdout == ""


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE, newline="\r\n")
    reference = write(tmp_path, SOURCE, name="reference.py")
    assert run("--unsafe-fixes", path.name, reference.name, cwd=tmp_path).returncode == 0
    data = path.read_bytes()
    assert b"\n" not in data.replace(b"\r\n", b""), "a bare LF crept into a CRLF file"
    assert data.replace(b"\r\n", b"\n") == reference.read_bytes()


def test_cr_line_endings_are_fixed_and_kept(tmp_path: Path) -> None:
    """Old Mac `\r` files were silently left alone (the positions of their findings were off)."""
    path = write(tmp_path, SOURCE, newline="\r")
    reference = write(tmp_path, SOURCE, name="reference.py")
    done = run("--unsafe-fixes", path.name, reference.name, cwd=tmp_path)
    assert done.returncode == 0 and "Fixed 6 findings." in done.stdout, done.stdout
    data = path.read_bytes()
    assert b"\n" not in data and data.replace(b"\r", b"\n") == reference.read_bytes()


def test_latin1_file_stays_latin1(tmp_path: Path) -> None:
    source = "# -*- coding: latin-1 -*-\n# café au lait\n" + SOURCE.replace('"step done"', '"étape finie"')
    path = write(tmp_path, source, encoding="latin-1")
    assert run("--unsafe-fixes", path.name, cwd=tmp_path).returncode == 0
    data = path.read_bytes()
    assert b"caf\xe9 au lait" in data and b'print("\xe9tape finie")' in data
    assert SAFE_LINE in data.decode("latin-1")


def test_import_torch_is_added_when_missing(tmp_path: Path) -> None:
    source = '"""Module docstring."""\n\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        print(x.shape)\n        return x\n'
    path = write(tmp_path, source)
    assert run("--unsafe-fixes", path.name, cwd=tmp_path).returncode == 0
    assert path.read_text() == (
        '"""Module docstring."""\n\nimport torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n'
        "    def forward(self, x):\n        if not torch.compiler.is_compiling():\n"
        "            print(x.shape)\n        return x\n"
    )


CONCURRENT_EDIT = """
import sys
from compile_lint import cli
from compile_lint.fixes import runner

plan_fixes = runner.plan_fixes


def plan_then_someone_edits(*args, **kwargs):
    plan = plan_fixes(*args, **kwargs)
    with open(sys.argv[1], "a", encoding="utf-8") as handle:
        handle.write("# edited by someone else meanwhile\\n")
    return plan


runner.plan_fixes = plan_then_someone_edits
sys.exit(cli.main([sys.argv[1], "--unsafe-fixes", "--no-cache"]))
"""


def test_file_changed_since_read_is_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE)
    command = [sys.executable, "-c", CONCURRENT_EDIT, path.name]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert "compile-lint: skipped model.py: it changed since it was read" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1
    assert path.read_text() == SOURCE + "# edited by someone else meanwhile\n"
    assert os.listdir(tmp_path) == ["model.py"], "a temporary file was left behind"


def test_noqa_and_ignore_are_respected(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE.replace('print("step done")', 'print("step done")  # noqa: TCL201'))
    assert run("--unsafe-fixes", "--ignore", "TCL103", path.name, cwd=tmp_path).returncode == 0
    text = path.read_text()
    assert SAFE_LINE in text
    assert "    if x.sum() > 0:\n" in text and 'print("step done")  # noqa: TCL201\n' in text
    assert "is_compiling" not in text


def test_unparsable_file_is_left_alone(tmp_path: Path) -> None:
    broken = write(tmp_path, "def f(:\n", name="broken.py")
    fine = write(tmp_path, SOURCE)
    done = run("--unsafe-fixes", ".", cwd=tmp_path)
    assert done.returncode == 1 and "TCL000" in done.stdout
    assert broken.read_text() == "def f(:\n"
    assert SAFE_LINE in fine.read_text()


def test_json_output_stays_parseable_while_fixing(tmp_path: Path) -> None:
    path = write(tmp_path, SOURCE)
    done = run("--fix", "--format", "json", path.name, cwd=tmp_path)
    remaining = json.loads(done.stdout)["findings"]
    assert sorted(f["code"] for f in remaining) == ["TCL103", "TCL201"]
    assert "fixed model.py:6 TCL101" in done.stderr


def test_the_seed_example_is_fixed_only_once_its_input_is_known(tmp_path: Path) -> None:
    """`step(x)` with a bare `x` may be given anything (an int x makes `-y` fine, a bool x makes it raise where
    `y` did not): no rewrite. Annotated `x: torch.Tensor`, `y = x * 2` is still of unknown dtype, so `y` and
    `-y` (which raises on bools) differ too; with branches of one dtype the rewrite is offered."""
    seed = Path(__file__).resolve().parent.parent / "fixtures" / "seed_step.py"
    text = seed.read_text(encoding="utf-8")
    path = write(tmp_path, text, name="seed_step.py")
    done = run("--diff", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert done.returncode == 0 and "Would fix 0 findings in 0 files." in done.stderr
    known = text.replace("def step(x):", "def step(x: torch.Tensor):").replace("return -y", "return y * -1")
    path.write_text(known.replace("        return y\n", "        return y * 1\n"), encoding="utf-8")
    done = run("--diff", "--unsafe-fixes", path.name, cwd=tmp_path)
    assert "+    return torch.where(y.sum() > 0, y * 1, y * -1)  # expect: TCL101\n" in done.stdout


def test_bom_tabs_and_symlinks_survive(tmp_path: Path) -> None:
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + SOURCE.replace('"step done"', '"é"').encode())
    tabs = write(tmp_path, SOURCE.replace("    ", "\t"), name="tabs.py")
    (tmp_path / "real").mkdir()
    target = write(tmp_path / "real", SOURCE, name="target.py")
    (tmp_path / "link.py").symlink_to(target)
    assert run("--unsafe-fixes", "bom.py", "tabs.py", "link.py", cwd=tmp_path).returncode == 0
    assert bom.read_bytes().startswith(b"\xef\xbb\xbfimport torch\n") and 'print("é")' in bom.read_text("utf-8-sig")
    assert "\ty = torch.where(x.sum() > 0, x + 1, x * 2)\n\tif not torch.compiler.is_compiling():\n\t\tprint(" in (
        tabs.read_text()
    )
    assert (tmp_path / "link.py").is_symlink() and SAFE_LINE in target.read_text()
