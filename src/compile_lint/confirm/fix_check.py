"""`--confirm`'s fix check: does the automatic fix for a confirmed break compile without it?

Each fix is applied on its own, in memory, to a copy of its file in a temporary folder (the
user's files are never written). The worker loads that copy under the original module's name,
runs the targets that confirmed the break, and reports the breaks the fixed code still has.
A break Dynamo blames on the rewritten lines means the fix did not remove it.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compile_lint.confirm.match import blames
from compile_lint.confirm.plan import TargetSpec, import_location
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


def rewritten_lines(before: str, after: str, finding: Finding) -> tuple[int, int]:
    """The lines of `after` that replace the finding's lines of `before` (an `import torch` the
    fix added at the top is not part of it)."""
    first, last = finding.line - 1, finding.end_line  # 0-based, end exclusive
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
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
    with tempfile.TemporaryDirectory(prefix="compile-lint-fix-") as folder:
        for number, (finding, label) in enumerate(confirmed):
            if fixability(finding.code) == "no":
                continue
            fixed = fix_for(finding)
            if isinstance(fixed, str):
                record: dict[str, Any] = {"fix": "none", "not_checked": fixed}
            else:
                # a folder per check: a cached .pyc of an earlier fix of the same size and second could pass as fresh
                path = _write_copy(finding.path, fixed, Path(os.path.realpath(folder), str(number)))
                record = _check(finding, fixed, path, run, request(specs[label]))
            finding.details = {**finding.details, "fix_check": record}


def _write_copy(original: str, fixed: FixedFile, folder: Path) -> str:
    """Write the fixed text where the original sits relative to its import root."""
    root, _ = import_location(original)
    path = folder / Path(os.path.realpath(original)).relative_to(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fixed.text.encode(fixed.encoding))
    return str(path)


def _check(finding: Finding, fixed: FixedFile, path: str, run: Run, original: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"fix": fixed.safety, "title": fixed.title, "fixed_lines": list(fixed.lines)}
    root, module = import_location(finding.path)
    real = os.path.realpath(finding.path)
    package_dir = os.path.dirname(real) if Path(real).stem == "__init__" else ""
    fixed_module = {"module": module, "path": path, "root": root, "package_dir": package_dir}
    reply = run({**original, "files": [*original["files"], path], "fixed": fixed_module})
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
