"""`--confirm -j 2` runs targets in two workers at once and reports exactly what one worker does."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fixture_support import ROOT

pytest.importorskip("torch")

FILES = ["fixtures/seed_step.py", "fixtures/data_dependent.py", "fixtures/printing.py"]


def statuses(jobs: int) -> list[tuple[str, int, str, str]]:
    command = [sys.executable, "-m", "compile_lint", "--confirm", "-j", str(jobs), "--format", "json", *FILES]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 3, done.stderr[-2000:]  # data_dependent.py:assert_not raises on its inputs
    assert "not checked: fixtures/data_dependent.py:assert_not (raised)" in done.stderr
    document = json.loads(done.stdout)
    return [(f["path"], f["line"], f["code"], f["status"]) for f in document["findings"]]


@pytest.mark.slow
def test_two_workers_report_what_one_does() -> None:
    one = statuses(1)
    assert one == statuses(2)
    assert sum(status == "confirmed" for *_, status in one) >= 10
