"""Which recompile patterns recompile once (automatic dynamic) and which on every new value?

Each pattern is compiled once (backend="eager") and called with 10 distinct values of the thing
that varies; the table counts the recompiles Dynamo logged, whether `recompile_limit` (8) was hit,
and the first failed guard. The recompile rules (TCL501-TCL504) exist only for the patterns that
recompile per value; docs/recompiles.md records this table for both torch versions.

    python bench/recompile_patterns.py            # markdown table on stdout
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo
from torch import nn

from compile_lint.confirm.run.capture import capture_dynamo_log

CALLS = 10
X = torch.randn(12, 8)


@dataclass
class Pattern:
    name: str
    code: str  # the line that matters, as the table shows it
    calls: Callable[[], Iterator[Callable[[], object]]]  # yields one zero-argument call per value


def _fn(
    body: Callable[..., Any], values: list[Any], **compile_kwargs: Any
) -> Callable[[], Iterator[Callable[[], object]]]:
    def calls() -> Iterator[Callable[[], object]]:
        compiled = torch.compile(body, backend="eager", **compile_kwargs)
        for value in values:
            yield lambda v=value: compiled(X, v)

    return calls


def _module(
    make: Callable[[], nn.Module], change: Callable[[nn.Module, int], None]
) -> Callable[[], Iterator[Callable[[], object]]]:
    def calls() -> Iterator[Callable[[], object]]:
        module = make()
        compiled = torch.compile(module, backend="eager")
        for index in range(CALLS):
            change(module, index)
            yield lambda: compiled(X)

    return calls


def _sizes(body: Callable[..., Any], mark: bool, **compile_kwargs: Any) -> Callable[[], Iterator[Callable[[], object]]]:
    def calls() -> Iterator[Callable[[], object]]:
        compiled = torch.compile(body, backend="eager", **compile_kwargs)
        for size in range(2, 2 + CALLS):
            x = torch.randn(size, 8)
            if mark:
                torch._dynamo.mark_dynamic(x, 0)
            yield lambda t=x: compiled(t, 0)

    return calls


def range_loop(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = x * 2
    return x


def slicing(x: torch.Tensor, n: int) -> torch.Tensor:
    return x[:n] * 2


def as_size(x: torch.Tensor, n: int) -> torch.Tensor:
    return x.sum() + torch.zeros(n)


def reshape(x: torch.Tensor, n: int) -> torch.Tensor:
    return x.reshape(-1)[: n * 4].reshape(n, 4)


def branch(x: torch.Tensor, n: int) -> torch.Tensor:
    if n % 2 == 0:
        return x * 2
    return x + 1


def branch_threshold(x: torch.Tensor, n: int) -> torch.Tensor:
    if n > 100:
        return x * 2
    return x + 1


def arithmetic(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + 1


def float_arithmetic(x: torch.Tensor, lr: float) -> torch.Tensor:
    return x * lr


def float_branch(x: torch.Tensor, lr: float) -> torch.Tensor:
    if lr > 100.0:
        return x * 2
    return x * lr


def size_branch(x: torch.Tensor, _: int) -> torch.Tensor:
    if x.shape[0] > 6:
        return x * 2
    return x + 1


def size_loop(x: torch.Tensor, _: int) -> torch.Tensor:
    for _ in range(x.shape[0]):
        x = x * 2
    return x


def size_equality(x: torch.Tensor, _: int) -> torch.Tensor:
    if x.shape[0] == 4:
        return x * 2
    return x + 1


class Steps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.steps = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            x = x * 2
        return x


class Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class FloatScale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


class Mode(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "a"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2 if self.mode == "a" else x + 1


class Dropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.lin(x))


def _set(attribute: str, value: Callable[[int], Any]) -> Callable[[nn.Module, int], None]:
    return lambda module, index: setattr(module, attribute, value(index))


def _train_eval(module: nn.Module, index: int) -> None:
    module.train(index % 2 == 0)


def _requires_grad(module: nn.Module, index: int) -> None:
    module.lin.weight.requires_grad_(index % 2 == 0)  # type: ignore[union-attr]


INTS = list(range(1, 1 + CALLS))
FLOATS = [0.1 * (i + 1) for i in range(CALLS)]

PATTERNS = [
    Pattern("int param in range()", "for _ in range(n)", _fn(range_loop, INTS)),
    Pattern("int param as slice bound", "x[:n]", _fn(slicing, INTS)),
    Pattern("int param as size", "torch.zeros(n)", _fn(as_size, INTS)),
    Pattern("int param in reshape", "x.reshape(-1)[: n * 4].reshape(n, 4)", _fn(reshape, [1, 2, 3] * 3 + [1])),
    Pattern("int param in a branch (parity)", "if n % 2 == 0", _fn(branch, INTS)),
    Pattern("int param in a branch (threshold)", "if n > 100", _fn(branch_threshold, INTS)),
    Pattern("int param in arithmetic (control)", "x * n + 1", _fn(arithmetic, INTS)),
    Pattern("float param (scheduler lr) in arithmetic", "x * lr", _fn(float_arithmetic, FLOATS)),
    Pattern("float param in a branch", "if lr > 100.0", _fn(float_branch, FLOATS)),
    Pattern(
        "module int attr set between calls, range()",
        "range(self.steps)",
        _module(Steps, _set("steps", lambda i: i + 1)),
    ),
    Pattern(
        "module int attr set between calls, arithmetic",
        "x * self.scale",
        _module(Scale, _set("scale", lambda i: i + 1)),
    ),
    Pattern(
        "module float attr set between calls",
        "x * self.scale",
        _module(FloatScale, _set("scale", lambda i: 0.1 * (i + 1))),
    ),
    Pattern(
        "module str attr set between calls", "self.mode == 'a'", _module(Mode, _set("mode", lambda i: "a" * (i + 1)))
    ),
    Pattern("train()/eval() toggled between calls", "module.train(i % 2 == 0)", _module(Dropout, _train_eval)),
    Pattern(
        "requires_grad toggled between calls", "weight.requires_grad_(i % 2 == 0)", _module(Dropout, _requires_grad)
    ),
    Pattern("size branch, dynamic=True", "if x.shape[0] > 6", _sizes(size_branch, False, dynamic=True)),
    Pattern("size branch, mark_dynamic", "if x.shape[0] > 6", _sizes(size_branch, True)),
    Pattern("size equality branch, mark_dynamic", "if x.shape[0] == 4", _sizes(size_equality, True)),
    Pattern("range(size), dynamic=True", "for _ in range(x.shape[0])", _sizes(size_loop, False, dynamic=True)),
    Pattern("range(size), mark_dynamic", "for _ in range(x.shape[0])", _sizes(size_loop, True)),
    Pattern("range(size), default (automatic dynamic)", "for _ in range(x.shape[0])", _sizes(size_loop, False)),
]


def measure(pattern: Pattern) -> tuple[int, int, bool, str, str]:
    """(calls made, recompiles, limit hit, first failed guard, error)."""
    torch._dynamo.reset()
    made = 0
    with capture_dynamo_log() as log:
        try:
            for call in pattern.calls():
                call()
                made += 1
        except Exception as error:  # e.g. mark_dynamic refused: a ConstraintViolationError
            return (
                made,
                len(log.recompiles),
                bool(log.limit_hits),
                "",
                f"{type(error).__name__}: {str(error).splitlines()[0][:80]}",
            )
    guards = [line.strip().removeprefix("- ") for text in log.recompiles[:1] for line in text.splitlines()[2:3]]
    return made, len(log.recompiles), bool(log.limit_hits), (guards[0].split("  #")[0] if guards else ""), ""


def main() -> int:
    print(
        f"torch {torch.__version__}, {CALLS} calls with distinct values, "
        f"recompile_limit {torch._dynamo.config.recompile_limit}\n"
    )
    print("| pattern | code | recompiles | per value? | limit hit | first failed guard |")
    print("|---|---|---|---|---|---|")
    for pattern in PATTERNS:
        made, recompiles, limit, guard, error = measure(pattern)
        every = (
            "error" if error else ("yes" if recompiles >= made - 1 - (1 if limit else 0) and recompiles > 1 else "no")
        )
        shown = error or guard.replace("|", "\\|")
        print(
            f"| {pattern.name} | `{pattern.code}` | {recompiles} | {every} | {'yes' if limit else 'no'} | `{shown}` |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
