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

Every other node is pickled as a call of its kind's maker (`node_Name`, ...) with its field values, not as libcst's
own state (a dict of field names, set one by one by a Python `__setstate__`): unpickling the context of 10
transformers files went from 0.28 s to 0.17 s of CPU.
"""

from __future__ import annotations

import copyreg
import dataclasses
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


MAKER = "node_"


def __getattr__(name: str) -> Callable[..., object]:
    """`node_<Kind>`, the function that makes a libcst node of that kind from its field values (in
    `dataclasses.fields` order): pickle finds each kind's by name, so an entry names it once, not per node."""
    if not name.startswith(MAKER):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import libcst as cst

    return _maker(getattr(cst, name.removeprefix(MAKER)))


@cache
def _maker(kind: type) -> Callable[..., object]:
    """Makes the node as its constructor would, without validating it again (it was valid when pickled),
    setting each field through its slot (libcst's nodes are frozen). Generated, as dataclasses generate their
    `__init__`: a loop over the fields costs a third more on every node loaded."""
    names = _field_names(kind)
    lines = [f"    _set_{name}(made, {name})" for name in names]
    source = "\n".join([f"def make({', '.join(names)}):", "    made = _new(_kind)", *lines, "    return made"])
    scope: dict[str, Any] = {"_new": object.__new__, "_kind": kind}
    scope.update({f"_set_{name}": getattr(kind, name).__set__ for name in names})
    exec(source, scope)  # the source is built from libcst's field names only
    make: Callable[..., object] = scope["make"]
    make.__name__ = make.__qualname__ = MAKER + kind.__name__
    make.__module__ = __name__
    globals()[make.__name__] = make  # found directly from now on
    return make


@cache
def shared_whitespace(kind: type, *fields: object) -> object:
    """The one node of this kind with these fields (whitespace nodes and strings, themselves shared)."""
    return kind(*fields)


def _dumps(value: object) -> bytes:
    stream = io.BytesIO()
    pickler = pickle.Pickler(stream, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _reducers()
    pickler.dump(value)
    return stream.getvalue()


@cache
def _reducers() -> dict[type, Callable[[Any], Any]]:
    """copyreg's table plus a reducer for each libcst node kind: its maker (`node_<Kind>`) and its fields, or
    for whitespace `shared_whitespace` and its fields (its maker when it holds a comment)."""
    import libcst as cst

    def whitespace(*names: str) -> Callable[[Any], Any]:
        def reduce(found: Any) -> Any:
            if getattr(found, "comment", None) is not None:
                return _by_fields(found)
            return shared_whitespace, (type(found), *(getattr(found, name) for name in names))

        return reduce

    table: dict[type, Callable[[Any], Any]] = dict(copyreg.dispatch_table)
    for name in dir(cst):
        kind = getattr(cst, name)
        if isinstance(kind, type) and issubclass(kind, cst.CSTNode) and dataclasses.is_dataclass(kind):
            table[kind] = _by_fields
    table[cst.SimpleWhitespace] = whitespace("value")
    table[cst.Newline] = whitespace("value")
    table[cst.TrailingWhitespace] = whitespace("whitespace", "comment", "newline")
    table[cst.EmptyLine] = whitespace("indent", "whitespace", "comment", "newline")
    return table


def _by_fields(found: Any) -> tuple[Callable[..., object], tuple[object, ...]]:
    kind: type = type(found)
    return _maker(kind), tuple(getattr(found, name) for name in _field_names(kind))


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))
