"""`--fix`, `--unsafe-fixes`, `--diff`: fix a whole project in memory (round after round, until
nothing more applies), then replace each changed file atomically, and only if nobody changed it
since it was read. Encoding, BOM and line endings (`\n`, `\r\n`, and `\r`, fixed as `\n`) are kept. A notebook
is fixed as the Python source of its code cells (`notebooks`), then written back into its cells, outputs and
metadata untouched."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from rich.console import Console
from rich.text import Text

from compile_lint import atomic, notebooks
from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.source import encoding_of, source_lines
from compile_lint.config import Config
from compile_lint.engine import (
    discover,
    exempt_by_file_noqa,
    file_noqa,
    load_source,
    options_of,
    parse_source,
    suppressed_by_noqa,
)
from compile_lint.finding import Finding
from compile_lint.fixes.apply import FixError, fix_text, restore_newlines, working_text
from compile_lint.fixes.codemods import CODEMODS, Edit, Safety
from compile_lint.project import Project

MAX_ROUNDS = 10  # a fix can expose another (e.g. a guarded print inside a rewritten branch)


@dataclass
class Source:
    path: str
    data: bytes
    encoding: str  # as declared (coding cookie or BOM), so it is written back the same way
    text: str
    stamp: tuple[int, int]  # (mtime_ns, size) when read


@dataclass
class FilePlan:
    source: Source
    text: str  # the fixed working text (`\n` for a `\r` file)
    applied: list[Edit]

    def encoded(self) -> bytes:
        """Raises NotebookError if a notebook's fixed source cannot be put back into its cells."""
        if notebooks.is_notebook(self.source.path):
            return notebooks.rewrite(self.source.data, self.text)
        return restore_newlines(self.source.text, self.text).encode(self.source.encoding)

    def diff(self) -> str:
        path = self.source.path
        if notebooks.is_notebook(path):  # per cell, as the user sees them (a plan is known to fit its cells)
            return notebooks.cell_diffs(path, self.source.data, self.text)
        before, after = _lines(working_text(self.source.text)), _lines(self.text)
        return "".join(difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"))


@dataclass
class Plan:
    files: list[FilePlan] = field(default_factory=list)  # only files that change
    withheld: int = 0  # unsafe fixes left out because --unsafe-fixes was not given
    errors: list[str] = field(default_factory=list)  # files left alone, with why


def _lines(text: str) -> list[str]:
    lines = source_lines(text, keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def read_source(path: str) -> Source | None:
    """None for files that cannot be read or decoded (the lint reports those as TCL000)."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            data = handle.read()
        if notebooks.is_notebook(path):
            encoding, text = "utf-8", notebooks.from_json(data).text
        else:
            encoding = encoding_of(data)
            text = data.decode(encoding)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError, notebooks.NotebookError):
        return None
    return Source(path, data, encoding, text, (stat.st_mtime_ns, stat.st_size))


def _selected(findings: Iterable[Finding], config: Config, texts: dict[str, str]) -> list[Finding]:
    """The findings the user would see (select/ignore/noqa), judged on the current in-memory text."""
    lines = {path: source_lines(text) for path, text in texts.items()}
    exempt = {path: file_noqa(file_lines) for path, file_lines in lines.items()}
    return [
        f for f in findings
        if f.code in CODEMODS and f.path in texts and config.is_selected(f.code, f.path)
        and not suppressed_by_noqa(f, lines[f.path]) and not exempt_by_file_noqa(f.code, exempt[f.path])
    ]  # fmt: skip


def plan_fixes(paths: list[str], config: Config, allowed: set[Safety]) -> Plan:
    sources = {s.path: s for s in map(read_source, discover(paths, config)) if s is not None}
    texts = {path: working_text(source.text) for path, source in sources.items()}
    indexes = {path: parse_source(path, text) for path, text in texts.items()}
    applied: dict[str, list[Edit]] = {path: [] for path in sources}
    plan = Plan()
    withheld: dict[str, int] = {}
    pending = set(sources)  # an edit changes findings only in its own file: later rounds redo those
    for _ in range(MAX_ROUNDS):
        parsed = [index for index in indexes.values() if isinstance(index, FileIndex)]
        project = Project(parsed, options_of(config), (), load_source)
        by_path: dict[str, list[Finding]] = {}
        for finding in _selected(project.findings(), config, texts):
            by_path.setdefault(finding.path, []).append(finding)
        changed: set[str] = set()
        for path in sorted(pending & set(by_path)):
            index = indexes[path]
            assert isinstance(index, FileIndex)  # a file with findings parsed
            try:
                result = fix_text(texts[path], by_path[path], allowed, (project, index))
            except FixError as error:
                plan.errors.append(f"{path}: not fixed: {error}")
                continue
            except Exception as error:  # a codemod bug costs this file its fixes, not the whole run
                plan.errors.append(f"{path}: not fixed: internal error: {type(error).__name__}: {error}")
                continue
            withheld[path] = len(result.withheld)
            if result.applied:
                texts[path] = result.text
                indexes[path] = parse_source(path, result.text)
                applied[path].extend(result.applied)
                changed.add(path)
        if not changed:
            break
        pending = changed
    plan.withheld = sum(withheld.values())
    plan.files = [FilePlan(sources[p], texts[p], applied[p]) for p in sources if applied[p]]
    plan.files = [file for file in plan.files if _writable(file, plan)]
    return plan


def _writable(file: FilePlan, plan: Plan) -> bool:
    """A notebook whose fixed source cannot go back into its cells is left alone (and said so)."""
    try:
        file.encoded()
    except notebooks.NotebookError as error:
        plan.errors.append(f"{file.source.path}: not fixed: {error}")
        return False
    return True


def with_autofixes(findings: list[Finding], paths: list[str], config: Config) -> list[Finding]:
    """`findings` (as `engine.lint` reports them), each one a codemod rewrites given `details["autofix"]`:
    its safety and what it does. Plans every fix in memory; writes nothing."""
    plan = plan_fixes(paths, config, {"safe", "unsafe"})
    autofix: dict[tuple[str, int | None, int, int, str], dict[str, str]] = {}
    for file in plan.files:
        for edit in file.applied:
            where = _placed(file, edit.finding)
            key = (where.path, where.cell, where.line, where.col, where.code)
            autofix.setdefault(key, {"safety": edit.safety, "title": edit.title})
    return [
        replace(f, details={**f.details, "autofix": autofix[key]}) if key in autofix else f
        for f in findings
        for key in [(f.path, f.cell, f.line, f.col, f.code)]
    ]


def _placed(file: FilePlan, finding: Finding) -> Finding:
    """The finding where the report puts it: in a notebook, on its cell."""
    if not notebooks.is_notebook(file.source.path):
        return finding
    return notebooks.to_cells(finding, notebooks.from_json(file.source.data))


Written = Literal["replaced", "in-place", "changed", "read-only"]  # what write_fixed did


def _changed_since_read(source: Source, target: str) -> bool:
    try:
        stat = os.stat(target)
        with open(target, "rb") as handle:
            data = handle.read()
    except OSError:
        return True
    return (stat.st_mtime_ns, stat.st_size) != source.stamp or data != source.data


def write_fixed(plan: FilePlan) -> Written:
    """Replace the file with its fixed bytes through a temporary file in the same folder and
    `os.replace`; a file with other hard links is rewritten in place instead, so they all see the
    fix. Writes nothing if the file changed since it was read or is read-only."""
    target = os.path.realpath(plan.source.path)  # a symlink keeps pointing at the fixed file
    if _changed_since_read(plan.source, target):
        return "changed"
    if atomic.read_only(target):  # usually generated or not checked out; the rename would ignore it
        return "read-only"
    if os.stat(target).st_nlink > 1:
        with open(target, "r+b") as stream:
            stream.write(plan.encoded())
            stream.truncate()
        return "in-place"
    folder, name = os.path.split(target)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".compile-lint.tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(plan.encoded())
            stream.flush()
            os.fsync(stream.fileno())
        shutil.copymode(target, temporary)
        if _changed_since_read(plan.source, target):
            os.unlink(temporary)
            return "changed"
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return "replaced"


def not_written(path: str, written: Written) -> str:
    """Why a planned file was left as it was ("" if it was written)."""
    if written == "changed":
        return f"skipped {path}: it changed since it was read; run again"
    if written == "read-only":
        return f"{path}: read-only, not fixed"
    return ""


def count(n: int, word: str, plural: str = "s") -> str:
    return f"{n} {word}{plural * (n != 1)}"


def write_all(plan: Plan, log: Console) -> int:
    """Write every fixed file; returns how many findings were fixed on disk."""
    fixed = 0
    for file in plan.files:
        path = file.source.path
        try:
            written = write_fixed(file)
        except OSError as error:
            plan.errors.append(f"{path}: cannot write: {error.strerror or error}")
            continue
        if not_written(path, written):
            plan.errors.append(not_written(path, written))
            continue
        if written == "in-place":
            log.print(Text(f"{path}: rewritten in place, keeping its hard links"), soft_wrap=True)
        fixed += len(file.applied)
        for edit in file.applied:
            where = _placed(file, edit.finding)
            line = f"cell {where.cell}:{where.line}" if where.cell is not None else str(where.line)
            log.print(Text(f"fixed {path}:{line} {edit.finding.code}: {edit.title}"), soft_wrap=True)
    return fixed


def print_errors(plan: Plan, log: Console) -> None:
    for error in plan.errors:
        log.print(Text(f"compile-lint: {error}", style="yellow"), soft_wrap=True)
