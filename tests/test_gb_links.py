"""GB links point only to pages that exist; where a code has none, every output shows the
registry's explanation and hints instead (text, github, SARIF, `compile-lint rule`, README table)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from compile_lint import docs, registry
from compile_lint.finding import Finding, gb_inline, gb_page
from compile_lint.reporters import github, sarif, text
from compile_lint.rules.base import Example, Rule

NO_PAGE = "GB5687"  # new in 2.14.1, page not published (torch-2.14-notes)
EXPLANATION = "Cannot compute {self.fn.__name__}() whose key comparison is not a compile-time constant."


class MinMaxKey(Rule):
    code = "TCL999"
    name = "min-max-tensor-key"
    summary = "A rule that predicts a code without a page"
    gb_codes = ("GB0059", NO_PAGE)
    gb_codes_by_version = {(2, 13): ("GB0059",), (2, 14): ("GB0059", NO_PAGE)}
    fix = "Fix it."
    what = "What."
    why = "Why."
    example = "x = 1\n"
    fixed_example = "x = 2\n"
    invalid = (Example("x = 1\n"),)
    valid = (Example("x = 2\n"),)


def finding(codes: list[str]) -> Finding:
    return Finding("m.py", 1, 1, 1, 2, "TCL999", "message", codes, fix="fix it")


def test_pages_exist_for_the_2_14_1_codes_the_notes_do_not_exclude() -> None:
    assert gb_page("GB0059") == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
    assert gb_page(NO_PAGE) is None
    assert registry.registry((2, 14)).get("GB0060") is None and gb_page("GB0060") is None  # removed in 2.14
    assert all(gb_page(code) is None for code in registry.NO_PAGE)


def test_inline_text_is_the_registry_explanation_and_hints() -> None:
    assert gb_inline(NO_PAGE).startswith(EXPLANATION)
    assert "Hint: Use something else as the key." in gb_inline(NO_PAGE)


def test_text_report_prints_the_explanation_where_there_is_no_page() -> None:
    out = io.StringIO()
    text.render(Console(file=out, width=400), [finding(["GB0059", NO_PAGE])], 1)
    printed = out.getvalue()
    assert gb_page("GB0059") in printed and EXPLANATION in printed and "gb5687.html" not in printed


def test_github_annotation_prints_the_explanation_where_there_is_no_page() -> None:
    data = github.render([finding([NO_PAGE])]).split("::", 2)[2]  # the explanation has nothing to escape
    assert f"predicts: {NO_PAGE} (no public page: {EXPLANATION}" in data and "gb5687.html" not in data


def test_sarif_rule_has_no_help_uri_without_a_page_and_explains_inline() -> None:
    class OnlyUnpaged(MinMaxKey):
        gb_codes = (NO_PAGE,)
        gb_codes_by_version = {(2, 13): (), (2, 14): (NO_PAGE,)}

    descriptor = sarif.rule_descriptor(OnlyUnpaged())
    assert "helpUri" not in descriptor
    assert EXPLANATION in descriptor["help"]["text"] and EXPLANATION in descriptor["help"]["markdown"]
    assert sarif.rule_descriptor(MinMaxKey())["helpUri"] == gb_page("GB0059")


def test_rule_docs_mark_version_specific_codes_and_explain_unpaged_ones() -> None:
    markdown = docs.rule_markdown(MinMaxKey())
    assert f"- GB0059: {gb_page('GB0059')}" in markdown
    assert f"- {NO_PAGE} (torch 2.14): no public page. {EXPLANATION}" in markdown


def test_readme_table_footnotes_codes_without_a_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs, "all_rules", lambda: (MinMaxKey(),))
    table = docs.rules_table_markdown()
    assert f"{NO_PAGE}\\* (torch 2.14)" in table
    assert f"- {NO_PAGE}: {EXPLANATION}" in table
