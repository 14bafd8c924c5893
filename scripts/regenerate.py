"""The --check / rewrite step the generator scripts share: a generated file is rewritten when stale, or,
with --check (CI), reported stale with the command that regenerates it."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, fresh: str, check: bool, script: str) -> int:
    """0 when `path` already holds `fresh`; else 1 under `check`, or write it and return 0."""
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if fresh == current:
        return 0
    if check:
        print(f"{path}: stale; run python scripts/{script}", file=sys.stderr)
        return 1
    path.write_text(fresh, encoding="utf-8")
    print(f"{path}: updated")
    return 0
