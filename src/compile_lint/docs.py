"""`compile-lint rules` and `compile-lint rule CODE`: documentation generated from the rules."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from compile_lint.finding import gb_page
from compile_lint.fixes import fixability
from compile_lint.rules import all_rules, rule_by_code
from compile_lint.rules.base import Rule


def rule_markdown(rule: Rule) -> str:
    pages = "\n".join(f"- {code}: {gb_page(code)}" for code in rule.gb_codes) or "- none (no graph break)"
    return (
        f"# {rule.code} {rule.name}\n\n{rule.summary}.\n\n"
        f"## What it does\n{rule.what}\n\n## Why it breaks the graph\n{rule.why}\n\n"
        f"## Example\n```python\n{rule.example}```\n\n## Fix\n{rule.fix}\n\n```python\n{rule.fixed_example}```\n\n"
        f"## Official graph-break pages\n{pages}\n"
    )


def main(argv: list[str], console: Console) -> int:
    if argv[0] == "rules":
        table = Table("code", "name", "family", "GB codes", "fixable", "summary")
        for rule in all_rules():
            table.add_row(rule.code, rule.name, rule.family, ", ".join(rule.gb_codes), fixability(rule.code), rule.summary)
        console.print(table)
        return 0
    if len(argv) != 2:
        console.print("usage: compile-lint rule CODE")
        return 2
    rule = rule_by_code(argv[1])
    if rule is None:
        console.print(f"compile-lint: unknown rule {argv[1]!r}; `compile-lint rules` lists them")
        return 2
    print(rule_markdown(rule))
    return 0
