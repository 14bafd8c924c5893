"""Helpers for tests that start processes and check they have ended."""

from __future__ import annotations

import os
from pathlib import Path


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
