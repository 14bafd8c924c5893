"""Coverage follows resume frames: each gap goes to the break that made it, and each break is ranked
with its own cost and the compile seconds of its frames. fixtures/timing/_two_breaks.py breaks at a
data-dependent `if` (line 20, GB0170) and at `.item()` two lines later (line 22, GB0124)."""

from __future__ import annotations

from typing import Any

import pytest

from compile_lint.confirm.measure.trace import Event, steps

pytest.importorskip("torch")

from compile_lint.confirm.measure.profile import Attribution, rank_breaks

STEP = "compile-lint step 0"
FILE = "/src/head.py"


def brk(line: int, gb: str, compile_id: str | None, function: str) -> dict[str, Any]:
    return {
        "file": FILE, "line": line, "gb_code": gb, "gb_type": gb, "user_file": FILE, "user_line": line,
        "user_function": function, "chain": [{"file": FILE, "line": line, "function": function}],
        "compile_id": compile_id,
    }  # fmt: skip


def two_break_step() -> list[Event]:
    """forward's graph, the `if` run eagerly, resume frame 1/0's graph, `.item()` eagerly, resume 2/0's graph."""
    return [
        Event(STEP, 0, 100, "1"),
        Event("Torch-Compiled Region: 0/0", 1, 99, "1"),
        Event("## Call CompiledFxGraph a ##", 2, 20, "1"),
        Event("aten::is_nonzero", 21, 25, "1"),
        Event("Torch-Compiled Region: 1/0", 27, 98, "1"),
        Event("## Call CompiledFxGraph b ##", 30, 50, "1"),
        Event("aten::item", 52, 70, "1"),
        Event("Torch-Compiled Region: 2/0", 72, 97, "1"),
        Event("## Call CompiledFxGraph c ##", 74, 96, "1"),
    ]


FRAMES = [
    {"compile_id": "0/0", "code": "forward", "seconds": 10.0},
    {"compile_id": "1/0", "code": "torch_dynamo_resume_in_forward_at_20", "seconds": 3.0},
    {"compile_id": "2/0", "code": "torch_dynamo_resume_in_forward_at_22", "seconds": 2.0},
]


def test_each_break_gets_the_gap_that_enters_its_resume_frame_and_its_compile_seconds() -> None:
    # the `.item()` break's compile id was not seen (as when it is logged outside the compile context):
    # its resume frame still names it
    logged = [brk(20, "GB0170", "0/0", "forward"), brk(22, "GB0124", None, "torch_dynamo_resume_in_forward_at_20")]
    ranked = rank_breaks(steps(two_break_step()), Attribution(logged, FRAMES))
    by_line = {item["break"]["user_line"]: item for item in ranked}
    assert set(by_line) == {20, 22}
    # line 20: the gap into its resume frame, and the return through forward's frame after the last graph
    assert by_line[20]["ops"] == [["aten::is_nonzero", pytest.approx(0.004)]] and by_line[20][
        "ms_per_step"
    ] == pytest.approx(0.013)
    assert by_line[22]["ops"] == [["aten::item", pytest.approx(0.018)]] and by_line[22]["ms_per_step"] == pytest.approx(
        0.024
    )
    assert by_line[20]["compile"] == {
        "frames": [{"compile_id": "0/0", "seconds": 10.0}],
        "resume_frames": [{"compile_id": "1/0", "code": "torch_dynamo_resume_in_forward_at_20", "seconds": 3.0}],
        "compile_s": 13.0,
    }
    assert by_line[22]["compile"]["resume_frames"][0]["compile_id"] == "2/0"


@pytest.mark.dynamo
@pytest.mark.slow
def test_the_two_break_forward_ranks_both_lines_with_their_own_gaps_under_inductor() -> None:
    from test_timing_e2e import run_cli, target

    path = "fixtures/timing/_two_breaks.py"
    _, report, stderr = run_cli("coverage-two-breaks", path, "--target", f"{path}:make", "--coverage")
    coverage = target(report, f"{path}:make [Head]")["coverage"]
    assert "error" not in coverage, stderr
    ranked = {item["break"]["user_line"]: item for item in coverage["breaks"]}
    assert set(ranked) == {20, 22}, coverage["breaks"]
    assert ranked[20]["break"]["gb_code"] == "GB0170" and ranked[22]["break"]["gb_code"] == "GB0124"
    assert ranked[20]["ops"][0][0] == "aten::is_nonzero"  # the `if` on a tensor
    assert ranked[22]["ops"][0][0] == "aten::item"  # the resume frame's gap is line 22's, not line 20's
    for line, resumed in ((20, "torch_dynamo_resume_in_forward_at_20"), (22, "torch_dynamo_resume_in_forward_at_22")):
        compile_ = ranked[line]["compile"]
        assert [f["code"] for f in compile_["resume_frames"]] == [resumed]
        assert compile_["compile_s"] > 0 and compile_["frames"]
