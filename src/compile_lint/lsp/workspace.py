"""What the language server lints: the open documents' texts as one project, with the files on disk
they import read as context (each parsed once per content, or read from the index cache) and the files
that import them (a region there may reach a helper of an open document). When few files import the
open documents they are linted with them; when many do (a base module of a large package), the open
documents are linted first, alone, and those files after, in batches the server can abandon when the
text changes (`lint_dependents`). Nothing here knows the protocol; server.py does."""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.packages import relative_module
from compile_lint.analysis.source import encoding_of, multiline_tokens, source_lines
from compile_lint.config import Config
from compile_lint.engine import (
    IMPORTS,
    NOQA,
    analyze,
    cache_folder,
    discover,
    load_source,
    make_cache_folder,
    module_name,
    options_of,
    parse_bytes,
    prefixes,
    suppressed_by_noqa,
    unchanged,
    use_index_cache,
)
from compile_lint.engine import _without_cycle_collection as without_cycle_collection
from compile_lint.finding import Finding
from compile_lint.fixes.apply import FixError, fix_text
from compile_lint.fixes.codemods import CODEMODS, Safety
from compile_lint.project import Cancelled, Project

Items = list[tuple[str, bytes]]
PYTHON_SUFFIXES = (".py", ".pyi")
KEPT_RESULTS = 16  # undo, redo and re-opening a file find their findings here
QUICK_IMPORTERS = 8  # up to this many files importing the open documents are linted with them at once
DEPENDENT_BATCH = 1  # files importing them linted together after the first answer (a change waits for one batch)


@dataclass(frozen=True)
class Fix:
    title: str
    safety: Safety | None  # None: not a rewrite (a noqa comment)
    text: str  # the whole file after the fix


def encoded(text: str) -> bytes:
    """The bytes the file would have on disk: in its declared encoding (the cookie), else UTF-8."""
    try:
        return text.encode(encoding_of(text.encode("utf-8", "surrogatepass")))
    except (UnicodeError, SyntaxError, LookupError):
        return text.encode("utf-8", "surrogatepass")  # the engine then reports why it cannot decode it


class Workspace:
    def __init__(self, root: Path | None, config: Config) -> None:
        self.root = root
        self.config = config
        self.options = options_of(config)
        self._results: OrderedDict[str, tuple[list[Finding], dict[str, str]]] = OrderedDict()  # and sources read
        self._project: tuple[str, Project] | None = None  # the project of the last lint, by its key
        self._parsed: dict[str, tuple[bytes, FileIndex | Finding]] = {}  # path -> (sha256 of its bytes, its parse)
        self._imports = ImportTable(cache_folder(config.root, self.options.torch_version) / "imports.json")

    # `documents` below: path -> text of each open document (a notebook: the source its code cells make).
    def importers(self, documents: dict[str, str]) -> list[str]:
        """The workspace's Python files (not open) that import an open document, sorted."""
        if self.root is None:
            return []
        on_disk = [path for path in discover([str(self.root)], self.config) if path.endswith(PYTHON_SUFFIXES)]
        wanted = {module_name(path) for path in documents}
        return [path for path in self._imports.importing(on_disk, wanted) if path not in documents]

    def items(self, documents: dict[str, str], others: list[str]) -> Items:
        """The open documents' texts and the bytes on disk of `others`."""
        items = {path: encoded(text) for path, text in documents.items()}
        for path in others:
            try:
                items[path] = Path(path).read_bytes()
            except OSError:
                continue  # deleted or unreadable: the open documents are what matter here
        return sorted(items.items())

    def key(self, items: Items) -> str:
        digest = hashlib.sha256(repr(sorted(asdict(self.options).items())).encode())
        for path, data in items:
            digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def lint(self, documents: dict[str, str]) -> dict[str, list[Finding]]:
        """The findings the user would see in each open document (select, ignore, noqa applied), with the
        files importing them if there are few (else `lint_dependents` adds theirs)."""
        importers = self.importers(documents)
        return self.shown(self._findings(documents, importers if len(importers) <= QUICK_IMPORTERS else []), documents)

    def lint_dependents(
        self, documents: dict[str, str], current: Callable[[], bool]
    ) -> dict[str, list[Finding]] | None:
        """`lint` with every file importing an open document, when `lint` left them out (there are more
        than QUICK_IMPORTERS); None if it did not, or once `current()` says the texts changed."""
        importers = self.importers(documents)
        if len(importers) <= QUICK_IMPORTERS:
            return None
        findings = list(self._findings(documents, []))
        seen = {(f.path, f.line, f.col, f.code) for f in findings}
        for start in range(0, len(importers), DEPENDENT_BATCH):
            if not current():
                return None
            try:  # a change gives the batch up between two functions, so its own lint need not wait for it
                batch = self._findings(documents, importers[start : start + DEPENDENT_BATCH], current)
            except Cancelled:
                return None
            for finding in batch:
                where = (finding.path, finding.line, finding.col, finding.code)
                if finding.path in documents and where not in seen:
                    seen.add(where)
                    findings.append(finding)
        return self.shown(findings, documents)

    def shown(self, findings: list[Finding], documents: dict[str, str]) -> dict[str, list[Finding]]:
        shown: dict[str, list[Finding]] = {path: [] for path in documents}
        lines = {path: source_lines(text) for path, text in documents.items()}
        for finding in findings:
            if (
                finding.path in shown
                and self.config.is_selected(finding.code, finding.path)
                and not suppressed_by_noqa(finding, lines[finding.path])
            ):
                shown[finding.path].append(finding)
        return {path: sorted(found, key=lambda f: f.sort_key) for path, found in shown.items()}

    def _findings(
        self, documents: dict[str, str], others: list[str], current: Callable[[], bool] | None = None
    ) -> list[Finding]:
        """Findings of the open documents and `others` as one project; kept (KEPT_RESULTS) while their
        texts and the files the project read from stay the same. Raises Cancelled once `current()` is
        False (the texts changed) before the project is done."""
        items = self.items(documents, others)
        key = self.key(items)
        kept = self._results.get(key)
        if kept is None or not unchanged(kept[1]):
            store = use_index_cache(self.config.root, self.options.torch_version)
            store.sources.clear()
            try:
                with without_cycle_collection():
                    found = self._project_of(items, key, current).findings()
            except RecursionError:
                found = analyze(items, self.options)  # which says which files are too deeply nested
            kept = self._results[key] = (found, dict(store.sources))
            if len(self._results) > KEPT_RESULTS:
                self._results.popitem(last=False)
        self._results.move_to_end(key)
        return kept[0]

    def project(self, documents: dict[str, str]) -> Project:
        """The project of these texts (for code actions): the last lint's, while the texts stay the same."""
        importers = self.importers(documents)
        items = self.items(documents, importers if len(importers) <= QUICK_IMPORTERS else [])
        return self._project_of(items, self.key(items))

    def _project_of(self, items: Items, key: str, current: Callable[[], bool] | None = None) -> Project:
        if self._project is None or self._project[0] != key:
            indexes, errors = self._parse(items)
            cancelled = None if current is None else lambda: not current()
            self._project = (key, Project(indexes, self.options, errors, load_source, cancelled))
        return self._project[1]

    def _parse(self, items: Items) -> tuple[list[FileIndex], list[Finding]]:
        """Each file's index, parsed again only if its bytes changed since the last lint (an index is
        never changed by the project that reads it: `--fix` re-uses them the same way)."""
        parsed: dict[str, tuple[bytes, FileIndex | Finding]] = {}
        for path, data in items:
            digest = hashlib.sha256(data).digest()
            known = self._parsed.get(path)
            parsed[path] = known if known is not None and known[0] == digest else (digest, parse_bytes(path, data))
        self._parsed = parsed
        results = [result for _, result in parsed.values()]
        indexes = [r for r in results if isinstance(r, FileIndex)]
        return indexes, [r for r in results if isinstance(r, Finding)]

    # -- fixes ------------------------------------------------------------------------------------------
    def fixes(self, finding: Finding, documents: dict[str, str]) -> list[Fix]:
        """The codemod's rewrite of this finding (of an open document), if it has one, and a `# noqa` for it."""
        text = documents[finding.path]
        return [fix for fix in (self._rewrite(finding, documents), noqa_fix(finding, text)) if fix is not None]

    def _rewrite(self, finding: Finding, documents: dict[str, str]) -> Fix | None:
        if finding.code not in CODEMODS:
            return None
        text = documents[finding.path]
        project = self.project(documents)
        if not project.program.is_linted(finding.path):
            return None
        index = project.program.index_of(finding.path)
        try:
            result = fix_text(text, [finding], {"safe", "unsafe"}, (project, index))
        except FixError:
            return None
        if not result.applied:
            return None
        edit = result.applied[0]
        unsafe = " (unsafe)" if edit.safety == "unsafe" else ""
        return Fix(f"{finding.code}: {edit.title}{unsafe}", edit.safety, result.text)


class ImportTable:
    """The modules each file of the workspace imports (a scan of its text, as `engine.import_edges` does),
    read again only when the file's size or modification time changes. Kept in `saved_at` (the cache
    folder) between sessions, so a new server does not read the whole workspace again."""

    def __init__(self, saved_at: Path) -> None:
        self.saved_at = saved_at
        self._files: dict[str, tuple[tuple[int, int], frozenset[str]]] | None = None  # read when first needed

    def importing(self, paths: list[str], modules: set[str]) -> list[str]:
        """The paths that import one of `modules` (or a module of a package in it)."""
        files = self._files = self._files if self._files is not None else self._read()
        found = []
        changed = False
        for path in paths:
            try:
                status = os.stat(path)
            except OSError:
                continue
            stamp = (status.st_mtime_ns, status.st_size)
            known = files.get(path)
            if known is None or known[0] != stamp:
                known = files[path] = (stamp, self._scan(path))
                changed = True
            if not known[1].isdisjoint(modules):
                found.append(path)
        if changed:
            self._write(files)
        return found

    def _read(self) -> dict[str, tuple[tuple[int, int], frozenset[str]]]:
        """The table the last session saved; empty if there is none or it is not one."""
        try:
            saved = json.loads(self.saved_at.read_text())
            return {
                path: ((int(mtime), int(size)), frozenset(str(m) for m in imported))
                for path, (mtime, size, imported) in saved.items()
            }
        except (OSError, ValueError, TypeError, AttributeError):
            return {}

    def _write(self, files: dict[str, tuple[tuple[int, int], frozenset[str]]]) -> None:
        saved = {path: [mtime, size, sorted(imported)] for path, ((mtime, size), imported) in files.items()}
        try:
            make_cache_folder(self.saved_at.parent)
            temporary = self.saved_at.with_name(f"{self.saved_at.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(saved))
            temporary.replace(self.saved_at)
        except OSError:
            pass  # a read-only workspace: the table is scanned again next session

    @staticmethod
    def _scan(path: str) -> frozenset[str]:
        try:
            text = Path(path).read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return frozenset()
        own = module_name(path)
        imported: set[str] = set()
        for match in IMPORTS.finditer(text):
            written = match.group(1) or match.group(2)
            if written.startswith("."):
                written = relative_module(own, path.endswith("__init__.py"), written)
            imported.update(prefixes(written))
        return frozenset(imported)


def noqa_fix(finding: Finding, text: str) -> Fix | None:
    """`# noqa: CODE` at the end of the finding's line (added to a `# noqa: ...` list already there);
    None where a comment cannot end that line (inside a multi-line string, after a backslash)."""
    lines = source_lines(text, keepends=True)
    if not 0 < finding.line <= len(lines) or not _can_end_with_comment(text, finding.line):
        return None
    line = lines[finding.line - 1]
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    match = NOQA.search(body)
    if match is None:
        body = f"{body.rstrip()}  # noqa: {finding.code}"
    elif match.group("codes"):
        body = f"{body[: match.end()]}, {finding.code}{body[match.end() :]}"
    else:
        return None  # a bare noqa comment hides every finding already
    lines[finding.line - 1] = body + ending
    return Fix(f"{finding.code}: suppress with # noqa", None, "".join(lines))


def _can_end_with_comment(text: str, line: int) -> bool:
    spans = multiline_tokens(text)
    if spans is None:
        return False
    spanning = any(first <= line < last for first, last in spans)
    source_line = source_lines(text)[line - 1]
    return not spanning and not source_line.rstrip().endswith("\\")
