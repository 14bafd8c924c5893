"""Coverage from a profiler trace (compile_lint.confirm.measure.trace), on hand-made events shaped like
the ones torch 2.13 and 2.14 record for a module with one `.item()` break."""

from __future__ import annotations

import json
from pathlib import Path

from compile_lint.confirm.measure.trace import Event, complement, load_events, steps, union

STEP = "compile-lint step 0"


def event(name: str, start: float, end: float, tid: str = "1") -> Event:
    return Event(name, start, end, tid)


def one_break_step() -> list[Event]:
    """Region 0/0 runs graph A, breaks at `.item()`, resumes in region 1/0 (nested) with graph B."""
    return [
        event(STEP, 0, 100),
        event("TorchDynamo Cache Lookup", 2, 5),
        event("Torch-Compiled Region: 0/0", 5, 95),
        event("Pregraph bytecode", 6, 8),
        event("CompiledFunction", 10, 40),
        event("## Call CompiledFxGraph abc ##", 11, 39),
        event("aten::addmm", 12, 30),
        event("aten::item", 42, 50),
        event("aten::_local_scalar_dense", 43, 49),
        event("TorchDynamo Cache Lookup", 51, 55),
        event("Torch-Compiled Region: 1/0", 56, 90),
        event("CompiledFunction", 60, 85),
        event("## Call CompiledFxGraph def ##", 61, 84),
    ]


def test_union_and_complement() -> None:
    assert union([(5, 10), (0, 3), (2, 4), (10, 12)]) == [(0, 4), (5, 12)]
    assert complement([(2, 4), (6, 8)], 0, 10) == [(0, 2), (4, 6), (8, 10)]
    assert complement([(0, 10)], 0, 10) == []


def test_shares_add_up_and_nested_regions_are_not_summed() -> None:
    (step,) = steps(one_break_step())
    assert step.duration == 100
    assert step.in_graphs == 30 + 25  # CompiledFunction spans, united with the graphs inside them
    assert step.in_regions_eager == 90 - 55  # region 0/0 (5..95) holds 1/0: counted once
    assert step.outside == 10
    assert step.in_graphs + step.in_regions_eager + step.outside == step.duration
    assert (step.graphs, step.region_entries) == (2, 2)


def test_the_gap_after_a_frames_graph_is_its_break_and_entry_glue_is_not() -> None:
    (step,) = steps(one_break_step())
    by_start = {gap.start: gap for gap in step.gaps}
    assert by_start[5].compile_id is None  # region entry before graph A: no break
    after_a = by_start[40]
    assert (after_a.end, after_a.compile_id) == (60, "0/0")
    # top level only: _local_scalar_dense runs inside item; re-entering the resume frame looks up its
    # guards, which is Dynamo's runtime, not an eager op
    assert after_a.ops == [("aten::item", 8)] and after_a.runtime == 4


def test_a_frame_that_breaks_before_any_graph_owns_its_whole_gap() -> None:
    events = [
        event(STEP, 0, 50),
        event("Torch-Compiled Region: 0/0", 1, 49),
        event("aten::manual_seed", 2, 10),
        event("Torch-Compiled Region: 1/0", 12, 48),
        event("## Call CompiledFxGraph x ##", 14, 40),
    ]
    (step,) = steps(events)
    first = min(step.gaps, key=lambda g: g.start)
    assert (first.start, first.end, first.compile_id) == (1, 14, "0/0")


def test_training_step_backward_graph_counts_as_compiled() -> None:
    events = [
        event(STEP, 0, 100),
        event("Torch-Compiled Region: 0/0", 0, 40),
        event("CompiledFunction", 5, 35),
        event("autograd::engine::evaluate_function: CompiledFunctionBackward", 50, 90, tid="2"),
        event("CompiledFunctionBackward", 52, 88, tid="2"),
    ]
    (step,) = steps(events)
    assert step.in_graphs == 30 + 36
    assert step.outside == 100 - 40 - 36


def test_load_events_reads_a_chrome_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    rows = [
        {"ph": "X", "name": STEP, "ts": 10.0, "dur": 5.0, "tid": 7},
        {"ph": "i", "name": "instant", "ts": 11.0},
        {"ph": "X", "name": "aten::add", "ts": 11.0, "dur": 1.0, "tid": 7},
    ]
    trace.write_text(json.dumps({"traceEvents": rows}))
    assert load_events(trace) == [Event(STEP, 10.0, 15.0, "7"), Event("aten::add", 11.0, 12.0, "7")]
