"""-j's processes: results in order, errors raised in the parent, and no process left once the caller stops."""

from __future__ import annotations

import os
import signal
import time

import pytest

from compile_lint.workers import WorkerDied, map_in_processes
from processes import alive


def square(number: int) -> int:
    return number * number


def pid_of(_: int) -> int:
    return os.getpid()


def fails_on_seven(number: int) -> int:
    if number == 7:
        raise ValueError("seven")
    return number


def dies_on_seven(number: int) -> int:
    if number == 7:
        os.kill(os.getpid(), signal.SIGKILL)
    return number


@pytest.mark.parametrize(("processes", "chunk"), [(1, 1), (2, 4), (3, 5), (8, 100)])
def test_results_come_in_the_order_of_the_items(processes: int, chunk: int) -> None:
    assert list(map_in_processes(square, range(23), processes, chunk)) == [n * n for n in range(23)]


def test_the_work_is_spread_over_the_processes() -> None:
    pids = set(map_in_processes(pid_of, range(40), 2, 1))
    assert len(pids) == 2
    assert os.getpid() not in pids


def test_an_exception_in_a_process_is_raised_in_the_parent_and_every_process_ends() -> None:
    pids = list(map_in_processes(pid_of, range(4), 2, 1))
    with pytest.raises(ValueError, match="seven"):
        list(map_in_processes(fails_on_seven, range(20), 2, 2))
    assert not any(alive(pid) for pid in pids)


def test_a_process_killed_from_outside_is_reported_not_waited_for() -> None:
    with pytest.raises(WorkerDied, match=r"\(killed by SIGKILL; out of memory\?\); -j 1 lints in one process"):
        list(map_in_processes(dies_on_seven, range(20), 2, 1))


def test_a_caller_that_stops_early_leaves_no_process_running() -> None:
    results = map_in_processes(pid_of, range(200), 2, 1)
    first = next(results)
    results.close()
    assert not alive(first)


def test_a_process_killed_after_its_last_answer_costs_nothing() -> None:
    results = map_in_processes(pid_of, range(4), 2, 1)
    pids = [next(results) for _ in range(4)]
    for pid in set(pids):
        os.kill(pid, signal.SIGKILL)
    while any(alive(pid) for pid in pids):  # until they are zombies: their pipes closed
        time.sleep(0.01)
    assert list(results) == []  # the end: told to return, whether they can still read it or not
    assert not any(alive(pid) for pid in pids)
