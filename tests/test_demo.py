"""`compile-lint demo`, the README's first command: one realistic model, static pass, --confirm and timing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.config import Config
from compile_lint.demo import INTRO, MODEL, steps
from compile_lint.engine import lint


def test_the_static_pass_finds_the_demo_models_breaks(tmp_path: Path) -> None:
    (tmp_path / MODEL).write_text((Path(__file__).parents[1] / "src" / "compile_lint" / "data" / MODEL).read_text())
    codes = {(f.line, f.code) for f in lint([str(tmp_path / MODEL)], Config(), use_cache=False).findings}
    assert codes == {(30, "TCL401"), (34, "TCL401"), (35, "TCL101"), (65, "TCL103"), (66, "TCL201")}
    assert [command[0] for _, command in steps("m.py")] == ["m.py", "--confirm"]


@pytest.mark.dynamo
@pytest.mark.slow
def test_the_demo_runs_every_step_and_explains_graph_breaks(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "demo", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "200"},
    )
    out = process.stdout
    assert process.returncode == 0, process.stderr + out[-3000:]
    assert INTRO.splitlines()[0] in out
    assert "\ntiny_moe.py:30:27: TCL401" in out  # run in the model's folder: short paths, not the temporary one
    assert "TCL401 [confirmed]" in out  # the routing `torch.where(mask)` in a loop
    assert "TCL101 [not-traced]" in out  # after it, the frame runs eagerly
    assert "TCL201 [not-run]" in out  # activations stay finite: the print never runs
    assert "speed-up" in out and "agree" in out
    assert "Traceback" not in process.stderr
