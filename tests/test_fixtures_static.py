"""The static pass reports exactly the expected codes on exactly the expected lines of each fixture."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.engine import lint
from fixture_support import FIXTURES, ROOT, expectations, fixture_files, lint_unit


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_static_pass_matches_expectations(path: Path) -> None:
    result = lint([str(p) for p in lint_unit(path)], Config(root=ROOT), use_cache=False)
    reported: dict[int, set[str]] = {}
    for finding in result.findings:
        if finding.path == str(path):
            reported.setdefault(finding.line, set()).add(finding.code)
    assert reported == expectations(path)


def test_fixtures_exist() -> None:
    assert len(fixture_files()) >= 3


def test_linting_all_fixtures_together_changes_nothing() -> None:
    """Names repeat across fixtures (two `Gate` classes); one project run must match the per-unit runs."""
    together = lint([str(FIXTURES)], Config(root=ROOT), use_cache=False).findings
    for path in fixture_files():
        alone = lint([str(p) for p in lint_unit(path)], Config(root=ROOT), use_cache=False).findings
        expected = {(f.line, f.code) for f in alone if f.path == str(path)}
        assert {(f.line, f.code) for f in together if f.path == str(path)} == expected, path.name
