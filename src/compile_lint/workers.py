"""`-j N`: a function mapped over items in N processes that stop with the run.

Not `concurrent.futures.ProcessPoolExecutor`: stopped by Ctrl-C or SIGTERM, its teardown races (CPython 3.11:
map() cancels the pending futures while the pool's manager thread, seeing the killed processes, marks them
failed; the thread dies on InvalidStateError and the interpreter then hangs at exit or prints a traceback).
Here the parent has no thread: it hands a chunk to each idle process, waits for an answer, and on any exit
tells every process it started to return, or kills it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


class WorkerDied(ChildProcessError):
    """A process ended without answering (killed from outside, or a crash in native code)."""


def map_in_processes(
    function: Callable[[Item], Result], items: Sequence[Item], processes: int, chunk: int
) -> Generator[Result, None, None]:
    """`function` of each item, in the order of `items`, computed in up to `processes` processes, `chunk` items
    at a time. However the caller stops (an exception, including Ctrl-C and SIGTERM, or closing the iterator),
    every process has ended when this returns: killed if it was still working."""
    chunks = [items[start : start + chunk] for start in range(0, len(items), chunk)]
    context = multiprocessing.get_context()
    started: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
    finished = False
    try:
        for _ in range(min(processes, len(chunks))):
            mine, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, function), daemon=True)
            started.append((process, mine))
            process.start()
            theirs.close()
        yield from _results(chunks, {connection: process for process, connection in started})
        finished = True
    finally:
        _end(started, finished)


def _results(
    chunks: list[Sequence[Item]], processes: dict[Connection, multiprocessing.process.BaseProcess]
) -> Iterator[Result]:
    """The results of the chunks in order, each chunk sent to the next idle process."""
    idle = list(processes)
    working: dict[Connection, int] = {}
    done: dict[int, list[Result]] = {}
    sent = 0
    for due in range(len(chunks)):
        while due not in done:
            while idle and sent < len(chunks):
                connection = idle.pop()
                try:
                    connection.send(chunks[sent])
                except BrokenPipeError:  # it ended while idle
                    raise WorkerDied(_death(processes[connection])) from None
                working[connection] = sent
                sent += 1
            for ready in wait(list(working)):
                assert isinstance(ready, Connection)
                try:
                    answer = ready.recv()
                except EOFError:
                    raise WorkerDied(_death(processes[ready])) from None
                if isinstance(answer, Exception):
                    raise answer
                done[working.pop(ready)] = answer
                idle.append(ready)
        yield from done.pop(due)


def _death(process: multiprocessing.process.BaseProcess) -> str:
    """What a user reads when a process ended without answering: how it ended, and how to lint without one."""
    process.join(timeout=5)
    code = process.exitcode
    how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"
    hint = "; out of memory?" if code == -signal.SIGKILL else ""
    return f"a -j process ended without answering ({how}{hint}); -j 1 lints in one process"


def _end(started: list[tuple[multiprocessing.process.BaseProcess, Connection]], finished: bool) -> None:
    """An idle process is told to return (its pipe never reads as closed: the processes forked later hold
    copies of the parent's end); one still working, when the caller stopped early, is killed."""
    for process, connection in started:
        if process.pid is None:
            continue
        if finished:
            with contextlib.suppress(BrokenPipeError):  # ended after its last answer: nothing was lost
                connection.send(None)
        else:
            process.kill()
    for process, connection in started:
        if process.pid is not None:
            process.join()
        connection.close()


def _serve(connection: Connection, function: Callable[[Item], Result]) -> None:
    """In a process: answer chunks until the parent sends None."""
    _stop_with_parent()
    while (chunk := connection.recv()) is not None:
        try:
            answer: list[Result] | Exception = [function(item) for item in chunk]
        except Exception as error:  # raised in the parent, as by a call made there
            answer = error
        connection.send(answer)


def _stop_with_parent() -> None:
    """Ctrl-C reaches the whole process group, but only the parent stops the run (and says so, once);
    SIGTERM ends a process as if no handler were set; a process whose parent is gone ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
