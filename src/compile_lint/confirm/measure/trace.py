"""Coverage from a profiler trace: how much of a step ran inside compiled graphs (no torch import).

Reads the Chrome trace `torch.profiler` exports. Facts it relies on (torch 2.13 and 2.14):
`Torch-Compiled Region: F/C` wraps every compiled frame and nests at each graph break (so regions
are united, never summed); `## Call CompiledFxGraph <key> ##` is time inside an inductor graph;
`CompiledFunction` / `CompiledFunctionBackward` wrap graphs that carry gradients (the backward runs
outside any region). A gap is time between compiled pieces; the eager ops in it show the break.
Dynamo's own runtime in a gap (`TorchDynamo Cache Lookup` is guard evaluation; `Pregraph bytecode`,
`AOTDispatcher Runtime Wrapper Prologue` enter a graph) is counted apart: it is the price of the
extra frame, not the eager work that broke it, and on a small model it outweighs that work.
A gap also records the first region entered inside it: after a break, Dynamo's code calls the resume
frame, whose name says which break made it (profile.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STEP = "compile-lint step"  # the record_function label around each profiled step
REGION = re.compile(r"^Torch-Compiled Region: (\d+/\d+)$")
GRAPH_PREFIXES = ("## Call CompiledFxGraph", "CompiledFunction")  # CompiledFunctionBackward too
NOT_OPS = ("PyTorch Profiler", STEP)
RUNTIME = ("TorchDynamo", "AOTDispatcher", "Pregraph bytecode")
TOP_OPS = 3  # eager ops named per gap

Interval = tuple[float, float]


@dataclass(frozen=True)
class Event:
    name: str
    start: float  # microseconds, the trace's clock
    end: float
    tid: str

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Gap:
    """Time in a step outside every compiled graph, between its first and last region."""

    start: float
    end: float
    compile_id: str | None  # the region whose graph break caused it; None for region glue
    ops: list[tuple[str, float]] = field(default_factory=list)  # top-level eager ops: (name, us)
    runtime: float = 0.0  # us in Dynamo's runtime events (guards, graph entry)
    resumes: str | None = None  # the first region entered inside the gap: a resume frame names its break

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Step:
    start: float
    end: float
    in_graphs: float  # us inside compiled graphs
    in_regions_eager: float  # us inside a region but outside its graphs
    outside: float  # us outside any region
    graphs: int
    region_entries: int
    gaps: list[Gap]
    pieces: list[Interval]  # compiled graph intervals, for the timeline
    regions: list[tuple[str, float, float]]  # (compile id, start, end)

    @property
    def duration(self) -> float:
        return self.end - self.start


def load_events(path: Path) -> list[Event]:
    document = json.loads(path.read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = document.get("traceEvents", [])
    return [
        Event(str(row["name"]), float(row["ts"]), float(row["ts"]) + float(row.get("dur", 0)), str(row.get("tid")))
        for row in rows
        if row.get("ph") == "X" and "ts" in row
    ]


def union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def clip(intervals: list[Interval], low: float, high: float) -> list[Interval]:
    return [(max(s, low), min(e, high)) for s, e in intervals if e > low and s < high]


def total(intervals: list[Interval]) -> float:
    return sum(e - s for s, e in union(intervals))


def complement(covered: list[Interval], low: float, high: float) -> list[Interval]:
    """The parts of [low, high] that `covered` (already united) leaves free."""
    free, cursor = [], low
    for start, end in covered:
        if start > cursor:
            free.append((cursor, start))
        cursor = max(cursor, end)
    if cursor < high:
        free.append((cursor, high))
    return free


def is_graph(name: str) -> bool:
    return name.startswith(GRAPH_PREFIXES)


def steps(events: list[Event]) -> list[Step]:
    windows = sorted((e for e in events if e.name.startswith(STEP)), key=lambda e: e.start)
    return [analyse_step(events, window) for window in windows]


def analyse_step(events: list[Event], window: Event) -> Step:
    inside = [e for e in events if e.start >= window.start and e.end <= window.end and e is not window]
    graphs = [e for e in inside if is_graph(e.name)]
    regions = [(m.group(1), e) for e in inside if (m := REGION.match(e.name))]
    pieces = union([(e.start, e.end) for e in graphs])
    region_spans = union([(e.start, e.end) for _, e in regions])
    compiled_or_region = union(pieces + region_spans)
    low, high = window.start, window.end
    gaps = []
    if region_spans:
        first, last = region_spans[0][0], max(end for _, end in compiled_or_region)
        by_entry = sorted(regions, key=lambda item: item[1].start)
        for start, end in complement(pieces, first, last):
            ops, runtime = _top_level_work(inside, start, end)
            entered = next((cid for cid, e in by_entry if start <= e.start < end), None)
            gaps.append(Gap(start, end, _cause(start, end, regions, graphs), ops, runtime, resumes=entered))
    in_graphs = total(pieces)
    return Step(
        start=low,
        end=high,
        in_graphs=in_graphs,
        in_regions_eager=total(compiled_or_region) - in_graphs,
        outside=(high - low) - total(compiled_or_region),
        graphs=sum(1 for e in graphs if e.name.startswith(GRAPH_PREFIXES[0])) or len(pieces),
        region_entries=len(regions),
        gaps=gaps,
        pieces=pieces,
        regions=[(cid, e.start, e.end) for cid, e in regions],
    )


def _cause(start: float, end: float, regions: list[tuple[str, Event]], graphs: list[Event]) -> str | None:
    """The innermost region holding the gap, if the gap comes after that region's own graph:
    a frame compiles one graph up to its break, so time after it in the same frame is the break's."""
    holding = [(cid, e) for cid, e in regions if e.start <= start and end <= e.end]
    if not holding:
        return None
    cid, region = min(holding, key=lambda item: item[1].duration)
    nested = [e for other, e in regions if other != cid and region.start <= e.start and e.end <= region.end]
    own = [g for g in graphs if region.start <= g.start and g.end <= region.end and not _within_any(g, nested)]
    if any(g.start >= end for g in own):
        return None  # before the region's own graph: entry glue, not a break
    return cid


def _within_any(event: Event, spans: list[Event]) -> bool:
    return any(s.start <= event.start and event.end <= s.end for s in spans)


def _top_level_work(events: list[Event], start: float, end: float) -> tuple[list[tuple[str, float]], float]:
    """The longest top-level eager ops in [start, end] (per thread), and the time in Dynamo's runtime
    events there; regions and graphs are neither."""
    candidates = sorted(
        (e for e in events if e.start >= start and e.end <= end and not e.name.startswith(NOT_OPS)),
        key=lambda e: (e.tid, e.start, -e.end),
    )
    top: list[Event] = []
    for event in candidates:
        if top and top[-1].tid == event.tid and event.end <= top[-1].end:
            continue  # nested inside the previous top-level event
        top.append(event)
    durations: dict[str, float] = {}
    runtime = 0.0
    for event in top:
        if event.name.startswith(RUNTIME):
            runtime += event.duration
        elif not REGION.match(event.name) and not is_graph(event.name):
            durations[event.name] = durations.get(event.name, 0.0) + event.duration
    return sorted(durations.items(), key=lambda item: -item[1])[:TOP_OPS], runtime
