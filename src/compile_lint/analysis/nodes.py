"""Walking libcst trees directly: libcst's own visitor rebuilds every node and costs more than the parse."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator

import libcst as cst

# Fields that hold only punctuation and whitespace: walking them is most of libcst's own visit cost.
SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "dot", "semicolon", "equal",
        "colon", "star", "asynchronous", "leading_lines", "lines_after_decorators", "header", "footer",
        "trailing_whitespace", "operator", "attr", "keyword", "newline", "indent",
    }
)  # fmt: skip
LEAVES = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)
# Walk in evaluation order where libcst's field order differs: decorators before the body,
# a comprehension's loops before the element they bind.
FIELD_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.ListComp: ("for_in", "elt"),
    cst.SetComp: ("for_in", "elt"),
    cst.GeneratorExp: ("for_in", "elt"),
    cst.DictComp: ("for_in", "key", "value"),
}
_fields_cache: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    found = _fields_cache.get(node_type)
    if found is None:
        if node_type in FIELD_ORDER:
            found = FIELD_ORDER[node_type]
        elif issubclass(node_type, LEAVES):
            found = ()
        else:
            found = tuple(
                f.name
                for f in dataclasses.fields(node_type)
                if f.name not in SKIPPED_FIELDS and not f.name.startswith("whitespace")
            )
        _fields_cache[node_type] = found
    return found


_node_types: dict[type, bool] = {}  # isinstance against libcst's ABC costs several dict lookups


def _is_node(kind: type) -> bool:
    found = _node_types.get(kind)
    if found is None:
        found = _node_types[kind] = issubclass(kind, cst.CSTNode)
    return found


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []
    for name in child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            found += [item for item in value if _is_node(type(item))]
        elif _is_node(kind):
            found.append(value)
    return found


def iter_nodes(root: cst.CSTNode, prune: tuple[type[cst.CSTNode], ...] = ()) -> Iterator[cst.CSTNode]:
    """`root` and the nodes below it, pre-order, skipping punctuation (cheaper than libcst matchers).
    Nodes of a `prune` type are yielded but not entered (except `root` itself): exact types (libcst's node
    classes are ABCs, and an isinstance that fails costs several dict lookups)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        if prune and node is not root and type(node) in prune:
            continue
        pending.extend(reversed(children(node)))


def string_value(node: cst.SimpleString) -> str | bytes:
    """`node.evaluated_value`, from Python's parser instead of `ast.literal_eval`: each call of that leaves a
    reference cycle (its nested functions), garbage that a run freezing the collector would keep (`engine`)."""
    constant = ast.parse(node.value, mode="eval").body
    assert isinstance(constant, ast.Constant) and isinstance(constant.value, (str, bytes))
    return constant.value
