"""Apply codemods to one file's text: find each finding's node, plan edits, rewrite, re-parse."""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from compile_lint.analysis.index import FileIndex
from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.tensors import TensorFacts
from compile_lint.config import Options
from compile_lint.engine import load_source, parse_source
from compile_lint.finding import Finding
from compile_lint.fixes.codemods import CODEMODS, Edit, Replacement, Safety, Site
from compile_lint.project import Project

Span = tuple[int, int, int, int]  # line, col (0-based), end_line, end_col, as libcst positions
Positions = Mapping[cst.CSTNode, CodeRange]


class FixError(Exception):
    """A rewrite produced code that does not parse: a bug in a codemod; the file is left alone."""


@dataclass
class FixedText:
    text: str
    applied: list[Edit] = field(default_factory=list)
    withheld: list[Edit] = field(default_factory=list)  # unsafe edits not allowed on this run


def finding_span(finding: Finding) -> Span:
    return finding.line, finding.col - 1, finding.end_line, finding.end_col - 1


def _span(position: CodeRange) -> Span:
    return position.start.line, position.start.column, position.end.line, position.end.column


FactsAt = Callable[[set[int]], dict[int, TensorFacts]]  # ids of wanted nodes -> the facts in force there


def plan_edits(module: cst.Module, findings: Iterable[Finding], facts_at: FactsAt) -> tuple[list[Edit], Positions]:
    """One edit per finding a codemod can rewrite, in finding order (overlaps not yet removed)."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    fixable = [f for f in findings if f.code in CODEMODS]
    spans = {finding_span(f) for f in fixable}
    at_span: dict[Span, list[cst.CSTNode]] = {}
    for node, position in positions.items():
        span = _span(position)
        if span in spans:
            at_span.setdefault(span, []).append(node)
    facts = facts_at({id(node) for nodes in at_span.values() for node in nodes})
    edits: list[Edit] = []
    for finding in fixable:
        edit = _first_edit(finding, at_span.get(finding_span(finding), []), parents, facts)
        if edit is not None:
            edits.append(edit)
    return edits, positions


def _first_edit(
    finding: Finding,
    nodes: list[cst.CSTNode],
    parents: Mapping[cst.CSTNode, cst.CSTNode],
    facts_at: dict[int, TensorFacts],
) -> Edit | None:
    for node in nodes:
        facts = facts_at.get(id(node))
        if facts is None:  # in a branch the walk skips (e.g. under `if is_compiling()`)
            continue
        for codemod in CODEMODS[finding.code]:
            edit = codemod(Site(finding, node, parents, facts))
            if edit is not None:
                return edit
    return None


def _extent(edit: Edit, positions: Positions) -> tuple[tuple[int, int], tuple[int, int]]:
    ranges = [positions[node] for node, _ in edit.changes]
    start = min((r.start.line, r.start.column) for r in ranges)
    end = max((r.end.line, r.end.column) for r in ranges)
    return start, end


def non_overlapping(edits: list[Edit], positions: Positions) -> list[Edit]:
    """Keep edits in order, dropping any that touches a span an earlier one rewrites (the next
    round, on the rewritten file, picks them up again)."""
    kept: list[Edit] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for edit in edits:
        start, end = _extent(edit, positions)
        if all(end <= other_start or start >= other_end for other_start, other_end in taken):
            kept.append(edit)
            taken.append((start, end))
    return kept


class _Apply(cst.CSTTransformer):
    """Swap each edited node for its replacement; merge adjacent new guards into one `if`."""

    def __init__(self, edits: list[Edit]) -> None:
        super().__init__()
        self.replacements: dict[int, Replacement] = {id(o): r for e in edits for o, r in e.changes}
        self.guards: set[int] = {id(g) for e in edits for g in e.guards}

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Replacement:  # type: ignore[override]
        replacement = self.replacements.get(id(original_node))
        if replacement is not None:
            return replacement
        if isinstance(updated_node, cst.IndentedBlock) and self.guards:
            return updated_node.with_changes(body=self._merge_guards(updated_node.body))
        return updated_node

    def _merge_guards(self, body: Iterable[cst.BaseStatement]) -> list[cst.BaseStatement]:
        merged: list[cst.BaseStatement] = []
        for statement in body:
            previous = merged[-1] if merged else None
            if (
                isinstance(previous, cst.If)
                and isinstance(statement, cst.If)
                and {id(previous), id(statement)} <= self.guards
            ):
                assert isinstance(previous.body, cst.IndentedBlock) and isinstance(statement.body, cst.IndentedBlock)
                inner = [statement.body.body[0].with_changes(leading_lines=statement.leading_lines)]
                combined = previous.with_changes(body=previous.body.with_changes(body=[*previous.body.body, *inner]))
                self.guards.add(id(combined))
                merged[-1] = combined
            else:
                merged.append(statement)
        return merged


def _future_and_docstring(body: Iterable[cst.BaseStatement]) -> int:
    """How many leading statements must stay before any import: the docstring and __future__s."""
    count = 0
    for index, statement in enumerate(body):
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        is_docstring = index == 0 and isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)
        is_future = (
            isinstance(small, cst.ImportFrom)
            and isinstance(small.module, cst.Name)
            and small.module.value == "__future__"
        )
        if not (is_docstring or is_future):
            break
        count = index + 1
    return count


def with_torch_import(module: cst.Module, folder: str = ".") -> cst.Module:
    """Add `import torch` where isort (and ruff's I001) would put it: among the third-party `import x` lines of
    the import block that follows the docstring and __future__ imports (sorted, before the `from x import`
    lines), else after its standard-library imports as a section of its own, else at the head of the block
    (taking over the blank lines and comments above it), else on its own. Modules beside the file (in `folder`)
    are first-party, as isort and ruff find them."""
    body = list(module.body)
    at = _future_and_docstring(body)
    end = at
    while end < len(body) and _is_import(body[end]):
        end += 1
    statement = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("torch"))])])
    sections = [(index, _section(body[index], folder)) for index in range(at, end)]
    third = [(index, body[index]) for index, section in sections if section == "third-party"]
    stdlib = [index for index, section in sections if section == "stdlib"]
    if third:
        after = [index for index, line in third if not _plain_import_before(line, "torch")]
        place = after[0] if after else third[-1][0] + 1
        if after:  # takes over the blank lines and comments of the line it goes before
            statement = statement.with_changes(leading_lines=body[place].leading_lines)
            body[place] = body[place].with_changes(leading_lines=())
    elif stdlib:
        place = stdlib[-1] + 1
        statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
        if place < end and not body[place].leading_lines:
            body[place] = body[place].with_changes(leading_lines=[cst.EmptyLine()])
    elif at < end:
        place = at
        statement = statement.with_changes(leading_lines=body[at].leading_lines)
        body[at] = body[at].with_changes(leading_lines=[cst.EmptyLine()])
    else:
        place = at
        if at > 0:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine()])
    body.insert(place, statement)
    return module.with_changes(body=body)


def _section(statement: cst.BaseStatement, folder: str) -> str:
    """isort's section of an import line: "future", "stdlib", "local" (relative, or a module in `folder`) or
    "third-party"."""
    small = statement.body[0]  # type: ignore[attr-defined]  # an import line (_is_import)
    if isinstance(small, cst.ImportFrom):
        if small.relative or small.module is None:
            return "local"
        top = (dotted(small.module) or "").split(".")[0]
    else:
        top = (dotted(small.names[0].name) or "").split(".")[0]
    if top == "__future__":
        return "future"
    if top in sys.stdlib_module_names:
        return "stdlib"
    beside = os.path.join(folder, top)
    return "local" if os.path.isdir(beside) or os.path.isfile(f"{beside}.py") else "third-party"


def _plain_import_before(statement: cst.BaseStatement, name: str) -> bool:
    """Does this `import x` line sort before `import name`? (`from x import` lines sort after every `import`.)"""
    small = statement.body[0]  # type: ignore[attr-defined]
    return isinstance(small, cst.Import) and (dotted(small.names[0].name) or "").lower() < name


def conditional_torch(module: cst.Module) -> bool:
    """Does the module import torch only conditionally: under an `if` (`if is_torch_available():`,
    `if TYPE_CHECKING:`) or in a `try`? Then it is meant to import, and its functions to run, without torch."""
    for statement in module.body:
        if isinstance(statement, cst.If):
            branches: list[cst.CSTNode] = [statement.body, *([statement.orelse] if statement.orelse else [])]
        elif isinstance(statement, cst.Try):
            branches = [statement.body, *statement.handlers]
        else:
            continue
        if any(_imports_torch(branch) for branch in branches):
            return True
    return False


def _imports_torch(node: cst.CSTNode) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            nonlocal found
            found = found or any(
                dotted(alias.name) == "torch" and (alias.asname is None or dotted(alias.asname.name) == "torch")
                for alias in node.names
            )

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    node.visit(_Find())
    return found


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(
        statement.body[0], (cst.Import, cst.ImportFrom)
    )


def top_level_imports(module: cst.Module) -> ImportMap:
    """Names the module's own top-level imports bind (an import inside a function binds no global)."""
    imports = ImportMap()
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    imports.add(small)
    return imports


def cr_only(text: str) -> bool:
    """Old Mac line endings: the analysis counts lines by `\n`, so such a file is fixed as `\n` text
    (`working_text`) and written back with `\r` (`restore_newlines`)."""
    return "\r" in text and "\n" not in text


def working_text(text: str) -> str:
    return text.replace("\r", "\n") if cr_only(text) else text


def restore_newlines(original: str, fixed: str) -> str:
    return fixed.replace("\n", "\r") if cr_only(original) else fixed


def fix_text(
    text: str, findings: list[Finding], allowed: set[Safety], parsed: tuple[Project, FileIndex] | None = None
) -> FixedText:
    """Apply the allowed fixes for `findings` (all from this file) to `text`. `parsed` is the project
    the findings came from and this file's index in it; without it the file is analysed on its own.
    A file with `\r` line endings is fixed as `working_text` (findings positioned in it) and
    returned with `\r` again."""
    if cr_only(text):
        result = fix_text(working_text(text), findings, allowed, parsed)
        return FixedText(restore_newlines(text, result.text), result.applied, result.withheld)
    if parsed is None:
        index = parse_source("<fix>", text)
        if not isinstance(index, FileIndex):
            raise FixError(f"the file does not parse: {index.message}")
        # On its own a helper reached from another file is no region: its findings name their functions.
        regions = [f.function for f in findings if f.function]
        parsed = (Project([index], Options(extra_regions=regions), (), load_source), index)
    project, index = parsed
    if index.column_shifts is not None:
        raise FixError(
            "its odd whitespace (a form feed in indentation, or a line holding only `\\`) was made plain to "
            "lint it; fix by hand, or remove that whitespace and run --fix again"
        )
    module = index.tree
    edits, positions = plan_edits(module, findings, lambda wanted: project.facts_at(index.path, wanted))
    torch_name = top_level_imports(module).aliases.get("torch")
    if torch_name not in (None, "torch") or (torch_name is None and conditional_torch(module)):
        # `torch` names something else here, or the module imports torch only conditionally (torch-optional: a
        # new top-level import, or a `torch.` guard in a function that runs without torch, would break it)
        edits = [e for e in edits if not e.needs_torch]
    withheld = [e for e in edits if e.safety not in allowed]
    chosen = non_overlapping([e for e in edits if e.safety in allowed], positions)
    if not chosen:
        return FixedText(text, [], withheld)
    fixed = module.visit(_Apply(chosen))
    if torch_name is None and any(e.needs_torch for e in chosen):
        fixed = with_torch_import(fixed, os.path.dirname(index.path) or ".")
    new_text = fixed.code
    try:
        ast.parse(new_text)
        cst.parse_module(new_text)
    except (SyntaxError, cst.ParserSyntaxError) as error:
        raise FixError(f"the rewritten code does not parse: {error}") from error
    return FixedText(new_text, chosen, withheld)
