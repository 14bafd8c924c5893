"""Rule docs: `compile-lint rules`, `compile-lint rule CODE` and the README table, all from the rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compile_lint.docs import TABLE_END, TABLE_START, replace_rules_table, rules_table_markdown
from compile_lint.finding import gb_inline, gb_page
from compile_lint.fixes import fixability
from compile_lint.rules import all_rules
from compile_lint.rules.base import Rule
from fixture_support import ROOT

SCRIPT = ROOT / "scripts" / "gen_rules_table.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "250"},
        timeout=120,
    )


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run("-m", "compile_lint", *args)


def test_rules_lists_every_rule_with_family_gb_codes_and_fixability() -> None:
    result = cli("rules", "--format", "json")
    assert result.returncode == 0, result.stderr
    rows = {row["code"]: row for row in json.loads(result.stdout)}
    assert sorted(rows) == [rule.code for rule in all_rules()]
    for rule in all_rules():
        row = rows[rule.code]
        assert [row["name"], row["family"], row["fixable"], row["summary"]] == [
            rule.name,
            rule.family,
            fixability(rule.code),
            rule.summary,
        ]
        assert row["gb_codes"] == list(rule.gb_codes)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_prints_what_why_example_fix_and_gb_pages(rule: Rule) -> None:
    result = cli("rule", rule.code.lower())
    assert result.returncode == 0, result.stderr
    for text in (rule.summary, rule.what, rule.why, rule.example, rule.fix, rule.fixed_example):
        assert text in result.stdout
    for code in rule.gb_codes:
        assert (gb_page(code) or gb_inline(code)) in result.stdout


@pytest.mark.parametrize("args", [["rule", "TCL999"], ["rule"], ["rules", "extra"], ["rules", "--format", "yaml"]])
def test_bad_rule_commands_exit_2_with_one_line(args: list[str]) -> None:
    result = cli(*args)
    assert result.returncode == 2
    assert result.stdout == "" and len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def test_readme_rules_table_is_generated_from_the_rules() -> None:
    assert (ROOT / "README.md").is_file(), "README.md is missing"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TABLE_START in readme and TABLE_END in readme, "README.md lacks the rules-table markers"
    assert replace_rules_table(readme) == readme, "stale: run python scripts/gen_rules_table.py"


def test_table_has_a_row_per_rule_linking_its_gb_pages() -> None:
    lines = rules_table_markdown().splitlines()
    for rule, line in zip(all_rules(), lines[2:], strict=False):
        assert line.startswith(f"| {rule.code} | {rule.name} | {rule.family} |")
        for code in rule.gb_codes:
            assert (f"[{code}]({gb_page(code)})" if gb_page(code) else f"{code}\\*") in line


def test_generator_rewrites_a_stale_table_and_check_catches_it(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{TABLE_START}\n| old |\n{TABLE_END}\n\nafter\n")
    assert run(str(SCRIPT), "--check", str(readme)).returncode == 1
    assert run(str(SCRIPT), str(readme)).returncode == 0
    assert readme.read_text() == f"# title\n\n{TABLE_START}\n{rules_table_markdown()}{TABLE_END}\n\nafter\n"
    assert run(str(SCRIPT), "--check", str(readme)).returncode == 0


def test_generator_refuses_a_readme_without_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# no table here\n")
    result = run(str(SCRIPT), str(readme))
    assert result.returncode == 2 and "markers" in result.stderr
    assert readme.read_text() == "# no table here\n"


def test_readme_corpus_tables_are_generated_from_the_committed_figures() -> None:
    result = run(str(ROOT / "scripts" / "gen_accuracy_tables.py"), "--check")
    assert result.returncode == 0, result.stderr
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for version in json.loads((ROOT / "bench" / "corpus" / "figures.json").read_text()):
        assert f"torch {version}, per package" in readme and f"torch {version}, per rule" in readme
