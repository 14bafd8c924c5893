"""The edges of a run, each through the real command: a run stopped by a signal, a bad or failing
output, --fix on read-only files and hard links, terminal control bytes in what is printed, --deep on
tensors that share a dimension, and a malformed message to the language server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

PYTHON = [sys.executable, "-m", "compile_lint", "--no-cache"]
ENV = {**os.environ, "COLUMNS": "200"}

HANGING = """
import os
import time

import torch


def hang(x):
    with open(os.path.join(os.environ["EDGES_MARKS"], str(os.getpid())), "w"):
        pass  # this worker's pid: the target is running
    time.sleep(600)
    return x + 1


def make():
    return hang, (torch.ones(2),)


def make_too():
    return hang, (torch.ones(3),)
"""


def alive(pid: int) -> bool:
    """Still in the process table as a running process (a zombie no longer runs anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except FileNotFoundError:
        return False
    return state not in (b"Z", b"X")


def wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def hanging(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose targets hang, and the folder where each running target writes its worker's pid."""
    (tmp_path / "hang.py").write_text(HANGING)
    marks = tmp_path / "marks"
    marks.mkdir()
    yield tmp_path, marks
    for mark in marks.iterdir():  # never leave a worker behind, whatever the test saw
        if alive(int(mark.name)):
            os.kill(int(mark.name), signal.SIGKILL)


def start_confirm(project: Path, marks: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*PYTHON, "--confirm", "--target", "hang:make", *extra, "hang.py"],
        cwd=project,
        env={**ENV, "EDGES_MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def running_workers(marks: Path, count: int) -> list[int]:
    assert wait_for(lambda: len(list(marks.iterdir())) >= count, 240), "the targets never started"
    return [int(mark.name) for mark in marks.iterdir()]


@pytest.mark.dynamo
@pytest.mark.parametrize(("sent", "code", "name"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT")])
def test_a_signal_stops_the_run_and_its_worker(
    hanging: tuple[Path, Path], sent: signal.Signals, code: int, name: str
) -> None:
    project, marks = hanging
    run = start_confirm(project, marks)
    (worker,) = running_workers(marks, 1)
    run.send_signal(sent)
    out, err = run.communicate(timeout=60)
    assert run.returncode == code
    assert err.strip().splitlines() == [f"compile-lint: interrupted ({name}); nothing more was run"]
    assert out == ""
    assert not alive(worker)


@pytest.mark.dynamo
def test_workers_die_with_a_parent_killed_by_sigkill(hanging: tuple[Path, Path]) -> None:
    project, marks = hanging
    run = start_confirm(project, marks)
    (worker,) = running_workers(marks, 1)
    run.kill()
    run.communicate(timeout=60)
    assert run.returncode == -signal.SIGKILL
    assert wait_for(lambda: not alive(worker), 10), "the worker outlived its killed parent"


@pytest.mark.dynamo
def test_sigterm_stops_every_worker_of_a_parallel_run(hanging: tuple[Path, Path]) -> None:
    project, marks = hanging
    run = start_confirm(project, marks, "--target", "hang:make_too", "-j", "2")
    workers = running_workers(marks, 2)
    started = time.monotonic()
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert time.monotonic() - started < 30  # not the targets' 600 s, nor the 900 s timeout
    assert run.returncode == 143
    assert err.strip().splitlines() == ["compile-lint: interrupted (SIGTERM); nothing more was run"]
    assert out == ""
    assert not any(alive(worker) for worker in workers)


def test_sigterm_stops_a_parallel_static_run(tmp_path: Path) -> None:
    """-j N static lint: the processes analysing files stop with the run (no traceback from any of them)."""
    for index in range(40):
        body = "".join(f"    x = x + {i}\n" for i in range(400))
        (tmp_path / f"m{index}.py").write_text(f"import torch\n\n@torch.compile\ndef f(x):\n{body}    return x\n")
    run = subprocess.Popen(
        [*PYTHON, "-j", "2", "."], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert wait_for(lambda: children(run.pid), 60), "no -j process started"
    pool = children(run.pid)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 143
    assert err.strip().splitlines() == ["compile-lint: interrupted (SIGTERM); nothing more was run"]
    assert out == ""
    assert wait_for(lambda: not any(alive(pid) for pid in pool), 10)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found
