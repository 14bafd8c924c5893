"""`--format junit`: one failed test case per finding, a passing case for a clean run."""

from __future__ import annotations

from xml.etree import ElementTree

from compile_lint.finding import Finding
from compile_lint.reporters import junit


def test_each_finding_is_a_failed_case_in_its_files_suite() -> None:
    finding = Finding("m.py", 3, 5, 3, 9, "TCL101", "`.item()` <breaks>", ["GB0124"], fix="keep it a tensor")
    root = ElementTree.fromstring(junit.render([finding], 1))
    assert (root.get("tests"), root.get("failures")) == ("1", "1")
    (suite,) = root
    (case,) = suite
    assert (suite.get("name"), case.get("name"), case.get("file"), case.get("line")) == (
        "m.py",
        "TCL101:3",
        "m.py",
        "3",
    )
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "TCL101" and failure.get("message") == "`.item()` <breaks>"
    assert failure.text is not None and "GB codes: GB0124" in failure.text and "fix: keep it a tensor" in failure.text


def test_a_clean_run_is_one_passing_case() -> None:
    root = ElementTree.fromstring(junit.render([], 4))
    assert (root.get("tests"), root.get("failures")) == ("1", "0")
    assert root[0][0].find("failure") is None and root[0].get("name") == "4 files checked"
