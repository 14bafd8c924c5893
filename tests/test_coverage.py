"""`compile-lint rules --coverage`: its corpus figures are current, and every listed code is accounted for."""

from __future__ import annotations

import json
import sys

import pytest

from compile_lint.cli import main
from compile_lint.coverage import DYNAMIC_ONLY, LISTED, NOT_YET, UNCOVERED, corpus, coverage_rows
from compile_lint.rules import all_rules
from fixture_support import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from gen_corpus_frequencies import frequencies


def test_corpus_frequencies_match_the_committed_truth() -> None:
    assert corpus() == json.loads(json.dumps(frequencies())), "run scripts/gen_corpus_frequencies.py"


def test_every_listed_code_is_predicted_or_explained() -> None:
    rows = coverage_rows()
    assert len(rows) == LISTED
    seen = [row.code for row in rows if row.sites]
    assert seen == sorted(seen, key=lambda code: -corpus()["sites"][code]) and seen[0] == "GB0170"
    predicted = {code for rule in all_rules() for code in rule.gb_codes}
    for row in rows:
        assert (row.status == "predicted") == (row.code in predicted)
        if row.status != "predicted":
            assert row.status in (DYNAMIC_ONLY, NOT_YET) and row.note, row.code


def test_explanations_are_not_kept_for_codes_a_rule_predicts() -> None:
    predicted = {code for rule in all_rules() for code in rule.gb_codes}
    assert not predicted & set(UNCOVERED)


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--coverage"]) == 0
    out = capsys.readouterr().out
    assert "GB0170" in out and "dynamic-only" in out and "predicted by a rule" in out
