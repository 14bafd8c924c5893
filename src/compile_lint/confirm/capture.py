"""Capture graph breaks (including whole-frame skips) and recompiles from Dynamo's own logs.

`explain()` misses frame skips and `fullgraph=True` does not raise on `.item()` or dynamic-shape
ops, so the `graph_breaks` log artifact is the ground truth (see shared/dynamo-2.13-facts.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
import torch._dynamo

set_logs = torch._logging.set_logs  # type: ignore[attr-defined]  # public, but not re-exported for mypy
BREAK_LOGGERS = ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.convert_frame.__graph_breaks")
RECOMPILE_LOGGER = "torch._dynamo.guards.__recompiles"
LIMIT_LOGGER = "torch._dynamo.convert_frame"
HEAD = re.compile(r"Graph break (?:\(user stack suppressed due to duplicate graph break\) )?in user code at (.*):(\d+)")
FRAME = re.compile(r'^\s*File "(.*)", line (\d+), in (.*)$', re.M)
GB_LINK = re.compile(r"/gb/(gb\d{4})\.html")
SKIP_MARKERS = ("Skipping the function and falling back to eager", "cannot properly resume")


@cache
def registry() -> dict[str, str]:
    """gb_type -> GB code, from torch's own graph_break_registry.json."""
    path = os.path.join(os.path.dirname(torch._dynamo.__file__), "graph_break_registry.json")
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)
    return {entry["Gb_type"]: code for code, versions in entries.items() for entry in versions}


@dataclass
class Frame:
    file: str
    line: int
    function: str


@dataclass
class Break:
    """One graph break as Dynamo logged it."""

    file: str  # innermost frame (may be library code)
    line: int
    gb_code: str | None
    gb_type: str
    frame_skip: bool
    explanation: str = ""
    hints: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)  # user code traceback, outermost first

    def innermost(self, wanted: Callable[[str], bool]) -> Frame | None:
        """The innermost frame whose file passes `wanted` (e.g. is one of the user's files)."""
        frames = self.frames or [Frame(self.file, self.line, "")]
        return next((f for f in reversed(frames) if wanted(f.file)), None)


def parse_break(message: str) -> Break | None:
    head = HEAD.search(message)
    if head is None:
        return None
    lines = [line.strip() for line in message.splitlines()]
    known = registry()
    gb_type = next((line for line in lines if line in known), "")
    link = GB_LINK.search(message)
    code = link.group(1).upper() if link else known.get(gb_type)
    if not gb_type:
        reason = message.partition("Graph Break Reason:")[2].strip().splitlines()
        gb_type = reason[0] if reason else ""
    explanations = (line.removeprefix("Explanation:").strip() for line in lines if line.startswith("Explanation:"))
    explanation = next(explanations, "")
    hints = [line.removeprefix("Hint:").strip() for line in lines if line.startswith("Hint:")]
    traceback = message.partition("User code traceback:")[2]
    frames = [Frame(m.group(1), int(m.group(2)), m.group(3)) for m in FRAME.finditer(traceback)]
    return Break(
        file=head.group(1),
        line=int(head.group(2)),
        gb_code=code,
        gb_type=gb_type,
        frame_skip=any(marker in message for marker in SKIP_MARKERS),
        explanation=explanation,
        hints=hints,
        frames=frames,
    )


class DynamoLog(logging.Handler):
    """Collects graph breaks, recompile reasons and recompile-limit warnings while active."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.breaks: list[Break] = []
        self.recompiles: list[str] = []
        self.limit_hits: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name == RECOMPILE_LOGGER:
            self.recompiles.append(message)
        elif record.name == LIMIT_LOGGER:
            if "recompile_limit" in message:
                self.limit_hits.append(message)
        else:
            parsed = parse_break(message)
            if parsed is not None:
                self.breaks.append(parsed)

    def clear(self) -> None:
        self.breaks.clear()
        self.recompiles.clear()
        self.limit_hits.clear()


@contextlib.contextmanager
def capture_dynamo_log() -> Iterator[DynamoLog]:
    """Turn on the graph_breaks and recompiles artifacts, silence torch's own printing of them."""
    handler = DynamoLog()
    set_logs(graph_breaks=True, recompiles=True)
    loggers = [logging.getLogger(name) for name in (*BREAK_LOGGERS, RECOMPILE_LOGGER, LIMIT_LOGGER)]
    saved = [(lg, lg.handlers[:], lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.handlers = [handler]
        lg.propagate = False
    try:
        yield handler
    finally:
        for lg, handlers, propagate in saved:
            lg.handlers = handlers
            lg.propagate = propagate
        set_logs()


@contextlib.contextmanager
def forced_backend(backend: str) -> Iterator[None]:
    """Make every `torch.compile(...)` (including decorators run at import) use `backend`."""
    original = torch.compile

    def compile_with_backend(*args: Any, **kwargs: Any) -> Any:
        kwargs["backend"] = backend
        return original(*args, **kwargs)

    torch.compile = compile_with_backend
    try:
        yield
    finally:
        torch.compile = original


def is_compiled(fn: object) -> bool:
    """Already wrapped by torch.compile (e.g. decorated)? Then call it as it is."""
    return hasattr(fn, "_torchdynamo_orig_callable") or type(fn).__name__ == "OptimizedModule"
