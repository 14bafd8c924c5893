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


def sibling_source(real: Path, written: str) -> str | None:
    """The file a relative module name points to, from the folder of the importing file (`real`, resolved)."""
    level = len(written) - len(written.lstrip("."))
    folder = real.parent
    for _ in range(level - 1):
        folder = folder.parent
    rest = [part for part in written[level:].split(".") if part]
    return _source_in(folder, rest)


def rooted_source(path: str, real: Path, module: str, written: str) -> str | None:
    """An absolute module found next to the importing file's top package (`src/` layouts, scripts run
    from their folder): `pkg.utils` imported by `src/pkg/models/bert.py` (module `pkg.models.bert`).
    `real`: the importing file `path`, resolved.

    Never a modelled package: a file installed in site-packages has every installed package next to its
    own (transformers' `kernels` integration imports `torch`, which was read from source that way)."""
    if written.split(".", 1)[0] in MODELLED:
        return None
    depth = len(module.split(".")) if module else 1
    if Path(path).name == "__init__.py":
        depth += 1
    parents = real.parents
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
    """The .py file of `module` on sys.path (not the standard library, not torch/numpy), or None.

    Only the top package goes through importlib's finder; submodules are looked up in its folders, as
    the import system would. (importlib's finder wants a namespace portion's parent package imported:
    `pkg/sub/` without an `__init__.py` inside a regular `pkg` raised KeyError: 'pkg'.)"""
    parts = module.split(".")
    if parts[0] in MODELLED or parts[0] in sys.stdlib_module_names:
        return None
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0])
    except (ImportError, ValueError, OSError):
        return None
    if spec is None:
        return None
    if len(parts) == 1:
        origin_text = spec.origin
    else:
        folders = [Path(folder) for folder in spec.submodule_search_locations or ()]
        for part in parts[1:-1]:
            folders = [folder / part for folder in folders if (folder / part).is_dir()]
        candidates = [c for f in folders for c in (f / f"{parts[-1]}.py", f / parts[-1] / "__init__.py")]
        origin_text = next((str(c) for c in candidates if c.is_file()), None)
    if not origin_text or not origin_text.endswith(".py"):
        return None
    origin = Path(origin_text).resolve()
    if origin.is_relative_to(STDLIB) and "site-packages" not in origin.parts:
        return None
    return str(origin) if os.path.getsize(origin) <= MAX_BYTES else None
