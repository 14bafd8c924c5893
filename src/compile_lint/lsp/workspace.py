"""What the language server lints: the workspace's files on disk with the open documents' text laid
over them, as one project, so a helper in another file is seen from the compiled region that calls it.
Only the files that import (or are imported by) an open document are analysed: import groups are
independent (see engine.import_groups). Nothing here knows the protocol; server.py does."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path

from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.source import encoding_of, multiline_tokens, source_lines
from compile_lint.config import Config
from compile_lint.engine import (
    NOQA,
    analyze,
    discover,
    import_groups,
    load_source,
    options_of,
    parse_bytes,
    suppressed_by_noqa,
)
from compile_lint.engine import _without_cycle_collection as without_cycle_collection
from compile_lint.finding import Finding
from compile_lint.fixes.apply import FixError, fix_text
from compile_lint.fixes.codemods import CODEMODS, Safety
from compile_lint.project import Project

Items = list[tuple[str, bytes]]
PYTHON_SUFFIXES = (".py", ".pyi")
KEPT_RESULTS = 16  # undo, redo and re-opening a file find their findings here


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
        self._results: OrderedDict[str, list[Finding]] = OrderedDict()
        self._project: tuple[str, Project] | None = None  # the project of the last lint, by its key
        self._parsed: dict[str, tuple[bytes, FileIndex | Finding]] = {}  # path -> (sha256 of its bytes, its parse)

    # `documents` below: path -> text of each open document (a notebook: the source its code cells make).
    def items(self, documents: dict[str, str]) -> Items:
        """Every file of the open documents' import groups, with the open text in place of the disk's."""
        on_disk = discover([str(self.root)], self.config) if self.root is not None else []
        items: dict[str, bytes] = {}
        for path in on_disk:
            if path.endswith(PYTHON_SUFFIXES):  # a notebook on disk is no module anything imports
                try:
                    items[path] = Path(path).read_bytes()
                except OSError:
                    continue  # deleted or unreadable: the open documents are what matter here
        items.update((path, encoded(text)) for path, text in documents.items())
        groups = import_groups(sorted(items.items()))
        return [item for group in groups if any(path in documents for path, _ in group) for item in group]

    def key(self, items: Items) -> str:
        digest = hashlib.sha256(repr(sorted(asdict(self.options).items())).encode())
        for path, data in items:
            digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def lint(self, documents: dict[str, str]) -> dict[str, list[Finding]]:
        """The findings the user would see in each open document (select, ignore, noqa applied)."""
        items = self.items(documents)
        key = self.key(items)
        findings = self._results.get(key)
        if findings is None:
            findings = self._findings(items, key)
            self._results[key] = findings
            if len(self._results) > KEPT_RESULTS:
                self._results.popitem(last=False)
        self._results.move_to_end(key)
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

    def _findings(self, items: Items, key: str) -> list[Finding]:
        try:
            with without_cycle_collection():
                return self._project_of(items, key).findings()
        except RecursionError:
            return analyze(items, self.options)  # which says which files are too deeply nested

    def project(self, documents: dict[str, str]) -> Project:
        """The project of these texts (for code actions): the last lint's, while the texts stay the same."""
        items = self.items(documents)
        return self._project_of(items, self.key(items))

    def _project_of(self, items: Items, key: str) -> Project:
        if self._project is None or self._project[0] != key:
            indexes, errors = self._parse(items)
            self._project = (key, Project(indexes, self.options, errors, load_source))
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
