"""`--confirm --baseline FILE`: a CI gate that fails only on what got worse.

The file records, per target (region), the graphs, breaks and recompiles of its own call and the
recompiles the probe saw on every call, and per user line the breaks and recompiles Dynamo
confirmed there, with the torch version. A line is keyed by its file, function and code (not its
number), so lines added above it do not move it; its number is kept to name it.

A later run is compared against the file: a new line with a break or recompile, a count that grew,
or a target with more graphs, breaks or recompiles is worse and fails the gate. Fewer is better
and printed, and does not fail; `--update-baseline` rewrites the file with the current run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compile_lint.finding import Finding
from compile_lint.rules import rule_by_code

VERSION = 1
REGION_FIELDS = ("graphs", "breaks", "recompiles", "per_call_recompiles")
LINE_FIELDS = ("breaks", "recompiles")


class BaselineError(Exception):
    """An unreadable baseline file; the message says which and why."""


def _line_kind(finding: Finding) -> str | None:
    """ "breaks" or "recompiles" for a finding Dynamo confirmed (or found with no rule), else None."""
    if finding.status not in ("confirmed", "dynamic-only"):
        return None
    rule = rule_by_code(finding.code)
    if finding.code == "TCL802" or (rule is not None and rule.family == "recompile"):
        return "recompiles"
    return "breaks"


def _line_key(finding: Finding, code: str) -> str:
    return f"{finding.path}::{finding.function or '<module>'}::{code.strip()}"


def snapshot(
    findings: list[Finding], targets: list[Any], torch_version: str, source: dict[str, list[str]]
) -> dict[str, Any]:
    """The baseline record of one run; `source` maps each finding's path to its lines."""
    lines: dict[str, dict[str, Any]] = {}
    for finding in findings:
        kind = _line_kind(finding)
        if kind is None:
            continue
        text = source.get(finding.path, [])
        code = text[finding.line - 1] if 0 < finding.line <= len(text) else ""
        entry = lines.setdefault(
            _line_key(finding, code), {"path": finding.path, "line": finding.line, "breaks": 0, "recompiles": 0}
        )
        entry[kind] += 1
    regions = {}
    for target in targets:
        if target.outcome != "ok":
            continue
        per_call = sum(1 for v in target.recompiles if v.get("every_call") and v.get("recompiled_calls", 0) > 1)
        regions[target.label] = {
            "graphs": target.graphs,
            "breaks": target.breaks,
            "recompiles": target.own_recompiles,
            "per_call_recompiles": per_call,
        }
    return {"version": VERSION, "torch": torch_version, "regions": regions, "lines": lines}


def load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BaselineError(f"cannot read the baseline {path}: {error}") from error
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("lines"), dict):
        raise BaselineError(
            f"{path} is not a compile-lint baseline (version {VERSION}): rewrite it with --update-baseline"
        )
    return data


def save(path: Path, record: dict[str, Any]) -> None:
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


@dataclass
class Comparison:
    worse: list[str] = field(default_factory=list)
    better: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def compare(old: dict[str, Any], new: dict[str, Any]) -> Comparison:
    """What got worse (fails the gate) and what got better, one sentence each."""
    result = Comparison()
    if old.get("torch") != new.get("torch"):
        result.notes.append(
            f"the baseline was recorded with torch {old.get('torch')}, this run uses {new.get('torch')}"
        )
    for key, entry in sorted(new["lines"].items(), key=lambda item: (item[1]["path"], item[1]["line"])):
        before = old["lines"].get(key)
        where = f"{entry['path']}:{entry['line']} `{key.rsplit('::', 1)[-1]}`"
        for name in LINE_FIELDS:
            was, now = (before or {}).get(name, 0), entry[name]
            if now > was:
                label = "new" if before is None or was == 0 else "more"
                result.worse.append(f"{where}: {label} {name[:-1]} ({was} -> {now})")
            elif now < was:
                result.better.append(f"{where}: fewer {name} ({was} -> {now})")
    for key, entry in old["lines"].items():
        if key not in new["lines"]:
            where = f"{entry['path']}:{entry['line']} `{key.rsplit('::', 1)[-1]}`"
            gone = [f"{entry[name]} {name}" for name in LINE_FIELDS if entry.get(name)]
            result.better.append(f"{where}: gone ({', '.join(gone)})")
    for label, region in sorted(new["regions"].items()):
        before = old["regions"].get(label)
        if before is None:
            result.notes.append(f"{label}: not in the baseline (recorded by --update-baseline)")
            continue
        for name in REGION_FIELDS:
            was, now = before.get(name, 0), region[name]
            if now > was:
                result.worse.append(f"{label}: {name.replace('_', ' ')} {was} -> {now}")
            elif now < was:
                result.better.append(f"{label}: {name.replace('_', ' ')} {was} -> {now}")
    for label in sorted(set(old["regions"]) - set(new["regions"])):
        result.notes.append(f"{label}: in the baseline but not checked in this run")
    return result
