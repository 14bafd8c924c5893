"""Each rule's own documented examples (Fixit-style): every invalid one triggers it, no valid one does."""

from __future__ import annotations

import pytest

from compile_lint.engine import lint_source
from compile_lint.rules import all_rules
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import KNOWN, TorchVersion, label

HEADER = "import torch\nfrom torch import nn\n\n"


# Reported by the engine (TCL000, TCL902) or only by `--confirm` (family "dynamic"): no visitor to give examples
# to; tests/test_cli.py, tests/test_conventions.py and tests/test_confirm_e2e.py cover them.
NOT_STATIC = {rule.code for rule in all_rules() if not any(rule.visitors())}


def _cases(kind: str) -> list[tuple[Rule, Example, TorchVersion]]:
    """Each example of each rule, once for every torch version it holds for."""
    return [
        (rule, example, version)
        for rule in all_rules()
        for example in getattr(rule, kind)
        for version in example.versions
    ]


def _id(value: object) -> str:
    return getattr(value, "code", "") if not isinstance(value, tuple) else f"torch{label(value)}"


def _codes(example: Example, version: TorchVersion) -> set[str]:
    findings = lint_source(HEADER + example.code, "example.py", set(example.flags), torch_version=version)
    return {f.code for f in findings}


@pytest.mark.parametrize(("rule", "example", "version"), _cases("invalid"), ids=_id)
def test_invalid_example_triggers_rule(rule: Rule, example: Example, version: TorchVersion) -> None:
    assert rule.code in _codes(example, version), example.code


@pytest.mark.parametrize(("rule", "example", "version"), _cases("valid"), ids=_id)
def test_valid_example_is_silent(rule: Rule, example: Example, version: TorchVersion) -> None:
    assert rule.code not in _codes(example, version), example.code


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_documented(rule: Rule) -> None:
    for attr in ("name", "summary", "fix", "what", "why", "example", "fixed_example"):
        assert getattr(rule, attr).strip(), f"{rule.code} lacks {attr}"
    assert rule.code.startswith("TCL") and len(rule.code) == 6
    assert all(code.startswith("GB") and len(code) == 6 for code in rule.gb_codes)
    if rule.code not in NOT_STATIC:
        assert rule.invalid and rule.valid, f"{rule.code} needs valid and invalid examples"


@pytest.mark.parametrize("version", KNOWN, ids=lambda v: f"torch{label(v)}")
def test_documented_example_triggers_and_fixed_example_does_not(version: TorchVersion) -> None:
    for rule in all_rules():
        if rule.code in NOT_STATIC:
            continue
        assert rule.code in _codes(Example(rule.example), version), rule.code
        assert rule.code not in _codes(Example(rule.fixed_example), version), rule.code


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_codes_per_version_add_up_to_the_rule_codes(rule: Rule) -> None:
    per_version = {code for version in KNOWN for code in rule.codes_for(version)}
    assert per_version == set(rule.gb_codes)
    assert set(rule.gb_codes_by_version) <= set(KNOWN)
