"""The factory protocol: a zero-argument callable returning `(fn, args)`, `(fn, args, kwargs)`,
or a list of those. Fixtures and `--target pkg.mod:factory` both use it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._dynamo

from compile_lint.confirm.run.capture import is_compiled


class TargetError(Exception):
    """A factory that does not follow the protocol; the message says how to fix it."""


@dataclass
class Target:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        fn = original(self.fn)
        if isinstance(fn, torch.nn.Module) or not hasattr(fn, "__qualname__"):
            return type(fn).__name__
        return str(fn.__qualname__)


def original(fn: Any) -> Any:
    """What torch.compile wrapped (a module or a function), or `fn` itself if it is not compiled."""
    if not is_compiled(fn):
        return fn
    return fn._orig_mod if hasattr(fn, "_orig_mod") else fn._torchdynamo_orig_callable


def targets_from_factory(factory: Callable[[], Any]) -> list[Target]:
    produced = factory()
    entries = produced if isinstance(produced, list) else [produced]
    targets = []
    for entry in entries:
        if not isinstance(entry, tuple) or len(entry) not in (2, 3) or not callable(entry[0]):
            raise TargetError(
                f"factory {getattr(factory, '__qualname__', factory)!r} returned {type(entry).__name__}; "
                "expected (callable, args) or (callable, args, kwargs), or a list of them"
            )
        args = tuple(entry[1]) if isinstance(entry[1], (tuple, list)) else (entry[1],)
        kwargs = dict(entry[2]) if len(entry) == 3 else {}
        targets.append(Target(entry[0], args, kwargs))
    return targets


def compiled(target: Target, backend: str, fullgraph: bool = False) -> Callable[..., Any]:
    """The target under torch.compile; an already-compiled callable is recompiled from its original."""
    return torch.compile(original(target.fn), backend=backend, fullgraph=fullgraph)


def run_once(target: Target, backend: str) -> Any:
    torch._dynamo.reset()
    return compiled(target, backend)(*target.args, **target.kwargs)
