"""Render docs/torch-versions.md: for every rule, what differs between the known torch versions.

It reads the fixture runs recorded per version in docs/observed/ (scripts/observe_fixtures.py,
checked against real Dynamo by tests/test_fixtures_dynamo.py) and lints the fixtures for each
version, so the page shows both what Dynamo did and what the rules predict.

python scripts/gen_version_docs.py          # rewrite docs/torch-versions.md
python scripts/gen_version_docs.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from regenerate import write_or_check  # noqa: E402

from compile_lint.config import Config  # noqa: E402
from compile_lint.engine import lint  # noqa: E402
from compile_lint.finding import Finding  # noqa: E402
from compile_lint.rules import all_rules  # noqa: E402
from compile_lint.rules.base import Rule  # noqa: E402
from compile_lint.versions import KNOWN, TorchVersion, label  # noqa: E402
from fixture_support import FIXTURES, FRAME_SKIP_REACH, fixture_files, lint_unit, record_path  # noqa: E402

PAGE = ROOT / "docs" / "torch-versions.md"
Line = tuple[str, int]  # (fixture file relative to fixtures/, line)


@dataclass
class VersionRun:
    """What one torch version does with the fixtures: the breaks seen and the findings predicted."""

    breaks: dict[Line, set[str]] = field(default_factory=dict)  # GB codes seen on the line
    findings: dict[Line, list[Finding]] = field(default_factory=dict)


def _relative(path: str) -> str:
    return Path(path).resolve().relative_to(FIXTURES.resolve()).as_posix()


def run_of(version: TorchVersion) -> VersionRun:
    run = VersionRun()
    record = json.loads(record_path(version).read_text(encoding="utf-8"))
    for observed in record["fixtures"].values():
        for item in observed:
            run.breaks.setdefault((item["file"], item["line"]), set()).add(item["gb_code"])
    config = Config(root=ROOT, torch_version=label(version))
    for path in fixture_files():
        for finding in lint([str(p) for p in lint_unit(path)], config, use_cache=False).findings:
            if Path(finding.path).resolve() == path.resolve():
                run.findings.setdefault((_relative(finding.path), finding.line), []).append(finding)
    return run


def _source(line: Line) -> str:
    text = (FIXTURES / line[0]).read_text(encoding="utf-8").splitlines()[line[1] - 1]
    return text.split("  # ", 1)[0].strip()


def _reach(rule: Rule, line: Line) -> list[Line]:
    """The lines whose breaks belong to a finding of `rule` on `line` (a frame skip is blamed later)."""
    return [(line[0], line[1] + step) for step in range(FRAME_SKIP_REACH + 1 if rule.frame_skip else 1)]


def _cell(rule: Rule, line: Line, run: VersionRun) -> str:
    own = [f for f in run.findings.get(line, []) if f.code == rule.code]
    seen = sorted({code for at in _reach(rule, line) for code in run.breaks.get(at, set())})
    broke = f"breaks ({', '.join(seen)})" if seen else "no break"
    if not own:
        return f"{broke}; not flagged"
    if own[0].gb_codes:
        return f"{broke}; flagged, predicts {', '.join(own[0].gb_codes)}"
    return f"{broke}; flagged without a break: {_markdown(own[0].message)}"


def _fix(rule: Rule, line: Line, run: VersionRun) -> str | None:
    return next((f.fix for f in run.findings.get(line, []) if f.code == rule.code), None)


def rule_section(rule: Rule, runs: dict[TorchVersion, VersionRun]) -> list[str]:
    flagged = sorted(
        {line for run in runs.values() for line, found in run.findings.items() for f in found if f.code == rule.code}
    )
    rows, fixes = [], []
    for line in flagged:
        cells = [_cell(rule, line, runs[version]) for version in KNOWN]
        fix_texts = [_fix(rule, line, runs[version]) for version in KNOWN]
        where = f"`{line[0]}:{line[1]}` `{_markdown(_source(line))}`"
        if len(set(cells)) > 1:
            rows.append(f"| {where} | {' | '.join(cells)} |")
        if None not in fix_texts and len(set(fix_texts)) > 1:  # both flag it, with different fixes
            fixes.append(f"- {where}")
            fixes.extend(f"  - torch {label(v)}: {text}" for v, text in zip(KNOWN, fix_texts, strict=True))
    codes = [f"torch {label(v)}: {', '.join(rule.codes_for(v)) or 'none'}" for v in KNOWN]
    lines = [f"## {rule.code} {rule.name}", ""]
    if len({rule.codes_for(v) for v in KNOWN}) > 1:
        lines += [f"GB codes it predicts: {'; '.join(codes)}.", ""]
    if not rows and not fixes:
        same = "the same lines break with the same codes, and the rule reports and fixes them alike"
        return [*lines, f"No difference in the fixtures: {same}.", ""]
    if rows:
        lines += [*_table_head(), *rows, ""]
    if fixes:
        lines += ["Fix texts that differ where both versions flag the line:", "", *fixes, ""]
    return lines


def _table_head() -> list[str]:
    return [f"| fixture line | {' | '.join(f'torch {label(v)}' for v in KNOWN)} |", f"|---|{'---|' * len(KNOWN)}"]


def _markdown(text: str) -> str:
    return text.replace("|", "\\|")


def unclaimed(runs: dict[TorchVersion, VersionRun]) -> Iterable[str]:
    """Break differences on lines no rule flags under any version (the Dynamo test forbids them)."""
    claimed = {
        at
        for run in runs.values()
        for line, found in run.findings.items()
        for finding in found
        for rule in all_rules()
        if rule.code == finding.code
        for at in _reach(rule, line)
    }
    lines = sorted({line for run in runs.values() for line in run.breaks} - claimed)
    for line in lines:
        seen = [", ".join(sorted(runs[v].breaks.get(line, set()))) or "no break" for v in KNOWN]
        if len(set(seen)) > 1:
            yield f"| `{line[0]}:{line[1]}` `{_markdown(_source(line))}` | {' | '.join(seen)} |"


def render() -> str:
    runs = {version: run_of(version) for version in KNOWN}
    names = " and ".join(f"torch {label(v)}" for v in KNOWN)
    out = [
        f"# What differs between {names}",
        "",
        "Generated by `scripts/gen_version_docs.py`; do not edit. For each rule: the fixture lines where the "
        "versions differ, in what Dynamo did (the runs recorded in `docs/observed/` by "
        "`scripts/observe_fixtures.py`, which `tests/test_fixtures_dynamo.py` checks against real Dynamo) or "
        "in what the rule reports for the version it targets (`torch-version`). Breaks are those of "
        'backend="eager"; `tests/test_python_random.py` covers what inductor computes.',
        "",
    ]
    for rule in all_rules():
        if any(rule.visitors()):  # not those the engine or --confirm reports
            out += rule_section(rule, runs)
    other = list(unclaimed(runs))
    if other:
        out += ["## Breaks no rule flags", "", *_table_head(), *other, ""]
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the page is stale")
    args = parser.parse_args(argv)
    return write_or_check(PAGE, render(), args.check, "gen_version_docs.py")


if __name__ == "__main__":
    sys.exit(main())
