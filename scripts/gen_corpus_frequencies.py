"""Write src/compile_lint/data/corpus_breaks.json: how many distinct break sites of each GB code the
accuracy corpus (bench/corpus, real models from real packages) shows under real Dynamo, for
`compile-lint rules --coverage`. Reads the committed truth; tests/test_coverage.py checks it is current.

    python scripts/gen_corpus_frequencies.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRUTH = ROOT / "bench" / "corpus" / "truth-torch2.13.0"  # one file per package
TARGET = ROOT / "src" / "compile_lint" / "data" / "corpus_breaks.json"


def frequencies() -> dict[str, object]:
    documents = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(TRUTH.glob("*.json"))]
    runs = {name: entry for document in documents for name, entry in document["runs"].items()}
    sites: dict[str, set[tuple[str, int]]] = {}
    for entry in runs.values():
        for brk in entry.get("breaks", []):
            if brk["gb_code"]:
                sites.setdefault(brk["gb_code"], set()).add((brk["file"], brk["line"]))
    return {
        "source": "bench/corpus/" + TRUTH.name,
        "torch": documents[0]["versions"]["torch"],
        "models": len(runs),
        "sites": {code: len(found) for code, found in sorted(sites.items())},
    }


def main() -> None:
    TARGET.write_text(json.dumps(frequencies(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
