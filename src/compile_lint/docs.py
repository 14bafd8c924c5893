"""Rule documentation, generated from the rules themselves: `compile-lint rules`, `compile-lint
rule CODE`, the SARIF rule entries and the README's rules table all read it from here."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table
from rich.text import Text

from compile_lint.coverage import print_coverage
from compile_lint.finding import gb_inline, gb_page
from compile_lint.fixes import fixability
from compile_lint.rules import all_rules, rule_by_code
from compile_lint.rules.base import Rule
from compile_lint.versions import KNOWN, label

COLUMNS = ("code", "name", "family", "GB codes", "fixable", "summary")
TABLE_START = "<!-- rules-table:start -->"
TABLE_END = "<!-- rules-table:end -->"


def full_description(rule: Rule) -> str:
    return f"{rule.what} {rule.why}"


def help_uri(rule: Rule) -> str | None:
    """The official page of the first break the rule predicts that has one."""
    return next((page for page in map(gb_page, rule.gb_codes) if page), None)


def version_note(rule: Rule, code: str) -> str:
    """` (torch 2.13)` when the rule predicts `code` only for some of the known versions."""
    where = [label(version) for version in KNOWN if code in rule.codes_for(version)]
    return "" if len(where) == len(KNOWN) else f" (torch {', '.join(where)})"


def _pages(rule: Rule) -> str:
    """One line per code: its page, or the registry's explanation and hints where it has none."""
    lines = []
    for code in rule.gb_codes:
        page = gb_page(code)
        reference = page if page else f"no public page. {gb_inline(code)}"
        lines.append(f"- {code}{version_note(rule, code)}: {reference}")
    return "\n".join(lines) or "- none (no graph break)"


AUTOMATIC_FIX = {
    "safe": "`compile-lint --fix` applies it",
    "unsafe": "`compile-lint --unsafe-fixes` applies it (it changes evaluation: review the diff)",
    "no": "none; fix it by hand",
}


def _why_heading(rule: Rule) -> str:
    return "Why it breaks the graph" if rule.gb_codes else "Why it matters"


def rule_text(rule: Rule) -> str:
    """Plain-text docs, for viewers that do not render Markdown (SARIF `help.text`)."""
    return (
        f"{rule.code} {rule.name}: {rule.summary}.\n\n{full_description(rule)}\n\n"
        f"Fix: {rule.fix}\nAutomatic fix: {AUTOMATIC_FIX[fixability(rule.code)]}.\n\n"
        f"Graph-break codes:\n{_pages(rule)}\n"
    )


def rule_markdown(rule: Rule) -> str:
    return (
        f"# {rule.code} {rule.name}\n\n{rule.summary}.\n\n"
        f"## What it does\n{rule.what}\n\n## {_why_heading(rule)}\n{rule.why}\n\n"
        f"## Example\n```python\n{rule.example}```\n\n"
        f"## Fix\n{rule.fix}\n\n```python\n{rule.fixed_example}```\n\n"
        f"Automatic fix: {AUTOMATIC_FIX[fixability(rule.code)]}.\n\n"
        f"## Graph-break codes\n{_pages(rule)}\n"
    )


def rule_row(rule: Rule) -> tuple[str, ...]:
    """One rule as the `COLUMNS` of `compile-lint rules` and the README table."""
    codes = ", ".join(code + version_note(rule, code) for code in rule.gb_codes)
    return (rule.code, rule.name, rule.family, codes, fixability(rule.code), rule.summary)


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|")


def _linked(code: str) -> str:
    page = gb_page(code)
    return f"[{code}]({page})" if page else f"{code}\\*"


def rules_table_markdown() -> str:
    """The README's rules table; GB codes link to their official pages, and codes without a page
    (marked `*`) are explained below the table."""
    lines = [f"| {' | '.join(COLUMNS)} |", f"|{'---|' * len(COLUMNS)}"]
    unlinked: dict[str, None] = {}
    for rule in all_rules():
        cells = [_markdown_cell(cell) for cell in rule_row(rule)]
        cells[3] = ", ".join(_linked(code) + version_note(rule, code) for code in rule.gb_codes) or "-"
        unlinked.update((code, None) for code in rule.gb_codes if gb_page(code) is None)
        lines.append(f"| {' | '.join(cells)} |")
    if unlinked:
        lines.append("\n\\* no public page yet; from the graph-break registry:\n")
        lines.extend(f"- {code}: {_markdown_cell(gb_inline(code))}" for code in unlinked)
    return "\n".join(lines) + "\n"


def replace_rules_table(readme: str) -> str:
    """`readme` with the text between the rules-table markers replaced by the generated table."""
    start, end = readme.find(TABLE_START), readme.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"README lacks the {TABLE_START} ... {TABLE_END} markers")
    return f"{readme[: start + len(TABLE_START)]}\n{rules_table_markdown()}{readme[end:]}"


def rules_json() -> str:
    """`compile-lint rules --format json`: one object per rule, the table's columns as keys."""
    rules = [
        {"code": r.code, "name": r.name, "family": r.family, "gb_codes": list(r.gb_codes),
         "fixable": fixability(r.code), "summary": r.summary}
        for r in all_rules()
    ]  # fmt: skip
    return json.dumps(rules, indent=2)


def print_rules(console: Console) -> None:
    """The rules table: boxed and wrapped to a terminal; anywhere else plain aligned columns, one rule a line."""
    rows = [rule_row(rule) for rule in all_rules()]
    if not console.is_terminal:
        widths = [max(len(row[index]) for row in (COLUMNS, *rows)) for index in range(len(COLUMNS))]
        for row in (COLUMNS, *rows):
            cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            console.file.write("  ".join(cells).rstrip() + "\n")
        return
    table = Table()
    for index, column in enumerate(COLUMNS):  # long lists wrap; codes and names keep their full width
        if column in ("summary", "GB codes"):
            table.add_column(column, overflow="fold", min_width=6)
        else:
            table.add_column(column, no_wrap=True, min_width=max(len(row[index]) for row in rows))
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # literal text, not markup
    console.print(table)


USAGE = "usage: compile-lint rules [--coverage] [--format text|json|markdown] | compile-lint rule CODE"
RULES_FORMATS = ("text", "json", "markdown")


def main(argv: list[str], console: Console) -> int:
    if argv == ["rules", "--coverage"]:
        print_coverage(console)
        return 0
    if argv[0] == "rules":
        fmt = "text"
        if argv[1:2] == ["--format"] and len(argv) == 3:
            fmt = argv[2]
        elif len(argv) == 2 and argv[1].startswith("--format="):
            fmt = argv[1].split("=", 1)[1]
        elif len(argv) != 1:
            print(USAGE, file=sys.stderr)
            return 2
        if fmt not in RULES_FORMATS:
            print(f"compile-lint: unknown rules format {fmt!r}; one of {', '.join(RULES_FORMATS)}", file=sys.stderr)
            return 2
        if fmt == "json":
            console.file.write(rules_json() + "\n")
        elif fmt == "markdown":
            console.file.write(rules_table_markdown())
        else:
            print_rules(console)
        return 0
    if argv[0] != "rule" or len(argv) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    rule = rule_by_code(argv[1])
    if rule is None:
        print(f"compile-lint: unknown rule {argv[1]!r}; `compile-lint rules` lists them", file=sys.stderr)
        return 2
    print(rule_markdown(rule))
    return 0
