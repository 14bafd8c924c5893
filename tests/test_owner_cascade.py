"""Owner and cascade of each confirmed break, under real Dynamo, in the JSON, text and HTML reports.

fixtures/timing/_cascade.py: a `.item()` in a helper splits its caller into resume functions; a
dynamic-shape op in a loop makes Dynamo run the whole frame eagerly. A made-up installed distribution
(`breaklib 1.2.3`, in a `site-packages` folder on PYTHONPATH) breaks inside its own code when the
user's model calls it: the owner is breaklib, the fix is offered at the user's call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from compile_lint.finding import Finding
from compile_lint.reporters import html, text
from fixture_support import ROOT

torch = pytest.importorskip("torch")

from compile_lint.confirm.run.owner import label, owner_of  # noqa: E402

CASCADE = "fixtures/timing/_cascade.py"
USER_MODEL = """\
import torch
import breaklib


def forward(x):
    h = x * 2
    h = breaklib.normalise(h)
    return h + 1


def make():
    return (forward, (torch.randn(4, 4),))
"""


def test_the_owner_of_a_file_is_its_distribution_and_version_or_user_code(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    assert label(owner_of(transformers.__file__)) == f"transformers {transformers.__version__}"
    assert label(owner_of(torch.nn.functional.__file__)) == f"torch {metadata.version('torch')}"
    assert label(owner_of(os.__file__)).startswith("python 3.")
    assert owner_of(str(tmp_path / "model.py")) == {"kind": "user"}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("owner")
    site = root / "site-packages"
    (site / "breaklib").mkdir(parents=True)
    (site / "breaklib" / "__init__.py").write_text(
        "def normalise(x):\n    total = x.abs().sum().item()\n    return x / total\n", encoding="utf-8"
    )
    info = site / "breaklib-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: breaklib\nVersion: 1.2.3\n", encoding="utf-8")
    (info / "top_level.txt").write_text("breaklib\n", encoding="utf-8")
    app = root / "app"
    app.mkdir()
    (app / "model.py").write_text(USER_MODEL, encoding="utf-8")
    args = [CASCADE, str(app / "model.py"), "--target", f"{CASCADE}:make", "--target", f"{app / 'model.py'}:make"]
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "compile_lint.cli",
            "--no-cache",
            "--format",
            "json",
            "--confirm",
            "--nested-graph-breaks",
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert process.stdout.strip(), process.stderr
    document: dict[str, Any] = json.loads(process.stdout)
    return document


def at(report: dict[str, Any], path_end: str, line: int) -> dict[str, Any]:
    (found,) = [f for f in report["findings"] if f["path"].endswith(path_end) and f["line"] == line]
    return found


@pytest.mark.dynamo
def test_a_break_in_a_callee_splits_its_caller_and_nested_graph_breaks_change_the_counts(
    report: dict[str, Any],
) -> None:
    item = at(report, "_cascade.py", 14)
    assert item["status"] == "confirmed" and item["details"]["owner"] == {"kind": "user"}
    cascade = item["details"]["cascade"]
    assert cascade["resume_own"] == ["torch_dynamo_resume_in_helper_at_14"]
    assert cascade["resume_in_callers"] == ["torch_dynamo_resume_in_forward_at_21"] and cascade["eager_frames"] == []
    # nested graph breaks: the helper is traced inside its caller's frame, no resume function of its own
    assert cascade["nested"]["resume_own"] == [] and cascade["nested"]["resume_in_callers"] == [
        "torch_dynamo_resume_in_forward_at_21"
    ]
    (model,) = [t for t in report["environment"]["targets"] if t["label"] == f"{CASCADE}:make [#0 Model]"]
    default, nested = model["cascade"]["default"], model["cascade"]["nested"]
    assert (default["frames"], default["resume_functions"]) == (4, 2)
    assert (nested["frames"], nested["resume_functions"]) == (2, 1)


@pytest.mark.dynamo
def test_a_break_in_a_loop_runs_its_whole_frame_eagerly(report: dict[str, Any]) -> None:
    loop = at(report, "_cascade.py", 27)
    assert loop["status"] in ("confirmed", "dynamic-only")
    (eager,) = loop["details"]["cascade"]["eager_frames"]
    assert eager.startswith("loop (") and eager.endswith("_cascade.py:25)")
    assert loop["details"]["cascade"]["nested"]["eager_frames"] == [eager]


@pytest.mark.dynamo
def test_a_break_in_an_installed_distribution_names_it_and_offers_the_fix_at_the_users_call(
    report: dict[str, Any],
) -> None:
    (inside,) = [f for f in report["findings"] if f["path"].endswith(os.path.join("breaklib", "__init__.py"))]
    details = inside["details"]
    assert details["owner"] == {"kind": "library", "name": "breaklib", "version": "1.2.3"}
    fix_at = details["fix_at"]
    assert fix_at["file"].endswith(os.path.join("app", "model.py")) and fix_at["line"] == 7
    assert fix_at["calls"] == "normalise" and inside["fix"] == fix_at["fix"]
    assert "torch.compiler.disable" in inside["fix"] and "torch.library.custom_op" in inside["fix"]
    assert "upgrade" not in inside["fix"].lower()


@pytest.mark.dynamo
def test_owner_and_cascade_appear_in_the_text_and_html_reports(report: dict[str, Any], tmp_path: Path) -> None:
    findings = [Finding(**f) for f in report["findings"]]
    console = Console(record=True, width=400)
    text.render(console, findings, 2)
    shown = console.export_text()
    assert "= owner: user code" in shown and "= owner: breaklib 1.2.3; fix at " in shown
    assert "(your call to `normalise`)" in shown
    assert "= cascade: 0 frames run eagerly, 1 resume function in its frame, 1 in callers" in shown
    assert "; with nested graph breaks: 0 frames run eagerly, 0 resume functions in its frame, 1 in callers" in shown
    page = html.findings_table(findings)
    assert "<th>owner</th><th>cascade</th>" in page and "breaklib 1.2.3; fix at" in page
    assert "1 frame run eagerly (loop (" in page
