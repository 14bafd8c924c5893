"""The rule registry: every `tclNNN_*.py` module in this package defines one rule as `RULE`."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from compile_lint.rules.base import Rule


@cache
def all_rules() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("tcl"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            rules.append(module.RULE)
    return tuple(sorted(rules, key=lambda r: r.code))


def rule_by_code(code: str) -> Rule | None:
    return next((r for r in all_rules() if r.code == code.upper()), None)
