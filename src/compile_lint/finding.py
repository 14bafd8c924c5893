"""The one record every stage passes along: a finding at a source span."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
# static: predicted only; the rest are set by `--confirm`.
Status = Literal["static", "confirmed", "not-reproduced", "not-run", "dynamic-only"]

GB_PAGE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{code}.html"


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
    # When the line runs: "default", or what it needs (see analysis/values.PATH_CONDITIONS).
    path_condition: str = "default"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def sort_key(self) -> tuple[bool, str, int, int, str]:
        """Findings on the default path first, then by place."""
        return (self.path_condition != "default", self.path, self.line, self.col, self.code)


def gb_page(code: str) -> str:
    return GB_PAGE.format(code=code.lower())
