"""The one record every stage passes along: a finding at a source span."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from compile_lint import registry

Severity = Literal["error", "warning", "info"]
# static: predicted only; the rest are set by `--confirm`.
Status = Literal["static", "confirmed", "not-reproduced", "not-traced", "not-run", "dynamic-only"]


@dataclass
class Finding:
    path: str
    line: int
    col: int  # 1-based, like the line
    end_line: int
    end_col: int
    code: str
    message: str
    gb_codes: list[str] = field(default_factory=list)
    severity: Severity = "warning"
    fix: str = ""
    status: Status = "static"
    function: str | None = None  # qualified name of the enclosing function, if any
    details: dict[str, Any] = field(default_factory=dict)  # extra facts from `--confirm`
    # When the line runs: "default", or what it needs (see analysis/values.COND_LABELS).
    path_condition: str = "default"
    # Notebooks: the 1-based cell (markdown and raw cells count); `line` and `end_line` then count within it.
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def sort_key(self) -> tuple[bool, str, int, int, int, str]:
        """Findings on the default path first, then by place."""
        return (self.path_condition != "default", self.path, self.cell or 0, self.line, self.col, self.code)


def gb_page(code: str) -> str | None:
    """The public page of a GB code, or None: then show `gb_inline(code)` instead."""
    return registry.page(code)


def gb_inline(code: str) -> str:
    """The registry's explanation and hints for a code that has no page (the newest known wording)."""
    entry = registry.describe(code)
    return entry.inline() if entry else "not in the graph-break registry of any known torch version"


def gb_reference(code: str) -> str:
    """`GB0059 (https://...)`, or the code with its explanation and hints where there is no page."""
    page = gb_page(code)
    return f"{code} ({page})" if page else f"{code} (no public page: {gb_inline(code)})"
