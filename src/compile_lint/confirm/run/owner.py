"""Who owns a file Dynamo broke in: the user's code, or an installed distribution at its version
(torch, transformers, ...), and for a break in code the user does not own, where they can act: the
innermost frame of their own code, with the fixes that work from there.

No upgrade advice: compile-lint records no release known to fix a break.
"""

from __future__ import annotations

import os
import platform
import sysconfig
from functools import cache
from importlib import metadata
from typing import Any

from compile_lint.confirm.run.capture import Frame, library_of

SITE_DIRS = ("site-packages", "dist-packages")


def owner_of(path: str) -> dict[str, Any]:
    """{"kind": "user"} or {"kind": "library", "name": distribution, "version": its version or None}."""
    library = library_of(path)
    if library == "the standard library":
        return {"kind": "library", "name": "python", "version": platform.python_version()}
    real = os.path.realpath(path)
    top = _top_level(real)
    if top is None:
        return {"kind": "user"}
    name = _distribution(top) or top
    return {"kind": "library", "name": name, "version": _version(name)}


def _top_level(real: str) -> str | None:
    """The top-level package or module of a file installed in a site-packages folder."""
    parts = real.split(os.sep)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in SITE_DIRS:
            return parts[index + 1].removesuffix(".py")
    purelib = os.path.realpath(sysconfig.get_paths()["purelib"]) + os.sep
    if real.startswith(purelib):
        return real[len(purelib) :].split(os.sep)[0].removesuffix(".py")
    return None


@cache
def _distributions() -> dict[str, list[str]]:
    return dict(metadata.packages_distributions())


def _distribution(top: str) -> str | None:
    names = _distributions().get(top)
    return names[0] if names else None


@cache
def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def label(owner: dict[str, Any]) -> str:
    """`user code`, `transformers 5.25.0`, `torch 2.13.0+cpu`."""
    if owner["kind"] == "user":
        return "user code"
    return f"{owner['name']} {owner['version']}" if owner.get("version") else str(owner["name"])


def user_fix(frames: list[Frame]) -> dict[str, Any] | None:
    """For a break in code the user does not own (frames outermost first): the innermost frame of the
    user's own code and the call it makes there, with the fixes available at that call."""
    owned = [index for index, frame in enumerate(frames) if owner_of(frame.file)["kind"] == "user"]
    if not owned or owned[-1] == len(frames) - 1:
        return None  # no user frame, or the break is in the user's own code
    at, callee = frames[owned[-1]], frames[owned[-1] + 1]
    where = f"{os.path.realpath(at.file)}:{at.line}"
    called = callee.function
    return {
        "file": os.path.realpath(at.file),
        "line": at.line,
        "function": at.function,
        "calls": called,
        "fix": (
            f"the break is in code you do not own; at your call in {at.function} ({where}): run `{called}` outside "
            f"the graph with torch.compiler.disable (one break at the call, none inside it), or make it one opaque "
            f"op with torch.library.custom_op if it takes and returns tensors, or torch.compiler.allow_in_graph if "
            "Dynamo may put the call in the graph as it is"
        ),
    }
