"""Running a fixture's `compile_lint_targets()` under real Dynamo (backend="eager"), and the breaks it
logs, each blamed on the innermost frame in the fixture's lint unit.

Shared by tests/test_fixtures_dynamo.py and scripts/observe_fixtures.py (which records what each
torch version does, for docs/torch-versions.md). Imports torch.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch._dynamo

from compile_lint.confirm.run.capture import Break, capture_dynamo_log, every_break_with_stack, forced_backend
from compile_lint.confirm.run.targets import run_once, targets_from_factory
from fixture_support import FIXTURES, fixture_files, lint_unit

RUNNABLE = [p for p in fixture_files() if "def compile_lint_targets" in p.read_text(encoding="utf-8")]


@dataclass(frozen=True, order=True)
class Observed:
    """One break as a fixture test sees it: where in the fixture, which code, whole frame or not."""

    file: str  # relative to fixtures/
    line: int
    gb_code: str
    frame_skip: bool

    def to_json(self, gb_type: str) -> dict[str, Any]:
        source = (FIXTURES / self.file).read_text(encoding="utf-8").splitlines()[self.line - 1]
        code = source.split("  # ", 1)[0].strip()  # without the expectation comment, which may change
        return {**self.__dict__, "gb_type": gb_type, "source": code}


def load(path: Path) -> ModuleType:
    relative = path.relative_to(FIXTURES)
    if len(relative.parts) > 1 and (FIXTURES / relative.parts[0] / "__init__.py").is_file():
        return _load_package_module(relative)
    name = f"compile_lint_fixture_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))  # fixture folders import their sibling modules
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def _load_package_module(relative: Path) -> ModuleType:
    """A module of a fixture package (relative imports): imported by its dotted name from fixtures/."""
    sys.path.insert(0, str(FIXTURES))
    try:
        return importlib.import_module(".".join(relative.with_suffix("").parts))
    finally:
        sys.path.remove(str(FIXTURES))


def observed_breaks(path: Path) -> list[Break]:
    """Every break logged while the fixture's targets run once; Dynamo's config is restored after,
    since fixtures set flags and register logging functions in it."""
    saved = torch._dynamo.config.get_config_copy()
    try:
        with forced_backend("eager"):
            module = load(path)
        with capture_dynamo_log() as log, every_break_with_stack():
            for target in targets_from_factory(module.compile_lint_targets):
                run_once(target, "eager")
        return log.breaks
    finally:
        # only the keys a fixture changed: loading the whole copy sets deprecated keys too, which warn
        current = torch._dynamo.config.get_config_copy()
        torch._dynamo.config.load_config({key: value for key, value in saved.items() if current[key] != value})
        torch._dynamo.reset()


def replayed_after_graph(file: Path, line: int, brk: Break) -> bool:
    """A break in a library frame Dynamo compiled on its own, called from the end of a compiled
    fixture function (blamed on the function's first line, its decorator or `def`): torch 2.14 replays
    registered logging calls there, and `Logger.info` called with a tensor breaks inside logging.
    The fixture's own graph is whole."""
    source = file.read_text(encoding="utf-8").splitlines()[line - 1].lstrip()
    first_line = source.startswith(("@", "def ", "async def "))
    return first_line and not Path(brk.file).resolve().is_relative_to(FIXTURES)


def fixture_breaks(path: Path) -> list[tuple[Path, int, Break]]:
    """(file, line, break) for each break of the fixture's own code, at its innermost frame in the
    lint unit of `path`."""
    unit = {p.resolve() for p in lint_unit(path)}
    found = []
    for brk in observed_breaks(path):
        frame = brk.innermost(lambda f: Path(f).resolve() in unit)
        assert frame is not None, f"break outside the fixture: {brk}"
        file = Path(frame.file).resolve()
        if not replayed_after_graph(file, frame.line, brk):
            found.append((file, frame.line, brk))
    # Dynamo logs a break that makes it give up on the frame first as a plain break, then again as the frame
    # skip (`super().__init__()` of a module built in the region): it is one frame skip.
    skipped = {(file, line, brk.gb_code) for file, line, brk in found if brk.frame_skip}
    return [(f, at, b) for f, at, b in found if b.frame_skip or (f, at, b.gb_code) not in skipped]


def observed(breaks: list[tuple[Path, int, Break]]) -> dict[Observed, str]:
    """Each distinct break -> its gb_type (a loop or a second target may log a break again)."""
    return {
        Observed(file.relative_to(FIXTURES.resolve()).as_posix(), line, brk.gb_code or "", brk.frame_skip): brk.gb_type
        for file, line, brk in breaks
    }
