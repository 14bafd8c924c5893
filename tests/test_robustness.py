"""Nothing a user feeds the static pass takes the run down: each bad file gets one TCL000 diagnostic and
every other file is still reported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint import guard
from compile_lint.analysis import source
from compile_lint.analysis.source import source_lines
from compile_lint.config import Config, ConfigError, parse_table
from compile_lint.engine import CACHE_DIR, RunCache, lint, options_of, parse_source
from compile_lint.finding import Finding
from compile_lint.guard import Limits
from fixture_support import run_compile_lint

GOOD = "import torch\n\n\n@torch.compile\ndef f(x):\n    print(x)\n    return x\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "compile_lint", *args, "--no-cache", "--format", "json"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def codes_by_file(result: subprocess.CompletedProcess[str]) -> dict[str, list[str]]:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    by_file: dict[str, list[str]] = {}
    for finding in json.loads(result.stdout)["findings"]:
        by_file.setdefault(Path(finding["path"]).name, []).append(finding["code"])
    return by_file


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_deep_brackets_get_pythons_syntax_error_and_the_run_goes_on(tmp_path: Path, jobs: str) -> None:
    (tmp_path / "deep.py").write_text("x = " + "(" * 2000 + "1" + ")" * 2000 + "\n")
    (tmp_path / "good.py").write_text(GOOD)
    result = run(".", "-j", jobs, cwd=tmp_path)
    assert result.returncode == 1
    assert codes_by_file(result) == {"deep.py": ["TCL000"], "good.py": ["TCL201"]}
    (deep,) = [f for f in json.loads(result.stdout)["findings"] if f["path"].endswith("deep.py")]
    assert "too many nested parentheses" in deep["message"]


def test_long_operator_chain_is_refused_at_once_not_after_minutes() -> None:
    parsed = parse_source("chain.py", "y = " + " + ".join(["x"] * 5000) + "\n")
    assert isinstance(parsed, Finding) and parsed.code == "TCL000"


def test_nesting_python_accepts_but_libcst_cannot_parse_in_time_is_refused_by_its_depth() -> None:
    text = "y = " + "-" * 2500 + "x\n"  # Python accepts it; libcst needs about 12 s
    parsed = parse_source("neg.py", text, Limits(seconds=2))
    assert isinstance(parsed, Finding)
    assert re.search(r"nested 25\d\d deep", parsed.message) and "max-file-seconds" in parsed.message


def test_a_file_over_the_time_bound_is_reported_after_the_bound() -> None:
    text = GOOD + "".join(f"y{i} = f(a, b[{i}]) + g(c)\n" for i in range(3000))  # 90 KB: libcst takes over 0.3 s
    parsed = parse_source("big.py", text, Limits(seconds=0.05))
    assert isinstance(parsed, Finding)
    assert "took over 0.05 s" in parsed.message and "max-file-seconds" in parsed.message


MEMORY_BOUND = """
from compile_lint.engine import parse_source
from compile_lint.guard import Limits
text = "table = [\\n" + "    1.0,\\n" * 60_000 + "]\\n"  # a 480 KB list literal: about 700 MB in libcst
print(getattr(parse_source("table.py", text, Limits(megabytes=100)), "message", "parsed"))
"""


def test_a_file_over_the_memory_bound_is_reported() -> None:
    # In a fresh interpreter: the bound is address space beyond what the process already maps, and a test
    # process that parsed big trees before holds freed heap the child could reuse unseen.
    message = subprocess.run([sys.executable, "-c", MEMORY_BOUND], capture_output=True, text=True, check=True).stdout
    assert "needed over 100 MB" in message and "max-file-mb" in message


def test_a_big_file_within_the_bounds_is_linted_after_its_trial() -> None:
    text = GOOD + "TABLE = [\n" + "    1,\n" * 3000 + "]\n"
    limits = Limits(seconds=60, megabytes=20)  # estimated over half of 20 MB: tried in a child first
    assert not guard.within_half(guard.estimate(text, guard.python_tree(text), 100), limits)  # type: ignore[arg-type]
    parsed = parse_source("big.py", text, limits)
    assert not isinstance(parsed, Finding)


def test_normal_model_files_stay_in_process() -> None:
    source = Path(__file__).parent.parent / "src" / "compile_lint" / "analysis" / "tensors.py"
    text = source.read_text()
    tree = guard.python_tree(text)
    assert not isinstance(tree, SyntaxError)
    assert guard.within_half(guard.estimate(text, tree, guard.depth_for(15)), Limits())


def test_bounds_are_configurable_and_checked(tmp_path: Path) -> None:
    source = tmp_path / "pyproject.toml"
    config = parse_table({"max-file-seconds": 5, "max-file-mb": 256}, source)
    assert (config.max_file_seconds, config.max_file_mb) == (5.0, 256)
    with pytest.raises(ConfigError, match="max-file-mb"):
        parse_table({"max-file-mb": "big"}, source)
    with pytest.raises(ConfigError, match="> 0"):
        parse_table({"max-file-seconds": 0}, source)


def test_config_bound_reaches_the_lint(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.compile-lint]\nmax-file-seconds = 0.2\n")
    (tmp_path / "chain.py").write_text("y = " + " + ".join(["x"] * 600) + "\n")
    (tmp_path / "good.py").write_text(GOOD)
    result = run(".", cwd=tmp_path)
    assert result.returncode == 1
    assert codes_by_file(result) == {"chain.py": ["TCL000"], "good.py": ["TCL201"]}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_loops_are_skipped_with_one_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "back").symlink_to(tmp_path, target_is_directory=True)
    result = run(".", cwd=tmp_path)
    assert result.returncode == 1
    expected = {"good.py": ["TCL201"], "loop.py": ["TCL000"], "a.py": ["TCL000"], "b.py": ["TCL000"]}
    assert codes_by_file(result) == expected


def test_a_folder_that_cannot_be_listed_is_skipped_with_one_diagnostic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(GOOD)
    scandir = os.scandir

    def refuse_locked(path: str) -> object:  # as for a chmod 000 folder (root would read it anyway)
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse_locked)
    findings = lint([str(tmp_path)], Config(root=tmp_path), use_cache=False).findings
    assert [(Path(f.path).name, f.code) for f in findings] == [("good.py", "TCL201"), ("locked", "TCL000")]
    assert "cannot list folder: Permission denied" in findings[1].message


def test_cr_only_line_endings_give_the_same_positions_as_lf(tmp_path: Path) -> None:
    (tmp_path / "lf.py").write_text(GOOD)
    (tmp_path / "cr.py").write_bytes(GOOD.replace("\n", "\r").encode())
    (tmp_path / "crlf.py").write_bytes(GOOD.replace("\n", "\r\n").encode())
    findings = lint([str(tmp_path)], Config(root=tmp_path), use_cache=False).findings
    spans = {Path(f.path).name: (f.code, f.line, f.col, f.end_line, f.end_col) for f in findings}
    assert spans["cr.py"] == spans["crlf.py"] == spans["lf.py"] == ("TCL201", 6, 5, 6, 13)


def test_noqa_is_found_on_its_line_whatever_else_python_does_not_end_a_line_at(tmp_path: Path) -> None:
    text = "import torch\n# a form feed \x0c and a \u2028 in a comment\n\n@torch.compile\ndef f(x):\n    print(x)  # noqa: TCL201\n"
    (tmp_path / "m.py").write_text(text)
    assert lint([str(tmp_path)], Config(root=tmp_path), use_cache=False).findings == []


PYTHON_ACCEPTS = {
    "form feed before a statement": "import torch\n\x0c\n@torch.compile\ndef f(x):\n    print(x)\n",
    "form feed in indentation": "import torch\n\n@torch.compile\ndef f(x):\n\x0c    print(x)\n",
    "lone CR line ends": "import torch\r\r@torch.compile\rdef f(x):\r    print(x)\r",
    "tab indentation": "import torch\n\n@torch.compile\ndef f(x):\n\tprint(x)\n",
    "no newline at the end": "import torch\n\n@torch.compile\ndef f(x):\n    print(x)",
    "latin-1 coding cookie": "# -*- coding: latin-1 -*-\nimport torch\n\n@torch.compile\ndef f(x):\n    print('\xe9')\n",
    # libcst rejects (or misplaces) these six; they are linted with that whitespace made plain, at the file's columns
    "form feed in indentation, then a dedent": (
        "import torch\n\n@torch.compile\ndef f(x):\n\x0c    if x:\n        x = x + 1\n    print(x)\n"
    ),
    "form feeds in a docstring and in indentation": (
        'import torch\n\n@torch.compile\ndef f(x):\n    """doc\n\x0c  more"""\n\x0c    if x:\n        x = x + 1\n    print(x)\n'
    ),
    "form feed inside indentation": "import torch\n\n@torch.compile\ndef f(x):\n  \x0c  print(x)\n  \x0c  return x\n",
    "backslash-only line before indentation": "import torch\n\n@torch.compile\ndef f(x):\n\\\n    print(x)\n",
    "backslash-only line setting the indentation": (
        "import torch\n\n@torch.compile\ndef f(x):\n         \\\n    print(x)\n"
    ),
    "backslash-only line in indentation": "import torch\n\n@torch.compile\ndef f(x):\n    y = x\n    \\\n    print(y)\n",
}


@pytest.mark.parametrize("name", PYTHON_ACCEPTS)
def test_odd_whitespace_python_accepts_is_linted_at_the_files_own_position(tmp_path: Path, name: str) -> None:
    text = PYTHON_ACCEPTS[name]
    encoding = "latin-1" if "latin-1" in text else "utf-8"
    (tmp_path / "m.py").write_bytes(text.encode(encoding))
    findings = lint([str(tmp_path)], Config(root=tmp_path), use_cache=False).findings
    assert [f.code for f in findings] == ["TCL201"], findings
    (line,) = [number for number, body in enumerate(source_lines(text), start=1) if "print(" in body]
    assert (findings[0].line, findings[0].col) == (line, source_lines(text)[line - 1].index("print") + 1)


def test_whitespace_is_never_made_plain_where_that_changes_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    # a form feed opening a line inside a string is part of its value: that line is left alone
    text = 'def f(x):\n\x0c    if x:\n        y = """\n\x0c  a"""\n    return 1\n'
    plain = source.normalise_odd_whitespace(text)
    assert plain is not None and '"""\n\x0c  a"""' in plain.text and plain.column_shifts == {2: 1}
    # and were a string's line not recognised, the AST comparison refuses the change
    monkeypatch.setattr(source, "_lines_inside_strings", lambda text: set())
    assert source.normalise_odd_whitespace(text) is None
    parsed = parse_source("m.py", text)
    assert isinstance(parsed, Finding) and "Python accepts it but libcst's parser does not" in parsed.message


def test_a_file_linted_with_plain_whitespace_is_not_fixed_and_says_why(tmp_path: Path) -> None:
    text = PYTHON_ACCEPTS["form feed in indentation, then a dedent"]
    (tmp_path / "m.py").write_text(text)
    result = run_compile_lint("--fix", "--unsafe-fixes", "m.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "m.py: not fixed: its odd whitespace" in result.stdout
    assert (tmp_path / "m.py").read_text() == text


def test_add_noqa_and_snippets_count_lines_as_python_does(tmp_path: Path) -> None:
    # str.splitlines would end lines at the form feed and the U+2028 and put the comment two lines early
    text = "import torch\n# a form feed \x0c and a \u2028 in a comment\n\n@torch.compile\ndef f(x):\n    print(x)\n"
    (tmp_path / "m.py").write_text(text)
    shown = run_compile_lint("m.py", cwd=tmp_path)
    assert "6 |     print(x)" in shown.stdout, shown.stdout
    added = run_compile_lint("--add-noqa", "m.py", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert source_lines((tmp_path / "m.py").read_text())[5] == "    print(x)  # noqa: TCL201"


BAD_ENTRIES = {
    "truncated": '[{"path": "m.py", "line": 1',
    "not a list": '{"path": "m.py"}',
    "wrong type": '[{"path": 1, "line": "6", "col": 5, "end_line": 6, "end_col": 13, "code": "TCL201", "message": "m"}]',
    "missing field": '[{"path": "m.py"}]',
    "unknown field": None,  # a valid entry plus one field
    "bad status": None,
    "bool as int": None,
    "null": "null",
}


@pytest.mark.parametrize("name", BAD_ENTRIES)
def test_cache_rebuilds_an_entry_that_does_not_fit(tmp_path: Path, name: str) -> None:
    (tmp_path / "m.py").write_text(GOOD)
    config = Config(root=tmp_path)
    cold = lint([str(tmp_path)], config).findings
    (entry,) = (tmp_path / CACHE_DIR).rglob("*.json")
    good = json.loads(entry.read_text())
    bad = BAD_ENTRIES[name]
    if name == "unknown field":
        bad = json.dumps([{**good[0], "extra": 1}])
    elif name == "bad status":
        bad = json.dumps([{**good[0], "status": "maybe"}])
    elif name == "bool as int":
        bad = json.dumps([{**good[0], "line": True}])
    assert bad is not None
    entry.write_text(bad)
    store = RunCache(tmp_path, options_of(config).torch_version)
    assert store.get(entry.stem) is None
    rebuilt = lint([str(tmp_path)], config)
    assert rebuilt.cached == 0 and rebuilt.findings == cold
    assert json.loads(entry.read_text()) == good
    assert lint([str(tmp_path)], config).cached == 1


def test_syntax_newer_than_this_python_is_still_linted_when_libcst_parses_it() -> None:
    parsed = parse_source("m.py", "type Pair = tuple[int, int]\n\n\ndef first[T](x: list[T]) -> T:\n    return x[0]\n")
    assert not isinstance(parsed, Finding)


def test_invalid_python_gets_pythons_message_through_the_libcst_try() -> None:
    parsed = parse_source("m.py", "def forward(self, x)\n    return x\n")
    assert isinstance(parsed, Finding) and parsed.message.endswith("syntax error: expected ':'") and parsed.line == 1
