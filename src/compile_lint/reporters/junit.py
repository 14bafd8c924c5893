"""`--format junit`: JUnit XML for CI systems that show test reports (GitLab, Jenkins, Azure, CircleCI).

One test suite per file with findings, one failed test case per finding (named `CODE:line`, the message
as the failure, the fix and the `--confirm` status in its text); a run with no findings is one passing
case, so a clean run still shows up in the CI's test report.
"""

from __future__ import annotations

from xml.etree import ElementTree

from compile_lint.finding import Finding


def render(findings: list[Finding], files: int) -> str:
    by_file: dict[str, list[Finding]] = {} if findings else {f"{files} files checked": []}
    for finding in findings:
        by_file.setdefault(finding.path, []).append(finding)
    root = ElementTree.Element(
        "testsuites",
        name="compile-lint",
        tests=str(sum(max(1, len(f)) for f in by_file.values())),
        failures=str(len(findings)),
    )
    for path, found in sorted(by_file.items()):
        suite = ElementTree.SubElement(
            root, "testsuite", name=path, tests=str(max(1, len(found))), failures=str(len(found)), errors="0"
        )
        if not found:
            ElementTree.SubElement(suite, "testcase", classname=path, name="no findings")
        for finding in sorted(found, key=lambda f: (f.line, f.col, f.code)):
            where = f"{finding.path}:{finding.line}:{finding.col}" + (f" (cell {finding.cell})" if finding.cell else "")
            case = ElementTree.SubElement(suite, "testcase", classname=path, name=f"{finding.code}:{finding.line}")
            case.set("file", finding.path)
            case.set("line", str(finding.line))
            failure = ElementTree.SubElement(case, "failure", message=finding.message, type=finding.code)
            details = [where, finding.message]
            if finding.gb_codes:
                details.append(f"GB codes: {', '.join(finding.gb_codes)}")
            if finding.status != "static":
                details.append(f"--confirm: {finding.status}")
            if finding.fix:
                details.append(f"fix: {finding.fix}")
            failure.text = "\n".join(details)
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(root, encoding="unicode")
