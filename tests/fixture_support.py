"""Reading fixtures: Python files whose lines carry `# expect: TCL101[, TCL103]` comments.

A fixture with compiled entry points defines `compile_lint_targets()`, the same factory protocol
as `--target` (returns `(fn, args)`, `(fn, args, kwargs)` or a list of them).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TCL\d{3}(?:\s*,\s*TCL\d{3})*)")


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.py") if not p.name.startswith("_"))


def lint_unit(path: Path) -> list[Path]:
    """The files linted together with `path`: a top-level fixture alone, a fixture folder as one project."""
    relative = path.relative_to(FIXTURES)
    if len(relative.parts) == 1:
        return [path]
    folder = FIXTURES / relative.parts[0]
    return sorted(p for p in folder.rglob("*.py"))


def expectations(path: Path) -> dict[int, set[str]]:
    """Line -> codes the static pass must report on that line."""
    found: dict[int, set[str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            found[number] = {c.strip() for c in match.group("codes").split(",")}
    return found
