"""`--confirm --deep`'s fix check: does the automatic fix for a confirmed break compile without it?

The fixes for one file's breaks confirmed by one target are applied together, in memory, to a copy
of the file in a temporary folder (the user's files are never written): one worker run checks them
all. A fix the batch leaves out (it overlaps another) is checked on its own. The worker loads the
copy under the original module's name, runs the target that confirmed the breaks, and reports the
breaks the fixed code still has. A break Dynamo blames on a fix's rewritten lines means that fix
did not remove it. Each such run compiles the target again, as much as the break run: hence
opt-in (`--deep`).
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compile_lint.analysis.source import source_lines
from compile_lint.confirm.plan import TargetSpec, import_location
from compile_lint.confirm.report.match import blames
from compile_lint.finding import Finding
from compile_lint.fixes import fixability
from compile_lint.fixes.apply import FixError, fix_text
from compile_lint.fixes.runner import read_source
from compile_lint.rules import rule_by_code

Run = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class FixedFile:
    """One finding's fix applied to its file: the new text and where the rewrite landed."""

    safety: str
    title: str
    text: str
    encoding: str
    lines: tuple[int, int]  # first and last rewritten line in the fixed text


def fix_for(finding: Finding) -> FixedFile | str:
    """The file with only this finding's fix (safe or unsafe) applied, or why there is none."""
    source = read_source(finding.path)
    if source is None:
        return "the file cannot be read"
    try:
        fixed = fix_text(source.text, [finding], {"safe", "unsafe"})
    except FixError as error:
        return str(error)
    except Exception as error:  # a codemod bug costs this check, not the whole run
        return f"the fix failed: internal error: {type(error).__name__}: {error}"
    if not fixed.applied:
        return "no automatic fix applies to this site"
    (edit,) = fixed.applied
    lines = rewritten_lines(source.text, fixed.text, finding)
    return FixedFile(edit.safety, edit.title, fixed.text, source.encoding, lines)


def fixes_for(findings: list[Finding]) -> dict[int, FixedFile | str]:
    """id(finding) -> its fix, applied together with the others' where they do not overlap."""
    source = read_source(findings[0].path)
    if source is None:
        return {id(f): "the file cannot be read" for f in findings}
    result: dict[int, FixedFile | str] = {}
    try:
        batch = fix_text(source.text, findings, {"safe", "unsafe"})
        for edit in batch.applied:
            lines = rewritten_lines(source.text, batch.text, edit.finding)
            result[id(edit.finding)] = FixedFile(edit.safety, edit.title, batch.text, source.encoding, lines)
    except Exception:  # each finding is then tried alone, and reports its own error
        result.clear()
    for finding in findings:
        if id(finding) not in result:
            result[id(finding)] = fix_for(finding)
    return result


def rewritten_lines(before: str, after: str, finding: Finding) -> tuple[int, int]:
    """The lines of `after` that replace the finding's lines of `before` (an `import torch` the
    fix added at the top is not part of it)."""
    first, last = finding.line - 1, finding.end_line  # 0-based, end exclusive
    matcher = difflib.SequenceMatcher(None, source_lines(before), source_lines(after), autojunk=False)
    spans = [
        (j1, max(j2, j1 + 1))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal" and i1 <= last and i2 >= first and (i1 < i2 or first <= i1)
    ]
    if not spans:  # cannot happen for a codemod that rewrites the finding's own statement
        return finding.line, finding.end_line
    return min(s for s, _ in spans) + 1, max(e for _, e in spans)


def check_fixes(
    confirmed: Iterable[tuple[Finding, str]],
    specs: dict[str, TargetSpec],
    run: Run,
    request: Callable[[TargetSpec], dict[str, Any]],
) -> None:
    """Set `details["fix_check"]` on each confirmed finding (with the run that confirmed it) whose
    code has an automatic fix. `request(spec)` is the worker request that ran the original."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    for finding, label in confirmed:
        if fixability(finding.code) != "no":
            groups.setdefault((os.path.realpath(finding.path), label), []).append(finding)
    with tempfile.TemporaryDirectory(prefix="compile-lint-fix-") as folder:
        number = 0
        for (_, label), findings in groups.items():
            fixes = fixes_for(findings)
            same_text: dict[str, list[Finding]] = {}
            for finding in findings:
                fixed = fixes[id(finding)]
                if isinstance(fixed, str):
                    finding.details = {**finding.details, "fix_check": {"fix": "none", "not_checked": fixed}}
                else:
                    same_text.setdefault(fixed.text, []).append(finding)
            for members in same_text.values():
                number += 1  # a folder per run: a cached .pyc of an earlier fix of the same size could pass as fresh
                first = fixes[id(members[0])]
                assert isinstance(first, FixedFile)
                path = _write_copy(members[0].path, first, Path(os.path.realpath(folder), str(number)))
                reply = _run_fixed(members[0], path, run, request(specs[label]))
                for finding in members:
                    fixed = fixes[id(finding)]
                    assert isinstance(fixed, FixedFile)
                    finding.details = {**finding.details, "fix_check": _judge(finding, fixed, path, reply)}


def _write_copy(original: str, fixed: FixedFile, folder: Path) -> str:
    """Write the fixed text where the original sits relative to its import root."""
    root, _ = import_location(original)
    path = folder / Path(os.path.realpath(original)).relative_to(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fixed.text.encode(fixed.encoding))
    return str(path)


def _run_fixed(finding: Finding, path: str, run: Run, original: dict[str, Any]) -> dict[str, Any]:
    """Rerun the original request with the fixed copy loaded in place of the finding's module."""
    root, module = import_location(finding.path)
    real = os.path.realpath(finding.path)
    package_dir = os.path.dirname(real) if Path(real).stem == "__init__" else ""
    fixed_module = {"module": module, "path": path, "root": root, "package_dir": package_dir}
    return run({**original, "files": [*original["files"], path], "fixed": fixed_module})


def _judge(finding: Finding, fixed: FixedFile, path: str, reply: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"fix": fixed.safety, "title": fixed.title, "fixed_lines": list(fixed.lines)}
    if reply["outcome"] != "ok":
        return {**record, "not_checked": f"the target did not run on the fixed code: {reply.get('error', '')}"}
    failed = [r for r in reply["runs"] if r["outcome"] != "ok"]
    if failed:
        return {**record, "not_checked": f"the fixed code raised: {failed[0]['error']}"}
    site = replace(finding, path=path, line=fixed.lines[0], end_line=fixed.lines[1])
    rule = rule_by_code(finding.code)
    assert rule is not None  # the finding was confirmed against its rule
    remaining = [b for r in reply["runs"] for b in r["breaks"] if blames(site, rule, b, path)]
    if remaining:
        brk = remaining[0]
        still = {"line": brk["user_line"], "gb_code": brk["gb_code"], "gb_type": brk["gb_type"]}
        return {**record, "compiles_without_break": False, "still_breaks": still}
    executed = {line for r in reply["runs"] for line in r["executed"].get(path, [])}
    if not executed.intersection(range(fixed.lines[0], fixed.lines[1] + 1)):
        return {**record, "not_checked": "the rewritten lines did not run with these inputs"}
    return {**record, "compiles_without_break": True}
