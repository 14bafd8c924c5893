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
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
import torch._dynamo

set_logs = torch._logging.set_logs  # type: ignore[attr-defined]  # public, but not re-exported for mypy
BREAK_LOGGERS = ("torch._dynamo.symbolic_convert.__graph_breaks", "torch._dynamo.convert_frame.__graph_breaks")
RECOMPILE_LOGGER = "torch._dynamo.guards.__recompiles"
TRACE_LOGGER = "torch._dynamo.symbolic_convert.__trace_source"  # one record per line Dynamo traces
LIMIT_LOGGER = "torch._dynamo.convert_frame"
HEAD = re.compile(r"Graph break (\(user stack suppressed due to duplicate graph break\) )?in user code at (.*):(\d+)")
FRAME = re.compile(r'^\s*File "(.*)", line (\d+), in (.*)$', re.M)
GB_LINK = re.compile(r"/gb/(gb\d{4})\.html")
TRACED = re.compile(r"TRACE starts_line (.*):(\d+) in ")
SKIP_MARKERS = ("Skipping the function and falling back to eager", "cannot properly resume")


TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
OWN_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep  # compile_lint's
STDLIB_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")})


def library_of(path: str) -> str | None:
    """Which library a file belongs to: torch, the standard library or compile-lint; None for user code,
    which is every other file (installed packages included)."""
    if path.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return "the standard library"
    real = os.path.realpath(path)
    if real.startswith(TORCH_DIR):
        return "torch"
    if real.startswith(OWN_DIR):
        return "compile-lint"
    for folder in STDLIB_DIRS:
        if real.startswith(folder) and "-packages" + os.sep not in real[len(folder) :]:
            return "the standard library"
    return None


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
    duplicate: bool = False  # Dynamo logged this break before and left out its traceback

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
        file=head.group(2),
        line=int(head.group(3)),
        gb_code=code,
        gb_type=gb_type,
        frame_skip=any(marker in message for marker in SKIP_MARKERS),
        explanation=explanation,
        hints=hints,
        frames=frames,
        duplicate=head.group(1) is not None,
    )


class DynamoLog(logging.Handler):
    """Collects graph breaks, recompile reasons and recompile-limit warnings while active, and
    the lines of `traced_files` that Dynamo traced (a line that ran eagerly is not among them)."""

    def __init__(self, traced_files: frozenset[str] = frozenset()) -> None:
        super().__init__(logging.DEBUG)
        self.breaks: list[Break] = []
        self.recompiles: list[str] = []
        self.limit_hits: list[str] = []
        self.traced_files = traced_files
        self.traced: dict[str, set[int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == TRACE_LOGGER:
            self._traced_line(record)
            return
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

    def _traced_line(self, record: logging.LogRecord) -> None:
        """Read the translator's file and line without formatting the message (a lazy string
        that looks up the source line: too slow to pay for every traced line of a model)."""
        lazy = record.args[0] if isinstance(record.args, tuple) and record.args else None
        translator = getattr(getattr(lazy, "func", None), "__self__", None)
        if translator is not None:
            where: tuple[str, int] | None = (translator.f_code.co_filename, translator.lineno)
        else:
            found = TRACED.search(record.getMessage())
            where = (found.group(1), int(found.group(2))) if found else None
        if where is not None and where[0] in self.traced_files:
            self.traced.setdefault(where[0], set()).add(where[1])

    def clear(self) -> None:
        self.breaks.clear()
        self.recompiles.clear()
        self.limit_hits.clear()


@contextlib.contextmanager
def capture_dynamo_log(traced_files: frozenset[str] = frozenset()) -> Iterator[DynamoLog]:
    """Turn on the graph_breaks and recompiles artifacts (and trace_source when `traced_files` are
    given), silence torch's own printing of them."""
    handler = DynamoLog(traced_files)
    set_logs(graph_breaks=True, recompiles=True, trace_source=bool(traced_files))
    names = (*BREAK_LOGGERS, RECOMPILE_LOGGER, LIMIT_LOGGER, *([TRACE_LOGGER] if traced_files else []))
    loggers = [logging.getLogger(name) for name in names]
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
def every_break_with_stack() -> Iterator[None]:
    """Make Dynamo log every graph break with its user stack. It leaves the stack out of a break whose gb_type and
    innermost frame it logged before, and that frame may be torch's own: `np.random.SeedSequence(...)` at two lines
    breaks in the same polyfill frame, and `all()` over tensors in the same `all` polyfill, so the second line
    would be lost."""
    checker = torch._dynamo.utils.graph_break_dup_warning_checker
    checker.add = lambda key: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        del checker.add  # the class's own method again


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
