"""`capture_scalar_outputs=True` removes the break of `int(t)`/`float(t)`/`bool(t)` but not of a loop
bound `range(int(t))`: TCL102 follows suit, statically and under real Dynamo (fixtures/scalars.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from compile_lint.engine import lint_source
from compile_lint.versions import NEWEST
from fixture_support import FIXTURES, expected_codes

SCALARS = FIXTURES / "scalars.py"
LOOP_LINE = next(n for n, line in enumerate(SCALARS.read_text().splitlines(), 1) if "range(int(" in line)


def tcl102_lines(flags: set[str]) -> set[int]:
    findings = lint_source(SCALARS.read_text(), str(SCALARS), flags)
    return {f.line for f in findings if f.code == "TCL102"}


def test_static_capture_flag_keeps_only_the_loop_bound() -> None:
    expected = {
        line for line, codes in expected_codes(SCALARS, NEWEST).items() if "TCL102" in codes
    }  # lint_source's default
    assert LOOP_LINE in expected and len(expected) > 1
    assert tcl102_lines(set()) == expected
    assert tcl102_lines({"capture_scalar_outputs"}) == {LOOP_LINE}


@pytest.mark.dynamo
def test_dynamo_still_breaks_on_the_loop_bound_with_the_flag() -> None:
    torch = pytest.importorskip("torch")
    from compile_lint.confirm.run.capture import capture_dynamo_log

    spec = importlib.util.spec_from_file_location("scalars_fixture_capture", SCALARS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    try:
        with torch._dynamo.config.patch(capture_scalar_outputs=True), capture_dynamo_log() as log:
            for name in ("float_of_tensor", "bool_of_tensor", "loop_bound"):
                torch.compile(getattr(module, name), backend="eager")(torch.randn(4, 3))
    finally:
        torch._dynamo.reset()
    lines = {frame.line for brk in log.breaks if (frame := brk.innermost(lambda f: Path(f).resolve() == SCALARS))}
    assert lines == {LOOP_LINE}
