"""Automatic fixes (libcst codemods). `fixability` tells the docs which codes have one."""

from __future__ import annotations

from typing import Literal

Fixability = Literal["safe", "unsafe", "no"]

# code -> the strongest kind of automatic fix available for it; filled in as codemods land.
FIXABLE: dict[str, Fixability] = {}


def fixability(code: str) -> Fixability:
    return FIXABLE.get(code, "no")
