"""What a rule is: its code, summary, predicted GB codes, fix and docs, beside its visitor."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Final, Literal

import libcst as cst

from compile_lint.finding import Severity
from compile_lint.versions import KNOWN, TorchVersion

if TYPE_CHECKING:
    from compile_lint.analysis.walker import RuleContext

Family = Literal[
    "data-dependent",
    "print-log-io",
    "skipped-call",
    "dynamic-shape",
    "recompile",
    "correctness",
    "unsupported-construct",
    "configuration",
    "parse",
    "dynamic",
]
FAMILY_OF_DIGIT: dict[str, Family] = {
    "0": "parse",
    "1": "data-dependent",
    "2": "print-log-io",
    "3": "skipped-call",
    "4": "dynamic-shape",
    "5": "recompile",
    "6": "correctness",
    "7": "unsupported-construct",  # a Python statement Dynamo has no handler for (class, await, raise)
    "8": "dynamic",  # seen only by `--confirm`: no static rule predicted it
    "9": "configuration",
}
# The Dynamo config flags that make some breaks disappear (see `Rule.silenced_by`).
CAPTURE_SCALAR: Final = "capture_scalar_outputs"
CAPTURE_DYNAMIC: Final = "capture_dynamic_output_shape_ops"
CaptureFlag = Literal["capture_scalar_outputs", "capture_dynamic_output_shape_ops"]


@dataclass(frozen=True)
class Example:
    """A source snippet for the docs and the tests: `flags` are the capture flags it assumes, and
    `versions` the torch versions it holds for."""

    code: str
    flags: tuple[CaptureFlag, ...] = ()
    versions: tuple[TorchVersion, ...] = KNOWN


class Rule:
    """Base of every rule. Subclasses set the class attributes and define `visit_<Node>` methods.

    A visitor method gets the node and a `RuleContext`; it calls `ctx.report(self, node)`.
    Rules with `scope = "region"` report only inside compiled regions (the engine filters them
    after it has resolved which functions are reached); `scope = "module"` rules report anywhere.
    """

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, e.g. "tensor-item"
    summary: ClassVar[str]  # one line: what it flags
    gb_codes: ClassVar[tuple[str, ...]]  # official codes of the break it predicts (empty: no break)
    # Where the codes differ between torch versions: the codes per version (`gb_codes` is their union).
    gb_codes_by_version: ClassVar[Mapping[TorchVersion, tuple[str, ...]]] = {}
    fix: ClassVar[str]  # one line: how to fix it
    severity: ClassVar[Severity] = "warning"
    scope: ClassVar[Literal["region", "module"]] = "region"
    frame_skip: ClassVar[bool] = False  # Dynamo gives up on the whole frame, not just the line
    silenced_by: ClassVar[CaptureFlag | None] = None  # config flag under which it does not break
    # Module-scope rules: text a file must contain for the rule to find anything (the walk is skipped otherwise).
    triggers: ClassVar[tuple[str, ...]] = ()
    # Docs, as ruff documents rules: what it does, why it breaks the graph, example, fix.
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    fixed_example: ClassVar[str]
    # Fixit-style self-tests: each invalid example must trigger this rule, no valid one may.
    invalid: ClassVar[tuple[Example, ...]]
    valid: ClassVar[tuple[Example, ...]]

    @property
    def family(self) -> Family:
        return FAMILY_OF_DIGIT[self.code[3]]

    def codes_for(self, version: TorchVersion) -> tuple[str, ...]:
        """The GB codes the rule predicts when the project runs torch `version`."""
        return self.gb_codes_by_version.get(version, self.gb_codes)

    def visitors(self) -> Iterator[tuple[type[cst.CSTNode], Callable[[cst.CSTNode, RuleContext], None]]]:
        """The (node type, method) pairs this rule wants to see, from its `visit_<Node>` methods."""
        for attr in dir(self):
            if attr.startswith("visit_"):
                node_type = getattr(cst, attr.removeprefix("visit_"))
                yield node_type, getattr(self, attr)
