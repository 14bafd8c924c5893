"""For every known torch version, the static pass reports exactly the expected codes on exactly the
expected lines of each fixture, with exactly the GB codes an expectation pins."""

from __future__ import annotations

from pathlib import Path

import pytest

from compile_lint.config import OPT_IN, Config
from compile_lint.engine import lint
from compile_lint.finding import Finding
from compile_lint.versions import KNOWN, TorchVersion, label
from fixture_support import FIXTURES, ROOT, expectations, fixture_files, lint_unit


def config_for(version: TorchVersion) -> Config:
    # fixtures pin TCL703 too, and run half-precision inputs
    return Config(root=ROOT, torch_version=label(version), extend_select=sorted(OPT_IN), half_precision=True)


def findings_in(path: Path, version: TorchVersion) -> list[Finding]:
    result = lint([str(p) for p in lint_unit(path)], config_for(version), use_cache=False)
    return [finding for finding in result.findings if finding.path == str(path)]


@pytest.mark.parametrize("version", KNOWN, ids=lambda v: f"torch{label(v)}")
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_static_pass_matches_expectations(path: Path, version: TorchVersion) -> None:
    expected = expectations(path, version)
    reported: dict[int, set[str]] = {}
    for finding in findings_in(path, version):
        reported.setdefault(finding.line, set()).add(finding.code)
        pinned = expected.get(finding.line, {}).get(finding.code)
        if pinned:
            assert set(finding.gb_codes) == pinned, f"{path.name}:{finding.line} {finding.code} {finding.gb_codes}"
    assert reported == {line: set(codes) for line, codes in expected.items()}


def test_fixtures_exist() -> None:
    assert len(fixture_files()) >= 3


def test_expectations_name_only_known_versions(tmp_path: Path) -> None:
    fixture = tmp_path / "old.py"
    fixture.write_text("x = 1  # expect[1.9]: TCL101\n")
    with pytest.raises(ValueError, match=r"expect\[1.9\]"):
        expectations(fixture, KNOWN[0])


def test_a_version_expectation_overrides_the_general_one(tmp_path: Path) -> None:
    fixture = tmp_path / "both.py"
    fixture.write_text(
        "a = 1  # expect: TCL203  # expect[2.14]: TCL203 GB0569, TCL101\nb = 2  # expect[2.13]: TCL204 GB0291 GB4841\n"
    )
    assert expectations(fixture, (2, 13)) == {1: {"TCL203": frozenset()}, 2: {"TCL204": {"GB0291", "GB4841"}}}
    assert expectations(fixture, (2, 14)) == {1: {"TCL203": {"GB0569"}, "TCL101": frozenset()}}


@pytest.mark.parametrize("version", KNOWN, ids=lambda v: f"torch{label(v)}")
def test_linting_all_fixtures_together_changes_nothing(version: TorchVersion) -> None:
    """Names repeat across fixtures (two `Gate` classes); one project run must match the per-unit runs."""
    together = lint([str(FIXTURES)], config_for(version), use_cache=False).findings
    for path in fixture_files():
        expected = {(f.line, f.code) for f in findings_in(path, version)}
        assert {(f.line, f.code) for f in together if f.path == str(path)} == expected, path.name
