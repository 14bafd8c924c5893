"""The protocol side of `compile-lint lsp` (pygls): documents in, diagnostics, code actions and hovers out.

Every open document (a notebook counts as one, its code cells joined by `notebooks`) is linted with the
files it imports and those importing it (see workspace.py); a change is linted 300 ms after the typing
stops, and answered before the files importing it are, when there are many. The analysis runs
on one worker thread, so the server keeps answering while it works and two lints never overlap."""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from compile_lint import __version__, notebooks
from compile_lint.analysis.source import source_lines
from compile_lint.config import Config, ConfigError, load_config
from compile_lint.docs import rule_markdown
from compile_lint.finding import Finding, gb_page, gb_reference
from compile_lint.lsp.workspace import Fix, Workspace
from compile_lint.rules import rule_by_code

DEBOUNCE_SECONDS = 0.3
DEPENDENTS_AFTER_SECONDS = 1.0  # of no change after an answer, before the files importing it are linted
SOURCE = "compile-lint"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


@dataclass(frozen=True)
class Shown:
    """A finding as the client sees it: the document (a cell, for notebooks) and the diagnostic there."""

    uri: str
    diagnostic: types.Diagnostic
    finding: Finding  # as the analysis reported it (for a notebook: in the joined source)


@dataclass(frozen=True)
class Notebook:
    uri: str
    cell_uris: tuple[str, ...]  # every cell, in order: `notebooks` numbers them from 1 the same way
    source: notebooks.NotebookSource


class CompileLintServer(LanguageServer):
    def __init__(self) -> None:
        sync = types.NotebookDocumentSyncOptions(
            notebook_selector=[types.NotebookDocumentFilterWithNotebook("*", [types.NotebookCellLanguage("python")])]
        )
        super().__init__(SOURCE, __version__, notebook_document_sync=sync)
        self.lints: Workspace | None = None
        self.shown: dict[str, list[Shown]] = {}  # document uri -> what it shows
        self.uris: dict[str, str] = {}  # path -> URI of each open document, as the client sent it
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compile-lint")
        self._timer: asyncio.TimerHandle | None = None
        self._generation = 0  # bumped by every document change: a lint of older texts is not published
        self._published = -1  # the generation the diagnostics shown are of

    # -- documents ------------------------------------------------------------------------------------
    def setup(self, root: Path | None) -> None:
        try:
            config = load_config([str(root)] if root else [])
        except ConfigError as error:
            self.window_show_message(
                types.ShowMessageParams(types.MessageType.Error, f"compile-lint: configuration error: {error}")
            )
            config = Config()
        if root is not None and config.source is None:
            config.root = root
        self.lints = Workspace(root, config)

    def watch_files(self) -> None:
        """Ask the client to report changes to Python files on disk, if it can (the protocol has no static
        way): the open documents' findings depend on the files they import and that import them."""
        workspace = self.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched is None or not watched.dynamic_registration:
            return
        options = types.DidChangeWatchedFilesRegistrationOptions([types.FileSystemWatcher("**/*.py")])
        registration = types.Registration("compile-lint-files", types.WORKSPACE_DID_CHANGE_WATCHED_FILES, options)
        self.client_register_capability(types.RegistrationParams([registration]))

    def open_notebooks(self) -> dict[str, Notebook]:
        """Each open notebook by its path, as the Python source its code cells make."""
        found: dict[str, Notebook] = {}
        for notebook in self.workspace.notebook_documents.values():
            path = uri_path(notebook.uri)
            cells: list[tuple[str, str]] = []
            for cell in notebook.cells:
                document = self.workspace.get_text_document(cell.document)
                is_python = cell.kind == types.NotebookCellKind.Code and document.language_id in (None, "python")
                cells.append(("code" if is_python else "markdown", document.source))
            source = notebooks.from_cells(cells)
            found[path] = Notebook(notebook.uri, tuple(cell.document for cell in notebook.cells), source)
        return found

    def documents(self) -> dict[str, str]:
        """Path -> text of every open Python document and notebook (and their URIs as the client wrote them
        into `self.uris`)."""
        texts: dict[str, str] = {}
        uris: dict[str, str] = {}
        for document in self.workspace.text_documents.values():
            in_notebook = self.workspace.get_notebook_document(cell_uri=document.uri) is not None
            if not in_notebook and document.language_id in (None, "python"):
                path = uri_path(document.uri)
                texts[path] = document.source
                uris[path] = document.uri
        self.uris = uris
        texts.update((path, notebook.source.text) for path, notebook in self.open_notebooks().items())
        return texts

    # -- linting ----------------------------------------------------------------------------------------
    def schedule(self, delay: float) -> None:
        """Lint after `delay` seconds, unless another change comes first (then after that one)."""
        self._generation += 1
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(delay, lambda: loop.create_task(self.lint()))

    async def lint(self) -> None:
        lints = self.lints
        if lints is None:
            return
        generation = self._generation
        texts = self.documents()

        def run() -> dict[str, list[Finding]] | None:
            # Lints queue behind a long one: by their turn a newer change may have made them pointless.
            return lints.lint(texts) if generation == self._generation else None

        try:
            findings = await asyncio.get_running_loop().run_in_executor(self.worker, run)
        except Exception as error:  # a bug must cost this lint, not the server: say so and keep serving
            message = f"compile-lint: internal error: {type(error).__name__}: {error}"
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))
            return
        if findings is None or generation != self._generation:
            return
        self.publish(findings)
        self._published = generation

        def current() -> bool:
            return generation == self._generation

        # Files importing the open documents, when too many to wait for: once the typing pauses, batch by
        # batch, given up on a change (which then waits for one batch at most).
        await asyncio.sleep(DEPENDENTS_AFTER_SECONDS)
        try:
            more = await asyncio.get_running_loop().run_in_executor(
                self.worker, lambda: lints.lint_dependents(texts, current) if current() else None
            )
        except Exception as error:
            message = f"compile-lint: internal error: {type(error).__name__}: {error}"
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))
            return
        if more is not None and current() and more != findings:
            self.publish(more)

    def publish(self, findings: dict[str, list[Finding]]) -> None:
        open_notebooks = self.open_notebooks()
        shown: dict[str, list[Shown]] = {}
        for path, found in findings.items():
            notebook = open_notebooks.get(path)
            if notebook is None:
                uri = self.uris[path]
                shown[uri] = [Shown(uri, self.diagnostic(uri, f), f) for f in found]
                continue
            shown.update(self._notebook_findings(notebook, found))
        stale = set(self.shown) - set(shown)
        self.shown = shown
        for uri in stale:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))
        for uri, entries in shown.items():
            diagnostics = [entry.diagnostic for entry in entries]
            version = self.workspace.get_text_document(uri).version
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, diagnostics, version))

    def _notebook_findings(self, notebook: Notebook, found: list[Finding]) -> dict[str, list[Shown]]:
        shown: dict[str, list[Shown]] = {uri: [] for uri in notebook.cell_uris}
        for finding in found:
            in_cell = notebooks.to_cells(finding, notebook.source)
            if in_cell.cell is None or not 0 < in_cell.cell <= len(notebook.cell_uris):
                continue
            uri = notebook.cell_uris[in_cell.cell - 1]
            shown[uri].append(Shown(uri, self.diagnostic(uri, in_cell), finding))
        return shown

    def diagnostic(self, uri: str, finding: Finding) -> types.Diagnostic:
        start = types.Position(finding.line - 1, finding.col - 1)
        end = types.Position(finding.end_line - 1, finding.end_col - 1)
        page = next(filter(None, map(gb_page, finding.gb_codes)), None)
        when = "" if finding.path_condition == "default" else f" [only when: {finding.path_condition}]"
        return types.Diagnostic(
            range=self.to_client(uri, start, end),
            message=f"{finding.message}{when}",
            severity=SEVERITY[finding.severity],
            code=finding.code,
            code_description=types.CodeDescription(page) if page else None,
            source=SOURCE,
        )

    def to_client(self, uri: str, start: types.Position, end: types.Position) -> types.Range:
        """Code-point columns (the analysis') in the units the client asked for (UTF-16 by default)."""
        document = self.workspace.get_text_document(uri)
        return document.position_codec.range_to_client_units(document.lines, types.Range(start, end))

    # -- code actions and hovers ------------------------------------------------------------------------
    def at(self, uri: str, where: types.Range) -> list[Shown]:
        return [entry for entry in self.shown.get(uri, []) if overlaps(entry.diagnostic.range, where)]

    async def code_actions(self, uri: str, where: types.Range) -> list[types.CodeAction]:
        lints = self.lints
        entries = self.at(uri, where)
        if lints is None or not entries or self._published != self._generation:
            return []  # the findings shown are of texts since changed: their places may have moved
        texts = self.documents()
        loop = asyncio.get_running_loop()
        actions: list[types.CodeAction] = []
        for entry in entries:
            fixes = await loop.run_in_executor(self.worker, lints.fixes, entry.finding, texts)
            for fix in fixes:
                edit = self.workspace_edit(entry.finding.path, texts[entry.finding.path], fix)
                if edit is not None:
                    actions.append(code_action(fix, entry.diagnostic, edit))
        return actions

    def workspace_edit(self, path: str, old: str, fix: Fix) -> types.WorkspaceEdit | None:
        notebook = self.open_notebooks().get(path)
        changes: dict[str, list[types.TextEdit]] = {}
        for start, end, new_lines in changed_lines(old, fix.text):
            if notebook is None:
                uri = self.uris[path]
                lines = source_lines(old, keepends=True)
                first = 0
            else:
                placed = cell_of(notebook, start, end)
                if placed is None:
                    return None  # the fix spans cells: the user must do it by hand
                uri, first = placed
                lines = source_lines(self.workspace.get_text_document(uri).source, keepends=True)
            span = text_span(lines, start - first, end - first, new_lines)
            edit_range = self.to_client(uri, *span[:2])
            changes.setdefault(uri, []).append(types.TextEdit(edit_range, span[2]))
        return types.WorkspaceEdit(changes=changes)

    def hover(self, uri: str, position: types.Position) -> types.Hover | None:
        entries = self.at(uri, types.Range(position, position))
        if not entries:
            return None
        text = "\n\n---\n\n".join(hover_text(entry.finding) for entry in entries)
        return types.Hover(types.MarkupContent(types.MarkupKind.Markdown, text), entries[0].diagnostic.range)


def uri_path(uri: str) -> str:
    """The file's path, written as `engine.discover` writes the workspace's, so the open text replaces the
    disk's; a URI that names no file (an unsaved buffer) stands for itself."""
    path = to_fs_path(uri)
    return os.path.normpath(path) if path else uri


def overlaps(a: types.Range, b: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def hover_text(finding: Finding) -> str:
    rule = rule_by_code(finding.code)
    head = f"**{finding.code}** {finding.message}"
    if finding.gb_codes:
        head += "\n\nPredicts " + ", ".join(gb_reference(code) for code in finding.gb_codes)
    return f"{head}\n\n{rule_markdown(rule)}" if rule else head


def code_action(fix: Fix, diagnostic: types.Diagnostic, edit: types.WorkspaceEdit) -> types.CodeAction:
    return types.CodeAction(
        title=fix.title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=edit,
        is_preferred=fix.safety == "safe",
    )


def changed_lines(old: str, new: str) -> list[tuple[int, int, list[str]]]:
    """(first, end, replacement): old lines [first, end) become the replacement lines (0-based)."""
    before, after = source_lines(old, keepends=True), source_lines(new, keepends=True)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [(i1, i2, after[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def cell_of(notebook: Notebook, start: int, end: int) -> tuple[str, int] | None:
    """The cell whose lines hold the 0-based joined-source lines [start, end) (an insertion: where it goes),
    and the joined-source line of the cell's first line."""
    for cell in notebook.source.cells:
        first = cell.first_line - 1
        if first <= start and end <= first + len(cell.lines):
            return notebook.cell_uris[cell.cell - 1], first
    return None


def text_span(lines: Sequence[str], start: int, end: int, new: list[str]) -> tuple[types.Position, types.Position, str]:
    """The range of `lines[start:end]` (lines with their ends) and the text replacing it. Where they run to
    the end of a text without a final line break, the replacement loses its final line break too."""
    text = "".join(new)
    if end < len(lines) or not lines or lines[-1].endswith(("\n", "\r")):
        return types.Position(start, 0), types.Position(end, 0), text
    last = len(lines) - 1
    tail = types.Position(last, len(lines[last].rstrip("\r\n")))
    if start == end:  # an insertion after the last line
        return tail, tail, "\n" + text.rstrip("\r\n")
    return types.Position(start, 0), tail, text.rstrip("\r\n")


def create_server() -> CompileLintServer:
    server = CompileLintServer()

    @server.feature(types.INITIALIZED)
    def initialized(ls: CompileLintServer, params: types.InitializedParams) -> None:
        folders = list(ls.workspace.folders.values())
        root = ls.workspace.root_path or (to_fs_path(folders[0].uri) if folders else None)
        ls.setup(Path(root) if root else None)
        ls.watch_files()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: CompileLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: CompileLintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: CompileLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.schedule(0)  # the file's disk version counts again for the others

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def files_changed(ls: CompileLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.schedule(DEBOUNCE_SECONDS)  # a file the open ones import (or that imports them) changed on disk

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: CompileLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: CompileLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(DEBOUNCE_SECONDS)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def notebook_close(ls: CompileLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.schedule(0)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix])
    )
    async def code_action_request(ls: CompileLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return await ls.code_actions(params.text_document.uri, params.range)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: CompileLintServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params.text_document.uri, params.position)

    return server
