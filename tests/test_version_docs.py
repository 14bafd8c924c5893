"""docs/torch-versions.md is rendered from the per-version fixture records and the rules; it must
not go stale (regenerate with scripts/gen_version_docs.py)."""

from __future__ import annotations

import subprocess
import sys

from fixture_support import ROOT

SCRIPT = ROOT / "scripts" / "gen_version_docs.py"


def test_torch_versions_page_is_current() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_page_names_each_rule_and_a_known_difference() -> None:
    page = (ROOT / "docs" / "torch-versions.md").read_text(encoding="utf-8")
    assert "## TCL203 tensor-to-string" in page
    assert "| `io_and_logging.py:30` `label = str(y)` | breaks (GB0059)" in page
