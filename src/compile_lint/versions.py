"""Which torch the linted project targets: `torch-version` in the config, else the installed torch's
metadata (its dist-info's METADATA file, else importlib.metadata; never by importing torch), else the newest
version we know.

Rules differ by version (GB codes, whether a call breaks at all, fix texts), so every lint runs for
exactly one of the KNOWN versions; others are mapped to the nearest known one.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from pathlib import Path

TorchVersion = tuple[int, int]
KNOWN: tuple[TorchVersion, ...] = ((2, 13), (2, 14))
NEWEST = KNOWN[-1]
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def parse(text: str) -> TorchVersion | None:
    """`"2.14.1+cu128"` -> (2, 14); None when the text does not start with a version."""
    match = _VERSION.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def nearest_known(version: TorchVersion) -> TorchVersion:
    """Newer than we know -> the newest known; older -> the oldest; else the newest known not after it."""
    return max((known for known in KNOWN if known <= version), default=KNOWN[0])


def installed() -> TorchVersion | None:
    """The version of the torch this Python would import; None when it cannot import one."""
    text = _dist_info_version("torch")
    if text is None:  # not a wheel beside its package (an editable install, an egg): ask importlib.metadata
        if importlib.util.find_spec("torch") is None:
            return None
        from importlib import metadata  # ~20 ms of imports (email, csv, zipfile): only when needed

        try:
            text = metadata.version("torch")
        except metadata.PackageNotFoundError:
            return None
    return parse(text)


def _dist_info_version(package: str) -> str | None:
    """The `Version:` of the one `<package>-*.dist-info` folder beside the importable `package` (where pip
    installs it), read directly; None when there is not exactly one such folder."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(package)
    except (ImportError, ValueError, OSError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folders = list(Path(next(iter(spec.submodule_search_locations))).parent.glob(f"{package}-*.dist-info"))
    if len(folders) != 1:
        return None
    try:
        with open(folders[0] / "METADATA", encoding="utf-8") as metadata:
            for line in metadata:
                if line.startswith("Version:"):
                    return line.removeprefix("Version:").strip()
                if not line.strip():  # the headers end at the first blank line
                    break
    except OSError:
        pass
    return None


def target_version(configured: str | None = None) -> TorchVersion:
    """The version to lint for: the configured one, else the installed torch, else the newest known."""
    version = parse(configured) if configured else installed()
    return nearest_known(version) if version else NEWEST


def assumed_note(configured: str | None) -> str:
    """When neither a `torch-version` is configured nor torch installed (pre-commit's own environment, a CI lint
    job), what the findings are worded for and how to choose; else ""."""
    if configured or installed() is not None:
        return ""
    return (
        f"findings are worded for torch {label(NEWEST)}, the default: no torch is installed here and no "
        "`torch-version` is set in [tool.compile-lint]; set it to the torch your project runs"
    )


def label(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"
