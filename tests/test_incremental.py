"""The caches change how much is parsed, never what is found: a package linted cold, warm (parsed files
read back from the index cache) and after an edit of its base module gives the findings a cold run of
the same tree gives."""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import time
from pathlib import Path

import pytest

from compile_lint import engine
from compile_lint.config import Config
from compile_lint.engine import CACHE_DIR, lint
from compile_lint.finding import Finding

BASE = """import torch
from torch import nn


def scale(x):
    return 2


class Base(nn.Module):
    def prepare(self, x):
        return x


def unused(x):
    return x.item()
"""
MODEL = """import torch

from .base import Base, scale


class Model(Base):
    def forward(self, x):
        y = self.prepare(x)
        if scale(y) > 1:
            return y * 2
        return y
"""
OTHER = """from .base import Base


class Other(Base):
    def forward(self, x):
        return self.prepare(x).item()
"""


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The signing key in a folder of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    engine.secret_key.cache_clear()


@pytest.fixture
def package(tmp_path: Path) -> Path:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "base.py").write_text(BASE)
    (folder / "model.py").write_text(MODEL)
    (folder / "other.py").write_text(OTHER)
    return folder


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths libcst parsed (not read back from the cache), in order."""
    seen: list[str] = []
    guarded = engine._guarded_index

    def recording(path: str, *args: object) -> object:
        seen.append(Path(path).name)
        return guarded(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_guarded_index", recording)
    return seen


def cold(paths: list[Path], config: Config) -> list[Finding]:
    return lint([str(p) for p in paths], config, use_cache=False).findings


def cached(paths: list[Path], config: Config) -> list[Finding]:
    return lint([str(p) for p in paths], config).findings


def test_cold_warm_and_edited_runs_find_the_same(package: Path, parsed: list[str]) -> None:
    config = Config(root=package.parent)
    model, other, base = package / "model.py", package / "other.py", package / "base.py"
    whole = cold([package], config)
    assert [(Path(f.path).name, f.code) for f in whole] == [("other.py", "TCL101")]
    assert lint([str(package)], config, jobs=2, use_cache=False).findings == whole  # parsed in two processes

    assert cached([package], config) == whole  # writes the index of base.py (the others import it)
    assert list((package.parent / CACHE_DIR).rglob("*.pickle"))
    parsed.clear()
    assert cached([model], config) == cold([model], config) == []
    assert cached([other], config) == cold([other], config)
    parsed.clear()
    assert cached([model, other], config) == cold([model, other], config)
    assert "base.py" in parsed  # by the cold run only: the cached one read it back
    assert parsed.count("base.py") == 1

    base.write_text(BASE.replace("return 2", "return x.sum()"))  # scale() now returns a tensor
    edited = cold([model], config)
    assert [(Path(f.path).name, f.code) for f in edited] == [("model.py", "TCL103")]
    assert cached([model], config) == edited  # the findings of model.py alone depended on base.py
    assert cached([package], config) == cold([package], config)
    assert cached([model, other], config) == cold([model, other], config)


def test_context_modules_are_read_packed_and_only_the_bodies_walked_are_unpickled(
    package: Path, parsed: list[str]
) -> None:
    config = Config(root=package.parent)
    model, base = package / "model.py", package / "base.py"
    cached([package], config)  # writes the index of base.py, packed
    engine.use_index_cache(None)  # forget what is in memory
    parsed.clear()
    assert cached([model], config) == cold([model], config) == []
    assert "base.py" in parsed  # by the cold run only
    parsed.clear()
    engine.use_index_cache(None)
    found = cached([model, package / "other.py"], config)
    assert "base.py" not in parsed  # read back from the cache
    index = engine.load_source(str(base), engine.module_name(str(base)))  # as that run left it
    assert found == cold([model, package / "other.py"], config)
    assert index is not None and index.packed
    assert index.functions["Base.prepare"].packed_body is None  # reached from Model.forward: unpickled
    assert index.functions["unused"].packed_body is not None  # reached from nothing: still bytes
    assert "return x.item()" in index.text and "item" not in index.shell.code  # its body left out
    assert index.tree.code == index.text  # the whole tree, every body unpickled, is the file
    assert not index.packed


PACKED = """import torch


def plain(x):
    return x + 1


def hooks(m, fn):
    m.register_forward_hook(fn)


def outer():
    def inner():
        return 1

    return inner


class C:
    def method(self):
        return torch.compile(self.run)

    def run(self):
        return 2
"""


def test_packing_leaves_out_the_bodies_nothing_else_in_the_index_points_into() -> None:
    from compile_lint.analysis.nodes import iter_nodes
    from compile_lint.analysis.packing import pack_index

    index = engine.parse_source("m.py", PACKED)
    assert not isinstance(index, Finding)
    loaded = pickle.loads(pack_index(index))
    assert {name for name, info in loaded.functions.items() if info.packed_body is not None} == {"plain", "C.run"}
    assert not index.packed and index.tree.code == PACKED  # the index packed is left as it was
    [hook] = loaded.hooks
    assert any(node is hook.line_node for node in iter_nodes(loaded.functions["hooks"].node.body))
    assert any(node is loaded.compile_targets[0] for node in iter_nodes(loaded.functions["C.method"].node.body))
    assert loaded.functions["outer.<locals>.inner"].node.body is not None
    assert loaded.tree.code == PACKED and not loaded.packed


DECORATORS = Path(__file__).parent.parent / "fixtures" / "decorators_pkg"


def test_wrappers_of_decorators_from_packed_modules_are_reported_as_cold(tmp_path: Path) -> None:
    shutil.copytree(DECORATORS, tmp_path / "decorators_pkg")
    config = Config(root=tmp_path)
    model, generic = tmp_path / "decorators_pkg" / "models" / "model.py", tmp_path / "decorators_pkg" / "utils"
    expected = cold([model], config)
    assert any("in the wrapper this decorator puts around every call" in f.message for f in expected)
    cached([tmp_path / "decorators_pkg"], config)  # the utils' index written, packed
    engine.use_index_cache(None)
    assert cached([model], config) == expected
    source = generic / "generic.py"
    source.write_text(source.read_text().replace("        with _lock:", "        if _lock:"))  # an edit
    engine.use_index_cache(None)
    edited = cold([model], config)
    assert edited != expected
    assert cached([model], config) == edited


def test_a_forged_cache_entry_is_not_loaded(package: Path, parsed: list[str]) -> None:
    config = Config(root=package.parent)
    expected = cold([package / "model.py"], config)
    cached([package], config)
    for entry in (package.parent / CACHE_DIR).rglob("*.pickle"):
        entry.write_bytes(b"\0" * 32 + entry.read_bytes()[32:])  # the payload without this user's signature
    engine.use_index_cache(None)  # forget what is in memory
    parsed.clear()
    assert cached([package / "model.py"], config) == expected
    assert "base.py" in parsed


HELPER = """def route(h):
    if h.sum() > 0:
        return h
    return -h
"""
CALLER = """import torch

from .helpers import route


@torch.compile
def step{n}(x):
    return route(x) * {n}
"""


def test_the_language_server_answers_for_the_open_file_first_and_its_importers_after(tmp_path: Path) -> None:
    from compile_lint.lsp.workspace import QUICK_IMPORTERS, Workspace

    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    helpers = folder / "helpers.py"
    helpers.write_text(HELPER)
    callers = QUICK_IMPORTERS + 2
    for n in range(callers):
        (folder / f"caller{n}.py").write_text(CALLER.format(n=n))
    workspace = Workspace(tmp_path, Config(root=tmp_path))
    documents = {str(helpers): HELPER}
    assert len(workspace.importers(documents)) == callers
    assert workspace.lint(documents) == {str(helpers): []}  # alone, nothing calls route
    assert workspace.lint_dependents(documents, lambda: False) is None  # the text changed meanwhile
    with_callers = workspace.lint_dependents(documents, lambda: True)
    assert with_callers is not None
    [finding] = with_callers[str(helpers)]
    assert (finding.line, finding.col, finding.code) == (2, 8, "TCL103") and "reached from" in finding.message
    together = lint([str(folder)], Config(root=tmp_path), use_cache=False).findings
    assert [(f.line, f.col, f.code) for f in together if f.path == str(helpers)] == [(2, 8, "TCL103")]


def test_a_change_gives_up_the_dependents_batch_being_analysed(tmp_path: Path) -> None:
    """The language server's next lint waits for the worker: a batch of dependents stops between two
    functions once the text changed, not at the end of the batch."""
    from compile_lint.lsp.workspace import QUICK_IMPORTERS, Workspace

    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    helpers = folder / "helpers.py"
    helpers.write_text(HELPER)
    for n in range(QUICK_IMPORTERS + 2):
        (folder / f"caller{n}.py").write_text(CALLER.format(n=n))
    workspace = Workspace(tmp_path, Config(root=tmp_path))
    documents = {str(helpers): HELPER}
    workspace.lint(documents)
    asked: list[bool] = []

    def current() -> bool:  # the text changes after the first batch's check, while its project is analysed
        asked.append(len(asked) < 1)
        return asked[-1]

    kept = len(workspace._results)
    assert workspace.lint_dependents(documents, current) is None
    assert asked == [True, False]  # before the batch, then while its project was analysed
    assert len(workspace._results) == kept  # so the batch never finished
    assert workspace.lint_dependents(documents, lambda: True) is not None  # nothing half-done was kept


def test_a_new_language_server_reads_the_import_table_the_last_one_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from compile_lint.lsp.workspace import ImportTable, Workspace

    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    helpers = folder / "helpers.py"
    helpers.write_text(HELPER)
    for n in range(3):
        (folder / f"caller{n}.py").write_text(CALLER.format(n=n))
    scanned: list[str] = []
    scan = ImportTable._scan

    def recording(path: str) -> frozenset[str]:
        scanned.append(Path(path).name)
        return scan(path)

    monkeypatch.setattr(ImportTable, "_scan", staticmethod(recording))
    documents = {str(helpers): HELPER}
    first = Workspace(tmp_path, Config(root=tmp_path)).importers(documents)
    assert [Path(p).name for p in first] == ["caller0.py", "caller1.py", "caller2.py"]
    assert "caller0.py" in scanned
    scanned.clear()
    assert Workspace(tmp_path, Config(root=tmp_path)).importers(documents) == first  # another session
    assert scanned == []
    (folder / "caller1.py").write_text("import os\n")  # no longer an importer: scanned again
    assert [Path(p).name for p in Workspace(tmp_path, Config(root=tmp_path)).importers(documents)] == [
        "caller0.py",
        "caller2.py",
    ]
    assert scanned == ["caller1.py"]


def recorded_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `Path.read_bytes` reads from now on, in order."""
    read: list[Path] = []
    read_bytes = Path.read_bytes

    def recording(path: Path) -> bytes:
        read.append(path)
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", recording)
    return read


def test_the_engine_fingerprint_follows_every_edit_of_the_package_without_reading_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install edited in place: a new stamp (size, mtime) or, within the clock's tick, new bytes
    change the fingerprint, so no finding cached by other code is served; bytecode does not count."""
    package = tmp_path / "compile_lint"
    (package / "rules").mkdir(parents=True)
    (package / "__pycache__").mkdir()
    rule, data = package / "rules" / "rule.py", package / "rules" / "skip.json"
    rule.write_text("LIMIT = 1\n")
    data.write_text("[]\n")
    hour_ago = time.time() - 3600
    for path in (rule, data):
        os.utime(path, (hour_ago, hour_ago))
    read = recorded_reads(monkeypatch)
    seen = {engine.folder_fingerprint(str(package))}
    assert read == []  # stamps written long before the run: not read
    (package / "__pycache__" / "rule.cpython-311.pyc").write_bytes(b"\0")
    assert engine.folder_fingerprint(str(package)) in seen

    def changes() -> None:
        fingerprint = engine.folder_fingerprint(str(package))
        assert fingerprint not in seen
        seen.add(fingerprint)

    rule.write_text("LIMIT = 2\n")  # same size, same second as the run below: read
    changes()
    assert read == [rule]
    os.utime(rule, (hour_ago + 1, hour_ago + 1))  # same size, a stamp written long before the run: not read
    changes()
    data.write_text('["a"]\n')  # data files count too
    changes()
    (package / "rules" / "new_rule.py").write_text("")
    changes()
    fingerprint = engine.engine_fingerprint.__wrapped__
    assert fingerprint() == engine.engine_fingerprint()
    monkeypatch.setattr(sys, "version", "3.99.0")  # another Python over the same project
    assert fingerprint() != engine.engine_fingerprint()


def test_a_context_file_is_read_again_only_when_its_stat_changes_or_was_too_recent_to_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flake8 loads each file's context again: a file whose stat is the one it had when last read is not read
    and hashed again, unless it was written within `RECENT` seconds of that read (a second write within the
    clock's tick keeps the stamp); an edit gives a new stamp, so its new functions are seen."""
    helpers = tmp_path / "helpers.py"
    helpers.write_text("def first(x):\n    return x\n")
    read = recorded_reads(monkeypatch)
    store = engine.IndexStore()
    loaded = store.load(str(helpers), "helpers")
    assert loaded is not None and store.load(str(helpers), "helpers") is loaded
    assert read == [helpers, helpers]  # written just now: read each time
    monkeypatch.setattr(engine, "RECENT", 0.0)  # as if written long before the run
    read.clear()
    loaded = store.load(str(helpers), "helpers")
    assert store.load(str(helpers), "helpers") is loaded and read == [helpers]
    digest = store.sources[str(helpers)]
    helpers.write_text("def second(x):\n    return x\n")  # same size
    os.utime(helpers, ns=(time.time_ns() + 10**9,) * 2)  # a stamp of its own, whatever the clock's tick
    edited = store.load(str(helpers), "helpers")
    assert edited is not None and list(edited.functions) == ["second"]
    assert store.sources[str(helpers)] != digest and read == [helpers, helpers]
