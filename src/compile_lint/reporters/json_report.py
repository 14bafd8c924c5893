"""`--format json`: one object, `{"version", "findings": [...]}` (plus `"environment"` with --confirm)."""

from __future__ import annotations

import json
from typing import Any

from compile_lint import __version__
from compile_lint.finding import Finding


def render(findings: list[Finding], environment: dict[str, Any] | None = None) -> str:
    document: dict[str, Any] = {"version": __version__, "findings": [f.to_json() for f in findings]}
    if environment is not None:
        document["environment"] = environment
    return json.dumps(document, indent=2)
