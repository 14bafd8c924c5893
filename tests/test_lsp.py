"""`compile-lint lsp` as editors run it: a subprocess on stdio, driven by pygls's language client.

Every session runs with a torch that refuses to import first on the path: the server must never import it."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from compile_lint.engine import lint_source
from compile_lint.finding import gb_page
from compile_lint.lsp.workspace import noqa_fix
from compile_lint.rules import rule_by_code
from fixture_support import FIXTURES

TIMEOUT = 60.0
SCALE = "import torch\n\n\n@torch.compile\ndef scale(x):\n    return x / x.abs().max().item()\n"
FIXED = "import torch\n\n\n@torch.compile\ndef scale(x):\n    return x / x.abs().max().detach()\n"
BRANCH = "import torch\n\n\n@torch.compile\ndef step(x: torch.Tensor):\n    if x.sum() > 0:\n        return x + 1\n    return x * 3\n"
Published = dict[str, types.PublishDiagnosticsParams]


class Session:
    """A client connected to a server process, keeping the latest diagnostics of every document."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.published: Published = {}
        self.versions: list[int | None] = []  # of every publication, in order
        self.registrations: list[str] = []  # methods the server registered dynamically
        self.counts: dict[str, int] = {}  # publications per document
        self.changed = asyncio.Condition()

    async def on_publish(self, params: types.PublishDiagnosticsParams) -> None:
        async with self.changed:
            self.published[params.uri] = params
            self.versions.append(params.version)
            self.counts[params.uri] = self.counts.get(params.uri, 0) + 1
            self.changed.notify_all()

    async def diagnostics(
        self, uri: str, ready: Callable[[types.PublishDiagnosticsParams], bool] = lambda _: True
    ) -> list[types.Diagnostic]:
        """The diagnostics of `uri` once a publication for it satisfies `ready`."""

        def done() -> bool:
            params = self.published.get(uri)
            return params is not None and ready(params)

        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(done), TIMEOUT)
            return list(self.published[uri].diagnostics)

    def open(self, path: Path, text: str | None = None) -> str:
        uri = uri_of(path)
        item = types.TextDocumentItem(uri, "python", 1, path.read_text() if text is None else text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        return uri

    def change(self, uri: str, version: int, text: str) -> None:
        document = types.VersionedTextDocumentIdentifier(version, uri)
        change = types.TextDocumentContentChangeWholeDocument(text)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))

    async def actions(self, uri: str, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
        context = types.CodeActionContext([diagnostic])
        params = types.CodeActionParams(types.TextDocumentIdentifier(uri), diagnostic.range, context)
        found = await asyncio.wait_for(self.client.text_document_code_action_async(params), TIMEOUT)
        return [action for action in found or [] if isinstance(action, types.CodeAction)]


def uri_of(path: Path) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


def refusing_torch(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('compile-lint imported torch in the language server')\n")
    return {**os.environ, "PYTHONPATH": f"{fake.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


@asynccontextmanager
async def session(root: Path, env: dict[str, str]) -> AsyncIterator[Session]:
    client = LanguageClient("compile-lint-tests", "1")
    connected = Session(client)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    async def on_publish(params: types.PublishDiagnosticsParams) -> None:
        await connected.on_publish(params)

    await client.start_io(sys.executable, "-m", "compile_lint", "lsp", cwd=str(root), env=env)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        connected.registrations.extend(r.method for r in params.registrations)

    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
        ),
        notebook_document=types.NotebookDocumentClientCapabilities(types.NotebookDocumentSyncClientCapabilities()),
    )
    params = types.InitializeParams(capabilities, root_uri=uri_of(root), process_id=os.getpid())
    result = await asyncio.wait_for(client.initialize_async(params), TIMEOUT)
    assert result.server_info is not None and result.server_info.name == "compile-lint"
    client.initialized(types.InitializedParams())
    try:
        yield connected
    finally:
        await asyncio.wait_for(client.shutdown_async(None), TIMEOUT)
        client.exit(None)
        await asyncio.wait_for(client.stop(), TIMEOUT)


def apply(text: str, edits: Sequence[types.TextEdit]) -> str:
    """The text after the edits (ranges in UTF-16 units, as the server was not asked for another)."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        prefix = lines[position.line].encode("utf-16-le")[: 2 * position.character].decode("utf-16-le")
        return offsets[position.line] + len(prefix)

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


def span(text: str, needle: str) -> types.Range:
    """The range of the first `needle` in `text` (one line, ASCII)."""
    line = next(number for number, content in enumerate(text.splitlines()) if needle in content)
    column = text.splitlines()[line].index(needle)
    return types.Range(types.Position(line, column), types.Position(line, column + len(needle)))


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics]


def test_diagnostics_fixes_and_hover(tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text(SCALE)
    (tmp_path / "step.py").write_text(BRANCH)

    async def scenario() -> None:
        async with session(tmp_path, refusing_torch(tmp_path)) as lsp:
            uri = lsp.open(path)
            [diagnostic] = await lsp.diagnostics(uri)
            assert diagnostic.code == "TCL101" and diagnostic.source == "compile-lint"
            assert diagnostic.range == span(SCALE, "x.abs().max().item()")
            rule = rule_by_code("TCL101")
            assert rule is not None
            page = gb_page(rule.gb_codes[0])
            assert diagnostic.code_description is not None and diagnostic.code_description.href == page

            hover = await lsp.client.text_document_hover_async(
                types.HoverParams(types.TextDocumentIdentifier(uri), diagnostic.range.start)
            )
            assert hover is not None and isinstance(hover.contents, types.MarkupContent)
            assert hover.contents.kind == types.MarkupKind.Markdown
            assert rule.what in hover.contents.value and str(page) in hover.contents.value

            actions = await lsp.actions(uri, diagnostic)
            by_title = {action.title: action for action in actions}
            [rewrite] = [a for a in actions if "noqa" not in a.title]
            assert "(unsafe)" not in rewrite.title and rewrite.kind == types.CodeActionKind.QuickFix
            assert rewrite.edit is not None and rewrite.edit.changes is not None
            assert apply(SCALE, rewrite.edit.changes[uri]) == FIXED
            [suppress] = [a for title, a in by_title.items() if "noqa" in title]
            assert suppress.edit is not None and suppress.edit.changes is not None
            suppressed = apply(SCALE, suppress.edit.changes[uri])
            assert "# noqa: TCL101" in suppressed

            lsp.change(uri, 2, FIXED)  # the editor applied the fix: the finding goes away
            assert await lsp.diagnostics(uri, lambda p: p.version == 2) == []
            for version, text in enumerate([SCALE, FIXED, FIXED + "\n", SCALE], start=3):  # typing: one lint at the end
                lsp.change(uri, version, text)
            assert codes(await lsp.diagnostics(uri, lambda p: p.version == 6)) == ["TCL101"]
            assert not {3, 4, 5} & set(lsp.versions)
            lsp.change(uri, 7, suppressed)
            assert await lsp.diagnostics(uri, lambda p: p.version == 7) == []

            step_uri = lsp.open(tmp_path / "step.py")  # a fix that changes evaluation says so
            [branch] = await lsp.diagnostics(step_uri)
            assert branch.code == "TCL103"
            [where] = [a for a in await lsp.actions(step_uri, branch) if "noqa" not in a.title]
            assert where.title.endswith("(unsafe)") and not where.is_preferred
            assert where.edit is not None and where.edit.changes is not None
            assert "torch.where(x.sum() > 0, x + 1, x * 3)" in apply(BRANCH, where.edit.changes[step_uri])

    asyncio.run(scenario())


def test_a_helper_in_another_file_is_linted_with_the_open_caller(tmp_path: Path) -> None:
    """routing.route breaks the graph only because gate.Gate.forward (another file) calls it; the open
    text of gate.py, not its disk version, decides."""
    shutil.copytree(FIXTURES / "crossfile", tmp_path / "project")
    root = tmp_path / "project"
    routing = (root / "routing.py").read_text()
    gate = (root / "gate.py").read_text()

    async def scenario() -> None:
        async with session(root, refusing_torch(tmp_path)) as lsp:
            routing_uri = lsp.open(root / "routing.py")
            [diagnostic] = await lsp.diagnostics(routing_uri)
            assert diagnostic.code == "TCL103" and diagnostic.range == span(routing, "h.sum() > 0")
            gate_uri = lsp.open(root / "gate.py")
            lsp.change(gate_uri, 2, gate.replace("return route(h) * 2", "return h * 2"))
            assert await lsp.diagnostics(routing_uri, lambda p: not p.diagnostics) == []
            lsp.change(gate_uri, 3, gate)
            assert codes(await lsp.diagnostics(routing_uri, lambda p: bool(p.diagnostics))) == ["TCL103"]

            # Closed, gate.py counts as saved; edited on disk, the client reports it to the watcher the server asked for.
            assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES in lsp.registrations
            before = lsp.counts[routing_uri]
            lsp.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(gate_uri)))
            diagnostics = await lsp.diagnostics(routing_uri, lambda _: lsp.counts[routing_uri] > before)
            assert codes(diagnostics) == ["TCL103"]
            (root / "gate.py").write_text(gate.replace("return route(h) * 2", "return h * 2"))
            event = types.FileEvent(gate_uri, types.FileChangeType.Changed)
            lsp.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams([event]))
            assert await lsp.diagnostics(routing_uri, lambda p: not p.diagnostics) == []

    asyncio.run(scenario())


def test_notebook_cells_get_their_own_diagnostics_and_fixes(tmp_path: Path) -> None:
    notebook = tmp_path / "train.ipynb"
    cells = [
        ("markdown", "# Training\n"),
        ("code", "import torch\n%matplotlib inline\n"),
        ("code", "@torch.compile\ndef scale(x):\n    return x / x.abs().max().item()"),
    ]
    cell_uris = [f"vscode-notebook-cell:{notebook}#cell{number}" for number in range(len(cells))]

    async def scenario() -> None:
        async with session(tmp_path, refusing_torch(tmp_path)) as lsp:
            kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
            document = types.NotebookDocument(
                uri_of(notebook),
                "jupyter-notebook",
                1,
                [types.NotebookCell(kinds[kind], uri) for (kind, _), uri in zip(cells, cell_uris, strict=True)],
            )
            items = [
                types.TextDocumentItem(uri, "python" if kind == "code" else "markdown", 1, source)
                for (kind, source), uri in zip(cells, cell_uris, strict=True)
            ]
            lsp.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(document, items))
            [diagnostic] = await lsp.diagnostics(cell_uris[2])
            assert diagnostic.code == "TCL101" and diagnostic.range == span(cells[2][1], "x.abs().max().item()")
            assert await lsp.diagnostics(cell_uris[1]) == []
            [rewrite] = [a for a in await lsp.actions(cell_uris[2], diagnostic) if "noqa" not in a.title]
            assert rewrite.edit is not None and rewrite.edit.changes is not None
            assert list(rewrite.edit.changes) == [cell_uris[2]]
            fixed = apply(cells[2][1], rewrite.edit.changes[cell_uris[2]])
            assert fixed == "@torch.compile\ndef scale(x):\n    return x / x.abs().max().detach()"

    asyncio.run(scenario())


def run_cli(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_without_pygls_the_server_says_what_to_install() -> None:
    blocked = "import sys; sys.modules['pygls'] = None; from compile_lint.cli import main; "
    result = run_cli(blocked + "sys.exit(main(['lsp']))")
    assert result.returncode == 2 and "pip install 'compile-lint[lsp]'" in result.stderr
    assert "Traceback" not in result.stderr
    linted = run_cli(blocked + f"sys.exit(main([{str(FIXTURES / 'printing.py')!r}, '--no-cache']))")
    assert linted.returncode == 1 and "TCL201" in linted.stdout


def test_unknown_arguments_get_the_usage() -> None:
    result = run_cli("import sys; from compile_lint.cli import main; sys.exit(main(['lsp', '--tcp']))")
    assert result.returncode == 2 and "usage: compile-lint lsp" in result.stderr


def test_noqa_goes_where_a_comment_can_end_the_line() -> None:
    finding = lint_source(SCALE, "scale.py")[0]
    fix = noqa_fix(finding, SCALE.replace(".item()", ".item()  # noqa: TCL999"))
    assert fix is not None and ".item()  # noqa: TCL999, TCL101\n" in fix.text
    inside_string = 'import torch\n\n\n@torch.compile\ndef f(x):\n    return f"""{x.sum().item()}\n"""\n'
    [in_string] = lint_source(inside_string, "f.py")
    assert noqa_fix(in_string, inside_string) is None
