"""Copy the installed torch's graph-break registry into compile-lint's package data.

Run it with the python of each supported torch, from the repository root:
    .venv/bin/python scripts/gen_torch_data.py
    .venv-torch2.14/bin/python scripts/gen_torch_data.py
It writes src/compile_lint/data/graph_breaks-torch<version>.json, which compile_lint.registry reads
(the linter never imports torch). Per code it keeps every wording (gb_type), newest first as torch
lists them, and the explanation and hints of the newest entry; the developer context is dropped.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "src" / "compile_lint" / "data"


def registry_file() -> Path:
    """torch/_dynamo/graph_break_registry.json of the installed wheel, found without importing torch."""
    found = next((f for f in metadata.files("torch") or () if f.name == "graph_break_registry.json"), None)
    if found is None:
        raise SystemExit("the installed torch has no graph_break_registry.json")
    return Path(str(found.locate()))


def condensed(entries: list[dict[str, object]]) -> dict[str, object]:
    wordings = list(dict.fromkeys(str(entry["Gb_type"]) for entry in entries))
    newest = entries[0]
    return {"gb_types": wordings, "explanation": newest["Explanation"], "hints": newest["Hints"]}


def main() -> int:
    version = metadata.version("torch").split("+")[0]
    registry = json.loads(registry_file().read_text(encoding="utf-8"))
    data = {"torch": version, "codes": {code: condensed(entries) for code, entries in sorted(registry.items())}}
    target = DATA / f"graph_breaks-torch{version}.json"
    target.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target.name}: {len(registry)} codes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
