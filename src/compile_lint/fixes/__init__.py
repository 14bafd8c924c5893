"""Automatic fixes (libcst codemods). `fixability` tells the docs which codes have one."""

from __future__ import annotations

from typing import Literal

Fixability = Literal["safe", "unsafe", "no"]

# code -> the strongest kind of automatic fix its codemods offer (`codemods.CODEMODS`; a test
# keeps the two in step). "safe": `--fix` applies it; "unsafe": only `--unsafe-fixes` does.
FIXABLE: dict[str, Fixability] = {
    "TCL101": "safe",  # `x / x.abs().max().item()` -> `.detach()`; other operands: unsafe
    "TCL102": "unsafe",  # `if bool(t):` / `float(t) > 0` conditions, as TCL103 below
    "TCL103": "unsafe",  # torch.where computes both branches
    "TCL104": "unsafe",  # `not t` -> torch.logical_not(t): a bool tensor instead of a Python bool
    "TCL201": "unsafe",  # the guarded print no longer runs under compile
    "TCL202": "unsafe",  # `breakpoint()` then only stops in eager runs
    "TCL204": "unsafe",  # likewise for logging calls
    "TCL205": "unsafe",  # and for warnings.warn
}


def fixability(code: str) -> Fixability:
    return FIXABLE.get(code, "no")
