"""Record what the installed torch's Dynamo does with every runnable fixture, in
docs/observed/torch-X.Y.json: each distinct break with its fixture line, GB code and gb_type.

Run it once per supported torch, from the repository root:
    .venv/bin/python scripts/observe_fixtures.py
    .venv-torch2.14/bin/python scripts/observe_fixtures.py
tests/test_fixtures_dynamo.py fails when the record of the installed version differs from a fresh
run, and scripts/gen_version_docs.py renders docs/torch-versions.md from the records.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

from compile_lint import versions  # noqa: E402
from fixture_dynamo import RUNNABLE, fixture_breaks, observed  # noqa: E402
from fixture_support import FIXTURES, record_path  # noqa: E402


def main() -> int:
    version = versions.parse(torch.__version__)
    if version not in versions.KNOWN:
        print(f"torch {torch.__version__} is not one of the known versions {versions.KNOWN}", file=sys.stderr)
        return 1
    fixtures = {}
    for path in RUNNABLE:
        seen = observed(fixture_breaks(path))
        fixtures[path.relative_to(FIXTURES).as_posix()] = [item.to_json(seen[item]) for item in sorted(seen)]
        print(f"{path.name}: {len(seen)} distinct breaks", file=sys.stderr)
    record = {"torch": torch.__version__.split("+")[0], "fixtures": fixtures}
    target = record_path(version)
    target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
