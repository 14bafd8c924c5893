"""The rule registry: every rule module is listed here, one rule per module."""

from __future__ import annotations

import importlib
from functools import cache

from compile_lint.rules.base import Rule

RULE_MODULES = (
    "tcl000_unreadable_file",
    "tcl101_tensor_item",
    "tcl103_tensor_condition",
    "tcl201_print",
)


@cache
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for module_name in RULE_MODULES:
        module = importlib.import_module(f"compile_lint.rules.{module_name}")
        rules.append(module.RULE)
    return tuple(sorted(rules, key=lambda r: r.code))


def rule_by_code(code: str) -> Rule | None:
    return next((r for r in all_rules() if r.code == code.upper()), None)
