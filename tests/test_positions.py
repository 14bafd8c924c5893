"""Spans computed from one function's code agree with spans from the whole module's code."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from compile_lint.analysis.index import FileIndex, build_index
from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.positions import function_starts, spans_in_function, spans_of
from compile_lint.engine import parse_source
from fixture_support import fixture_files


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_function_spans_match_module_spans(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    index = build_index(str(path), path.stem, cst.parse_module(text), text)
    starts = function_starts(text)
    guarded = parse_source(str(path), text)
    assert not isinstance(guarded, FileIndex) or guarded.starts in (None, starts)  # from the guard's own tree
    checked = 0
    for qualname, info in index.functions.items():
        if info.enclosing is not None or "<locals>" in qualname:
            continue  # inside another function (a nested def, or a method of a class defined there)
        nodes = [n for n in iter_nodes(info.node) if isinstance(n, (cst.Call, cst.If, cst.Name))]
        assert spans_in_function(index.tree, info.node, starts[qualname], nodes) == spans_of(index.tree, nodes)
        checked += len(nodes)
    assert checked or not index.functions


def test_decorated_method_with_comments_above() -> None:
    text = "class A:\n    x = 1\n\n    # note\n\n    @staticmethod\n    # between\n    @other\n    def f(t):\n        return t.sum()\n"
    index = build_index("m.py", "m", cst.parse_module(text), text)
    info = index.functions["A.f"]
    nodes = list(iter_nodes(info.node))
    assert spans_in_function(index.tree, info.node, function_starts(text)["A.f"], nodes) == spans_of(index.tree, nodes)
