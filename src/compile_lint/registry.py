"""Dynamo's graph-break registry of each known torch version, shipped as package data.

scripts/gen_torch_data.py copies `torch/_dynamo/graph_break_registry.json` out of each supported
wheel into `data/`, so this module (and the linter) never imports torch. It also knows which codes
have a public page; for the others, reporters show the registry's explanation and hints instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from compile_lint.versions import KNOWN, TorchVersion, parse

PAGE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{code}.html"
# The public pages follow the 2.14.1 registry, except for these codes. Source: /work/shared/torch-2.14-notes.md
# (measured when this was written; the network is not reachable from here to check other codes).
PAGES_FOLLOW: TorchVersion = (2, 14)
NO_PAGE = frozenset({"GB1273", "GB2412", "GB2444", "GB3069", "GB5687", "GB9493", "GB9899"})


@dataclass(frozen=True)
class GraphBreak:
    code: str
    gb_types: tuple[str, ...]  # every wording of the code, newest first
    explanation: str
    hints: tuple[str, ...]

    def hint_lines(self) -> list[str]:
        """The hints, with the fragments torch splits a long hint into (each ends in a space) rejoined."""
        lines: list[str] = []
        pending = ""
        for hint in self.hints:
            pending += hint
            if not hint.endswith(" "):
                lines.append(pending.strip())
                pending = ""
        if pending.strip():
            lines.append(pending.strip())
        return lines

    def inline(self) -> str:
        """Explanation and hints as one paragraph, for where there is no page to link to."""
        return " ".join([self.explanation.strip(), *(f"Hint: {hint}" for hint in self.hint_lines())])


class Registry:
    def __init__(self, torch: str, breaks: dict[str, GraphBreak]) -> None:
        self.torch = torch  # the exact release it was copied from, e.g. "2.14.1"
        self.breaks = breaks
        # Two wordings are shared by two codes in torch's own registry: the lower code wins.
        self._codes: dict[str, str] = {}
        for code, entry in sorted(breaks.items()):
            for wording in entry.gb_types:
                self._codes.setdefault(wording, code)

    def get(self, code: str) -> GraphBreak | None:
        return self.breaks.get(code)

    def code_of(self, gb_type: str) -> str | None:
        """The code of any wording, old or new (2.14 renamed some: both map to the same code). Dynamo's
        log names the code itself in its link; this is for messages without one."""
        return self._codes.get(gb_type)


def _data() -> Path:
    """The package's data folder (beside this module: importlib.resources would cost ~15 ms of imports per run)."""
    return Path(__file__).with_name("data")


def _data_files() -> dict[TorchVersion, str]:
    found: dict[TorchVersion, str] = {}
    for item in _data().iterdir():
        name = item.name
        if name.startswith("graph_breaks-torch") and name.endswith(".json"):
            version = parse(name.removeprefix("graph_breaks-torch"))
            if version is not None:
                found[version] = name
    return found


@cache
def registry(version: TorchVersion) -> Registry:
    """The registry of the known torch `version` (a `(major, minor)` from versions.KNOWN)."""
    name = _data_files()[version]
    document = json.loads(_data().joinpath(name).read_text(encoding="utf-8"))
    breaks = {
        code: GraphBreak(code, tuple(entry["gb_types"]), entry["explanation"], tuple(entry["hints"]))
        for code, entry in document["codes"].items()
    }
    return Registry(document["torch"], breaks)


def describe(code: str, version: TorchVersion | None = None) -> GraphBreak | None:
    """`code` in the registry of `version`, else in the newest known registry that has it."""
    order = ([version] if version else []) + sorted(KNOWN, reverse=True)
    return next((entry for v in order if (entry := registry(v).get(code)) is not None), None)


def page(code: str) -> str | None:
    """The public page of `code`, or None when there is none to link to."""
    if code in NO_PAGE or registry(PAGES_FOLLOW).get(code) is None:
        return None
    return PAGE.format(code=code.lower())
