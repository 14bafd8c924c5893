"""What one file contributes to the project: its functions, classes, calls and candidate findings.

A summary depends only on the file's text, so it is what the cache stores and what worker
processes send back; everything that needs the other files happens later, in `project.py`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from compile_lint.finding import Finding

Span = tuple[int, int, int, int]  # line, col (1-based), end_line, end_col


@dataclass
class CallEdge:
    """A direct call `helper(x)` (kind "name"), `self._helper(x)` ("self") or `mod.f(x)` ("attr")."""

    kind: Literal["name", "self", "attr"]
    target: str  # the local name, the method name, or the resolved dotted name
    text: str  # the callee as written, for messages: "self._route"
    span: Span


@dataclass
class FunctionSummary:
    qualname: str  # "Gate.forward", "step"; nested functions belong to their enclosing function
    name: str
    class_name: str | None
    compiled: bool = False  # decorated with @torch.compile
    disabled: Literal["recursive", "non-recursive"] | None = None  # @torch.compiler.disable
    calls: list[CallEdge] = field(default_factory=list)


@dataclass
class ClassSummary:
    name: str
    bases: list[str]  # resolved dotted names
    methods: list[str]


@dataclass
class Candidate:
    """A finding before the project decides whether its function is compiled at all."""

    finding: Finding
    owner: str | None  # qualname of the function it is in; None at module level
    # "always", or a capture flag: "unless:<flag>" (silent when set), "only:<flag>" (only when set)
    condition: str = "always"


@dataclass
class FileSummary:
    path: str
    module: str  # dotted module name guessed from the path
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    compile_targets: list[str] = field(default_factory=list)  # names passed to torch.compile(...)
    flags: list[str] = field(default_factory=list)  # capture flags the source sets to True
    candidates: list[Candidate] = field(default_factory=list)
    error: Finding | None = None  # the file could not be read or parsed

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileSummary:
        functions = {
            key: FunctionSummary(
                **{**value, "calls": [CallEdge(**{**c, "span": tuple(c["span"])}) for c in value["calls"]]}
            )
            for key, value in data["functions"].items()
        }
        return cls(
            path=data["path"],
            module=data["module"],
            functions=functions,
            classes={key: ClassSummary(**value) for key, value in data["classes"].items()},
            compile_targets=data["compile_targets"],
            flags=data["flags"],
            candidates=[
                Candidate(Finding(**c["finding"]), c["owner"], c["condition"]) for c in data["candidates"]
            ],
            error=Finding(**data["error"]) if data["error"] else None,
        )
