"""What ruff users expect: exclude, extend-select, output formats and files, statistics, noqa at file level,
unused noqa (TCL902) and --add-noqa."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from compile_lint.config import ConfigError, load_config
from compile_lint.engine import discover, lint
from compile_lint.fixes.noqa import with_noqa
from fixture_support import run_compile_lint

STEP = "import torch\n\n@torch.compile\ndef step(x):\n    x = x / x.abs().max().item(){noqa}\n    return x\n"


def project(folder: Path, table: str = "") -> Path:
    (folder / "pyproject.toml").write_text(f"[tool.compile-lint]\n{table}")
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def codes(folder: Path, *paths: str) -> list[tuple[str, int, str]]:
    config = load_config([str(folder / p) for p in paths])
    result = lint([str(folder / p) for p in paths], config, use_cache=False)
    return [(Path(f.path).name, f.line, f.code) for f in result.findings]


# -- exclude -----------------------------------------------------------------------------------------
def test_exclude_globs_match_names_anywhere_and_slashed_paths_from_the_root(tmp_path: Path) -> None:
    project(tmp_path, 'extend-exclude = ["*_pb2.py", "src/generated"]\n')
    for name in ("src/model.py", "src/model_pb2.py", "src/generated/ops.py", "other/generated/ops.py", "build/x.py"):
        write(tmp_path / name, "x = 1\n")
    found = [Path(p).relative_to(tmp_path).as_posix() for p in discover([str(tmp_path)], load_config([str(tmp_path)]))]
    assert found == ["other/generated/ops.py", "src/model.py"]  # build/ is in the default list


def test_exclude_replaces_the_defaults_and_the_cli_can_replace_or_extend(tmp_path: Path) -> None:
    project(tmp_path, 'exclude = ["legacy"]\n')
    for name in ("build/x.py", "legacy/y.py", "main.py"):
        write(tmp_path / name, STEP.format(noqa=""))
    assert {p for p, _, _ in codes(tmp_path, ".")} == {"x.py", "main.py"}
    listed = run_compile_lint(
        ".", "--exclude", "build", "--extend-exclude", "main.py", "--format", "json", cwd=tmp_path
    )
    assert {Path(f["path"]).as_posix() for f in json.loads(listed.stdout)["findings"]} == {"legacy/y.py"}


def test_explicit_paths_are_linted_unless_force_exclude(tmp_path: Path) -> None:
    project(tmp_path, 'extend-exclude = ["legacy"]\n')
    write(tmp_path / "legacy" / "old.py", STEP.format(noqa=""))
    assert run_compile_lint("legacy/old.py", cwd=tmp_path).returncode == 1
    forced = run_compile_lint("legacy/old.py", "--force-exclude", cwd=tmp_path)
    assert forced.returncode == 0 and "no findings in 0 files" in forced.stdout
    project(tmp_path, 'extend-exclude = ["legacy"]\nforce-exclude = true\n')
    assert run_compile_lint("legacy/old.py", cwd=tmp_path).returncode == 0


def test_exclude_must_be_a_list_of_strings(tmp_path: Path) -> None:
    project(tmp_path, 'exclude = "build"\n')
    with pytest.raises(ConfigError, match="`exclude` must be a list of strings"):
        load_config([str(tmp_path)])


# -- output ------------------------------------------------------------------------------------------
def test_concise_prints_one_line_per_finding_and_full_is_the_default(tmp_path: Path) -> None:
    write(tmp_path / "step.py", STEP.format(noqa="") + "print(1)\n")
    concise = run_compile_lint("step.py", "--output-format", "concise", cwd=tmp_path).stdout.splitlines()
    assert concise[0].startswith("step.py:5:13: TCL101 `.item()`") and concise[1].startswith("Found 1 finding")
    full = run_compile_lint("step.py", "--output-format", "full", cwd=tmp_path).stdout
    assert full == run_compile_lint("step.py", cwd=tmp_path).stdout and "= fix:" in full


def test_output_file_gets_the_report_and_stdout_stays_empty(tmp_path: Path) -> None:
    write(tmp_path / "step.py", STEP.format(noqa=""))
    result = run_compile_lint("step.py", "--format", "json", "-o", "out/report.json", cwd=tmp_path)
    # checked before any work, as a usage error
    assert result.returncode == 2 and "-o out/report.json: the folder out does not exist" in result.stderr
    result = run_compile_lint("step.py", "--format", "json", "--output-file", "report.json", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert [f["code"] for f in json.loads((tmp_path / "report.json").read_text())["findings"]] == ["TCL101"]


def test_output_file_that_is_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    """`-o /dev/null` or `-o >(jq .)`: a device or pipe gets the report; renaming a file over it would have
    replaced the device (as root, /dev/null itself) with a file."""
    write(tmp_path / "step.py", STEP.format(noqa=""))
    pipe = tmp_path / "report.pipe"
    os.mkfifo(pipe)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_text()), daemon=True)
    reader.start()
    result = run_compile_lint("step.py", "--format", "json", "-o", str(pipe), cwd=tmp_path)
    reader.join(timeout=60)
    assert result.returncode == 1 and stat.S_ISFIFO(pipe.stat().st_mode)
    assert [f["code"] for f in json.loads(received[0])["findings"]] == ["TCL101"]


def test_statistics_count_findings_per_code(tmp_path: Path) -> None:
    body = "    print(x)\n    x = x / x.abs().max().item()\n"
    write(tmp_path / "step.py", STEP.format(noqa="").replace("    return x\n", body * 2 + "    return x\n"))
    text = run_compile_lint("step.py", "--statistics", cwd=tmp_path).stdout.splitlines()
    assert text == [
        "3  TCL101  [*]       tensor-item",
        "2  TCL201  [*unsafe] print-in-region",
        "[*] fixable with --fix, [*unsafe] with --unsafe-fixes",
    ]
    rows = json.loads(run_compile_lint("step.py", "--statistics", "--format", "json", cwd=tmp_path).stdout)
    assert rows == [
        {"code": "TCL101", "name": "tensor-item", "count": 3, "fix": 3, "unsafe_fix": 0},
        {"code": "TCL201", "name": "print-in-region", "count": 2, "fix": 0, "unsafe_fix": 2},
    ]


def test_show_fixes_marks_what_fix_and_unsafe_fixes_would_do(tmp_path: Path) -> None:
    write(tmp_path / "step.py", STEP.format(noqa="").replace("    return x\n", "    print(x)\n    return x\n"))
    shown = run_compile_lint("step.py", "--show-fixes", cwd=tmp_path).stdout
    assert "TCL101 [*] `.item()`" in shown and "= --fix would: `.item()` -> `.detach()`" in shown
    assert "TCL201 [*unsafe]" in shown and "= --unsafe-fixes would: call skipped while compiling" in shown
    findings = json.loads(run_compile_lint("step.py", "--show-fixes", "--format", "json", cwd=tmp_path).stdout)[
        "findings"
    ]
    assert [f["details"]["autofix"]["safety"] for f in findings] == ["safe", "unsafe"]


# -- noqa --------------------------------------------------------------------------------------------
def test_file_level_noqa_exempts_all_codes_or_the_listed_ones(tmp_path: Path) -> None:
    step = STEP.format(noqa="").replace("    return x\n", "    print(x)\n    return x\n")
    write(tmp_path / "all.py", "# compile-lint: noqa\n" + step)
    write(tmp_path / "some.py", step + "# Compile-Lint: noqa: TCL201\n")
    write(tmp_path / "trailing.py", step.replace("import torch", "import torch  # compile-lint: noqa"))
    assert codes(tmp_path, ".") == [
        ("some.py", 5, "TCL101"),
        ("trailing.py", 5, "TCL101"),
        ("trailing.py", 6, "TCL201"),
    ]


def test_unused_noqa_is_opt_in_and_names_unused_and_unknown_codes(tmp_path: Path) -> None:
    project(tmp_path, 'extend-select = ["TCL902"]\n')
    used = STEP.format(noqa="  # noqa: TCL101, E501")
    write(tmp_path / "used.py", used)
    write(tmp_path / "stale.py", "x = 1  # noqa: TCL101, F401, TCL999\ny = 2  # noqa\nz = 3  # noqa: TCL201, TCL902\n")
    result = lint([str(tmp_path)], load_config([str(tmp_path)]), use_cache=False)
    assert [(Path(f.path).name, f.line, f.col, f.end_col, f.message) for f in result.findings] == [
        (
            "stale.py",
            1,
            8,
            36,
            "`# noqa` names a TCL code that has no finding on this line (unused: TCL101; unknown: TCL999)",
        )
    ]
    project(tmp_path)
    assert codes(tmp_path, ".") == []  # off by default
    only_tcl9 = run_compile_lint(".", "--select", "TCL9", cwd=tmp_path).stdout  # TCL101 is not selected: not judged
    assert "stale.py:1:8: TCL902" in only_tcl9 and "(unknown: TCL999)" in only_tcl9


def test_unused_noqa_leaves_codes_that_are_not_selected_alone(tmp_path: Path) -> None:
    write(tmp_path / "step.py", "x = 1  # noqa: TCL201\n")
    assert "TCL902" in run_compile_lint("step.py", "--extend-select", "TCL902", cwd=tmp_path).stdout
    assert run_compile_lint("step.py", "--extend-select", "TCL902", "--ignore", "TCL2", cwd=tmp_path).returncode == 0


def test_add_noqa_baselines_a_tree_that_then_lints_clean(tmp_path: Path) -> None:
    step = STEP.format(noqa="  # noqa: E501").replace("    return x\n", "    print(x)  # type: ignore\n    return x\n")
    path = write(tmp_path / "step.py", step)
    result = run_compile_lint(".", "--add-noqa", cwd=tmp_path)
    assert result.returncode == 0 and "Added 2 noqa codes in 1 file." in result.stdout
    assert path.read_text() == step.replace("# noqa: E501", "# noqa: E501, TCL101").replace(
        "# type: ignore", "# type: ignore  # noqa: TCL201"
    )
    assert run_compile_lint(".", "--extend-select", "TCL902", cwd=tmp_path).returncode == 0
    assert "Added 0 noqa codes in 0 files." in run_compile_lint(".", "--add-noqa", cwd=tmp_path).stdout


def test_add_noqa_leaves_lines_that_end_inside_a_string_or_continue() -> None:
    text = 'x = f("""a\nb""")\ny = 1 + \\\n    2\nz = 3\n'
    fixed, added, blocked = with_noqa(text, {1: {"TCL203"}, 2: {"TCL203"}, 3: {"TCL101"}, 5: {"TCL102", "TCL101"}})
    assert fixed == text.replace('b""")', 'b""")  # noqa: TCL203').replace("z = 3", "z = 3  # noqa: TCL101, TCL102")
    assert added == 3
    assert [line for line, _ in blocked] == [1, 3]


def test_fix_takes_unused_codes_out_of_noqa_comments_when_tcl902_is_selected(tmp_path: Path) -> None:
    lines = [
        "    x = x / x.abs().max().item()  # noqa: TCL101, E501",
        "    y = 1  # noqa: TCL201",
        "    z = 2  # noqa: TCL201, TCL999, E501",
        "    return x  # noqa: TCL103 and why",
    ]
    path = write(tmp_path / "step.py", "import torch\n\n@torch.compile\ndef step(x):\n" + "\n".join(lines) + "\n")
    untouched = path.read_text()
    assert "Removed" not in run_compile_lint("step.py", "--fix", cwd=tmp_path).stdout  # TCL902 not selected
    result = run_compile_lint("step.py", "--fix", "--extend-select", "TCL902", cwd=tmp_path)
    assert "Removed 3 unused noqa codes." in result.stdout
    assert path.read_text() == untouched.replace("  # noqa: TCL201\n", "\n").replace("TCL201, TCL999, E501", "E501")
    assert result.returncode == 1 and "step.py:8:15: TCL902" in result.stdout  # text after the codes: left alone
