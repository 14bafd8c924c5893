"""`--format sarif`: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers.

Every rule gets a `reportingDescriptor` built from the same docs as `compile-lint rule CODE`;
each result carries its span (1-based columns, `endColumn` one past the span, counted in code
points) and, in `properties`, the predicted GB codes, the `--confirm` status, the path condition (when
the line runs: `default`, `training`, `loss`, ...) and the fix. A notebook finding locates the file only
(its lines count within a cell, not in the JSON file): `properties` has its `cell` and `cellRegion`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from compile_lint import __version__
from compile_lint.docs import full_description, help_uri, rule_markdown, rule_text
from compile_lint.finding import Finding
from compile_lint.fixes import fixability
from compile_lint.rules import all_rules
from compile_lint.rules.base import Rule

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SOURCE_ROOT = "%SRCROOT%"


def rule_descriptor(rule: Rule) -> dict[str, Any]:
    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full_description(rule)},
        "help": {"text": rule_text(rule), "markdown": rule_markdown(rule)},
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {
            "family": rule.family,
            "gbCodes": list(rule.gb_codes),
            "fixable": fixability(rule.code),
            "tags": ["torch.compile", rule.family],
        },
    }
    uri = help_uri(rule)
    if uri:
        descriptor["helpUri"] = uri
    return descriptor


def artifact_location(path: str) -> dict[str, str]:
    """A URI reference: relative paths stay relative to the folder compile-lint ran in (`%SRCROOT%`)."""
    if Path(path).is_absolute():
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(Path(path).as_posix()), "uriBaseId": SOURCE_ROOT}


def result(finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "gbCodes": finding.gb_codes,
        "status": finding.status,
        "pathCondition": finding.path_condition,
    }
    if finding.fix:
        properties["fix"] = finding.fix
    if finding.function:
        properties["function"] = finding.function
    if finding.details:
        properties["details"] = finding.details
    region = {
        "startLine": finding.line,
        "startColumn": finding.col,
        "endLine": finding.end_line,
        "endColumn": finding.end_col,
    }
    physical: dict[str, Any] = {"artifactLocation": artifact_location(finding.path)}
    if finding.cell is None:
        physical["region"] = region
    else:  # the lines of a cell are not those of the notebook's JSON file
        properties["cell"] = finding.cell
        properties["cellRegion"] = region
    entry: dict[str, Any] = {
        "ruleId": finding.code,
        "level": LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": physical}],
        "properties": properties,
    }
    if finding.code in index:
        entry["ruleIndex"] = index[finding.code]
    return entry


def document(findings: list[Finding]) -> dict[str, Any]:
    rules = all_rules()
    index = {rule.code: position for position, rule in enumerate(rules)}
    driver = {
        "name": "compile-lint",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": [rule_descriptor(rule) for rule in rules],
    }
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SOURCE_ROOT: {"uri": Path.cwd().as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [result(finding, index) for finding in findings],
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def render(findings: list[Finding]) -> str:
    return json.dumps(document(findings), indent=2)
