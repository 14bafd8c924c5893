"""Every fixture expectation is checked against real Dynamo (torch 2.13, backend="eager").

Each static finding that predicts a break must meet a break on its line with one of its own GB
codes; every break must be predicted by a finding; a clean fixture must not break at all. This keeps the rules tied to torch's behaviour.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fixture_support import ROOT, expectations, fixture_files, lint_unit

torch = pytest.importorskip("torch")

from compile_lint.config import Config  # noqa: E402
from compile_lint.confirm.capture import Break, capture_dynamo_log, forced_backend  # noqa: E402
from compile_lint.confirm.targets import run_once, targets_from_factory  # noqa: E402
from compile_lint.engine import lint  # noqa: E402
from compile_lint.finding import Finding  # noqa: E402
from compile_lint.rules import rule_by_code  # noqa: E402

# Dynamo blames a frame skip caused by `id(t)`/`hash(t)` on the line that uses the result.
FRAME_SKIP_REACH = 2


def load(path: Path) -> ModuleType:
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


def observed_breaks(path: Path) -> list[Break]:
    with forced_backend("eager"):
        module = load(path)
    try:
        with capture_dynamo_log() as log:
            for target in targets_from_factory(module.compile_lint_targets):
                run_once(target, "eager")
        return log.breaks
    finally:
        torch._dynamo.config.capture_scalar_outputs = False
        torch._dynamo.config.capture_dynamic_output_shape_ops = False
        torch._dynamo.reset()


def _matches(finding: Finding, brk: Break, line: int) -> bool:
    """Does `brk`, blamed on `line`, confirm `finding` (same GB code, same line, same kind of break)?"""
    rule = rule_by_code(finding.code)
    assert rule is not None, finding.code
    if brk.gb_code not in finding.gb_codes or brk.frame_skip != rule.frame_skip:
        return False
    reach = FRAME_SKIP_REACH if rule.frame_skip else 0
    return finding.line <= line <= finding.line + reach


RUNNABLE = [p for p in fixture_files() if "def compile_lint_targets" in p.read_text(encoding="utf-8")]


@pytest.mark.dynamo
@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_fixture_matches_dynamo(path: Path) -> None:
    """Checks each static finding's own GB codes (the static test ties findings to the expectations)."""
    unit = {p.resolve() for p in lint_unit(path)}
    findings = lint([str(p) for p in sorted(unit)], Config(root=ROOT), use_cache=False).findings
    by_file: dict[Path, list[Finding]] = {}
    for finding in findings:
        by_file.setdefault(Path(finding.path).resolve(), []).append(finding)
    breaks = []
    for brk in observed_breaks(path):
        frame = brk.innermost(lambda f: Path(f).resolve() in unit)
        assert frame is not None, f"break outside the fixture: {brk}"
        breaks.append((Path(frame.file).resolve(), frame.line, brk))

    for file, file_findings in by_file.items():
        for finding in file_findings:
            if finding.gb_codes:
                assert any(f == file and _matches(finding, brk, at) for f, at, brk in breaks), (
                    f"{file.name}:{finding.line} {finding.code} predicted {finding.gb_codes}, Dynamo saw: "
                    + "; ".join(f"{f.name}:{at}: {b.gb_code} {b.gb_type}" for f, at, b in breaks)
                )
    for file, at, brk in breaks:
        assert any(_matches(finding, brk, at) for finding in by_file.get(file, [])), (
            f"{file.name}:{at} broke ({brk.gb_code} {brk.gb_type}) and no finding predicted it"
        )


def test_every_fixture_with_expectations_runs() -> None:
    """A fixture whose breaks are never run under Dynamo would be unverified."""
    covered = {p for runnable in RUNNABLE for p in lint_unit(runnable)}
    for path in fixture_files():
        if expectations(path):
            assert path in covered, f"{path.name} has expectations but nothing runs it under Dynamo"


def test_every_rule_is_backed_by_a_fixture() -> None:
    from compile_lint.rules import all_rules

    covered = {code for path in fixture_files() for codes in expectations(path).values() for code in codes}
    static = [r for r in all_rules() if r.code != "TCL000" and r.family != "dynamic"]  # see test_rule_examples
    missing = [r.code for r in static if r.code not in covered]
    assert not missing, f"rules with no fixture: {missing}"


