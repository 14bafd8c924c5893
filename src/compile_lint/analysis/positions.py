"""Source spans for a few nodes, without libcst's PositionProvider.

PositionProvider records a range for every node in the module, which costs about 2x a bare
parse. Linting needs spans only for the handful of nodes it reports, so this re-generates the
code once, counting lines as it goes, and records just those.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import libcst as cst
from libcst._nodes.internal import CodegenState

from compile_lint.analysis.source import source_lines

Span = tuple[int, int, int, int]  # line, col (0-based), end_line, end_col
NOT_RECORDED: AbstractContextManager[None] = nullcontext()  # reusable: it holds no state


class _SpanRecorder(CodegenState):
    __slots__ = ("column", "line", "spans", "targets")

    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.targets = targets
        self.spans: dict[int, Span] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        newlines = value.count("\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def record_syntactic_position(  # type: ignore[override]  # any context manager does for libcst
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> AbstractContextManager[None]:
        """Called for every node generated: a shared no-op for all but the targets (a generator-based
        context manager per node was a third of the cost of placing a run's findings)."""
        return self._recording(node) if id(node) in self.targets else NOT_RECORDED

    @contextmanager
    def _recording(self, node: cst.CSTNode) -> Iterator[None]:
        start = (self.line, self.column)
        yield
        self.spans[id(node)] = (*start, self.line, self.column)


def spans_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """Map id(node) -> span for each of `nodes` (syntactic span: no surrounding whitespace)."""
    targets = {id(node) for node in nodes}
    if not targets:
        return {}
    recorder = _SpanRecorder(module, targets)
    module._codegen(recorder)
    return recorder.spans


def function_starts(text: str, tree: ast.Module | None = None) -> dict[str, tuple[int, str]]:
    """Qualified name -> (line of its first decorator or `def`, indentation) of every function that is
    not nested in another, from Python's own parser (much cheaper than libcst's positions); `tree`: that
    parse of `text` when the caller has it (the parse guard's)."""
    starts: dict[str, tuple[int, str]] = {}
    lines = source_lines(text)
    try:
        pending: list[tuple[str, list[ast.stmt]]] = [("", (tree or ast.parse(text)).body)]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return starts  # libcst accepts what this Python does not: the caller falls back to the whole module
    while pending:
        prefix, body = pending.pop()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if prefix + node.name in starts and _property_accessor(node):
                    continue  # `@x.setter` shares the getter's name; the index keeps the getter (index.py)
                line = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                starts[prefix + node.name] = (line, lines[node.lineno - 1][: node.col_offset])
            elif isinstance(node, ast.ClassDef):
                pending.append((f"{prefix}{node.name}.", node.body))
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                pending.append((prefix, [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]))
    return starts


def _property_accessor(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in node.decorator_list)


def spans_in_function(
    module: cst.Module, function: cst.FunctionDef, start: tuple[int, str], nodes: Iterable[cst.CSTNode]
) -> dict[int, Span]:
    """`spans_of` for nodes inside `function`, generating the code of that function only. `start` is the
    line of its first decorator (or `def`) and its indentation, as `function_starts` gives them."""
    targets = {id(node) for node in nodes}
    line, indent = start
    recorder = _SpanRecorder(module, targets)
    recorder.line = line - len(function.leading_lines)
    if indent:
        recorder.indent_tokens.append(indent)
    function._codegen(recorder)
    return recorder.spans
