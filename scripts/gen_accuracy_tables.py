"""Regenerate the README's corpus figures (per package and per rule, each torch version) from
bench/corpus/figures.json, between the accuracy-tables markers.

python scripts/gen_accuracy_tables.py          # rewrite README.md in place
python scripts/gen_accuracy_tables.py --check  # exit 1 if README.md is stale (for CI)

figures.json is written by `python bench/accuracy.py --sources bench/corpus/.sources --rules --json
bench/corpus/figures.json`; the README then never shows a figure that command did not measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIGURES = ROOT / "bench" / "corpus" / "figures.json"
START, END = "<!-- accuracy-tables:start -->", "<!-- accuracy-tables:end -->"


def fraction(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def per_twenty(row: dict[str, Any]) -> str:
    value = row["clean_findings_per_20"]
    return "-" if value is None else f"{value:.2f}"


def package_table(figures: dict[str, Any]) -> list[str]:
    lines = [
        "| package | runs | failed | break sites | found | precision on traced lines | clean runs | per 20 clean |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = sorted(figures["packages"].items(), key=lambda item: item[0].lower())
    for name, row in [*rows, ("**all**", figures["overall"])]:
        lines.append(
            f"| {name} | {row['models']} | {row['failed']} | {row['sites']} | {fraction(row['found'], row['sites'])} "
            f"| {fraction(row['on_ran_broke'], row['on_ran'])} | {row['clean_models']} | {per_twenty(row)} |"
        )
    return lines


def rule_table(figures: dict[str, Any]) -> list[str]:
    lines = [
        "| rule | findings | on traced lines | broke there | precision | on lines clean runs ran | never reached |",
        "|---|---|---|---|---|---|---|",
    ]
    for code, row in sorted(figures["rules"].items()):
        if not row["predicts_break"]:
            lines.append(f"| {code} | {row['findings']} | predicts no graph break | | | | |")
            continue
        precision = f"{100 * row['on_ran_broke'] / row['on_ran']:.0f}%" if row["on_ran"] else "-"
        lines.append(
            f"| {code} | {row['findings']} | {row['on_ran']} | {row['on_ran_broke']} | {precision} "
            f"| {row['on_clean']} | {row['never_ran']} |"
        )
    return lines


def tables_markdown(all_figures: dict[str, Any]) -> str:
    lines: list[str] = []
    for version, figures in all_figures.items():
        for title, table in (("per package", package_table), ("per rule", rule_table)):
            summary = f"<details><summary>torch {version}, {title}</summary>"
            lines += ["", summary, "", *table(figures), "", "</details>"]
    return "\n".join(lines) + "\n"


def replace_tables(readme: str, all_figures: dict[str, Any]) -> str:
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README lacks the {START} ... {END} markers")
    return f"{readme[: start + len(START)]}\n{tables_markdown(all_figures)}{readme[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the tables are stale")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    try:
        fresh = replace_tables(current, json.loads(FIGURES.read_text(encoding="utf-8")))
    except ValueError as error:
        print(f"{README}: {error}", file=sys.stderr)
        return 2
    if fresh == current:
        return 0
    if args.check:
        print(f"{README}: the corpus tables are stale; run python scripts/gen_accuracy_tables.py", file=sys.stderr)
        return 1
    README.write_text(fresh, encoding="utf-8")
    print(f"{README}: corpus tables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
