"""Reading fixtures: Python files whose lines carry expectation comments.

`# expect: TCL203` holds for every known torch version; `# expect[2.14]: TCL203 GB0569` overrides it
for that version (a line with only `# expect[2.13]: ...` expects nothing under the others). GB codes
after a rule code pin the finding's prediction for that version: it must predict exactly those, and
Dynamo must break with one of them. Several codes are separated by commas:
`# expect[2.14]: TCL203 GB0569, TCL101`.

A fixture with compiled entry points defines `compile_lint_targets()`, the same factory protocol
as `--target` (returns `(fn, args)`, `(fn, args, kwargs)` or a list of them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from compile_lint import versions
from compile_lint.versions import TorchVersion

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OBSERVED = ROOT / "docs" / "observed"  # per-version records of fixture runs (scripts/observe_fixtures.py)
# Dynamo blames a frame skip caused by `id(t)`/`hash(t)` on the line that uses the result.
FRAME_SKIP_REACH = 2
ITEM = r"TCL\d{3}(?:\s+GB\d{4})*"
# `# expect[2.14]: none`: nothing on that line for that version (the line breaks on the others only).
EXPECT = re.compile(rf"#\s*expect(?:\[(?P<version>[^\]]*)\])?:\s*(?P<items>none|{ITEM}(?:\s*,\s*{ITEM})*)")

Expected = dict[str, frozenset[str]]  # rule code -> the GB codes it must predict (empty: not pinned)


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.py") if not p.name.startswith("_"))


def lint_unit(path: Path) -> list[Path]:
    """The files linted together with `path`: a top-level fixture alone, a fixture folder as one project."""
    relative = path.relative_to(FIXTURES)
    if len(relative.parts) == 1:
        return [path]
    folder = FIXTURES / relative.parts[0]
    return sorted(p for p in folder.rglob("*.py"))


def _items(text: str) -> Expected:
    expected: Expected = {}
    if text == "none":
        return expected
    for item in text.split(","):
        code, *gb_codes = item.split()
        expected[code] = frozenset(gb_codes)
    return expected


def _version_of(label: str, path: Path, number: int) -> TorchVersion:
    version = versions.parse(label)
    if version not in versions.KNOWN:
        raise ValueError(f"{path.name}:{number}: expect[{label}] names no known torch version {versions.KNOWN}")
    return version


def expectations(path: Path, version: TorchVersion) -> dict[int, Expected]:
    """Line -> what the static pass must report there when it targets `version`."""
    found: dict[int, Expected] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        general: Expected | None = None
        for match in EXPECT.finditer(line):
            label = match.group("version")
            if label is None:
                general = _items(match.group("items"))
            elif _version_of(label, path, number) == version:
                found[number] = _items(match.group("items"))
        if general is not None:
            found.setdefault(number, general)
    return {number: expected for number, expected in found.items() if expected}


def expected_codes(path: Path, version: TorchVersion) -> dict[int, set[str]]:
    """Line -> rule codes expected there under `version`."""
    return {line: set(expected) for line, expected in expectations(path, version).items()}


def record_path(version: TorchVersion) -> Path:
    return OBSERVED / f"torch-{versions.label(version)}.json"


def run_compile_lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process, without the cache, with room for long lines."""
    return subprocess.run(
        [sys.executable, "-m", "compile_lint", "--no-cache", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=120,
    )
