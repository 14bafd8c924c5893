"""Type annotations parsed into values: `Optional[Tensor]`, `list[Tensor]`, `int`, `"torch.Tensor"`, ..."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.names import ImportMap
from compile_lint.analysis.nodes import string_value
from compile_lint.analysis.values import (
    BOOL_VALUE,
    FLOAT_VALUE,
    INT_VALUE,
    MASK_VALUE,
    NONE_VALUE,
    NUMPY_VALUE,
    OBJECT_VALUE,
    SHAPE_VALUE,
    STR_VALUE,
    TENSOR_VALUE,
    UNKNOWN_VALUE,
    Mapping,
    Module,
    Seq,
    Value,
    join_all,
)

TENSOR_TYPES = frozenset(
    {
        "torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.IntTensor", "torch.HalfTensor",
        "torch.DoubleTensor", "torch.ByteTensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter",
        "Tensor", "FloatTensor", "LongTensor",
    }
)  # fmt: skip
MASK_TYPES = frozenset({"torch.BoolTensor", "BoolTensor"})
SCALARS = {
    "int": INT_VALUE, "bool": BOOL_VALUE, "float": FLOAT_VALUE, "str": STR_VALUE, "None": NONE_VALUE,
    "complex": FLOAT_VALUE, "bytes": STR_VALUE,
}  # fmt: skip
SEQUENCES = frozenset(
    {
        "list", "tuple", "set", "frozenset", "typing.List", "typing.Tuple", "typing.Sequence", "typing.Set",
        "typing.Iterable", "typing.Iterator", "collections.abc.Sequence", "collections.abc.Iterable",
        "collections.abc.Iterator", "typing.Generator", "collections.abc.Generator",
    }
)  # fmt: skip
MAPPINGS = frozenset(
    {
        "dict",
        "typing.Dict",
        "typing.Mapping",
        "collections.abc.Mapping",
        "typing.MutableMapping",
        "collections.OrderedDict",
    }
)
OPTIONAL = frozenset({"typing.Optional"})
UNION = frozenset({"typing.Union"})
ANY = frozenset({"typing.Any", "Any", "object", "typing.TypeVar"})
MODULES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
NUMPY_TYPES = frozenset({"numpy.ndarray", "numpy.typing.NDArray", "numpy.typing.ArrayLike"})
SIZE_TYPES = frozenset({"torch.Size"})


def annotation_value(node: cst.BaseExpression, imports: ImportMap) -> Value:
    """What a value annotated `node` holds; unknown names (user classes) are non-tensor objects."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        return _string_annotation(node, imports)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):  # `Tensor | None`
        return annotation_value(node.left, imports).join(annotation_value(node.right, imports))
    if isinstance(node, cst.Subscript):
        return _generic(node, imports)
    if isinstance(node, cst.Name) and node.value == "None":
        return NONE_VALUE
    name = imports.resolve(node)
    if name is None:
        return UNKNOWN_VALUE
    return _named(name)


def _named(name: str) -> Value:
    if name in TENSOR_TYPES:
        return TENSOR_VALUE
    if name in MASK_TYPES:
        return MASK_VALUE
    if name in SCALARS:
        return SCALARS[name]
    if name in ANY:
        return UNKNOWN_VALUE
    if name in MODULES:
        return Value.of(Module())
    if name in NUMPY_TYPES:
        return NUMPY_VALUE
    if name in SIZE_TYPES:
        return SHAPE_VALUE
    if name in SEQUENCES:
        return Value.of(Seq(UNKNOWN_VALUE))
    if name in MAPPINGS:
        return Value.of(Mapping(UNKNOWN_VALUE))
    return OBJECT_VALUE


def _generic(node: cst.Subscript, imports: ImportMap) -> Value:
    name = imports.resolve(node.value) or ""
    arguments = [
        element.slice.value
        for element in node.slice
        if isinstance(element.slice, cst.Index) and not isinstance(element.slice.value, cst.Ellipsis)
    ]
    inner = [annotation_value(arg, imports) for arg in arguments]
    if name in OPTIONAL:
        return join_all(inner).join(NONE_VALUE)
    if name in UNION:
        return join_all(inner)
    if name in SEQUENCES:
        return Value.of(Seq(join_all(inner) if inner else UNKNOWN_VALUE))
    if name in MAPPINGS:
        return Value.of(Mapping(inner[-1] if inner else UNKNOWN_VALUE))
    if name in NUMPY_TYPES:
        return NUMPY_VALUE
    if name in ("typing.Annotated", "typing_extensions.Annotated") and inner:
        return inner[0]
    return _named(name)


def _string_annotation(node: cst.SimpleString | cst.ConcatenatedString, imports: ImportMap) -> Value:
    text = string_value(node) if isinstance(node, cst.SimpleString) else node.evaluated_value
    if not isinstance(text, str):
        return UNKNOWN_VALUE
    try:
        return annotation_value(cst.parse_expression(text), imports)
    except cst.ParserSyntaxError:
        return UNKNOWN_VALUE
