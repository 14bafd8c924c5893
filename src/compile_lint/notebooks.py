"""Jupyter notebooks as one Python source, and back.

A notebook is linted as the Python source its code cells make when joined in order: each cell is
preceded by a marker comment line (`# %% compile-lint cell 3`); every other line of the source is one
line of a cell, so findings map back to `(cell, line in cell)`. IPython syntax that is not Python
(`%magic`, `!shell`, `x = !ls`, `obj?`) becomes a `pass` placeholder at the same indentation, so lines stay
aligned and blocks stay valid; cells run by a non-Python cell magic (`%%bash`, `%%writefile`) are left
out, while `%%time`-like magics whose body is Python keep their body.

Cells are numbered from 1 in notebook order, counting markdown and raw cells, as Jupyter's and VS
Code's cell lists do: cell N is `notebook["cells"][N - 1]`.

API (also for editors that receive the cells one by one, e.g. LSP notebook documents):
- `from_json(data)` / `load(path)` -> `NotebookSource` from a `.ipynb` file (raise `NotebookError`);
- `from_cells([(cell_type, source), ...])` -> `NotebookSource` from cells already in memory;
- `NotebookSource.text` is the Python source to lint; `.locate(line)` maps one of its lines to
  `(cell, line in cell)`, `.source_line(cell, line)` maps back, `.cell_line(cell, line)` is the text as
  written in the cell;
- `to_cells(finding, source)` moves a finding onto its cell (e.g. one of `engine.lint_source(source.text, path)`);
- `is_notebook(path)`: the `.ipynb` suffix;
- `rewrite(data, fixed_text)` puts a fixed source back into the notebook's cells, keeping outputs,
  metadata, key order and formatting;
- `exported(paths)` writes notebooks as modules for `--confirm-notebooks`, `from_exported` maps back.
"""

from __future__ import annotations

import bisect
import json
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compile_lint.finding import Finding

SUFFIX = ".ipynb"
MARKER = "# %% compile-lint cell {}"
MARKER_LINE = re.compile(r"# %% compile-lint cell (\d+)")
PLACEHOLDER = "pass  # compile-lint: IPython syntax"
# Cell magics whose body is Python run in the kernel (the list ruff uses); other cell magics are skipped.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})
# `x = %time f()`, `files = !ls`: an assignment from a magic or a shell command.
ASSIGNED_MAGIC = re.compile(r"[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!]")
HELP = re.compile(r"\?{1,2}[\w.]+\??|[\w.]+\?{1,2}")  # `?obj`, `obj?`, `obj??`


class NotebookError(ValueError):
    """A file that is not a notebook compile-lint can read, or a fix it cannot put back into one."""


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass(frozen=True)
class CodeCell:
    cell: int  # 1-based position among all the notebook's cells
    first_line: int  # line of the cell's first line in `NotebookSource.text` (1-based)
    lines: tuple[str, ...]  # as written, without line ends
    magics: tuple[int, ...]  # 0-based indices of the lines replaced by a placeholder
    trailing_newline: bool  # the cell's source ends with a line break


@dataclass(frozen=True)
class NotebookSource:
    text: str  # the Python source to lint
    cells: tuple[CodeCell, ...]  # the code cells in it, in order

    def locate(self, line: int) -> tuple[int, int]:
        """`(cell, line in cell)` of a line of `text`. A marker line belongs to the cell before it, one
        past its last line (where a syntax error about an unclosed bracket is reported)."""
        if not self.cells:
            return 1, line
        starts = [cell.first_line for cell in self.cells]
        index = bisect.bisect_right(starts, line) - 1
        if index < 0:
            return self.cells[0].cell, 1
        cell = self.cells[index]
        offset = line - cell.first_line
        if offset < len(cell.lines) or index == len(self.cells) - 1:
            return cell.cell, offset + 1
        return cell.cell, len(cell.lines) + 1

    def source_line(self, cell: int, line: int) -> int | None:
        """The line of `text` that holds line `line` of cell `cell`; None if that cell is not linted."""
        for code in self.cells:
            if code.cell == cell and 0 < line <= len(code.lines):
                return code.first_line + line - 1
        return None

    def cell_line(self, cell: int, line: int) -> str | None:
        """Line `line` of cell `cell` as written in the notebook (magics included)."""
        for code in self.cells:
            if code.cell == cell:
                return code.lines[line - 1] if 0 < line <= len(code.lines) else None
        return None


def load(path: str) -> NotebookSource:
    """Raises OSError or NotebookError."""
    return from_json(Path(path).read_bytes())


def from_json(data: bytes | str) -> NotebookSource:
    notebook = _parse(data)
    if not _is_python(notebook):
        return from_cells([])
    return from_cells([(cell.get("cell_type", ""), _joined(cell.get("source", ""))) for cell in notebook["cells"]])


def from_cells(cells: Sequence[tuple[str, str]]) -> NotebookSource:
    """`cells` are `(cell_type, source)` in notebook order; only "code" cells are linted."""
    text: list[str] = []
    code_cells: list[CodeCell] = []
    for number, (kind, source) in enumerate(cells, start=1):
        if kind != "code":
            continue
        lines, trailing = _split(source)
        magics = _magic_lines(lines)
        if magics is None:  # a cell magic whose body is not Python
            continue
        text.append(MARKER.format(number))
        code_cells.append(CodeCell(number, len(text) + 1, tuple(lines), tuple(magics), trailing))
        text.extend(magics[i] + PLACEHOLDER if i in magics else line for i, line in enumerate(lines))
    return NotebookSource("".join(f"{line}\n" for line in text), tuple(code_cells))


def to_cells(finding: Finding, source: NotebookSource) -> Finding:
    """The finding with its cell set and its lines counted within that cell; a span that runs into the
    next cell ends at the end of its first line."""
    cell, line = source.locate(finding.line)
    end_cell, end_line = source.locate(finding.end_line)
    end_col = finding.end_col
    if end_cell != cell:
        end_line = line
        end_col = len(source.cell_line(cell, line) or "") + 1
    return replace(finding, cell=cell, line=line, end_line=end_line, end_col=end_col)


def rewrite(data: bytes, fixed_text: str) -> bytes:
    """The notebook `data` with its code cells replaced by those of `fixed_text` (a fixed version of
    `from_json(data).text`). Magic lines come back as written; every other byte of the notebook (outputs,
    metadata, ids, key order, indentation, escaping) is kept as far as JSON allows."""
    notebook = _parse(data)
    for code, restored in _changed_cells(from_json(data), fixed_text):
        cell = notebook["cells"][code.cell - 1]
        text = "\n".join(restored) + ("\n" if code.trailing_newline else "")
        cell["source"] = text if isinstance(cell["source"], str) else _nbformat_lines(text)
    raw = data.decode("utf-8-sig")
    dumped = json.dumps(notebook, indent=_indent(raw), ensure_ascii=_escapes_non_ascii(raw))
    return (dumped + "\n" if raw.endswith("\n") else dumped).encode()


def cell_diffs(path: str, data: bytes, fixed_text: str) -> str:
    """`--diff` for a notebook: a unified diff per changed code cell, of its lines as written (magics
    included), headed `path:cell N`. Raises NotebookError as `rewrite` does."""
    import difflib  # only for --diff

    parts: list[str] = []
    for code, restored in _changed_cells(from_json(data), fixed_text):
        where = f"{path}:cell {code.cell}"
        before, after = [f"{line}\n" for line in code.lines], [f"{line}\n" for line in restored]
        parts.extend(difflib.unified_diff(before, after, f"a/{where}", f"b/{where}"))
    return "".join(parts)


def _changed_cells(source: NotebookSource, fixed_text: str) -> Iterator[tuple[CodeCell, list[str]]]:
    """Each code cell the fix changed, with its fixed lines as they are written (magics restored)."""
    for code, lines in zip(source.cells, _split_cells(fixed_text, source), strict=True):
        restored = _restore_magics(code, lines)
        if restored != list(code.lines):
            yield code, restored


@contextmanager
def exported(paths: Sequence[str]) -> Iterator[dict[str, tuple[str, NotebookSource]]]:
    """For `--confirm-notebooks`: each readable notebook among `paths` written, as the module its code cells
    make top to bottom (magics as `pass`), into a temporary folder that lives as long as the context.
    Yields module path -> (notebook path, its source); modules are named `notebook_<stem>.py`, so that
    a notebook named like a package it imports does not shadow it."""
    import tempfile  # only for --confirm-notebooks

    with tempfile.TemporaryDirectory(prefix="compile-lint-notebooks-") as folder:
        modules: dict[str, tuple[str, NotebookSource]] = {}
        for path in paths:
            if not is_notebook(path):
                continue
            try:
                source = load(path)
            except (OSError, NotebookError):
                continue  # the lint reports it as TCL000
            stem = re.sub(r"\W", "_", Path(path).stem)
            module = os.path.join(folder, f"notebook_{stem}.py")
            while module in modules:
                module = module.removesuffix(".py") + "_.py"
            Path(module).write_text(source.text, encoding="utf-8")
            modules[module] = (path, source)
        yield modules


def from_exported(finding: Finding, modules: dict[str, tuple[str, NotebookSource]]) -> Finding:
    """A finding in a module `exported` wrote, moved onto its notebook's cell; others unchanged."""
    if finding.path not in modules:
        return finding
    notebook, source = modules[finding.path]
    return to_cells(replace(finding, path=notebook), source)


# -- reading ---------------------------------------------------------------------------------------
def _parse(data: bytes | str) -> dict[str, Any]:
    try:
        notebook = json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise NotebookError(f"not a notebook: invalid JSON: {error}") from None
    if not isinstance(notebook, dict):
        raise NotebookError("not a notebook: the JSON is not an object")
    if "cells" not in notebook:
        if "worksheets" in notebook:
            raise NotebookError("nbformat 3 notebook: convert it with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a notebook: no `cells`")
    cells = notebook["cells"]
    if not isinstance(cells, list) or not all(isinstance(c, dict) and _is_source(c.get("source", "")) for c in cells):
        raise NotebookError("not a notebook: `cells` must be a list of cells with a string or list source")
    return notebook


def _is_source(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _joined(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


def _is_python(notebook: dict[str, Any]) -> bool:
    """Notebooks of other kernels (R, Julia) have no Python to lint; no metadata means Python."""
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for table, key in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(table, {}).get(key) if isinstance(metadata.get(table), dict) else None
        if isinstance(value, str):
            return value.lower() == "python"
    return True


def _split(source: str) -> tuple[list[str], bool]:
    if not source:
        return [], False
    lines = source.replace("\r\n", "\n").split("\n")
    trailing = lines[-1] == ""
    return (lines[:-1] if trailing else lines), trailing


# -- IPython syntax --------------------------------------------------------------------------------
def _magic_lines(lines: list[str]) -> dict[int, str] | None:
    """The lines to replace by a placeholder, each with the indentation to give it; None to skip the cell."""
    if lines and lines[0].startswith("%%"):
        name = lines[0][2:].split(maxsplit=1)[0] if lines[0][2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            return None
        return {0: "", **{i + 1: indent for i, indent in _line_magics(lines[1:]).items()}}
    return _line_magics(lines)


def _line_magics(lines: list[str]) -> dict[int, str]:
    """Lines that start a statement with IPython syntax, and the backslash continuations of those (which
    take the indentation of the line they continue)."""
    magics: dict[int, str] = {}
    scanner = _Scanner()
    indent: str | None = None  # of the magic the previous line continues
    for index, line in enumerate(lines):
        if indent is None and scanner.at_statement_start() and _is_ipython(line.strip()):
            indent = line[: len(line) - len(line.lstrip())]
        if indent is not None:
            magics[index] = indent
            indent = indent if line.rstrip().endswith("\\") else None
            continue
        scanner.feed(line)
    return magics


def _is_ipython(stripped: str) -> bool:
    if stripped.startswith(("%", "!")):
        return True
    return bool(ASSIGNED_MAGIC.match(stripped) or HELP.fullmatch(stripped))


class _Scanner:
    """Just enough of Python's tokenizer to know whether a line starts a statement: open brackets,
    open triple-quoted strings and backslash continuations."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the open triple quote
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        index, length = 0, len(line)
        while index < length:
            if self.quote is not None:
                if line.startswith(self.quote, index):
                    self.quote, index = None, index + 3
                else:
                    index += 2 if line[index] == "\\" else 1
                continue
            char = line[index]
            if char == "#":
                break
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char in "\"'":
                if line.startswith(char * 3, index):
                    self.quote, index = char * 3, index + 3
                    continue
                index = _string_end(line, index + 1, char)
                continue
            index += 1
        self.continued = self.quote is None and line.endswith("\\")


def _string_end(line: str, index: int, quote: str) -> int:
    while index < len(line) and line[index] != quote:
        index += 2 if line[index] == "\\" else 1
    return index + 1


# -- writing back ----------------------------------------------------------------------------------
def _split_cells(fixed_text: str, source: NotebookSource) -> list[list[str]]:
    """The fixed source's lines per code cell, found by the markers (a fix never touches comments)."""
    cells: list[list[str]] = []
    numbers: list[int] = []
    for line in fixed_text.removesuffix("\n").split("\n"):  # as joined: not splitlines (\f, \u2028...)
        marker = MARKER_LINE.fullmatch(line)
        if marker:
            numbers.append(int(marker.group(1)))
            cells.append([])
        elif cells:
            cells[-1].append(line)
        elif line.strip():
            raise NotebookError("the fixed code starts before the first cell marker")
    if numbers != [cell.cell for cell in source.cells]:
        raise NotebookError("the fixed code lost its cell markers")
    return cells


def _restore_magics(cell: CodeCell, lines: list[str]) -> list[str]:
    placeholders = [i for i, line in enumerate(lines) if line.strip() == PLACEHOLDER]
    if len(placeholders) != len(cell.magics):
        raise NotebookError(f"cell {cell.cell}: the fix moved an IPython magic line")
    restored = list(lines)
    for at, original in zip(placeholders, cell.magics, strict=True):
        restored[at] = cell.lines[original]
    return restored


def _nbformat_lines(text: str) -> list[str]:
    """A source as nbformat stores it: lines that keep their line break, the last one without."""
    lines = [f"{line}\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return [line for line in lines if line]


def _indent(raw: str) -> int:
    """The indentation of the notebook's first key (nbformat writes 1)."""
    match = re.match(r"\{\n( +)\"", raw)
    return len(match.group(1)) if match else 1


def _escapes_non_ascii(raw: str) -> bool:
    """Keep `\\u00e9` escapes if the file used them (nbformat writes UTF-8 as is)."""
    return raw.isascii() and "\\u" in raw
