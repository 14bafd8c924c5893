"""What a break costs beyond its own line: the frames Dynamo then ran eagerly (a break in a loop gives
up the whole frame) and the resume functions it made, in its own frame and in every caller (without
nested graph breaks, a break in a callee ends each caller's graph at the call too).

Read from `torch._dynamo.utils.get_compilation_metrics()`: one entry per compiled frame with its code
name (a resume function is `torch_dynamo_resume_in_<fn>_at_<line>`) and, for a frame Dynamo gave up
on, the failure whose first line is the break's type. With `--nested-graph-breaks`, the target is
compiled again under `torch._dynamo.config.nested_graph_breaks` (torch versions that have it) and the
same counts are kept beside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo
from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

from compile_lint.confirm.run.capture import Break, Frame, capture_dynamo_log

RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")


def nested_mode_available() -> bool:
    return hasattr(torch._dynamo.config, "nested_graph_breaks")


def take_frames() -> list[dict[str, Any]]:
    """The frames compiled since the last take: compile id, code, file, first line, and why Dynamo
    gave up on it (None when it compiled)."""
    frames = [
        {
            "compile_id": str(entry.compile_id),
            "code": entry.co_name or "",  # None for a backward graph compiled on its own
            "file": os.path.realpath(entry.co_filename) if entry.co_filename else "",
            "line": entry.co_firstlineno,
            "failed": (entry.fail_reason or "").strip().splitlines()[0] if entry.fail_type else None,
        }
        for entry in get_compilation_metrics()
    ]
    clear_compilation_metrics()
    return frames


def _base(function: str) -> str:
    resumed = RESUME.match(function)
    return resumed.group(1) if resumed else function


def cascade(brk: Break, frames: list[dict[str, Any]]) -> dict[str, Any]:
    """The break's frames run eagerly and its resume functions, its own frame's apart from its callers'."""
    chain = brk.frames or [Frame(brk.file, brk.line, "")]
    places = [(_base(f.function), f.line) for f in chain]  # outermost first
    own = places[-1] if places else None
    resume_own, resume_callers = [], []
    for frame in frames:
        resumed = RESUME.match(frame["code"])
        if resumed is None:
            continue
        place = (resumed.group(1), int(resumed.group(2)))
        if place == own:
            resume_own.append(frame["code"])
        elif place in places:
            resume_callers.append(frame["code"])
    eager = [
        f"{frame['code']} ({frame['file']}:{frame['line']})"
        for frame in frames
        if frame["failed"] == brk.gb_type and any(_runs(frame, f) for f in chain)
    ]
    return {"eager_frames": eager, "resume_own": resume_own, "resume_in_callers": resume_callers}


def _runs(frame: dict[str, Any], at: Frame) -> bool:
    """Is `at` (a line of the break's chain) in the compiled frame's function?"""
    same = os.path.realpath(at.file) == frame["file"] and _base(at.function) == _base(frame["code"])
    return same and frame["line"] <= at.line


def nested(call: Callable[[], object], graphs: Callable[[], int]) -> tuple[list[Break], list[dict[str, Any]], int]:
    """The target compiled afresh under nested_graph_breaks: its breaks, frames and graphs."""
    torch._dynamo.reset()
    take_frames()
    before = graphs()
    with torch._dynamo.config.patch(nested_graph_breaks=True), capture_dynamo_log() as log:
        call()
    return log.breaks, take_frames(), graphs() - before


def side_by_side(
    records: list[dict[str, Any]],
    breaks: list[Break],
    key: Callable[[Break], tuple[Any, ...]],
    found: tuple[list[Break], list[dict[str, Any]], int],
) -> dict[str, int]:
    """Each record's cascade under nested graph breaks (`None`: the break is not logged in that mode),
    and the whole call's totals in that mode."""
    nested_breaks, frames, graphs = found
    by_key = {key(b): b for b in reversed(nested_breaks)}
    for record, brk in zip(records, breaks, strict=True):
        other = by_key.get(key(brk))
        record["cascade"]["nested"] = cascade(other, frames) if other is not None else None
    return totals(frames, graphs)


def totals(frames: list[dict[str, Any]], graphs: int) -> dict[str, int]:
    """A whole call's cascade: frames compiled, run eagerly, resume functions, graphs."""
    return {
        "frames": len(frames),
        "eager_frames": sum(1 for f in frames if f["failed"]),
        "resume_functions": sum(1 for f in frames if RESUME.match(f["code"])),
        "graphs": graphs,
    }
