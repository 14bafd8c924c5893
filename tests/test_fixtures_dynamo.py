"""Every fixture expectation is checked against real Dynamo (torch 2.13, backend="eager").

A line expected to break must break with one of the rule's GB codes; a line that breaks must be
expected to; a clean fixture must not break at all. This keeps the rules tied to torch's behaviour.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from fixture_support import expectations, fixture_files, lint_unit

torch = pytest.importorskip("torch")

from compile_lint.confirm.capture import Break, capture_dynamo_log, forced_backend  # noqa: E402
from compile_lint.confirm.targets import run_once, targets_from_factory  # noqa: E402
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


def _matches(expected_line: int, codes: set[str], brk: Break, line: int) -> bool:
    for code in codes:
        rule = rule_by_code(code)
        assert rule is not None, code
        if not rule.predicts_break or brk.gb_code not in rule.gb_codes:
            continue
        reach = FRAME_SKIP_REACH if rule.frame_skip else 0
        if expected_line <= line <= expected_line + reach and brk.frame_skip == rule.frame_skip:
            return True
    return False


RUNNABLE = [p for p in fixture_files() if "def compile_lint_targets" in p.read_text(encoding="utf-8")]


@pytest.mark.dynamo
@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.name)
def test_fixture_matches_dynamo(path: Path) -> None:
    unit = {p.resolve() for p in lint_unit(path)}
    expected = {(p, line): codes for p in unit for line, codes in expectations(p).items()}
    breaks = []
    for brk in observed_breaks(path):
        frame = brk.innermost(lambda f: Path(f).resolve() in unit)
        assert frame is not None, f"break outside the fixture: {brk}"
        breaks.append((Path(frame.file).resolve(), frame.line, brk))

    for (file, line), codes in expected.items():
        predicting = [c for c in codes if rule_by_code(c).predicts_break]  # type: ignore[union-attr]
        if predicting:
            assert any(f == file and _matches(line, codes, brk, at) for f, at, brk in breaks), (
                f"{file.name}:{line} expected {predicting} to break, Dynamo saw: "
                + "; ".join(f"{f.name}:{at}: {b.gb_code} {b.gb_type}" for f, at, b in breaks)
            )
    for file, at, brk in breaks:
        assert any(f == file and _matches(line, codes, brk, at) for (f, line), codes in expected.items()), (
            f"{file.name}:{at} broke ({brk.gb_code} {brk.gb_type}) with no matching expectation"
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
    missing = [r.code for r in all_rules() if r.code not in covered and r.code != "TCL000"]
    assert not missing, f"rules with no fixture: {missing}"


