"""Where the source of a module the linted code imports lives, found without importing anything.

A model class often derives from a base in another module of its package, or in an installed
library (`class XModel(XPreTrainedModel)`); reading that source resolves the hierarchy and the
helpers' return values. torch, numpy and the standard library are modelled by tables instead.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from functools import cache
from pathlib import Path

MODELLED = frozenset({"torch", "numpy", "einops", "einx", "typing", "typing_extensions", "builtins"})
STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()
MAX_BYTES = 2_000_000  # a generated file this large is not worth parsing for a base class


def relative_module(current: str, is_package: bool, written: str) -> str:
    """`..utils.helpers` written in module `pkg.models.bert` -> `pkg.utils.helpers`."""
    level = len(written) - len(written.lstrip("."))
    parts = current.split(".") if current else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    rest = written[level:]
    return ".".join([*parts, rest] if rest else parts)


def sibling_source(path: str, written: str) -> str | None:
    """The file a relative module name points to, from the importing file's folder."""
    level = len(written) - len(written.lstrip("."))
    folder = Path(path).resolve().parent
    for _ in range(level - 1):
        folder = folder.parent
    rest = [part for part in written[level:].split(".") if part]
    return _source_in(folder, rest)


def rooted_source(path: str, module: str, written: str) -> str | None:
    """An absolute module found next to the importing file's top package (`src/` layouts, scripts run
    from their folder): `pkg.utils` imported by `src/pkg/models/bert.py` (module `pkg.models.bert`)."""
    depth = len(module.split(".")) if module else 1
    if Path(path).name == "__init__.py":
        depth += 1
    parents = Path(path).resolve().parents
    if depth - 1 >= len(parents):
        return None
    return _source_in(parents[depth - 1], written.split("."))


def _source_in(folder: Path, parts: list[str]) -> str | None:
    target = folder.joinpath(*parts) if parts else folder
    for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
        if candidate is not None and candidate.is_file() and candidate.stat().st_size <= MAX_BYTES:
            return str(candidate)
    return None


@cache
def installed_source(module: str) -> str | None:
    """The .py file of `module` on sys.path (not the standard library, not torch/numpy), or None."""
    parts = module.split(".")
    if parts[0] in MODELLED or parts[0] in sys.stdlib_module_names:
        return None
    spec = importlib.machinery.PathFinder.find_spec(parts[0])
    for index in range(1, len(parts)):
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(
            ".".join(parts[: index + 1]), list(spec.submodule_search_locations)
        )
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    origin = Path(spec.origin).resolve()
    if origin.is_relative_to(STDLIB) and "site-packages" not in origin.parts:
        return None
    return str(origin) if os.path.getsize(origin) <= MAX_BYTES else None
