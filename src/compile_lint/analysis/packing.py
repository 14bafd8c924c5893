"""A file's index as the cache stores it: the outline of the module (imports, classes, the functions'
signatures and decorators, module-level statements) in one pickle, and each function's body in a pickle
of its own, unpickled the first time something reads that function's tree.

A run over a few files reads the indexes of every module they import from (the package's base classes
and utilities) but walks only the functions the compiled regions reach: the bodies of the others are
never unpickled, and stay bytes in memory.

Whitespace is over half of a tree's nodes (`SimpleWhitespace(" ")` around every comma and operator), all
alike: it is pickled as a call of `shared_whitespace`, which gives every equal node the same instance, so
an entry is smaller, loading it builds no new whitespace node, and the trees of a run share theirs. (No
analysis keeps a whitespace node by identity; a comment is never shared.)
"""

from __future__ import annotations

import copyreg
import io
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

from compile_lint.analysis.nodes import iter_nodes

if TYPE_CHECKING:  # imported by the index itself; libcst is loaded when an index exists
    from compile_lint.analysis.index import FileIndex, FunctionInfo


@contextmanager
def deep_recursion() -> Iterator[None]:
    """A libcst tree is as deep as the expressions it holds; pickle recurses through it."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 5_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def pack_index(index: FileIndex) -> bytes:
    """The index pickled with the body of each function it can leave out (see `_packable`) as bytes of
    its own. `index` is left as it was. Raises what pickle raises (RecursionError, PicklingError)."""
    import libcst as cst

    owners = {name.split(".<locals>.")[0] for name in (*index.functions, *index.classes) if ".<locals>." in name}
    packable = [info for info in index.functions.values() if _packable(info, owners)]
    if index.hooks or index.compile_targets:
        held = _held_nodes(index)
        packable = [info for info in packable if held.isdisjoint(map(id, iter_nodes(info.definition.body)))]
    bodies = [info.definition.body for info in packable]
    placeholder = cst.SimpleStatementSuite(body=[cst.Expr(cst.Ellipsis())])
    was_packed = index.packed
    with deep_recursion():
        blobs = [_dumps(body) for body in bodies]
        try:
            for info, blob in zip(packable, blobs, strict=True):
                _set_body(info.definition, placeholder)
                info.packed_body = blob
            index.packed = was_packed or bool(packable)
            return _dumps(index)
        finally:
            for info, body in zip(packable, bodies, strict=True):
                _set_body(info.definition, body)
                info.packed_body = None
            index.packed = was_packed


def unpack_body(info: FunctionInfo) -> None:
    """Put the function's body back into its tree (the node itself, so the module's tree holds it too)."""
    assert info.packed_body is not None
    with deep_recursion():
        body = pickle.loads(info.packed_body)
    _set_body(info.definition, body)
    info.packed_body = None


def _packable(info: FunctionInfo, owners: set[str]) -> bool:
    """Not packed yet, and no function or class is defined in its body (`owners`: their infos hold
    their nodes)."""
    return info.packed_body is None and info.enclosing is None and info.qualname not in owners


def _held_nodes(index: FileIndex) -> set[int]:
    """The nodes the index holds besides its functions and classes: hook registrations and compile
    targets (a body holding one of them stays in the outline)."""
    held = {id(target) for target in index.compile_targets}
    for hook in index.hooks:
        held.update((id(hook.target), id(hook.line_node)))
    return held


def _set_body(node: object, body: object) -> None:
    object.__setattr__(node, "body", body)  # libcst nodes are frozen dataclasses; identity must stay


@cache
def shared_whitespace(kind: type, *fields: object) -> object:
    """The one node of this kind with these fields (whitespace nodes and strings, themselves shared)."""
    return kind(*fields)


def _dumps(value: object) -> bytes:
    stream = io.BytesIO()
    pickler = pickle.Pickler(stream, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _whitespace_reducers()
    pickler.dump(value)
    return stream.getvalue()


@cache
def _whitespace_reducers() -> dict[type, Callable[[Any], Any]]:
    """copyreg's table plus a reducer for each whitespace node kind: `shared_whitespace` and its fields,
    or the node's own reduction when it holds a comment."""
    import libcst as cst

    def reducer(*names: str) -> Callable[[Any], Any]:
        def reduce(node: Any) -> Any:
            if getattr(node, "comment", None) is not None:
                return node.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
            return shared_whitespace, (type(node), *(getattr(node, name) for name in names))

        return reduce

    table: dict[type, Callable[[Any], Any]] = dict(copyreg.dispatch_table)
    table[cst.SimpleWhitespace] = reducer("value")
    table[cst.Newline] = reducer("value")
    table[cst.TrailingWhitespace] = reducer("whitespace", "comment", "newline")
    table[cst.EmptyLine] = reducer("indent", "whitespace", "comment", "newline")
    return table
