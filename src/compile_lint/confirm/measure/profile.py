"""`--coverage` in the worker: profile steady-state steps, then rank the graph breaks by the time
their gaps cost (the trace analysis itself is in `trace.py`).

Which break caused a gap, following resume frames: after a break Dynamo's code runs the broken
line eagerly, then calls a resume frame named `torch_dynamo_resume_in_<fn>_at_<line>`; a gap that
enters such a frame belongs to the break logged at that line of that function. Otherwise (a gap
that enters no resume frame) it belongs to the break logged while compiling the region `F/C` it lies
in after that frame's own graph (a frame's graph ends at its break). The compile id of each logged
break is read from Dynamo's compile context as it logs; each ranked break carries the compile
seconds of the frames it was logged in and of the resume frames it created.
"""

from __future__ import annotations

import logging
import re
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
RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")


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


class Attribution:
    """Gap -> the break that made it: by the resume frame the gap enters, else by the frame it is in.

    `logged`: every break record with the `compile_id` of the frame being compiled when it was logged;
    `frames`: the compiled frames (compile id, code name, compile seconds) from the compilation metrics."""

    def __init__(self, logged: list[dict[str, Any]], frames: list[dict[str, Any]]) -> None:
        self.logged = logged
        self.frames = {frame["compile_id"]: frame for frame in frames}
        self.by_id = {brk["compile_id"]: brk for brk in logged if brk.get("compile_id")}

    def of(self, gap: Gap) -> dict[str, Any] | None:
        frame = self.frames.get(gap.resumes or "")
        resumed = RESUME.match(frame["code"] or "") if frame else None
        if resumed:
            brk = self.at(resumed.group(1), int(resumed.group(2)))
            if brk is not None:
                return brk
        return self.by_id.get(gap.compile_id or "")

    def at(self, function: str, line: int) -> dict[str, Any] | None:
        """The first break logged at `line` of `function` (in any frame of its chain: a break in a callee
        resumes its callers at their call lines)."""
        for brk in self.logged:
            for frame in brk["chain"] or [{"function": brk.get("user_function") or "", "line": brk["line"]}]:
                if _base(frame["function"]) == function and frame["line"] == line:
                    return brk
        return None

    def compile_cost(self, breaks: list[dict[str, Any]]) -> dict[str, Any]:
        """The frames these (equal) breaks were logged in and the resume frames they created, with
        their compile seconds."""
        logged_in = sorted({b["compile_id"] for b in breaks if b.get("compile_id") in self.frames})
        places = {(_base(f["function"]), f["line"]) for b in breaks for f in b["chain"]}
        resumes = sorted(
            cid
            for cid, frame in self.frames.items()
            if (m := RESUME.match(frame["code"] or "")) and (m.group(1), int(m.group(2))) in places
        )
        return {
            "frames": [{"compile_id": cid, "seconds": self.frames[cid]["seconds"]} for cid in logged_in],
            "resume_frames": [
                {"compile_id": cid, "code": self.frames[cid]["code"], "seconds": self.frames[cid]["seconds"]}
                for cid in resumes
            ],
            "compile_s": sum(self.frames[cid]["seconds"] for cid in {*logged_in, *resumes}),
        }


def _base(function: str) -> str:
    """A resume frame's function is named after the function it resumes."""
    resumed = RESUME.match(function)
    return resumed.group(1) if resumed else function


def coverage(call: Callable[[], object], trace_path: Path, attribution: Attribution) -> dict[str, Any]:
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
        "gaps": [_gap(g, typical, attribution) for g in sorted(typical.gaps, key=lambda g: -g.duration)][:GAPS_SHOWN],
        "breaks": rank_breaks(profiled, attribution),
        "timeline": _timeline(typical, attribution),
        "trace": trace_path.name,
    }


def rank_breaks(profiled: list[Step], attribution: Attribution) -> list[dict[str, Any]]:
    """Each break's gap time per step, most expensive first, with the compile seconds of its frames.
    A break is its place and GB code: a line that breaks in a loop resumes in a new frame (new
    compile id) each time, one break repeated. Gaps with no break (region glue) are left out."""
    cost: dict[tuple[Any, ...], float] = {}
    count: dict[tuple[Any, ...], int] = {}
    ops: dict[tuple[Any, ...], dict[str, float]] = {}
    runtime: dict[tuple[Any, ...], float] = {}
    record: dict[tuple[Any, ...], dict[str, Any]] = {}
    for step in profiled:
        for gap in step.gaps:
            brk = attribution.of(gap)
            if brk is None:
                continue
            key = _key(brk)
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
            "compile": attribution.compile_cost([b for b in attribution.logged if _key(b) == key]),
        }
        for key in sorted(cost, key=lambda key: -cost[key])
    ]


def _key(brk: dict[str, Any]) -> tuple[Any, ...]:
    return (brk.get("user_file") or brk["file"], brk.get("user_line") or brk["line"], brk["gb_type"])


def _gap(gap: Gap, step: Step, attribution: Attribution) -> dict[str, Any]:
    return {
        "start_ms": (gap.start - step.start) * MS,
        "ms": gap.duration * MS,
        "compile_id": gap.compile_id,
        "break": attribution.of(gap),
        "ops": [[name, us * MS] for name, us in gap.ops],
        "runtime_ms": gap.runtime * MS,
    }


def _timeline(step: Step, attribution: Attribution) -> dict[str, Any]:
    """One step for the HTML timeline, in milliseconds from its start."""
    return {
        "step_ms": step.duration * MS,
        "graphs": [[(s - step.start) * MS, (e - step.start) * MS] for s, e in step.pieces],
        "regions": [[cid, (s - step.start) * MS, (e - step.start) * MS] for cid, s, e in step.regions],
        "gaps": [_gap(g, step, attribution) for g in step.gaps],
    }
