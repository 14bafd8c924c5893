"""One worker process at a time, reused across targets and replaced when a target kills it.

A target that hangs is killed at its timeout; one that segfaults or is killed for memory ends
the worker. Either way the target is reported as such and the next target gets a fresh worker.
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
from typing import IO, Any

# Importing torch in a fresh process takes ~3 s, up to ~15 s on a loaded machine.
STARTUP_TIMEOUT = 300.0
SIGNALS = {
    signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
    signal.SIGKILL: "was killed (SIGKILL; out of memory?)",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGBUS: "crashed with a bus error (SIGBUS)",
}


class WorkerFailure(Exception):
    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome  # "timed-out" or "crashed"


class Worker:
    """`python -m compile_lint.confirm.worker`, talking JSON lines over its stdin and stdout."""

    def __init__(self, backend: str) -> None:
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONBREAKPOINT": "0", "COMPILE_LINT_BACKEND": backend}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "compile_lint.confirm.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            start_new_session=True,  # so a timeout also ends the compile workers it may spawn
        )
        self.buffer = b""
        self.environment: dict[str, Any] = {}  # filled by the worker's first line, once torch is imported

    def ready(self) -> dict[str, Any]:
        """Wait for torch to import; the worker's first line describes its environment."""
        if not self.environment:
            self.environment = self._read(STARTUP_TIMEOUT)["ready"]
        return self.environment

    def run(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        self.ready()
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            raise WorkerFailure("crashed", self._death()) from None
        return self._read(timeout)

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close()
                raise WorkerFailure("timed-out", f"timed out after {timeout:g} s (raise it with --timeout)")
            if not select.select([fd], [], [], remaining)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerFailure("crashed", self._death())
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _death(self) -> str:
        code = self.process.wait()
        if code < 0:
            message = SIGNALS.get(signal.Signals(-code), f"was killed by {signal.Signals(-code).name}")
        else:
            message = f"the worker exited with code {code}: {self._stderr_tail()}"
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


class WorkerPool:
    """Runs requests in one worker, starting a new one after a timeout or crash."""

    def __init__(self, backend: str, timeout: float) -> None:
        self.backend = backend
        self.timeout = timeout
        self.worker: Worker | None = None
        self.environment: dict[str, Any] = {}

    def start(self) -> None:
        """Start a worker now, so its torch import overlaps with whatever the caller does next."""
        if self.worker is None:
            self.worker = Worker(self.backend)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self.start()
            assert self.worker is not None
            reply = self.worker.run(request, self.timeout)
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
            except WorkerFailure:
                self.worker = None
        return self.environment

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None
