"""Jupyter notebooks: linted as their joined code cells, reported per cell, fixed in place as nbformat wrote them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from compile_lint.config import Config
from compile_lint.confirm.plan import NOTEBOOK_NOT_RUN, automatic_specs
from compile_lint.engine import build_project, discover, lint
from compile_lint.notebooks import PLACEHOLDER, NotebookError, from_cells, from_json, rewrite
from fixture_support import run_compile_lint

STEP = "@torch.compile\ndef step(x):\n    x = x / x.abs().max().item()\n    print('done')\n    return x"


def notebook(*cells: nbformat.NotebookNode, language: str = "python") -> nbformat.NotebookNode:
    book = new_notebook(cells=list(cells))
    book.metadata["kernelspec"] = {"display_name": language, "language": language, "name": language}
    book.metadata["language_info"] = {"name": language}
    return book


def save(folder: Path, name: str, book: nbformat.NotebookNode) -> Path:
    path = folder / name
    nbformat.write(book, str(path))
    return path


def demo(folder: Path, name: str = "demo.ipynb") -> Path:
    """Markdown, a magic and an import, the compiled step (with an output), then a shell command."""
    step = new_code_cell(STEP, execution_count=2, outputs=[new_output("stream", name="stdout", text="done\n")])
    return save(
        folder,
        name,
        notebook(
            new_markdown_cell("# A model"),
            new_code_cell("%matplotlib inline\nimport torch", execution_count=1),
            step,
            new_code_cell("!nvidia-smi\nstep(torch.ones(3))"),
        ),
    )


# -- the source and its cell map ---------------------------------------------------------------------
def test_code_cells_are_joined_with_magics_as_placeholders_and_non_python_cells_left_out() -> None:
    source = from_cells(
        [
            ("markdown", "# Title"),
            ("code", "%matplotlib inline\nimport torch\nfiles = !ls\n"),
            ("code", "%%bash\necho hi"),
            ("raw", "raw text"),
            ("code", "%%time\nfor i in range(3):\n    %time f(i)\nobj?\n!pip install \\\n  torch"),
        ]
    )
    assert source.text.splitlines() == [
        "# %% compile-lint cell 2",
        PLACEHOLDER,
        "import torch",
        PLACEHOLDER,
        "# %% compile-lint cell 5",
        PLACEHOLDER,
        "for i in range(3):",
        f"    {PLACEHOLDER}",
        PLACEHOLDER,
        PLACEHOLDER,
        PLACEHOLDER,
    ]
    assert [cell.cell for cell in source.cells] == [2, 5]
    assert source.locate(3) == (2, 2) and source.locate(8) == (5, 3)
    assert source.cell_line(5, 3) == "    %time f(i)"  # as written, not the placeholder


def test_percent_and_bang_inside_strings_and_brackets_are_python() -> None:
    code = "query = '''\n%s rows\n'''\ntotal = (1 +\n%x)\nmessage = 'a' \\\n!b"
    assert from_cells([("code", code)]).text.splitlines()[1:] == code.splitlines()


def test_a_cell_magic_whose_body_is_not_python_skips_the_cell() -> None:
    assert from_cells([("code", "%%writefile model.py\nimport torch")]).cells == ()


@given(st.lists(st.tuples(st.sampled_from(["code", "markdown"]), st.text("ab %!\n", max_size=30)), max_size=6))
def test_every_cell_line_maps_to_its_source_line_and_back(cells: list[tuple[str, str]]) -> None:
    source = from_cells(cells)
    lines = source.text.splitlines()
    for code in source.cells:
        for number in range(1, len(code.lines) + 1):
            line = source.source_line(code.cell, number)
            assert line is not None and source.locate(line) == (code.cell, number)
            written = code.lines[number - 1]
            assert lines[line - 1] in (written, written[: len(written) - len(written.lstrip())] + PLACEHOLDER)


def test_not_a_notebook_raises_with_a_reason() -> None:
    with pytest.raises(NotebookError, match="invalid JSON"):
        from_json(b"{not json")
    with pytest.raises(NotebookError, match="nbformat 3"):
        from_json(json.dumps({"worksheets": [], "nbformat": 3}))


def test_a_notebook_of_another_kernel_has_no_python() -> None:
    book = notebook(new_code_cell("x <- 1"), language="R")
    assert from_json(nbformat.writes(book)).cells == ()


# -- linting -----------------------------------------------------------------------------------------
def test_findings_are_reported_on_their_cell_in_every_format(tmp_path: Path) -> None:
    demo(tmp_path)
    full = run_compile_lint("demo.ipynb", cwd=tmp_path)
    assert full.returncode == 1, full.stderr
    assert "demo.ipynb:cell 3:3:13: TCL101" in full.stdout and "demo.ipynb:cell 3:4:5: TCL201" in full.stdout
    assert "    3 |     x = x / x.abs().max().item()" in full.stdout  # the line of the cell, marked
    concise = run_compile_lint("demo.ipynb", "--output-format", "concise", cwd=tmp_path).stdout.splitlines()
    assert concise[0].startswith("demo.ipynb:cell 3:3:13: TCL101 ")
    findings = json.loads(run_compile_lint("demo.ipynb", "--format", "json", cwd=tmp_path).stdout)["findings"]
    assert [(f["cell"], f["line"], f["col"], f["code"]) for f in findings] == [
        (3, 3, 13, "TCL101"),
        (3, 4, 5, "TCL201"),
    ]
    results = json.loads(run_compile_lint("demo.ipynb", "--format", "sarif", cwd=tmp_path).stdout)["runs"][0]["results"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert "region" not in location and location["artifactLocation"]["uri"] == "demo.ipynb"
    assert results[0]["properties"]["cell"] == 3 and results[0]["properties"]["cellRegion"]["startLine"] == 3
    github = run_compile_lint("demo.ipynb", "--format", "github", cwd=tmp_path).stdout.splitlines()[0]
    assert github.startswith("::warning file=demo.ipynb,title=TCL101 (cell 3%2C line 3%2C column 13)::")


def test_regions_and_helpers_are_seen_across_cells(tmp_path: Path) -> None:
    book = notebook(
        new_code_cell("import torch"),
        new_code_cell("def helper(x):\n    return x.item()"),
        new_code_cell("def forward(x):\n    return helper(x)\n\ncompiled = torch.compile(forward)"),
    )
    findings = lint([str(save(tmp_path, "cells.ipynb", book))], Config(root=tmp_path), use_cache=False).findings
    assert [(f.cell, f.line, f.code) for f in findings] == [(2, 2, "TCL101")]


def test_folders_include_notebooks_but_not_jupyter_checkpoints(tmp_path: Path) -> None:
    demo(tmp_path)
    (tmp_path / ".ipynb_checkpoints").mkdir()
    demo(tmp_path / ".ipynb_checkpoints", "demo-checkpoint.ipynb")
    assert discover([str(tmp_path)]) == [str(tmp_path / "demo.ipynb")]


def test_noqa_in_a_cell_and_a_file_level_noqa_in_any_cell(tmp_path: Path) -> None:
    book = notebook(
        new_code_cell("import torch"),
        new_code_cell(STEP.replace(".item()", ".item()  # noqa: TCL101")),
    )
    path = save(tmp_path, "quiet.ipynb", book)
    assert [f.code for f in lint([str(path)], Config(root=tmp_path), use_cache=False).findings] == ["TCL201"]
    book.cells.append(new_code_cell("# compile-lint: noqa"))
    save(tmp_path, "quiet.ipynb", book)
    assert lint([str(path)], Config(root=tmp_path), use_cache=False).findings == []


def test_a_syntax_error_is_reported_in_its_cell(tmp_path: Path) -> None:
    book = notebook(new_code_cell("import torch"), new_code_cell("def broken(x)\n    return x"))
    findings = lint([str(save(tmp_path, "broken.ipynb", book))], Config(root=tmp_path), use_cache=False).findings
    assert [(f.code, f.cell, f.line) for f in findings] == [("TCL000", 2, 1)]


def test_a_file_that_is_not_a_notebook_is_one_tcl000(tmp_path: Path) -> None:
    (tmp_path / "bad.ipynb").write_text("{not json")
    result = run_compile_lint("bad.ipynb", cwd=tmp_path)
    assert result.returncode == 1 and "bad.ipynb:1:1: TCL000" in result.stdout and "invalid JSON" in result.stdout


def test_confirm_leaves_notebook_regions_unrun(tmp_path: Path) -> None:
    project = build_project([str(demo(tmp_path))], Config(root=tmp_path))
    specs, unrunnable = automatic_specs(project)
    assert specs == [] and [u.reason for u in unrunnable] == [NOTEBOOK_NOT_RUN]


@pytest.mark.dynamo
@pytest.mark.slow
def test_confirm_runs_modules_but_reports_notebook_findings_as_not_run(tmp_path: Path) -> None:
    step = "import torch\n\n@torch.compile\ndef step(x):\n    return x / x.abs().max().item()\n"
    save(tmp_path, "steps.ipynb", notebook(new_code_cell(step)))
    (tmp_path / "steps.py").write_text(step)
    result = run_compile_lint(".", "--confirm", cwd=tmp_path)
    assert "steps.ipynb:cell 1:5:16: TCL101 [not-run]" in result.stdout, result.stdout + result.stderr
    assert "steps.py:5:16: TCL101 [confirmed]" in result.stdout
    assert f"steps.ipynb:step: not-run: {NOTEBOOK_NOT_RUN}" in result.stdout  # in the targets table notes


@pytest.mark.dynamo
@pytest.mark.slow
def test_confirm_notebooks_runs_the_cells_as_one_module_and_reports_on_the_cells(tmp_path: Path) -> None:
    cells = [
        new_code_cell("%matplotlib inline\nimport torch"),
        new_markdown_cell("The step"),
        new_code_cell("@torch.compile\ndef step(x):\n    return x / x.abs().max().item()"),
    ]
    save(tmp_path, "steps.ipynb", notebook(*cells))
    result = run_compile_lint(".", "--confirm-notebooks", "--format", "json", cwd=tmp_path)
    report = json.loads(result.stdout)
    found = [(f["path"], f["cell"], f["line"], f["code"], f["status"]) for f in report["findings"]]
    assert found == [("steps.ipynb", 3, 3, "TCL101", "confirmed")], result.stderr
    assert [t["label"] for t in report["environment"]["targets"]] == ["steps.ipynb:step"]


# -- fixing ------------------------------------------------------------------------------------------
def cell_sources(path: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(str(path), as_version=4).cells]


def test_fix_rewrites_cells_and_keeps_outputs_metadata_and_format(tmp_path: Path) -> None:
    path = demo(tmp_path)
    before = nbformat.read(str(path), as_version=4)
    original = path.read_text()
    result = run_compile_lint("demo.ipynb", "--unsafe-fixes", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fixed demo.ipynb:cell 3:3 TCL101" in result.stdout
    after = nbformat.read(str(path), as_version=4)
    nbformat.validate(after)
    assert after.cells[2].source == (
        "@torch.compile\ndef step(x):\n    x = x / x.abs().max().detach()\n"
        "    if not torch.compiler.is_compiling():\n        print('done')\n    return x"
    )
    for old, new in zip(before.cells, after.cells, strict=True):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
    assert [c.source for c in after.cells if c is not after.cells[2]] == [
        c.source for c in before.cells if c is not before.cells[2]
    ]
    before.cells[2].source = after.cells[2].source
    assert path.read_text() == nbformat.writes(before) + "\n"  # byte for byte what nbformat writes
    assert original != path.read_text()
    assert run_compile_lint("demo.ipynb", "--unsafe-fixes", cwd=tmp_path).stdout.startswith("Fixed 0 findings")


def test_magics_in_a_fixed_cell_come_back_as_written(tmp_path: Path) -> None:
    code = "%load_ext autoreload\n@torch.compile\ndef step(x):\n    !echo start\n    return x / x.abs().max().item()\n"
    path = save(tmp_path, "magic.ipynb", notebook(new_code_cell("import torch"), new_code_cell(code)))
    assert run_compile_lint("magic.ipynb", "--fix", cwd=tmp_path).returncode == 0
    assert cell_sources(path)[1] == code.replace(".item()", ".detach()")


def test_diff_shows_the_cells_and_writes_nothing(tmp_path: Path) -> None:
    path = demo(tmp_path)
    original = path.read_bytes()
    result = run_compile_lint("demo.ipynb", "--diff", cwd=tmp_path)
    assert result.returncode == 1 and "+    x = x / x.abs().max().detach()" in result.stdout
    # one diff per changed cell, headed with the cell, of the cell's own lines (no joined-module markers)
    assert "--- a/demo.ipynb:cell 3\n+++ b/demo.ipynb:cell 3\n@@ -1," in result.stdout
    assert "compile-lint cell" not in result.stdout and path.read_bytes() == original


def test_diff_of_a_cell_with_magics_shows_them_as_written(tmp_path: Path) -> None:
    code = "%load_ext autoreload\n@torch.compile\ndef step(x):\n    !echo start\n    return x / x.abs().max().item()\n"
    save(tmp_path, "magic.ipynb", notebook(new_code_cell("import torch"), new_code_cell(code)))
    result = run_compile_lint("magic.ipynb", "--diff", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "@@ -2,4 +2,4 @@\n" in result.stdout  # the cell's own line numbers
    assert "     !echo start\n" in result.stdout  # the magic as written, not its placeholder
    assert "+    return x / x.abs().max().detach()" in result.stdout and "magic.ipynb:cell 1" not in result.stdout


def rewritten(data: str) -> str:
    return rewrite(data.encode(), from_json(data).text).decode()


def test_rewrite_without_changes_is_byte_identical_whatever_the_writer() -> None:
    book = notebook(new_code_cell("x = 'é'\n%time f()\n"), new_markdown_cell("ü"))
    book.cells[0].outputs = [new_output("execute_result", data={"text/plain": "1.5e-05"}, execution_count=1)]
    by_nbformat = nbformat.writes(book) + "\n"
    assert rewritten(by_nbformat) == by_nbformat
    as_list: dict[str, Any] = json.loads(by_nbformat)
    as_list["cells"][0]["source"] = ["x = 'é'\n", "%time f()\n"]
    for text in (json.dumps(as_list, indent=2), json.dumps(as_list, indent=1, ensure_ascii=True) + "\n"):
        assert rewritten(text) == text  # another indentation, escaped non-ASCII, no final newline


def test_a_changed_list_source_stays_a_list_of_lines() -> None:
    data = json.dumps({"cells": [{"cell_type": "code", "source": ["a = 1\n", "b = 2"]}], "metadata": {}}, indent=1)
    fixed = from_json(data).text.replace("b = 2", "b = 3\nc = 4")
    assert json.loads(rewrite(data.encode(), fixed))["cells"][0]["source"] == ["a = 1\n", "b = 3\n", "c = 4"]


def test_a_fix_that_loses_the_cell_markers_is_refused() -> None:
    data = nbformat.writes(notebook(new_code_cell("a = 1"), new_code_cell("b = 2")))
    text = from_json(data).text
    with pytest.raises(NotebookError, match="lost its cell markers"):
        rewrite(data.encode(), text.replace("# %% compile-lint cell 2\n", ""))
