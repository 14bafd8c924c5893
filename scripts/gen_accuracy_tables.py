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

from regenerate import write_or_check

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FIGURES = ROOT / "bench" / "corpus" / "figures.json"
START, END = "<!-- accuracy-tables:start -->", "<!-- accuracy-tables:end -->"
SUMMARY_START, SUMMARY_END = "<!-- accuracy-summary:start -->", "<!-- accuracy-summary:end -->"
HEADLINE = "2.13.0"  # the summary table's torch; the tables below cover every version
COUNTS = ("models", "failed", "clean_models", "sites", "found", "gb_agree", "on_ran", "on_ran_broke", "never_ran",
          "clean_findings")  # fmt: skip


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


def summary_markdown(figures: dict[str, Any]) -> str:
    overall, transformers = figures["overall"], figures["packages"]["transformers"]
    others = {key: overall[key] - transformers[key] for key in COUNTS}
    columns = (overall, transformers, others)

    def per20(row: dict[str, Any]) -> str:
        return f"{20 * row['clean_findings'] / row['clean_models']:.2f}" if row["clean_models"] else "-"

    def cells(part: str, whole: str) -> str:
        first, *rest = (fraction(row[part], row[whole]) for row in columns)
        return " | ".join([f"**{first}**", *rest])

    return "\n".join([
        f"| measure (torch {figures['torch']}, {overall['models']} runs, {overall['failed']} failed) "
        "| all | transformers | others | target |",
        "|---|---|---|---|---|",
        f"| recall: real break sites flagged | {cells('found', 'sites')} | >= 95% |",
        f"| precision: findings on traced lines that break there | {cells('on_ran_broke', 'on_ran')} | >= 95% |",
        f"| GB agreement: found sites whose GB code is predicted | {cells('gb_agree', 'found')} | >= 95% |",
        "| break-predicting findings on lines clean runs ran, per 20 clean runs "
        f"| **{per20(overall)}** ({overall['clean_findings']} over {overall['clean_models']} clean runs) "
        f"| {per20(transformers)} | {per20(others)} | <= 1 |",
        "| findings on lines no run reached (not judged) | "
        + " | ".join(str(row["never_ran"]) for row in columns) + " | |",
    ]) + "\n"  # fmt: skip


def tables_markdown(all_figures: dict[str, Any]) -> str:
    lines: list[str] = []
    for version, figures in all_figures.items():
        for title, table in (("per package", package_table), ("per rule", rule_table)):
            summary = f"<details><summary>torch {version}, {title}</summary>"
            lines += ["", summary, "", *table(figures), "", "</details>"]
    return "\n".join(lines) + "\n"


def between(text: str, start_marker: str, end_marker: str, content: str) -> str:
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise ValueError(f"README lacks the {start_marker} ... {end_marker} markers")
    return f"{text[: start + len(start_marker)]}\n{content}{text[end:]}"


def replace_tables(readme: str, all_figures: dict[str, Any]) -> str:
    readme = between(readme, SUMMARY_START, SUMMARY_END, summary_markdown(all_figures[HEADLINE]))
    return between(readme, START, END, tables_markdown(all_figures))


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
    return write_or_check(README, fresh, args.check, "gen_accuracy_tables.py")


if __name__ == "__main__":
    sys.exit(main())
