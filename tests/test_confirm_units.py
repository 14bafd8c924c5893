"""The parts of `--confirm` that need no worker: matching, target planning, automatic inputs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from compile_lint.confirm.plan import UsageError, explicit_specs, import_location
from compile_lint.confirm.report.match import Observed, match
from compile_lint.finding import Finding
from compile_lint.rules import all_rules, rule_by_code

SOURCE = """import torch

@torch.compile
def step(x):
    y = x * 2
    if y.sum().item() > 0:
        return y
    print(y)
    return -y
"""


def finding(path: Path, line: int, code: str, function: str = "step") -> Finding:
    rule = rule_by_code(code)
    assert rule is not None
    gb_codes = list(rule.gb_codes)
    return Finding(str(path), line, 5, line, 20, code, "message", gb_codes, fix="generic fix", function=function)


def brk(
    path: Path,
    line: int,
    gb_code: str = "GB0124",
    function: str = "step",
    frame_skip: bool = False,
    callers: tuple[tuple[Path, int, str], ...] = (),
) -> dict[str, Any]:
    """A break record as the worker sends it; `callers` are the user frames outside it, innermost first."""
    frames = [(path, line, function), *callers]
    return {
        "user_file": os.path.realpath(path),
        "user_line": line,
        "user_function": function,
        "gb_code": gb_code,
        "gb_type": "some break",
        "explanation": "why Dynamo gave up",
        "hints": ["This graph break is fundamental", "do this instead"],
        "frame_skip": frame_skip,
        "duplicate": False,
        "chain": [{"file": os.path.realpath(f), "line": n, "function": name} for f, n, name in frames],
        "inside": None,
    }


@pytest.fixture
def step_file(tmp_path: Path) -> Path:
    path = tmp_path / "step.py"
    path.write_text(SOURCE)
    return path


def statuses(found: list[Finding]) -> dict[tuple[int, str], str]:
    return {(f.line, f.code): f.status for f in found}


def test_break_at_the_line_confirms_and_keeps_the_static_fix(step_file: Path) -> None:
    observed = Observed(executed={os.path.realpath(step_file): {5, 6, 7}}, breaks=[(brk(step_file, 6), "run")])
    (confirmed,) = match(
        [finding(step_file, 6, "TCL101")], observed, {os.path.realpath(step_file): str(step_file)}
    ).findings
    assert confirmed.status == "confirmed"
    assert confirmed.details["observed_gb_code"] == "GB0124" and confirmed.details["target"] == "run"
    assert confirmed.fix == "generic fix"  # the rule wrote it for this site (tests/test_fix_texts.py)


def test_executed_and_traced_lines_tell_not_reproduced_not_traced_and_not_run(step_file: Path) -> None:
    real = os.path.realpath(step_file)
    skip = brk(step_file, 5, "GB0088", frame_skip=True)
    observed = Observed(executed={real: {5, 6, 8}}, traced={real: {5, 6}}, breaks=[(skip, "run")])
    found = match(
        [finding(step_file, 6, "TCL101"), finding(step_file, 8, "TCL201"), finding(step_file, 9, "TCL201")],
        observed,
        {real: str(step_file)},
    ).findings
    assert statuses(found) == {
        (5, "TCL801"): "dynamic-only",
        (6, "TCL101"): "not-reproduced",  # Dynamo traced it and did not break
        (8, "TCL201"): "not-traced",  # it ran, eagerly: the frame had been skipped
        (9, "TCL201"): "not-run",
    }
    cause = found[2].details["not_traced_because"]
    assert (cause["line"], cause["observed_gb_code"], cause["frame_skip"]) == (5, "GB0088", True)
    assert found[1].fix == "generic fix"


def test_a_break_in_an_unlinted_file_is_reported_there_and_confirms_the_call(
    step_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # paths are shown relative to the working folder
    library = tmp_path / "library.py"
    library.write_text("def helper(t):\n    print(t)\n")
    linted = {os.path.realpath(step_file): str(step_file)}
    inside = brk(library, 2, "GB0059", "helper", callers=((step_file, 8, "step"),))
    (dynamic,) = match([], Observed(breaks=[(inside, "run")]), linted).findings
    assert (dynamic.path, dynamic.line, dynamic.status) == (os.path.relpath(library), 2, "dynamic-only")
    assert dynamic.details["chain"] == [
        f"{os.path.relpath(library)}:2 in helper",
        f"{os.path.relpath(step_file)}:8 in step",
    ]
    (confirmed,) = match([finding(step_file, 8, "TCL201")], Observed(breaks=[(inside, "run")]), linted).findings
    assert confirmed.status == "confirmed"  # the static pass could not see the helper: its call is the site


def test_a_break_in_a_linted_callee_stays_there(step_file: Path, tmp_path: Path) -> None:
    callee = tmp_path / "callee.py"
    callee.write_text("def helper(t):\n    print(t)\n")
    linted = {os.path.realpath(step_file): str(step_file), os.path.realpath(callee): str(callee)}
    inside = brk(callee, 2, "GB0059", "helper", callers=((step_file, 8, "step"),))
    observed = Observed(executed={os.path.realpath(step_file): {8}}, traced={os.path.realpath(step_file): {8}})
    observed.breaks.append((inside, "run"))
    found = match([finding(step_file, 8, "TCL201")], observed, linted).findings
    assert statuses(found) == {(2, "TCL801"): "dynamic-only", (8, "TCL201"): "not-reproduced"}
    assert found[0].path == str(callee)


def test_unpredicted_breaks_become_one_dynamic_only_finding_each(step_file: Path) -> None:
    real = os.path.realpath(step_file)
    observed = Observed(breaks=[(brk(step_file, 8, "GB0059"), "a"), (brk(step_file, 8, "GB0059"), "b")])
    (dynamic,) = match([], observed, {real: str(step_file)}).findings
    assert (dynamic.code, dynamic.status, dynamic.line, dynamic.gb_codes) == ("TCL801", "dynamic-only", 8, ["GB0059"])
    assert dynamic.fix == "do this instead"  # Dynamo's hint, not the "fundamental" boilerplate
    assert dynamic.col == 5 and dynamic.end_col == len("    print(y)") + 1
    assert dynamic.details["explanation"] == "why Dynamo gave up"


def test_frame_skip_may_be_blamed_two_lines_later_in_the_same_function(step_file: Path) -> None:
    rule = next(r for r in all_rules() if r.frame_skip and r.gb_codes)
    linted = {os.path.realpath(step_file): str(step_file)}
    later = Observed(breaks=[(brk(step_file, 7, rule.gb_codes[0], frame_skip=True), "run")])
    assert match([finding(step_file, 5, rule.code)], later, linted).findings[0].status == "confirmed"
    elsewhere = Observed(breaks=[(brk(step_file, 7, rule.gb_codes[0], "other", frame_skip=True), "run")])
    assert [f.status for f in match([finding(step_file, 5, rule.code)], elsewhere, linted).findings] == [
        "not-run",
        "dynamic-only",
    ]


def test_a_summary_says_all_clear_only_when_every_target_ran() -> None:
    from compile_lint.reporters.text import summary_line

    assert summary_line([], 3).plain == "All clear: no findings in 3 files."
    assert (
        summary_line([], 3, unchecked=1).plain == "No findings in 3 files; 1 target could not be checked (see below)."
    )


def variation(**changes: Any) -> dict[str, Any]:
    base = {
        "trigger": "nothing (the same inputs again)",
        "calls": 2,
        "recompiled_calls": 2,
        "reasons": ["0/0: self.calls == 1"],
        "functions": ["/nowhere:1:other"],
        "limit_hit": "",
        "suggestion": "keep it in a tensor",
        "hint": "",
        "free_dims": [],
        "every_call": True,
    }
    return {**base, **changes}


def test_recompiles_on_every_call_are_reported_once_dynamic_sizes_are_not(step_file: Path) -> None:
    real = os.path.realpath(step_file)
    every = variation(functions=[f"{real}:3:step"])
    once = variation(trigger="n (1 -> 2 -> 3)", recompiled_calls=1, every_call=False, functions=[f"{real}:3:step"])
    observed = Observed(recompiles=[(every, "run"), (once, "run")])
    (reported,) = match([], observed, {real: str(step_file)}).findings
    assert (reported.code, reported.status, reported.line) == ("TCL802", "dynamic-only", 3)
    assert "self.calls == 1" in reported.message and reported.fix == "keep it in a tensor"


def test_rules_that_predict_no_break_keep_their_static_status(step_file: Path) -> None:
    quiet = next((r for r in all_rules() if not r.gb_codes and r.family not in ("recompile", "dynamic", "parse")), None)
    if quiet is None:
        pytest.skip("no rule without a predicted break outside the recompile family")
    observed = Observed(executed={os.path.realpath(step_file): {5}})
    (kept,) = match(
        [finding(step_file, 5, quiet.code)], observed, {os.path.realpath(step_file): str(step_file)}
    ).findings
    assert kept.status == "static"


def test_explicit_targets_are_checked_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="must look like"):
        explicit_specs(["no_colon"], tmp_path)
    with pytest.raises(UsageError, match="no such file"):
        explicit_specs(["missing.py:make"], tmp_path)
    (spec,) = explicit_specs(["pkg.models:make"], tmp_path)
    assert (spec.module, spec.attr, spec.root) == ("pkg.models", "make", str(tmp_path.resolve()))


def test_import_location_climbs_out_of_packages(tmp_path: Path) -> None:
    package = tmp_path / "pkg" / "sub"
    package.mkdir(parents=True)
    for folder in (tmp_path / "pkg", package):
        (folder / "__init__.py").write_text("")
    (package / "model.py").write_text("")
    assert import_location(str(package / "model.py")) == (str(tmp_path.resolve()), "pkg.sub.model")
    assert import_location(str(package / "__init__.py")) == (str(tmp_path.resolve()), "pkg.sub")


torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from compile_lint.confirm.run.inputs import NoInputs, first_layer_input, function_target, module_target  # noqa: E402


@pytest.mark.parametrize(
    ("layer", "dims", "high"),
    [
        (nn.Linear(5, 3), (4, 5), 0),
        (nn.Conv2d(3, 6, 3), (4, 3, 16, 16), 0),
        (nn.Conv1d(2, 6, 3), (4, 2, 16), 0),
        (nn.Embedding(50, 8), (4, 8), 50),
        (nn.LayerNorm(7), (4, 7), 0),
        (nn.ReLU(), (4, 8), 0),
    ],
)
def test_first_layer_decides_the_input(layer: nn.Module, dims: tuple[int, ...], high: int) -> None:
    recipe = first_layer_input(nn.Sequential(layer, nn.ReLU()), [4, 8])
    assert (recipe.dims, recipe.high) == (dims, high)
    tensor = recipe.make()
    assert tuple(tensor.shape) == dims
    assert (tensor.dtype == torch.long) == bool(high)
    nn.Sequential(layer)(tensor)  # the layer accepts it


class Widths(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, width)


class FakeModule:
    Widths = Widths

    @staticmethod
    def masked(x: torch.Tensor, mask: torch.Tensor | None, *, scale: float = 1.0) -> torch.Tensor:
        return x

    @staticmethod
    def counted(x: torch.Tensor, n: int) -> torch.Tensor:
        return x


def test_optional_parameters_get_none_and_defaults_stay() -> None:
    made = function_target(FakeModule, "masked", [2, 3])
    assert made.target.args[1] is None and made.args == ["torch.randn(2, 3)", "None"]
    assert made.target.kwargs == {} and tuple(made.target.args[0].shape) == (2, 3)


def test_no_inputs_says_how_to_give_them() -> None:
    with pytest.raises(NoInputs, match=r"annotated `int`.*--target module:make"):
        function_target(FakeModule, "counted", [2, 3])
    with pytest.raises(NoInputs, match=r"`Widths\(\)` failed .*give it inputs"):
        module_target(FakeModule, "Widths", [2, 3])


def scaled(x: torch.Tensor, factor: float = 2.0) -> torch.Tensor:
    return x * factor


class Doubler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def test_guard_rejections_say_whether_a_call_would_recompile_without_compiling() -> None:
    from compile_lint.confirm.run.probe import guard_rejections

    torch._dynamo.reset()
    x = torch.randn(3, 4)
    assert guard_rejections(scaled, (x,), {}) is None  # nothing cached yet: unknown
    torch.compile(scaled, backend="eager")(x)
    assert guard_rejections(scaled, (x,), {}) == []
    (reason,) = guard_rejections(scaled, (x.double(),), {}) or [None]
    assert reason is not None and "dtype mismatch" in reason
    model = Doubler()
    torch.compile(model, backend="eager")(x)
    assert guard_rejections(model, (x,), {}) == []
    assert "dtype mismatch" in (guard_rejections(model, (x.double(),), {}) or [""])[0]
    torch._dynamo.reset()


def test_break_records_name_the_innermost_user_frame_and_the_library_it_broke_in(tmp_path: Path) -> None:
    import logging

    from compile_lint.confirm.run import worker
    from compile_lint.confirm.run.capture import Break, Frame

    user = tmp_path / "model.py"
    user.write_text("import logging\ndef step(x):\n    logging.info('x')\n    return x\n")
    logging_file = logging.__file__
    frames = [Frame(worker.__file__, 10, "run_target"), Frame(str(user), 3, "step"), Frame(logging_file, 2100, "info")]
    record = worker.break_record(Break(logging_file, 2100, "GB4841", "some type", False, frames=frames))
    assert (record["user_file"], record["user_line"], record["user_function"]) == (str(user.resolve()), 3, "step")
    assert record["chain"] == [
        {"file": str(user.resolve()), "line": 3, "function": "step"}
    ]  # compile-lint's frame left out
    assert record["inside"] == {"library": "the standard library", "file": logging_file, "line": 2100}
    assert not record["replayed_logging"]
    replayed = [Frame(str(user), 2, "step"), Frame(logging_file, 1500, "info")]  # from the `def` line
    assert worker.break_record(Break(logging_file, 1500, "GB0291", "t", False, frames=replayed))["replayed_logging"]


def test_errors_are_described_even_when_their_message_raises() -> None:
    from compile_lint.confirm.run.worker import describe_error

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    assert describe_error(SystemExit(3), set()) == "called sys.exit(3)"
    assert describe_error(SystemExit(), set()) == "called sys.exit()"
    assert describe_error(Unprintable(), set()) == "Unprintable (its message cannot be shown: str() raised)"


def test_a_state_snapshot_restores_what_a_target_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random
    import sys

    from compile_lint.confirm.run.state import State

    snapshot = State.now()
    expected = (random.random(), torch.rand(1).item())
    snapshot.restore()
    monkeypatch.chdir(tmp_path)
    sys.path.insert(0, "/nonexistent")
    os.environ["COMPILE_LINT_TEST_LEAK"] = "1"
    torch.set_default_dtype(torch.float64)
    torch.set_grad_enabled(False)
    torch.set_default_device("meta")
    torch._dynamo.config.capture_scalar_outputs = True
    random.random(), torch.rand(1)
    snapshot.restore()
    assert os.getcwd() == snapshot.cwd and "/nonexistent" not in sys.path
    assert "COMPILE_LINT_TEST_LEAK" not in os.environ
    assert torch.get_default_dtype() == torch.float32 and torch.is_grad_enabled()
    assert torch.empty(1).device.type == "cpu" and not torch._dynamo.config.capture_scalar_outputs
    assert (random.random(), torch.rand(1).item()) == expected


def test_a_file_that_cannot_be_parsed_is_reported_even_when_select_hides_tcl000(tmp_path: Path) -> None:
    from compile_lint.config import Config
    from compile_lint.confirm.session import _static_findings
    from compile_lint.engine import build_project

    (tmp_path / "broken.py").write_text("def f(:\n")
    project = build_project([str(tmp_path)], Config(root=tmp_path, select=["TCL1"]))
    assert [f.code for f in _static_findings(project, Config(root=tmp_path, select=["TCL1"]))] == ["TCL000"]
    assert _static_findings(project, Config(root=tmp_path, select=["TCL1"], ignore=["TCL000"])) == []
