"""Static findings against what Dynamo did: a status for each, plus the breaks nobody predicted."""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from compile_lint.analysis.source import source_lines
from compile_lint.finding import Finding
from compile_lint.rules import rule_by_code
from compile_lint.rules.base import Rule

FRAME_SKIP_REACH = 2  # Dynamo blames a frame skip (`id(t)`) up to two lines after the cause


@dataclass
class Observed:
    """Everything the workers saw, keyed by real paths."""

    executed: dict[str, set[int]] = field(default_factory=dict)  # lines run eagerly
    traced: dict[str, set[int]] = field(default_factory=dict)  # lines Dynamo traced under torch.compile
    breaks: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (break, run id)
    recompiles: list[tuple[dict[str, Any], str]] = field(default_factory=list)  # (variation, run id)


@dataclass
class Matched:
    findings: list[Finding]
    confirmed_by: list[tuple[Finding, dict[str, Any], str]]  # (finding, the break, its run) for repro scripts


def match(findings: list[Finding], observed: Observed, linted: dict[str, str]) -> Matched:
    """`linted` maps each linted file's real path to the path the user gave."""
    used: set[int] = set()  # indices of breaks that confirmed a finding
    used_recompiles: set[int] = set()
    out: list[Finding] = []
    confirmed_by: list[tuple[Finding, dict[str, Any], str]] = []
    sources = _Sources()
    for finding in findings:
        updated, hit = _status(finding, observed, used, used_recompiles, linted)
        out.append(updated)
        if hit is not None:
            confirmed_by.append((updated, *hit))
    out.extend(_dynamic_only(observed, used, linted, sources))
    out.extend(_recompile_findings(observed, used_recompiles, linted, sources))
    return Matched(sorted(out, key=lambda f: f.sort_key), confirmed_by)


def _status(
    finding: Finding, observed: Observed, used: set[int], used_recompiles: set[int], linted: Collection[str]
) -> tuple[Finding, tuple[dict[str, Any], str] | None]:
    rule = rule_by_code(finding.code)
    predicts_break = bool(finding.gb_codes)  # per finding: e.g. a `random` call that traces but misbehaves
    if rule is None or not (predicts_break or rule.family == "recompile"):
        return finding, None  # nothing dynamic to check it against (e.g. a correctness rule)
    real = os.path.realpath(finding.path)
    if predicts_break:
        hits = [i for i, (b, _) in enumerate(observed.breaks) if blames(finding, rule, b, real, linted)]
        if hits:
            used.update(hits)
            brk, run = observed.breaks[hits[0]]
            details = {**finding.details, **_break_details(brk, run)}
            return replace(finding, status="confirmed", details=details), observed.breaks[hits[0]]
    else:
        hits = [i for i, (v, _) in enumerate(observed.recompiles) if _recompiled_here(finding, v, real)]
        if hits:
            used_recompiles.update(hits)
            recompiles = [observed.recompiles[i][0] for i in hits]
            return replace(finding, status="confirmed", details={**finding.details, "recompiles": recompiles}), None
    span = range(finding.line, finding.end_line + 1)
    if not any(line in observed.executed.get(real, set()) for line in span):
        return replace(finding, status="not-run"), None
    if any(line in observed.traced.get(real, set()) for line in span):
        return replace(finding, status="not-reproduced"), None
    cause = _eager_cause(finding, observed, real)
    return replace(finding, status="not-traced", details={**finding.details, "not_traced_because": cause}), None


def _eager_cause(finding: Finding, observed: Observed, real: str) -> dict[str, Any] | None:
    """The break that made Dynamo give up on the finding's frame (a frame skip first), so that
    its lines ran eagerly: one logged earlier in the same function."""
    name = (finding.function or "").rsplit(".", 1)[-1]
    resumed = f"torch_dynamo_resume_in_{name}_at_"
    candidates = []
    for brk, run in observed.breaks:
        for frame in brk["chain"]:
            same = frame["function"] == name or frame["function"].startswith(resumed)
            if frame["file"] == real and same and frame["line"] <= finding.line:
                candidates.append((not brk["frame_skip"], brk, run))
                break
    if not candidates:
        return None
    _, brk, run = min(candidates, key=lambda c: c[0])
    return {"file": _shown(brk["user_file"]), "line": brk["user_line"], **_break_details(brk, run)}


def blames(finding: Finding, rule: Rule, brk: dict[str, Any], real: str, linted: Collection[str] = frozenset()) -> bool:
    """Does the break confirm the finding? At its own lines (a frame skip up to two lines later),
    or, for a break in a file the static pass did not see, at the call in this file that led there."""
    line = brk["user_line"]
    if brk["user_file"] == real and line is not None:
        if finding.line <= line <= finding.end_line:
            return True
        same_function = (finding.function or "").rsplit(".", 1)[-1] == brk["user_function"]
        skip = rule.frame_skip or brk["frame_skip"]
        return bool(skip and same_function and finding.line <= line <= finding.end_line + FRAME_SKIP_REACH)
    if brk["user_file"] in linted:
        return False  # the static pass saw that file: the break belongs there, not to the caller
    return any(f["file"] == real and finding.line <= f["line"] <= finding.end_line for f in brk["chain"][1:])


def _recompiled_here(finding: Finding, variation: dict[str, Any], real: str) -> bool:
    """Did the variation recompile the finding's function, at the finding's lines when Dynamo named the user
    line its failed guard came from?"""
    lines = [e["user_line"] for e in variation.get("explained", []) if e["user_file"] and _same(e["user_file"], real)]
    if lines:
        return any(finding.line <= line <= finding.end_line for line in lines)
    name = (finding.function or "").rsplit(".", 1)[-1]
    for where in variation["functions"]:
        path, _, function = where.rpartition(":")
        if os.path.realpath(path.rpartition(":")[0]) == real and function == name:
            return True
    return False


def _same(path: str, real: str) -> bool:
    return os.path.realpath(path) == real


def _break_details(brk: dict[str, Any], run: str) -> dict[str, Any]:
    """What Dynamo said about the break, and the user frames that led to it (innermost first)."""
    return {
        "observed_gb_code": brk["gb_code"],
        "gb_type": brk["gb_type"],
        "explanation": brk["explanation"],
        "hints": brk["hints"],
        "frame_skip": brk["frame_skip"],
        "chain": [f"{_shown(f['file'])}:{f['line']} in {f['function']}" for f in brk["chain"]],
        "inside": brk["inside"],
        "owner": brk.get("owner"),
        "fix_at": _fix_at(brk.get("fix_at")),
        "cascade": brk.get("cascade"),
        "target": run,
    }


def _fix_at(fix_at: dict[str, Any] | None) -> dict[str, Any] | None:
    """The user's innermost call for a break in code they do not own, its path as the user would type it."""
    if fix_at is None:
        return None
    shown = _shown(fix_at["file"])
    return {**fix_at, "file": shown, "fix": fix_at["fix"].replace(fix_at["file"], shown)}


def _shown(real: str) -> str:
    """A path as the user would type it: relative to the working folder when under it."""
    relative = os.path.relpath(real)
    return real if relative.startswith(os.pardir) else relative


def _dynamic_only(observed: Observed, used: set[int], linted: dict[str, str], sources: _Sources) -> list[Finding]:
    """A finding for every break no static finding predicted, at its innermost user frame, in any
    file (linted or not) outside torch and the standard library."""
    rule = rule_by_code("TCL801")
    assert rule is not None
    found: dict[tuple[str, int, str], Finding] = {}
    for index, (brk, run) in enumerate(observed.breaks):
        inside = brk["inside"]
        if index in used or (brk["user_file"] is None and (brk["duplicate"] or inside is None)):
            continue  # a duplicate without a traceback: its first report is a finding already
        if brk["user_file"] is not None:
            path, line = linted.get(brk["user_file"]) or _shown(brk["user_file"]), brk["user_line"]
        else:  # no user frame at all: where Dynamo stopped
            path, line = inside["file"], inside["line"]
        key = (path, line, brk["gb_code"] or brk["gb_type"])
        if key in found:
            continue
        skip = " (frame skipped: the whole function runs eagerly)" if brk["frame_skip"] else ""
        where = f" inside {inside['library']} ({inside['file']}:{inside['line']})" if inside else ""
        hint = next((h for h in brk["hints"] if "fundamental" not in h), "")
        fix_at = _fix_at(brk.get("fix_at"))
        if fix_at is not None:  # in code the user does not own: the fix is at their own call
            hint = fix_at["fix"]
        found[key] = Finding(
            *sources.span(path, line),
            code=rule.code,
            message=f"Dynamo broke the graph here{where}: {brk['gb_type']}{skip}; no static rule predicted it",
            gb_codes=[brk["gb_code"]] if brk["gb_code"] else [],
            fix=hint or rule.fix,
            status="dynamic-only",
            function=brk["user_function"],
            details=_break_details(brk, run),
        )
    return list(found.values())


def _recompile_findings(observed: Observed, used: set[int], linted: dict[str, str], sources: _Sources) -> list[Finding]:
    """Recompiles on every call, or up to the limit, that no static finding predicted."""
    rule = rule_by_code("TCL802")
    assert rule is not None
    found: dict[tuple[str, int, str], Finding] = {}
    for index, (variation, run) in enumerate(observed.recompiles):
        if index in used or not ((variation["every_call"] and variation["calls"] > 1) or variation["limit_hit"]):
            continue
        explained = variation.get("explained") or []
        for where in variation["functions"][:1]:
            file_line, _, function = where.rpartition(":")
            file, _, line = file_line.rpartition(":")
            user = next((e for e in explained if e["user_file"] and e["user_line"]), None)
            if user is not None and os.path.realpath(user["user_file"]) in linted:
                file, line = user["user_file"], str(user["user_line"])  # the line the guard came from
            path = linted.get(os.path.realpath(file))
            if path is None:
                continue
            what = f"recompiled on {variation['recompiled_calls']} of {variation['calls']} calls"
            limit = ", then hit recompile_limit and ran eagerly" if variation["limit_hit"] else ""
            reason = f"; failed guard: `{variation['reasons'][0]}`" if variation["reasons"] else ""
            if variation.get("why"):
                reason = "; " + variation["why"]
            hint = f" (Dynamo: {variation['hint']})" if variation["hint"] else ""
            found.setdefault(
                (path, int(line), variation["trigger"]),
                Finding(
                    *sources.span(path, int(line)),
                    code=rule.code,
                    message=f"`{function}` {what}{limit}, varying {variation['trigger']}{reason}",
                    fix=variation["suggestion"] + hint,
                    status="dynamic-only",
                    function=function,
                    details={**variation, "target": run},
                ),
            )
    return list(found.values())


class _Sources:
    """Source lines of the linted files, read once each."""

    def __init__(self) -> None:
        self.cache: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str:
        if path not in self.cache:
            try:
                self.cache[path] = source_lines(Path(path).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self.cache[path] = []
        lines = self.cache[path]
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def span(self, path: str, number: int) -> tuple[str, int, int, int, int]:
        """(path, line, col, end_line, end_col) covering the statement text on that line."""
        text = self.line(path, number)
        col = len(text) - len(text.lstrip()) + 1
        return path, number, col, number, max(col, len(text.rstrip()) + 1)
