"""`--coverage` in the worker: profile steady-state steps, then rank the graph breaks by the time
their gaps cost (the trace analysis itself is in `trace.py`).

Which break caused a gap: the gap lies in region `F/C` (a compiled frame) after that frame's own
graph, and Dynamo logged exactly one break while compiling `F/C` (a frame's graph ends at its
break). The compile id of each logged break is read from Dynamo's compile context as it logs.
"""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch._guards import CompileContext

from compile_lint.confirm.measure.trace import STEP, Gap, Step, load_events, steps
from compile_lint.confirm.run.capture import DynamoLog

PROFILED_STEPS = 10
GAPS_SHOWN = 5
MS = 1e-3  # trace microseconds to milliseconds


def synchronize() -> None:
    """Wait for the device in use (a no-op on CPU): every timing point must see finished work."""
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()


@contextmanager
def compile_ids(log: DynamoLog) -> Iterator[dict[int, str]]:
    """Index in `log.breaks` -> compile id ("0/0") of the frame being compiled when it was logged.

    A filter runs just before the handler's emit: the last record seen at a given index is the one
    that appended the break there."""
    seen: dict[int, str] = {}

    def note(record: logging.LogRecord) -> bool:
        compile_id = CompileContext.current_compile_id()
        if compile_id is not None:
            seen[len(log.breaks)] = str(compile_id)
        return True

    log.addFilter(note)
    try:
        yield seen
    finally:
        log.removeFilter(note)


def profile_steps(call: Callable[[], object], trace_path: Path) -> list[Step]:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        for index in range(PROFILED_STEPS):
            with torch.profiler.record_function(f"{STEP} {index}"):
                call()
                synchronize()
    profiler.export_chrome_trace(str(trace_path))
    return steps(load_events(trace_path))


def coverage(call: Callable[[], object], trace_path: Path, breaks_by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Shares of step time, the largest gaps and the breaks ranked by what their gaps cost per step."""
    profiled = profile_steps(call, trace_path)
    if not profiled:
        return {"error": "the profiler recorded no step (no events)"}
    typical = sorted(profiled, key=lambda s: s.duration)[len(profiled) // 2]

    def share(part: Callable[[Step], float]) -> float:
        return statistics.mean(part(s) / s.duration for s in profiled if s.duration > 0)

    return {
        "steps": len(profiled),
        "step_ms": typical.duration * MS,  # the median step: one preempted step must not skew it
        "shares": {
            "compiled": share(lambda s: s.in_graphs),
            "in_regions_eager": share(lambda s: s.in_regions_eager),
            "outside_regions": share(lambda s: s.outside),
        },
        "graphs_per_step": typical.graphs,
        "region_entries_per_step": typical.region_entries,
        "gaps": [_gap(g, typical, breaks_by_id) for g in sorted(typical.gaps, key=lambda g: -g.duration)][:GAPS_SHOWN],
        "breaks": rank_breaks(profiled, breaks_by_id),
        "timeline": _timeline(typical, breaks_by_id),
        "trace": trace_path.name,
    }


def rank_breaks(profiled: list[Step], breaks_by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each break's gap time per step, most expensive first. A break is its place and GB code: a
    line that breaks in a loop resumes in a new frame (new compile id) each time, one break repeated.
    Gaps with no break (region glue) are left out."""
    cost: dict[tuple[Any, ...], float] = {}
    count: dict[tuple[Any, ...], int] = {}
    ops: dict[tuple[Any, ...], dict[str, float]] = {}
    runtime: dict[tuple[Any, ...], float] = {}
    record: dict[tuple[Any, ...], dict[str, Any]] = {}
    for step in profiled:
        for gap in step.gaps:
            brk = breaks_by_id.get(gap.compile_id or "")
            if brk is None:
                continue
            key = (brk.get("user_file") or brk["file"], brk.get("user_line") or brk["line"], brk["gb_type"])
            record.setdefault(key, brk)
            cost[key] = cost.get(key, 0.0) + gap.duration
            count[key] = count.get(key, 0) + 1
            runtime[key] = runtime.get(key, 0.0) + gap.runtime
            for name, us in gap.ops:
                ops.setdefault(key, {})[name] = ops.get(key, {}).get(name, 0.0) + us
    steps_seen = len(profiled)
    all_steps_us = sum(s.duration for s in profiled)
    return [
        {
            "break": record[key],
            "ms_per_step": cost[key] / steps_seen * MS,
            "share_of_step": cost[key] / all_steps_us if all_steps_us else 0.0,
            "gaps_per_step": count[key] / steps_seen,
            "ops": [[name, us / steps_seen * MS] for name, us in sorted(ops.get(key, {}).items(), key=lambda i: -i[1])],
            "runtime_ms_per_step": runtime[key] / steps_seen * MS,
        }
        for key in sorted(cost, key=lambda key: -cost[key])
    ]


def _gap(gap: Gap, step: Step, breaks_by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "start_ms": (gap.start - step.start) * MS,
        "ms": gap.duration * MS,
        "compile_id": gap.compile_id,
        "break": breaks_by_id.get(gap.compile_id or ""),
        "ops": [[name, us * MS] for name, us in gap.ops],
        "runtime_ms": gap.runtime * MS,
    }


def _timeline(step: Step, breaks_by_id: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One step for the HTML timeline, in milliseconds from its start."""
    return {
        "step_ms": step.duration * MS,
        "graphs": [[(s - step.start) * MS, (e - step.start) * MS] for s, e in step.pieces],
        "regions": [[cid, (s - step.start) * MS, (e - step.start) * MS] for cid, s, e in step.regions],
        "gaps": [_gap(g, step, breaks_by_id) for g in step.gaps],
    }
