"""Eager against compiled outputs, as models return them: tensors inside tuples, dicts, dataclasses,
`ModelOutput`-style containers and cache objects (a `DynamicCache` holds its keys and values in
layer objects). Both outputs are walked side by side; every tensor found is compared with
`torch.testing.assert_close`, plain values (numbers, strings, None, dtypes) with `==`, and what is
neither (a function, an object too deep) is listed as not compared: never counted as a difference.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from typing import Any

import torch

MAX_DEPTH = 12  # nesting followed into objects; deeper values are listed as not compared
SHOWN = 5  # paths named per kind in a message


class _Missing:
    """Stands for a part only one of the two outputs has."""

    def __repr__(self) -> str:
        return "missing"


_MISSING = _Missing()
PLAIN = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device, torch.Size, enum.Enum, type)
PLAIN_OR_MISSING = (*PLAIN, _Missing)


@dataclasses.dataclass
class Walk:
    """What walking two outputs side by side found."""

    pairs: list[tuple[str, torch.Tensor, torch.Tensor]] = dataclasses.field(default_factory=list)
    mismatched: list[str] = dataclasses.field(default_factory=list)  # structure or plain value differs
    skipped: list[str] = dataclasses.field(default_factory=list)  # "path (type)" not compared
    plain: int = 0  # plain values compared by equality


def walk(expected: Any, actual: Any) -> Walk:
    found = Walk()
    _walk(expected, actual, "output", 0, found, set())
    return found


def _walk(expected: Any, actual: Any, path: str, depth: int, found: Walk, seen: set[int]) -> None:
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
            found.pairs.append((path, expected, actual))
        else:
            found.mismatched.append(f"{path}: {_kind(expected)} vs {_kind(actual)}")
        return
    if isinstance(expected, PLAIN_OR_MISSING) or isinstance(actual, PLAIN_OR_MISSING):
        found.plain += 1
        if not _plain_equal(expected, actual):
            found.mismatched.append(f"{path}: {_short(expected)} vs {_short(actual)}")
        return
    if type(expected) is not type(actual):
        found.mismatched.append(f"{path}: {_kind(expected)} vs {_kind(actual)}")
        return
    if depth >= MAX_DEPTH or id(expected) in seen:
        found.skipped.append(f"{path} ({type(expected).__name__}, nested too deep or cyclic)")
        return
    children = _children(expected, actual)
    if children is None:
        found.skipped.append(f"{path} ({type(expected).__name__})")
        return
    seen = seen | {id(expected)}
    for name, left, right in children:
        _walk(left, right, f"{path}{name}", depth + 1, found, seen)


def _children(expected: Any, actual: Any) -> Iterator[tuple[str, Any, Any]] | None:
    """The parts of two values of one type, paired; a part only one side has is paired with a marker
    that no value equals, so it is reported as a mismatch. None: no parts to follow."""
    if isinstance(expected, Mapping):
        keys = list(dict.fromkeys([*expected.keys(), *actual.keys()]))
        return ((f"[{key!r}]", expected.get(key, _MISSING), actual.get(key, _MISSING)) for key in keys)
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            longer = max(len(expected), len(actual))
            left = [*expected, *[_MISSING] * (longer - len(expected))]
            right = [*actual, *[_MISSING] * (longer - len(actual))]
            return ((f"[{i}]", a, b) for i, (a, b) in enumerate(zip(left, right, strict=True)))
        return ((f"[{i}]", a, b) for i, (a, b) in enumerate(zip(expected, actual, strict=True)))
    if dataclasses.is_dataclass(expected):
        names = [f.name for f in dataclasses.fields(expected)]
        return ((f".{n}", getattr(expected, n, _MISSING), getattr(actual, n, _MISSING)) for n in names)
    if callable(expected) or isinstance(expected, torch.nn.Module):
        return None  # code or a model, not an output value
    attributes = getattr(expected, "__dict__", None)
    if not isinstance(attributes, dict):
        return None
    other = getattr(actual, "__dict__", {})
    names = list(dict.fromkeys([*attributes, *other]))
    return ((f".{n}", attributes.get(n, _MISSING), other.get(n, _MISSING)) for n in names)


def _plain_equal(expected: Any, actual: Any) -> bool:
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, float) and expected != expected:
        return bool(actual != actual)  # NaN agrees with NaN, as equal_nan does for tensors
    return bool(expected == actual)


def _kind(value: Any) -> str:
    return "missing" if value is _MISSING else type(value).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def agreement(expected: Any, actual: Any, tolerance: list[float] | None) -> dict[str, Any]:
    """Every tensor pair through assert_close (its per-dtype defaults unless `tolerance` is [rtol, atol]),
    plain values by equality, the largest errors, and what could not be compared.

    `ok`: True when everything compared agrees and at least one value was compared; False when a
    compared value differs; None when nothing could be compared."""
    found = walk(expected, actual)
    rtol, atol = (tolerance[0], tolerance[1]) if tolerance else (None, None)
    differ: list[str] = []
    for path, left, right in found.pairs:
        try:
            torch.testing.assert_close(right, left, rtol=rtol, atol=atol, equal_nan=True)
        except (AssertionError, TypeError, ValueError) as error:
            differ.append(f"{path}: {' '.join(str(error).split())}")
    differ += found.mismatched
    compared = len(found.pairs) + found.plain
    result: dict[str, Any] = {
        "tolerance": "per-dtype defaults" if tolerance is None else {"rtol": tolerance[0], "atol": tolerance[1]},
        "max_abs_error": max((abs_error(e, a) for _, e, a in found.pairs), default=0.0),
        "max_rel_error": max((rel_error(e, a) for _, e, a in found.pairs), default=0.0),
        "tensors_compared": len(found.pairs),
        "not_compared": found.skipped,
    }
    if differ:
        return {**result, "ok": False, "message": "; ".join(differ[:SHOWN])[:600]}
    if not compared:
        return {**result, "ok": None, "message": "nothing in the output could be compared"}
    return {**result, "ok": True, "message": ""}


def abs_error(expected: torch.Tensor, actual: torch.Tensor) -> float:
    if expected.shape != actual.shape or expected.numel() == 0:
        return 0.0 if expected.shape == actual.shape else float("inf")
    return float((actual.double() - expected.double()).abs().max())


def rel_error(expected: torch.Tensor, actual: torch.Tensor) -> float:
    if expected.shape != actual.shape or expected.numel() == 0:
        return 0.0 if expected.shape == actual.shape else float("inf")
    diff = (actual.double() - expected.double()).abs()
    return float((diff / expected.double().abs().clamp_min(torch.finfo(torch.float64).tiny)).max())
