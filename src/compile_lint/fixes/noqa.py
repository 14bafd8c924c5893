"""`--add-noqa`: a `# noqa: CODE` comment on every line with findings, to adopt compile-lint on an existing
tree and see only new findings from then on; and `--fix` taking out the codes TCL902 reports unused. Files are
written as `--fix` writes them (atomically, only if unchanged since read; a notebook's comments are in its cells)."""

from __future__ import annotations

from dataclasses import dataclass, field

from compile_lint import notebooks
from compile_lint.analysis.source import multiline_tokens, source_lines
from compile_lint.engine import NOQA, UNUSED_NOQA
from compile_lint.finding import Finding
from compile_lint.fixes.runner import FilePlan, not_written, read_source, write_fixed

NOT_SUPPRESSIBLE = frozenset({"TCL000", UNUSED_NOQA})  # a file not parsed; a noqa comment itself


@dataclass
class Added:
    files: list[tuple[FilePlan, int]] = field(default_factory=list)  # each changed file, with its new directives
    skipped: list[str] = field(default_factory=list)  # lines that cannot carry a comment, with why
    errors: list[str] = field(default_factory=list)


def add_noqa(findings: list[Finding]) -> Added:
    """Plan the comments for `findings` (as `engine.lint` reports them); writes nothing."""
    added = Added()
    wanted: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.code not in NOT_SUPPRESSIBLE:
            wanted.setdefault(finding.path, {}).setdefault(_linted_line(finding), set()).add(finding.code)
    for path, codes_by_line in sorted(wanted.items()):
        source = read_source(path)
        if source is None:
            added.errors.append(f"{path}: cannot read it again")
            continue
        text, count, blocked = with_noqa(source.text, codes_by_line)
        added.skipped.extend(f"{path}:{_shown(source.data, path, line)}: {why}" for line, why in blocked)
        if count:
            added.files.append((FilePlan(source, text, []), count))
    return added


def remove_unused(findings: list[Finding]) -> Added:
    """Plan taking the codes of TCL902 findings (as `engine.lint` reports them) out of their `# noqa`
    comments, and a comment that names nothing else out of its line; writes nothing."""
    removed = Added()
    by_path: dict[str, dict[int, set[str]]] = {}
    for finding in findings:
        if finding.code == UNUSED_NOQA:
            codes = {*finding.details.get("unused", ()), *finding.details.get("unknown", ())}
            by_path.setdefault(finding.path, {})[_linted_line(finding)] = codes
    for path, codes_by_line in sorted(by_path.items()):
        source = read_source(path)
        if source is None:
            removed.errors.append(f"{path}: cannot read it again")
            continue
        text, count = without_codes(source.text, codes_by_line)
        if count:
            removed.files.append((FilePlan(source, text, []), count))
    return removed


def without_codes(text: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int]:
    """`text` with the codes taken out of each line's `# noqa: ...`; how many were taken out. A comment left
    naming nothing goes if it ends the line (an emptied `# noqa:` would suppress everything), else it stays."""
    lines = source_lines(text, keepends=True)
    removed = 0
    for number, codes in codes_by_line.items():
        body = lines[number - 1].rstrip("\r\n") if 0 < number <= len(lines) else ""
        match = NOQA.search(body)
        if match is None or match.group("codes") is None:
            continue
        listed = match.group("codes").replace(",", " ").split()
        kept = [code for code in listed if code.upper() not in codes]
        if kept:
            body = f"{body[: match.start('codes')]}{', '.join(kept)}{body[match.end('codes') :]}"
        elif not body[match.end() :].strip():
            body = body[: match.start()].rstrip()
        else:
            continue
        lines[number - 1] = body + lines[number - 1][len(lines[number - 1].rstrip("\r\n")) :]
        removed += len(listed) - len(kept)
    return "".join(lines), removed


def write(added: Added) -> tuple[int, int]:
    """Write every planned file; returns how many codes and files reached the disk."""
    written = files = 0
    for plan, count in added.files:
        try:
            outcome = write_fixed(plan)
            if not_written(plan.source.path, outcome):
                added.errors.append(not_written(plan.source.path, outcome))
            else:
                written, files = written + count, files + 1
        except OSError as error:
            added.errors.append(f"{plan.source.path}: cannot write: {error.strerror or error}")
    return written, files


def with_noqa(text: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int, list[tuple[int, str]]]:
    """`text` with the codes added to each line's `# noqa` (a new one if it has none); how many codes were
    added, and the lines left alone with why."""
    lines = source_lines(text, keepends=True)
    inside_strings = _lines_ending_in_a_token(text)
    added = 0
    blocked: list[tuple[int, str]] = []
    for number, codes in sorted(codes_by_line.items()):
        if not 0 < number <= len(lines):
            continue
        body = lines[number - 1].rstrip("\r\n")
        ending = lines[number - 1][len(body) :]
        if number in inside_strings or body.endswith("\\"):
            blocked.append((number, "no room for a `# noqa` comment (the line ends inside a string or continues)"))
            continue
        match = NOQA.search(body)
        if match is not None and match.group("codes") is not None:
            end = match.end("codes")
            body = f"{body[:end]}, {', '.join(sorted(codes))}{body[end:]}"
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[number - 1] = body + ending
        added += len(codes)
    return "".join(lines), added, blocked


def _lines_ending_in_a_token(text: str) -> set[int]:
    """Lines whose end lies inside a token (a multi-line string): a comment there would change the string.
    A file with findings parsed; should the tokenizer disagree, only this guard is lost."""
    return {line for first, last in multiline_tokens(text) or [] for line in range(first, last)}


def _linted_line(finding: Finding) -> int:
    """The line in the source the analysis read (a notebook's joined cells)."""
    if finding.cell is None:
        return finding.line
    try:
        line = notebooks.load(finding.path).source_line(finding.cell, finding.line)
    except (OSError, notebooks.NotebookError):
        return 0
    return line or 0


def _shown(data: bytes, path: str, line: int) -> str:
    if not notebooks.is_notebook(path):
        return str(line)
    cell, in_cell = notebooks.from_json(data).locate(line)
    return f"cell {cell}:{in_cell}"
