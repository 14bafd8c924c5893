"""Keeps one file from taking the run down: libcst's parser segfaults on deep nesting, needs time that
grows with the cube of the nesting depth and about 1.5 GB per MB of source for data tables.

Every file first goes through Python's own parser (it rejects what would crash libcst, in a millisecond),
then its cost is estimated from its size and nesting depth. A file estimated well within the limits is
parsed here; a bigger one is first linted alone in a forked child under the time and memory limits, and
reported instead if that child runs over them or crashes.

The rates are measured with libcst 1.9 on a loaded 2-core box (worst case over real files and synthetic
nesting): a 500 KB table of numbers (torch/sparse/_triton_ops_meta.py) took 11.6 s and 720 MB; a chain of
1,000 subscripts `x[0][0]...` took 33 s, 1,000 nested unary minuses 2 s (the cheapest deep construct);
1,500 nested lambdas took 440 MB.
"""

from __future__ import annotations

import ast
import contextlib
import os
import resource
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

WORST_SECONDS_PER_MB = 23.0
WORST_MEMORY_PER_SOURCE_BYTE = 1500  # bytes of memory per byte of source
DEPTH_SCALE = 1000  # the nesting depth the rates below are measured at
WORST_SECONDS_AT_DEPTH_SCALE, DEPTH_TIME_POWER = 33.0, 2.7
CHEAPEST_SECONDS_AT_DEPTH_SCALE, CHEAPEST_DEPTH_TIME_POWER = 2.0, 2.0
WORST_MB_AT_DEPTH_SCALE = 200.0  # grows with the square of the depth
MB = 1 << 20


@dataclass(frozen=True)
class Limits:
    seconds: float = 30.0  # `max-file-seconds`
    megabytes: int = 1024  # `max-file-mb`


@dataclass(frozen=True)
class Cost:
    """A worst-case estimate of parsing and analysing one file."""

    seconds: float
    megabytes: float
    depth: int


class TooComplex(SyntaxError):
    """Python's parser gave up on the nesting: libcst must not see the file (it may crash)."""


NESTING_MESSAGES = ("too many nested", "too many levels", "too complex")


def python_tree(text: str) -> ast.Module | SyntaxError:
    """Python's own parse, or its syntax error (it rejects nesting that would crash libcst)."""
    try:
        return ast.parse(text)
    except SyntaxError as error:
        return TooComplex(error.msg, error.args[1]) if error.msg.startswith(NESTING_MESSAGES) else error
    except ValueError as error:  # null bytes
        return SyntaxError(str(error))
    except (RecursionError, MemoryError) as error:
        return TooComplex(str(error) or type(error).__name__)


def estimate(text: str, tree: ast.Module, limit_depth: int) -> Cost:
    depth = nesting_depth(tree, limit_depth)
    size = len(text)
    seconds = (
        size / MB * WORST_SECONDS_PER_MB + WORST_SECONDS_AT_DEPTH_SCALE * (depth / DEPTH_SCALE) ** DEPTH_TIME_POWER
    )
    megabytes = size * WORST_MEMORY_PER_SOURCE_BYTE / MB + WORST_MB_AT_DEPTH_SCALE * (depth / DEPTH_SCALE) ** 2
    return Cost(seconds, megabytes, depth)


def cheapest_seconds(depth: int) -> float:
    """What libcst needs at least for nesting this deep, whatever the construct."""
    return float(CHEAPEST_SECONDS_AT_DEPTH_SCALE * (depth / DEPTH_SCALE) ** CHEAPEST_DEPTH_TIME_POWER)


def depth_for(seconds: float) -> int:
    """The nesting depth whose worst-case parse takes `seconds`."""
    return int(DEPTH_SCALE * (seconds / WORST_SECONDS_AT_DEPTH_SCALE) ** (1 / DEPTH_TIME_POWER))


def nesting_depth(tree: ast.AST, limit: int) -> int:
    """The deepest level of `tree`, exact where it can exceed `limit`. A node on one line has no more
    levels below it than characters (plus two), so such nodes are skipped once they cannot reach `limit`:
    this keeps the walk at about 1% of a libcst parse."""
    depth, level = 0, [tree]
    while level:
        depth += 1
        children: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    children.extend(item for item in value if isinstance(item, ast.AST))
                elif isinstance(value, ast.AST):
                    children.append(value)
        room = limit - depth - 2
        level = [child for child in children if not _too_short(child, room)]
    return depth


def _too_short(node: ast.AST, room: int) -> bool:
    if not isinstance(node, (ast.stmt, ast.expr)) or node.end_lineno != node.lineno:
        return False
    return node.end_col_offset is not None and node.end_col_offset - node.col_offset < room


def within_half(cost: Cost, limits: Limits) -> bool:
    return cost.seconds <= limits.seconds / 2 and cost.megabytes <= limits.megabytes / 2


def can_fork() -> bool:
    return hasattr(os, "fork")


def run_bounded(work: Callable[[], object], limits: Limits) -> str | None:
    """Run `work` in a forked child under the limits: None if it finished, else what went wrong."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(reader)
        os._exit(_child(work, writer, limits))
    os.close(writer)
    try:
        return _wait(pid, reader, limits)
    except BaseException:  # Ctrl-C or SIGTERM while waiting: the child must not outlive the run
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(reader)


def _child(work: Callable[[], object], writer: int, limits: Limits) -> int:
    try:
        _limit_memory(limits.megabytes)
        work()
        os.write(writer, b"ok")
    except MemoryError:
        os.write(writer, b"memory")
    except BaseException:  # the parent reports it; a child must never unwind into its caller's code
        os.write(writer, b"error")
    return 0


def _limit_memory(megabytes: int) -> None:
    """Address space: what the child inherited plus the budget (Linux; elsewhere time is the only bound)."""
    try:
        with open("/proc/self/statm") as statm:
            inherited = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return
    ceiling = inherited + megabytes * MB
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _wait(pid: int, reader: int, limits: Limits) -> str | None:
    deadline = time.monotonic() + limits.seconds
    ready: list[int] = []
    while not ready and (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([reader], [], [], left)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return f"took over {limits.seconds:g} s to parse and analyse (max-file-seconds)"
    said = os.read(reader, 16)
    _, status = os.waitpid(pid, 0)
    if said == b"ok":
        return None
    if said == b"memory" or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGABRT):
        return f"needed over {limits.megabytes} MB to parse and analyse (max-file-mb)"
    if os.WIFSIGNALED(status):
        return f"libcst's parser crashed on it ({signal.Signals(os.WTERMSIG(status)).name})"
    return "parsing and analysing it alone failed"
