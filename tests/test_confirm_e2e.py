"""`compile-lint --confirm` end to end: the CLI in a subprocess on fixtures/confirm, real Dynamo.

Fixture lines carry `# confirm: STATUS [GBxxxx]` comments saying what --confirm must report there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixture_support import ROOT

pytest.importorskip("torch")

CONFIRM = ROOT / "fixtures" / "confirm"
STATUS = re.compile(r"#.*confirm:\s*(?P<status>[a-z-]+)(?:\s+(?P<gb>GB\d{4}))?")


def run_cli(*args: str, timeout: float = 600) -> tuple[int, dict[str, Any], str]:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--confirm", "--no-cache", "--format", "json", "-j", "1", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert process.stdout.strip(), process.stderr
    return process.returncode, json.loads(process.stdout), process.stderr


def expected_statuses(path: Path) -> dict[int, tuple[str, str | None]]:
    found = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = STATUS.search(line)
        if match:
            found[number] = (match.group("status"), match.group("gb"))
    return found


def targets_by_label(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["label"]: t for t in report["environment"]["targets"]}


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    repro_dir = tmp_path_factory.mktemp("repro")
    code, report, _ = run_cli("fixtures/seed_step.py", "--repro-dir", str(repro_dir))
    return code, report, repro_dir


@pytest.mark.dynamo
def test_seed_step_is_confirmed_with_a_torch_where_fix(seed: tuple[int, dict[str, Any], Path]) -> None:
    code, report, _ = seed
    assert code == 1
    (finding,) = [f for f in report["findings"] if f["line"] == 9]
    assert finding["code"] == "TCL101"
    assert finding["status"] == "confirmed"
    assert finding["details"]["observed_gb_code"] == "GB0124"
    assert "torch.where(y.sum() > 0" in finding["fix"]
    environment = report["environment"]
    assert environment["backend"] == "eager"
    assert environment["torch"].startswith("2.")
    assert environment["cuda_available"] is False and environment["device"] == "cpu"
    assert "graph_breaks" in environment["torch_logging"]
    (target,) = environment["targets"]
    assert target["outcome"] == "ok" and target["breaks"] == 1
    # the default probes compile nothing again: no fullgraph run, no dynamic-size probe, no fix check
    assert target["one_graph"] is None and "fix_check" not in finding["details"]
    (dtype,) = target["recompiles"]  # told by the cached graph's guards
    assert dtype["trigger"].startswith("x dtype") and "dtype mismatch" in dtype["reasons"][0]


@pytest.mark.dynamo
def test_repro_script_reproduces_the_break(seed: tuple[int, dict[str, Any], Path]) -> None:
    _, _, repro_dir = seed
    (script,) = repro_dir.glob("*.py")
    assert script.name == "repro_seed_step_9_TCL101.py"
    assert "torch 2." in script.read_text()
    process = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=repro_dir)
    assert process.returncode == 0, process.stderr
    assert "seed_step.py:9" in process.stderr and "Graph Break Reason" in process.stderr


@pytest.mark.dynamo
def test_every_status_dynamic_only_helper_and_recompile_probe() -> None:
    files = ["_statuses.py", "_dispatch.py", "_callbacks.py", "_recompiles.py", "_eager_frame.py"]
    code, report, stderr = run_cli(
        *(f"fixtures/confirm/{name}" for name in files),
        "--target",
        "fixtures/confirm/_recompiles.py:make",
        "--auto-targets",
        "--deep",
    )
    assert code == 3, stderr  # NeedsConfig cannot be built: not checked
    findings = report["findings"]
    for name in files:
        path = f"fixtures/confirm/{name}"
        for line, (status, gb) in expected_statuses(CONFIRM / name).items():
            here = [f for f in findings if f["path"] == path and f["line"] == line]
            assert [f["status"] for f in here] == [status], (path, line, here)
            if gb:
                assert here[0]["gb_codes"] == [gb]
    (dynamic,) = [f for f in findings if f["status"] == "dynamic-only" and f["code"] == "TCL801"]
    assert dynamic["path"].endswith("_callbacks.py")  # the helper's line, not the call in _dispatch.py
    assert dynamic["details"]["explanation"] and dynamic["details"]["gb_type"] == "Failed to trace builtin operator"
    assert dynamic["details"]["chain"][1].startswith("fixtures/confirm/_dispatch.py:10 in step")
    (not_traced,) = [f for f in findings if f["status"] == "not-traced"]
    cause = not_traced["details"]["not_traced_because"]  # the frame skip at `id(y)`, blamed a line later
    assert cause["file"] == "fixtures/confirm/_eager_frame.py" and cause["line"] in (10, 11) and cause["frame_skip"]

    targets = targets_by_label(report)
    assert "give it inputs" in targets["fixtures/confirm/_statuses.py:NeedsConfig"]["error"]
    assert targets["fixtures/confirm/_statuses.py:Tagger"]["outcome"] == "ok"  # Embedding got indices
    counter = targets["fixtures/confirm/_recompiles.py:Counter"]["recompiles"]
    (repeat,) = [v for v in counter if v["trigger"].startswith("nothing")]
    assert repeat["every_call"] and repeat["limit_hit"] and "self.calls ==" in repeat["reasons"][0]
    recompile_findings = [f for f in findings if f["path"].endswith("_recompiles.py") and f["line"] in (13, 14)]
    assert recompile_findings and all(f["status"] in ("confirmed", "dynamic-only") for f in recompile_findings)

    probe = targets["fixtures/confirm/_recompiles.py:make [scale_by_mode]"]["recompiles"]
    by_trigger = {v["trigger"].split(" (")[0]: v for v in probe}
    sizes = by_trigger["x dims 0, 1"]  # grown one at a time with dynamic sizes: no recompile
    assert sizes["free_dims"] == [0, 1] and sizes["recompiled_calls"] == 0
    assert "mark_dynamic(x, 0)" in sizes["suggestion"] and "mark_dynamic(x, 1)" in sizes["suggestion"]
    assert by_trigger["mode"]["recompiled_calls"] >= 1 and "mode ==" in by_trigger["mode"]["reasons"][0]
    assert by_trigger["x dtype"]["recompiled_calls"] == 1 and "dtype mismatch" in by_trigger["x dtype"]["reasons"][0]
    # the explicit factory covered scale_by_mode; nothing else ran it
    assert not any(label.endswith(":scale_by_mode") for label in targets)


@pytest.mark.dynamo
def test_targets_that_raise_crash_or_hang_are_reported_and_the_rest_run() -> None:
    code, report, _ = run_cli("fixtures/confirm/_failing.py", "--timeout", "10")
    assert code == 3
    targets = targets_by_label(report)
    label = "fixtures/confirm/_failing.py:{}".format
    assert targets[label("raises")]["outcome"] == "raised"
    assert "ValueError" in targets[label("raises")]["error"] and "_failing.py:11" in targets[label("raises")]["error"]
    assert targets[label("segfaults")]["outcome"] == "crashed"
    assert "segmentation fault" in targets[label("segfaults")]["error"]
    assert targets[label("hangs")]["outcome"] == "timed-out"
    message = targets[label("hangs")]["error"]
    assert re.match(r"timed out after 1\d s while running hangs eagerly \(limit 10 s; raise it with --timeout", message)
    assert targets[label("fine")]["outcome"] == "ok"
    for finding in report["findings"]:  # nothing ran to completion inside `hangs`
        if finding["function"] == "hangs":
            assert finding["status"] == "not-run"


@pytest.mark.dynamo
def test_a_factory_sets_its_own_timeout_and_the_message_says_where_it_was() -> None:
    code, report, _ = run_cli("fixtures/confirm/_failing.py", "--target", "fixtures/confirm/_failing.py:make_slow")
    (target,) = report["environment"]["targets"]  # named targets run alone
    assert code == 3 and target["outcome"] == "timed-out"
    assert re.match(r"timed out after [5-9] s while running sleeps_forever eagerly \(limit 5 s;", target["error"])
    assert "compile_lint_timeout = SECONDS" in target["error"]


@pytest.mark.dynamo
def test_named_targets_run_alone_and_the_automatic_ones_are_capped() -> None:
    code, report, _ = run_cli(
        "fixtures/confirm/_failing.py", "--target", "fixtures/confirm/_recompiles.py:make", "--exit-zero"
    )
    assert code == 0, report  # findings only: --exit-zero covers them
    assert list(targets_by_label(report)) == ["fixtures/confirm/_recompiles.py:make [scale_by_mode]"]
    code, report, _ = run_cli("fixtures/confirm/_eager_frame.py", "fixtures/seed_step.py", "--max-auto-targets", "1")
    labels = targets_by_label(report)
    assert code == 3 and len(labels) == 2 and labels["1 more automatic target"]["outcome"] == "not-run"
    assert "--max-auto-targets" in labels["1 more automatic target"]["error"]


@pytest.mark.dynamo
def test_a_break_in_a_file_that_is_not_linted_is_a_finding_at_its_own_line() -> None:
    code, report, _ = run_cli("fixtures/confirm/_caller.py")
    assert code == 1
    helper = "fixtures/confirm/_unlinted_helper.py"
    found = {(f["path"], f["line"], f["code"], f["status"], *f["gb_codes"]) for f in report["findings"]}
    assert found == {  # a tensor-valued `if` (counters["unimplemented"]) is a break like any other
        (helper, 5, "TCL801", "dynamic-only", "GB0059"),
        (helper, 6, "TCL801", "dynamic-only", "GB0170"),
    }
    for finding in report["findings"]:
        line = finding["line"]
        assert finding["details"]["chain"] == [
            f"{helper}:{line} in log_value",
            "fixtures/confirm/_caller.py:11 in step",
        ]
        assert finding["details"]["hints"] and finding["details"]["explanation"]


@pytest.mark.dynamo
def test_each_target_starts_from_a_clean_state_and_exits_are_reported() -> None:
    isolation = "fixtures/confirm/_isolation.py"
    code, report, _ = run_cli(
        isolation,
        *(
            arg
            for name in ("pollute", "check", "exits", "unprintable", "check")
            for arg in ("--target", f"{isolation}:{name}")
        ),
        "--exit-zero",
    )
    assert code == 3  # --exit-zero never hides a target that could not be checked
    targets = report["environment"]["targets"]
    assert [t["outcome"] for t in targets] == ["ok", "ok", "raised", "raised", "ok"], targets
    assert re.fullmatch(rf"called sys.exit\(3\) at \S*{isolation}:57", targets[2]["error"])
    assert re.fullmatch(
        rf"Unprintable at \S*{isolation}:70 \(its message cannot be shown: str\(\) raised\)", targets[3]["error"]
    )


@pytest.mark.dynamo
def test_a_worker_over_the_memory_limit_is_stopped_and_reported() -> None:
    code, report, _ = run_cli(
        "fixtures/confirm/_memory.py", "--target", "fixtures/confirm/_memory.py:make", "--memory-limit", "1.5"
    )
    (target,) = report["environment"]["targets"]
    assert code == 3 and target["outcome"] == "memory-limit"
    assert "over the limit of 1.5 GB" in target["error"] and "--memory-limit" in target["error"]


@pytest.mark.dynamo
def test_a_missing_factory_exits_3_and_a_bad_backend_exits_2() -> None:
    code, report, stderr = run_cli("fixtures/seed_step.py", "--target", "fixtures/confirm/_isolation.py:nope")
    (target,) = report["environment"]["targets"]
    assert code == 3 and target["outcome"] == "error" and "no callable `nope`" in target["error"]
    assert "not checked" in stderr
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "compile_lint.cli",
            "--confirm",
            "--no-cache",
            "fixtures/seed_step.py",
            "--backend",
            "nope",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 2 and "unknown --backend 'nope'" in process.stderr and "eager" in process.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "no_colon_here"], "must look like"),
        (["--target", "fixtures/confirm/missing.py:make"], "no such file"),
        (["--timeout", "0"], "--timeout must be greater than 0"),
        (["--memory-limit", "-1"], "--memory-limit must be greater than 0"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--confirm", "--no-cache", "fixtures/seed_step.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 2, process.stderr
    assert message in process.stderr and "only work" not in process.stderr
    assert "Traceback" not in process.stderr


@pytest.mark.parametrize("option", [["--repro-dir", "x"], ["--deep"]])
def test_confirm_options_need_confirm(option: list[str]) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--no-cache", "fixtures/seed_step.py", *option],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 2 and f"{option[0]} only works with --confirm" in process.stderr


@pytest.mark.dynamo
def test_config_targets_a_factory_list_and_covered_regions(tmp_path: Path) -> None:
    """`[tool.compile-lint.confirm] targets` from pyproject.toml, a factory returning a list, and the
    automatic target for a region the factory already ran is skipped."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.compile-lint.confirm]\ntargets = ["model:make"]\nauto-targets = true\nshape = [2, 3]\ntimeout = 60\n'
    )
    (tmp_path / "model.py").write_text(
        "import torch\n\n\n"
        "@torch.compile\n"
        "def scale(x, factor):\n"
        "    if factor.sum().item() > 0:  # confirm: confirmed\n"
        "        return x * 2\n"
        "    return x\n\n\n"
        "@torch.compile\n"
        "def shift(x):\n"
        "    return x + 1\n\n\n"
        "def make():\n"
        "    x = torch.ones(2, 3)\n"
        "    return [(scale, (x, torch.ones(1))), (scale, [x], {'factor': -torch.ones(1)})]\n"
    )
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--confirm", "--no-cache", "--format", "json", "model.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    report = json.loads(process.stdout)
    assert process.returncode == 1, process.stderr
    labels = sorted(targets_by_label(report))
    assert labels == ["model.py:shift", "model:make [#0 scale]", "model:make [#1 scale]"]
    (item,) = [f for f in report["findings"] if f["line"] == 6]
    assert item["status"] == "confirmed" and "torch.where(factor.sum() > 0" in item["fix"]
    shift = targets_by_label(report)["model.py:shift"]
    assert shift["outcome"] == "ok" and shift["breaks"] == 0 and shift["one_graph"] is True
