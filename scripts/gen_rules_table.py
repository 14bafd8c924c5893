"""Regenerate the README's rules table from the rules (between the rules-table markers).

python scripts/gen_rules_table.py          # rewrite README.md in place
python scripts/gen_rules_table.py --check  # exit 1 if README.md is stale (for CI)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from regenerate import write_or_check

from compile_lint.docs import replace_rules_table

README = Path(__file__).resolve().parent.parent / "README.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the table is stale")
    parser.add_argument("readme", nargs="?", type=Path, default=README)
    args = parser.parse_args(argv)
    current = args.readme.read_text(encoding="utf-8")
    try:
        fresh = replace_rules_table(current)
    except ValueError as error:
        print(f"{args.readme}: {error}", file=sys.stderr)
        return 2
    return write_or_check(args.readme, fresh, args.check, "gen_rules_table.py")


if __name__ == "__main__":
    sys.exit(main())
