"""Automatic fixes (libcst codemods). `fixability` tells the docs which codes have one."""

from __future__ import annotations

from typing import Literal

Fixability = Literal["safe", "unsafe", "no"]

# code -> the strongest kind of automatic fix its codemods offer (`codemods.CODEMODS`; a test
# keeps the two in step). "safe": `--fix` applies it; "unsafe": only `--unsafe-fixes` does, and only
# where fixes/proofs.py shows it cannot break the model (else the finding keeps its text fix).
FIXABLE: dict[str, Fixability] = {
    "TCL101": "safe",  # `x / x.abs().max().item()` -> `.detach()`; a provably float operand: unsafe
    "TCL102": "unsafe",  # `if bool(t):` / `float(t) > 0` conditions, as TCL103 below
    "TCL103": "unsafe",  # torch.where computes both branches (0-d tensor test, pure same-kind branches)
    "TCL104": "unsafe",  # `not t` -> torch.logical_not(t) where a bool tensor acts as the Python bool did
    "TCL201": "unsafe",  # the guarded print no longer runs under compile (arguments without side effects)
    "TCL202": "unsafe",  # `breakpoint()` then only stops in eager runs
    "TCL204": "unsafe",  # likewise for logging calls
    "TCL205": "unsafe",  # and for warnings.warn
}


def fixability(code: str) -> Fixability:
    return FIXABLE.get(code, "no")
