"""Every fixture expectation is checked against real Dynamo (backend="eager") of the installed torch.

The fixtures are linted for the installed version. Each static finding that predicts a break must
meet a break on its line with one of its own GB codes (one of the codes its expectation pins, if it
pins some); every break must be predicted by a finding; a clean fixture must not break at all. CI runs
this under each known torch version, which ties the rules to what each version does.

The breaks seen must also equal docs/observed/torch-X.Y.json, the record docs/torch-versions.md is
rendered from (rewrite it with scripts/observe_fixtures.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixture_support import FIXTURES, FRAME_SKIP_REACH, ROOT, expectations, fixture_files, lint_unit, record_path

torch = pytest.importorskip("torch")

from compile_lint import versions  # noqa: E402
from compile_lint.config import OPT_IN, Config  # noqa: E402
from compile_lint.confirm.run.capture import Break  # noqa: E402
from compile_lint.engine import lint  # noqa: E402
from compile_lint.finding import Finding  # noqa: E402
from compile_lint.rules import rule_by_code  # noqa: E402
from fixture_dynamo import RUNNABLE, fixture_breaks, observed, replayed_after_graph  # noqa: E402

INSTALLED = versions.parse(torch.__version__)


def _matches(finding: Finding, brk: Break, line: int) -> bool:
    """Does `brk`, blamed on `line`, confirm `finding` (same GB code, same line, same kind of break)?"""
    rule = rule_by_code(finding.code)
    assert rule is not None, finding.code
    if brk.gb_code not in finding.gb_codes or brk.frame_skip != rule.frame_skip:
        return False
    reach = FRAME_SKIP_REACH if rule.frame_skip else 0
    return finding.line <= line <= finding.line + reach


def _pinned(path: Path, finding: Finding) -> frozenset[str]:
    assert INSTALLED is not None
    return expectations(path, INSTALLED).get(finding.line, {}).get(finding.code, frozenset())


@pytest.mark.dynamo
@pytest.mark.skipif(INSTALLED not in versions.KNOWN, reason=f"no expectations for torch {torch.__version__}")
@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_fixture_matches_dynamo(path: Path) -> None:
    """Checks each static finding's own GB codes (the static test ties findings to the expectations)."""
    assert INSTALLED is not None
    unit = {p.resolve() for p in lint_unit(path)}
    config = Config(
        root=ROOT, torch_version=versions.label(INSTALLED), extend_select=sorted(OPT_IN), half_precision=True
    )
    findings = lint([str(p) for p in sorted(unit)], config, use_cache=False).findings
    by_file: dict[Path, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(Path(finding.path).resolve(), []).append(finding)
    breaks = fixture_breaks(path)

    for file, file_findings in by_file.items():
        for finding in file_findings:
            if finding.gb_codes:
                hits = [brk for f, at, brk in breaks if f == file and _matches(finding, brk, at)]
                assert hits, (
                    f"{file.name}:{finding.line} {finding.code} predicted {finding.gb_codes}, Dynamo saw: "
                    + "; ".join(f"{f.name}:{at}: {b.gb_code} {b.gb_type}" for f, at, b in breaks)
                )
                pinned = _pinned(file, finding)
                assert not pinned or any(brk.gb_code in pinned for brk in hits), (finding, pinned)
    for file, at, brk in breaks:
        assert any(_matches(finding, brk, at) for finding in by_file.get(file, [])), (
            f"{file.name}:{at} broke ({brk.gb_code} {brk.gb_type}) and no finding predicted it"
        )
    recorded = json.loads(record_path(INSTALLED).read_text(encoding="utf-8"))["fixtures"]
    key = path.relative_to(FIXTURES).as_posix()
    assert [item.to_json(gb_type) for item, gb_type in sorted(observed(breaks).items())] == recorded.get(key, []), (
        f"docs/observed/{record_path(INSTALLED).name} is stale for {key}: run scripts/observe_fixtures.py"
    )


def test_every_fixture_with_expectations_runs() -> None:
    """A fixture whose breaks are never run under Dynamo would be unverified."""
    covered = {p for runnable in RUNNABLE for p in lint_unit(runnable)}
    for path in fixture_files():
        if any(expectations(path, version) for version in versions.KNOWN):
            assert path in covered, f"{path.name} has expectations but nothing runs it under Dynamo"


def test_every_rule_is_backed_by_a_fixture() -> None:
    from compile_lint.rules import all_rules

    covered = {
        code
        for path in fixture_files()
        for version in versions.KNOWN
        for expected in expectations(path, version).values()
        for code in expected
    }
    static = [r for r in all_rules() if any(r.visitors())]  # see test_rule_examples
    missing = [r.code for r in static if r.code not in covered]
    assert not missing, f"rules with no fixture: {missing}"


def test_observations_are_recorded_for_every_known_version() -> None:
    for version in versions.KNOWN:
        record = json.loads(record_path(version).read_text(encoding="utf-8"))
        assert versions.parse(record["torch"]) == version
        assert sorted(record["fixtures"]) == sorted(p.relative_to(FIXTURES).as_posix() for p in RUNNABLE)


def test_replayed_logging_break_is_told_apart_from_fixture_breaks() -> None:
    fixture = FIXTURES / "reorderable_logging.py"
    def_line = next(n for n, text in enumerate(fixture.read_text().splitlines(), 1) if text.startswith("def step"))
    decorator_line = def_line - 1
    logging_frame = Break("/usr/lib/python3.11/logging/__init__.py", 1488, "GB0291", "", frame_skip=False)
    assert replayed_after_graph(fixture, def_line, logging_frame)
    assert replayed_after_graph(fixture, decorator_line, logging_frame)
    assert not replayed_after_graph(fixture, def_line + 2, logging_frame)
    own = Break(str(fixture), def_line, "GB0291", "", frame_skip=False)
    assert not replayed_after_graph(fixture, def_line, own)
