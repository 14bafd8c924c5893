"""One worker process at a time, reused across targets and replaced when a target kills it.

A target that hangs is killed at its timeout, one whose worker passes the memory limit is
stopped; one that segfaults or is killed by the system ends the worker. Either way the target
is reported as such and the next target gets a fresh worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any

from compile_lint.confirm import TIMEOUT_ATTRIBUTE

# Importing torch in a fresh process takes ~3 s, up to ~15 s on a loaded machine.
STARTUP_TIMEOUT = 300.0
MEMORY_CHECK_INTERVAL = 0.5  # seconds
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
GB = 1 << 30
SIGNALS = {
    signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
    signal.SIGKILL: "was killed (SIGKILL; out of memory?)",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGBUS: "crashed with a bus error (SIGBUS)",
}


class WorkerFailure(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome  # "timed-out", "memory-limit" or "crashed"


@dataclass(frozen=True)
class Limits:
    timeout: float  # seconds per request, unless the target's factory sets its own
    memory: int  # bytes of resident memory for the worker and the processes it started


def default_memory_limit(workers: int) -> float:
    """GB per worker: 70% of the machine's memory, shared by the workers running at once."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * PAGE
    except (ValueError, OSError, AttributeError):  # not POSIX: no limit worth guessing
        return float("inf")
    return 0.7 * total / GB / max(1, workers)


def group_memory(group: int) -> int:
    """Resident bytes of every process in a process group (Linux /proc; 0 elsewhere)."""
    total = 0
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:  # it ended meanwhile
            continue
        if int(fields[2]) == group:  # fields after the name: state, ppid, pgrp, ..., rss at 21
            total += int(fields[21]) * PAGE
    return total


class Worker:
    """`python -m compile_lint.confirm.run.worker`, talking JSON lines over its stdin and stdout."""

    def __init__(self, backend: str) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONBREAKPOINT": "0", "COMPILE_LINT_BACKEND": backend}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint.confirm.run.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            start_new_session=True,  # so a timeout also ends the compile workers it may spawn
        )
        self.buffer = b""
        self.environment: dict[str, Any] = {}  # filled by the worker's first line, once torch is imported
        self.backend_error = ""

    def ready(self) -> dict[str, Any]:
        """Wait for torch to import; the worker's first line describes its environment."""
        if not self.environment:
            first = self._line(time.monotonic() + STARTUP_TIMEOUT, None)
            if first is None:
                self.close()
                raise WorkerFailure("timed-out", f"the worker did not start in {STARTUP_TIMEOUT:g} s")
            self.environment, self.backend_error = first["ready"], first.get("backend_error", "")
        return self.environment

    def run(self, request: dict[str, Any], limits: Limits) -> dict[str, Any]:
        """The reply to `request`; the worker's notes on the way set the stage and the time limit."""
        self.ready()
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise WorkerFailure("crashed", self._death()) from None
        started = time.monotonic()
        timeout, stage = limits.timeout, "starting"
        while True:
            message = self._line(started + timeout, limits.memory)
            if message is None:
                self.close()
                raise WorkerFailure("timed-out", timed_out(time.monotonic() - started, timeout, stage))
            if "outcome" in message:
                return message
            timeout = float(message.get("timeout", timeout))
            stage = message.get("stage", stage)

    def _line(self, deadline: float, memory: int | None) -> dict[str, Any] | None:
        """The next JSON line, or None at the deadline; checks memory twice a second."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if memory is not None:
                self._check_memory(memory)
            if not select.select([fd], [], [], min(remaining, MEMORY_CHECK_INTERVAL))[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerFailure("crashed", self._death())
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def _check_memory(self, limit: int) -> None:
        used = group_memory(self.process.pid)
        if used > limit:
            self.close()
            raise WorkerFailure(
                "memory-limit",
                f"stopped at {used / GB:.1f} GB of memory, over the limit of {limit / GB:.1f} GB "
                "(raise it with --memory-limit GB or `memory-limit` under [tool.compile-lint.confirm])",
            )

    def _death(self) -> str:
        code = self.process.wait()
        if code < 0:
            message = SIGNALS.get(signal.Signals(-code), f"was killed by {signal.Signals(-code).name}")
        else:
            message = (
                f"ended the worker process with exit code {code} (os._exit or a C library's exit?): "
                f"{self._stderr_tail()}"
            )
        self.close()
        return message

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no message"

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it may have just exited
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()
        self.stderr.close()


def timed_out(elapsed: float, timeout: float, stage: str) -> str:
    return (
        f"timed out after {elapsed:.0f} s while {stage} (limit {timeout:g} s; raise it with --timeout SECONDS, "
        f"`timeout` under [tool.compile-lint.confirm], or `factory.{TIMEOUT_ATTRIBUTE} = SECONDS` on the factory)"
    )


class WorkerPool:
    """Runs requests in one worker, starting a new one after a timeout, crash or memory stop."""

    def __init__(self, backend: str, limits: Limits) -> None:
        self.backend = backend
        self.limits = limits
        self.worker: Worker | None = None
        self.environment: dict[str, Any] = {}
        self.backend_error = ""

    def start(self) -> None:
        """Start a worker now, so its torch import overlaps with whatever the caller does next."""
        if self.worker is None:
            self.worker = Worker(self.backend)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self.start()
            assert self.worker is not None
            reply = self.worker.run(request, self.limits)
            self.environment = self.worker.environment
            return reply
        except WorkerFailure as failure:
            self.worker = None
            return {"outcome": failure.outcome, "error": str(failure)}

    def describe(self) -> dict[str, Any]:
        """Python, torch, CUDA and logging facts from a worker (waiting for one if no target ran)."""
        if not self.environment:
            try:
                self.start()
                assert self.worker is not None
                self.environment = self.worker.ready()
                self.backend_error = self.worker.backend_error
            except WorkerFailure:
                self.worker = None
        return self.environment

    def stop(self) -> None:
        """Kill the worker from another thread: the request running in it ends as "crashed"."""
        worker = self.worker
        if worker is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.process.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
