"""What an expression holds, evaluated in the environment the flow analysis has reached.

`TensorFacts.value(node)` gives a `Value` (see values.py); `kind(node)` is the coarse view most rules
need. Shapes, dtypes, devices, `dim()`, `numel()`, `len()`, `requires_grad`, `self.training` and
`is None` checks are Python values that Dynamo guards on; they never make a branch data-dependent.
Calls into the user's own functions and classes are answered by the program (interprocedural
summaries); torch, numpy, einops, math and the builtins by the tables below.
"""

from __future__ import annotations

import enum
import io
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import and_, or_, xor
from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.nodes import string_value
from compile_lint.analysis.values import (
    ASSUMED,
    ASSUMED_MASK,
    BOOL_VALUE,
    BOOLS,
    BOTTOM,
    DATA,
    DATA_VALUE,
    EVIDENT_TENSORS,
    FALSE,
    FALSE_VALUE,
    FLOAT,
    FLOAT_VALUE,
    INT,
    INT_VALUE,
    MASK,
    MASK_VALUE,
    MASKS,
    NONE,
    NONE_VALUE,
    NUMPY,
    NUMPY_VALUE,
    OBJECT,
    OBJECT_VALUE,
    PYTHON_NUMBERS,
    SHAPE_VALUE,
    SIZE,
    SIZE_VALUE,
    STR,
    STR_VALUE,
    TENSOR,
    TENSOR_LIKE,
    TENSOR_VALUE,
    TRUE,
    TRUE_VALUE,
    UNKNOWN,
    UNKNOWN_VALUE,
    Atom,
    ClassKey,
    ClassObject,
    External,
    Function,
    FunctionKey,
    Instance,
    Mapping,
    Module,
    Record,
    Seq,
    Tup,
    Value,
    common_keys,
    join_all,
)

if TYPE_CHECKING:
    from compile_lint.analysis.program import Program


class Kind(enum.Enum):
    """The coarse view of a value that most rules need."""

    TENSOR = "tensor"
    SCALAR = "scalar"  # a Python number read out of a tensor (`.item()`, `int(t)`): data-dependent
    STR = "str"
    MODULE = "module"  # an nn.Module-like callable (`self.proj`, `for layer in self.layers`)
    OTHER = "other"  # a known Python value (shape, dtype, literal, ...)
    UNKNOWN = "unknown"


def coarse_kind(value: Value) -> Kind:
    atoms = [atom for atom in value if atom != NONE]
    if any(atom in TENSOR_LIKE for atom in atoms):
        return Kind.TENSOR
    if DATA in atoms:
        return Kind.SCALAR
    if not atoms:
        return Kind.OTHER if value else Kind.UNKNOWN
    if UNKNOWN in atoms:
        return Kind.UNKNOWN
    if all(isinstance(atom, Module) for atom in atoms):
        return Kind.MODULE
    if all(atom == STR for atom in atoms):
        return Kind.STR
    return Kind.OTHER


def join_kinds(left: Kind, right: Kind) -> Kind:
    """The coarse kind of `a or b` / `a and b`: a tensor on either side decides."""
    if Kind.TENSOR in (left, right):
        return Kind.TENSOR
    if Kind.SCALAR in (left, right):
        return Kind.SCALAR
    return left if left is right else Kind.UNKNOWN


TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
SIZE_ATTRS = frozenset({"ndim"})
SIZE_METHODS = frozenset(
    {"dim", "ndimension", "numel", "nelement", "element_size", "get_device", "storage_offset", "__len__"}
)
SCALAR_METHODS = frozenset({"item", "tolist"})
CONTAINER_METHODS = frozenset(
    {"append", "extend", "pop", "update", "copy", "insert", "remove", "clear", "index", "count", "setdefault"}
)
# Methods no common Python object but a tensor has: their result is a tensor even when the receiver came
# from a call we cannot follow (`norm(y0 / scale).abs()`). Names shared with str/list/dict are left out.
TENSOR_ONLY_METHODS = frozenset(
    {
        "abs", "sum", "mean", "amax", "amin", "norm", "float", "double", "half", "bfloat16", "long", "detach",
        "clone", "cpu", "cuda", "view", "reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand",
        "contiguous", "softmax", "log_softmax", "sigmoid", "exp", "sqrt", "rsqrt", "pow", "clamp", "masked_fill",
        "type_as", "matmul", "reciprocal", "flatten", "argmax", "argmin", "cumsum", "std", "var", "neg",
    }
)  # fmt: skip
SEQUENCE_METHODS = frozenset(
    {"unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "split_with_sizes", "sort", "topk",
     "kthvalue", "unique_consecutive", "aminmax", "slogdet", "frexp", "lu", "qr", "svd", "eig", "eigh"}
)  # fmt: skip
TORCH_NON_TENSOR_NAMESPACES = frozenset(
    {
        "cuda", "backends", "compiler", "_dynamo", "jit", "distributed", "utils", "fx", "export",
        "library", "profiler", "overrides", "testing", "onnx", "hub", "mps", "cpu", "xpu", "_C",
        "_logging", "_inductor", "amp", "optim", "multiprocessing", "package", "ao", "config", "_guards",
        "types", "version", "accelerator",
    }
)  # fmt: skip
TORCH_NON_TENSOR_FUNCS = frozenset(
    {
        "manual_seed", "seed", "initial_seed", "no_grad", "enable_grad", "inference_mode", "device",
        "dtype", "finfo", "iinfo", "compile", "typename", "promote_types", "result_type", "can_cast",
        "broadcast_shapes", "numel", "autocast", "save", "load", "Size", "Generator", "set_grad_enabled",
    }
)  # fmt: skip
TORCH_SEQUENCE_FUNCS = SEQUENCE_METHODS | frozenset(
    {"meshgrid", "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d", "unflatten_dense_tensors",
     "std_mean", "var_mean", "histogram", "geqrf", "unique", "sort"}
)  # fmt: skip
TORCH_SIZE_FUNCS = frozenset({"numel", "broadcast_shapes"})
# Guards that are constant while Dynamo traces: is_compiling() is True, tracing by other tools False.
COMPILING = frozenset({"is_compiling", "is_torchdynamo_compiling", "is_dynamo_compiling"})
OTHER_TRACERS = frozenset(
    {"is_scripting", "is_tracing", "is_fx_tracing", "is_in_onnx_export", "_get_tracing_state", "is_exporting"}
)
SCALAR_BUILTINS = {"int": INT, "float": FLOAT, "bool": TRUE, "complex": FLOAT}
BOOLEAN_BUILTINS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "any", "all"})
STRING_BUILTINS = frozenset({"str", "repr", "format", "ascii", "chr", "hex", "oct", "bin"})
SEQUENCE_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"})
REDUCING_BUILTINS = frozenset({"max", "min", "sum", "abs", "round", "pow", "divmod"})
# Calls whose result is a boolean tensor (a mask): `x[mask]` then has a data-dependent size.
MASK_METHODS = frozenset(
    {
        "bool", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal",
        "not_equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "isclose", "isin",
        "signbit", "logical_and", "logical_or", "logical_xor", "logical_not", "any", "all",
    }
)  # fmt: skip
MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)
# einops/einx functions that take a tensor first and return one.
TENSOR_LIBRARIES = ("einops.", "einx.", "torch_geometric.utils.", "kornia.")
NUMPY_MODULES = ("numpy.", "np.")
STATIC_MODULES = ("math.", "operator.", "functools.reduce", "itertools.")
# Un-annotated parameters of a region entry are taken as tensors, except flag-like names.
FLAG_PREFIXES = ("output_", "return_", "use_", "is_", "has_", "do_", "enable_", "num_", "n_")
NON_TENSOR_PARAMS = frozenset({"device", "dtype", "kwargs", "config"})


def torch_call_kind(full_name: str) -> Kind:
    """Coarse kind of the value returned by calling `torch.<...>` (a resolved dotted name)."""
    return coarse_kind(torch_call_value(full_name))


def torch_call_value(full_name: str) -> Value:
    parts = full_name.split(".")
    if len(parts) < 2 or parts[0] != "torch":
        return UNKNOWN_VALUE
    last = parts[-1]
    if last in COMPILING:
        return TRUE_VALUE
    if last in OTHER_TRACERS:
        return FALSE_VALUE
    if parts[1] == "nn":
        if len(parts) > 3 and parts[2] == "functional":
            return TENSOR_VALUE
        if last in ("Parameter", "Buffer"):
            return TENSOR_VALUE
        return Value.of(Module(name=last)) if last[:1].isupper() else UNKNOWN_VALUE
    if parts[1:3] == ["utils", "checkpoint"]:
        return TENSOR_VALUE
    if parts[1] in ("linalg", "fft", "special") and last[:1].islower():
        return Value.of(Seq(TENSOR_VALUE)) if last in TORCH_SEQUENCE_FUNCS or last.endswith("_ex") else TENSOR_VALUE
    if parts[1] in TORCH_NON_TENSOR_NAMESPACES:
        return OBJECT_VALUE
    if last in TORCH_SIZE_FUNCS:
        return SIZE_VALUE
    if last == "Size":
        return SHAPE_VALUE
    if last == "equal":
        return DATA_VALUE
    if last in TORCH_NON_TENSOR_FUNCS:
        return OBJECT_VALUE
    if last.startswith("is_"):
        return BOOL_VALUE
    if last.startswith(("get_", "set_", "use_")) or last[:1].isupper():
        return OBJECT_VALUE
    if last in TORCH_SEQUENCE_FUNCS:
        return Value.of(Seq(TENSOR_VALUE))
    if last in MASK_METHODS:
        return MASK_VALUE
    return TENSOR_VALUE


@dataclass
class CallTarget:
    """A user function a call runs, with the values its parameters receive."""

    key: FunctionKey
    params: dict[str, Value]
    how: str  # "call", "constructor", "forward", "__call__", "callback", "__setattr__"
    callee: cst.BaseExpression | str  # the callee's node, or a name for a call nobody wrote ("setattr")

    @property
    def text(self) -> str:
        """The callee as written, for messages: "self._route" (made when asked: few calls ever show it)."""
        if isinstance(self.callee, str):
            return self.callee
        return dotted(self.callee) or short_code(self.callee)


NAMED_CONSTANTS = {"None": NONE_VALUE, "True": TRUE_VALUE, "False": FALSE_VALUE}


# By exact node type: libcst's node classes are ABCs, and isinstance against an ABC costs several times
# a dict lookup (these run on every expression evaluated). No libcst node class has subclasses.
LITERALS: dict[type[cst.CSTNode], Value] = {
    cst.Integer: INT_VALUE,
    cst.Float: FLOAT_VALUE,
    cst.Imaginary: FLOAT_VALUE,
    cst.SimpleString: STR_VALUE,
    cst.ConcatenatedString: STR_VALUE,
    cst.FormattedString: STR_VALUE,
}


def literal_value(node: cst.BaseExpression) -> Value | None:
    if type(node) is cst.Name:
        return NAMED_CONSTANTS.get(node.value)
    found = LITERALS.get(type(node))
    if found is not None:
        return found
    if type(node) is cst.UnaryOperation and type(node.expression) in (cst.Integer, cst.Float):
        return literal_value(node.expression)
    return None


class TensorFacts:
    """Evaluates expressions of one function (or module body) against the flow analysis' environment."""

    def __init__(
        self,
        imports: ImportMap,
        program: Program | None = None,
        path: str = "",
        self_class: ClassKey | None = None,
        env: dict[str, Value] | None = None,
        cond: int = 0,
    ) -> None:
        self.imports = imports
        self.program = program
        self.path = path
        self.self_class = self_class
        self.env: dict[str, Value] = env if env is not None else {}
        self.cond = cond  # path condition of the statement being evaluated
        self._memo: dict[int, Value] = {}
        self.targets_memo: dict[int, list[CallTarget]] = {}  # the program's answers for calls
        self.memoize = True

    # -- the facade rules use ----------------------------------------------------------------------
    def kind(self, node: cst.BaseExpression) -> Kind:
        return coarse_kind(self.value(node))

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) is Kind.TENSOR

    def may_be_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor, or nothing known against it: for calls only tensors have (`.item()`, `.storage()`)."""
        return self.kind(node) in (Kind.TENSOR, Kind.UNKNOWN)

    def has_evidence(self, node: cst.BaseExpression) -> bool:
        """A tensor for a reason beyond un-annotated entry parameters being taken as tensors: a torch call,
        a tensor method, a `Tensor` annotation. `int(width * ratio)` on bare parameters has none."""
        return self.value(node).any_of(EVIDENT_TENSORS)

    def is_mask(self, node: cst.BaseExpression) -> bool:
        """Certainly a boolean tensor: a tensor comparison, `~m`, `m & n`, `t.bool()`..."""
        value = self.value(node)
        return value.any_of(MASKS) and not value.any_of((TENSOR, ASSUMED, NUMPY, UNKNOWN))

    def truth(self, node: cst.BaseExpression) -> bool | None:
        """True or False when `node` has that truth value whenever Dynamo traces this line."""
        value = self.value(node)
        if value.only((TRUE,)):
            return True
        if value.only((FALSE, NONE)):
            return False
        return None

    def cond_of(self, node: cst.BaseExpression) -> int:
        """The path condition under which `node` holds a tensor or a value read from one."""
        return self.value(node).cond_of(TENSOR_LIKE | {DATA})

    def snapshot(self) -> TensorFacts:
        """A copy that later assignments do not change and that memoizes nothing: the codemods also
        ask about nodes they build and drop, and a dropped node's id can come back for another node."""
        copied = TensorFacts(self.imports, self.program, self.path, self.self_class, dict(self.env), self.cond)
        copied.memoize = False
        return copied

    def with_names(self, values: dict[str, Value]) -> TensorFacts:
        """Facts for an expression that sees extra names, e.g. a lambda's parameters."""
        return TensorFacts(self.imports, self.program, self.path, self.self_class, {**self.env, **values}, self.cond)

    # -- evaluation ----------------------------------------------------------------------------------
    def forget(self) -> None:
        """Drop memoized values: the environment changed."""
        if self._memo:
            self._memo = {}
        if self.targets_memo:
            self.targets_memo = {}

    def value(self, node: cst.BaseExpression) -> Value:
        if not self.memoize:
            self.targets_memo.clear()
            return self._value(node)
        key = id(node)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._value(node)
        return found

    def _value(self, node: cst.BaseExpression) -> Value:
        if type(node) is cst.Name:
            return self.name_value(node.value)
        literal = literal_value(node)
        if literal is not None:
            return literal
        handler = _HANDLERS.get(type(node))
        return handler(self, node) if handler else UNKNOWN_VALUE

    def name_value(self, name: str) -> Value:
        found = self.env.get(name)
        if found is not None:
            return found
        if name in NAMED_CONSTANTS:
            return NAMED_CONSTANTS[name]
        if self.program is not None:
            resolved = self.program.global_value(self.path, name)
            if resolved is not None:
                return resolved
        full = self.imports.aliases.get(name)
        if full is not None:
            return self._external(full)
        return UNKNOWN_VALUE

    def _external(self, full: str) -> Value:
        if self.program is not None:
            resolved = self.program.import_value(self.path, full)
            if resolved is not None:
                return resolved
        return Value.of(External(full))

    def _attribute(self, node: cst.Attribute) -> Value:
        attr = node.attr.value
        written = dotted(node)
        if written is not None:
            bound = self.env.get(written)
            if bound is not None:
                return bound
            if self._is_module_path(node):
                full = self.imports.resolve(node) or written
                return _module_attribute(full) or self._external(full)
        inherited = self._super_attribute(node.value, attr)
        if inherited is not None:
            return inherited
        base = self.value(node.value)
        parts = [self._attribute_of(atom, attr).under(cond) for atom, cond in base.atoms.items()]
        return join_all(parts) or UNKNOWN_VALUE

    def _super_attribute(self, node: cst.BaseExpression, attr: str) -> Value | None:
        """`super().__init__` / `super(Cls, self).forward`: the method of the next class in the MRO that
        defines it; unknown when only the class itself does (a library base's method, e.g. `nn.Embedding.forward`,
        never the overriding one); None when no user class defines it (the attribute of the instance then)."""
        if type(node) is not cst.Call or dotted(node.func) != "super" or "super" in self.env:
            return None
        if self.program is None or self.self_class is None:
            return None
        named = [atom.cls for atom in self.value(node.args[0].value).classes()] if node.args else [self.self_class]
        if len(named) != 1:
            return None
        for key in self.program.mro(named[0])[1:]:
            info = self.program.class_info(key)
            found = info.methods.get(attr) if info is not None else None
            if found is not None:
                return Value.of(Function(found, bound=named[0]))
        own = self.program.class_info(named[0])
        return UNKNOWN_VALUE if own is not None and attr in own.methods else None

    def _attribute_of(self, atom: Atom, attr: str) -> Value:
        if atom in (TENSOR, MASK, NUMPY):
            return _tensor_attribute(attr, atom)
        if atom == ASSUMED:
            return (
                _tensor_attribute(attr, ASSUMED) if attr in TENSOR_ATTRS | {"shape", "ndim", "dtype"} else UNKNOWN_VALUE
            )
        if isinstance(atom, External):
            return _module_attribute(f"{atom.name}.{attr}") or Value.of(External(f"{atom.name}.{attr}"))
        if isinstance(atom, (Module, Instance)) or (isinstance(atom, str) and atom == OBJECT):
            cls = atom.cls if isinstance(atom, (Module, Instance)) else None
            if attr == "training":
                return self.program.training_value() if self.program else BOOL_VALUE
            if cls is not None and self.program is not None:
                found = self.program.attribute(cls, attr)
                if found is not None:
                    return found
            if isinstance(atom, Module) and attr in ("weight", "bias"):
                return TENSOR_VALUE
            return UNKNOWN_VALUE
        if isinstance(atom, Tup) and atom.fields:
            return atom.field(attr) or UNKNOWN_VALUE
        if isinstance(atom, Seq) and attr in ("shape",):
            return SHAPE_VALUE
        return UNKNOWN_VALUE

    def _subscript(self, node: cst.Subscript) -> Value:
        base = self.value(node.value)
        sliced = any(isinstance(element.slice, cst.Slice) for element in node.slice)
        kept = _literal_slice(node) if sliced else None
        parts: list[Value] = []
        for atom, cond in base.atoms.items():
            if atom in TENSOR_LIKE:
                parts.append(Value.of(atom, cond=cond))
            elif isinstance(atom, Tup) and not sliced:
                parts.append(_tuple_item(atom, node).under(cond))
            elif isinstance(atom, Tup) and kept is not None:
                parts.append(Value.of(Tup(atom.items[kept]), cond=cond))
            elif isinstance(atom, (Seq, Tup)):
                parts.append((Value.of(Seq(atom.item)) if sliced else atom.item).under(cond))
            elif isinstance(atom, Mapping):
                key = _string_key(node)
                parts.append((atom.value if key is None else atom.get(key)).under(cond))
            elif isinstance(atom, Module):
                parts.append(Value.of(atom, cond=cond) if sliced else (atom.items or Value.of(Module())).under(cond))
            elif atom == STR:
                parts.append(Value.of(STR, cond=cond))
            else:
                parts.append(Value.of(UNKNOWN, cond=cond))
        return join_all(parts) or UNKNOWN_VALUE

    def _binary(self, node: cst.BinaryOperation) -> Value:
        return combine(self.value(node.left), self.value(node.right), node.operator)

    def _unary(self, node: cst.UnaryOperation) -> Value:
        inner = self.value(node.expression)
        if isinstance(node.operator, cst.Not):
            truth = self.truth(node.expression)
            return BOOL_VALUE if truth is None else (FALSE_VALUE if truth else TRUE_VALUE)
        if isinstance(node.operator, cst.BitInvert) and inner.only(BOOLS):
            return INT_VALUE
        return Value({(SIZE if a in BOOLS else a): c for a, c in inner.atoms.items()}) if inner.any_of(BOOLS) else inner

    def _boolean(self, node: cst.BooleanOperation) -> Value:
        left = self.truth(node.left)
        is_and = isinstance(node.operator, cst.And)
        if left is not None and left != is_and:
            return self.value(node.left)  # short circuit: `False and x`, `True or x`
        if left is not None:
            return self.value(node.right)
        # `a and b` is a when a is falsy, else b; `a or b` is a when a is truthy, else b.
        kept = self.value(node.left).without(TRUE) if is_and else self.value(node.left).without(FALSE, NONE)
        return kept.join(self.value(node.right))

    def _comparison(self, node: cst.Comparison) -> Value:
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        values = [self.value(operand) for operand in operands]
        results = [
            self._compare(values[i], values[i + 1], target.operator) for i, target in enumerate(node.comparisons)
        ]
        return join_all(results) if len(results) > 1 else results[0]

    def _compare(self, left: Value, right: Value, operator: cst.BaseCompOp) -> Value:
        if isinstance(operator, (cst.Is, cst.IsNot)):
            truth = _identity(left, right)
            if truth is None:
                return BOOL_VALUE
            return TRUE_VALUE if truth == isinstance(operator, cst.Is) else FALSE_VALUE
        if isinstance(operator, (cst.In, cst.NotIn)):
            return BOOL_VALUE
        if STR in left or STR in right:  # `mode == "train"`: a string is never compared with a tensor
            return BOOL_VALUE
        tensors = [v for v in (left, right) if v.is_tensor_like]
        if tensors:
            cond = join_all(tensors).cond_of(TENSOR_LIKE)
            atom = MASK if any(v.any_of(EVIDENT_TENSORS) for v in tensors) else ASSUMED_MASK
            return Value.of(atom, cond=cond)
        if DATA in left or DATA in right:
            return Value.of(DATA, cond=left.join(right).cond_of((DATA,)))
        return BOOL_VALUE

    def _if_expression(self, node: cst.IfExp) -> Value:
        truth = self.truth(node.test)
        if truth is not None:
            return self.value(node.body if truth else node.orelse)
        return self.value(node.body).join(self.value(node.orelse))

    def _sequence(self, node: cst.List | cst.Tuple | cst.Set) -> Value:
        # Exact types: libcst's node classes are ABCs (a failed isinstance is slow, and most elements are plain).
        if type(node) is cst.Tuple and not any(type(e) is cst.StarredElement for e in node.elements):
            return Value.of(Tup(tuple(self.value(e.value).widen(1) for e in node.elements)))
        items = [
            self.value(e.value).items() if type(e) is cst.StarredElement else self.value(e.value) for e in node.elements
        ]
        return Value.of(Seq(join_all(items).widen(1) if items else BOTTOM))

    def _dict(self, node: cst.Dict) -> Value:
        values = [self.value(e.value) for e in node.elements if isinstance(e, cst.DictElement)]
        return Value.of(Mapping(join_all(values).widen(1) if values else BOTTOM))

    def _comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp) -> Value:
        self.bind_comprehension(node.for_in)
        return Value.of(Seq(self.value(node.elt).widen(1)))

    def _dict_comprehension(self, node: cst.DictComp) -> Value:
        self.bind_comprehension(node.for_in)
        return Value.of(Mapping(self.value(node.value).widen(1)))

    def bind_comprehension(self, loop: cst.CompFor | None) -> None:
        """Bind the loop targets of a comprehension (they leak into the function's names: harmless)."""
        while loop is not None:
            self.bind(loop.target, self.iterated(loop.iter))
            loop = loop.inner_for_in

    def iterated(self, node: cst.BaseExpression) -> Value:
        """What `for x in <node>` binds to `x`: the items of a list, tuple or module container, and those
        recorded for an instance of a user `list` subclass."""
        value = self.value(node)
        if self.program is None or not value.instances():
            return value.items()
        parts = []
        for atom, cond in value.atoms.items():
            items = self.program.list_items(atom.cls) if isinstance(atom, Instance) else None
            parts.append((items if items is not None else Value.of(atom).items()).under(cond))
        return join_all(parts)

    def _named_expression(self, node: cst.NamedExpr) -> Value:
        value = self.value(node.value)
        self.bind(node.target, value)
        return value

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> Value:
        func = node.func
        written = dotted(func)
        last = written.rsplit(".", 1)[-1] if written else ""
        if last in COMPILING or last in OTHER_TRACERS:
            return self._guard_call(node, func, last)
        if type(func) is cst.Attribute:  # exact types: libcst's node classes are ABCs (a failed isinstance is slow)
            receiver = self.value(func.value) if not self._is_module_path(func.value) else BOTTOM
            if receiver.only((UNKNOWN, NONE)) and func.attr.value in TENSOR_ONLY_METHODS:
                return TENSOR_VALUE  # `norm(y).abs()`: only tensors (and arrays) have these methods
            if receiver.is_tensor_like or DATA in receiver:
                method = tensor_method_value(func.attr.value, node, receiver, self)
                rest = receiver.without(*TENSOR_LIKE, DATA)
                if not rest:
                    return method
                return method.join(self._call_through(node, func, rest))
            if func.attr.value == "get" and receiver and all(isinstance(atom, Mapping) for atom in receiver):
                return self._mapping_get(node, receiver)
        if type(func) is cst.Attribute and func.attr.value in MODULE_RETURNS_SELF:
            chained = self._module_itself(func)
            if chained is not None:
                return chained
        name = self._library_name(func)
        if name is not None:
            library = library_call_value(name, node, self)
            if library is not None:
                return library
        if written == "super" and "super" not in self.env and self.self_class is not None and self.program:
            return self.env.get("self") or self.program.instance_value(self.self_class)
        if type(func) is cst.Name and func.value in ("type", "getattr") and func.value not in self.env:
            reflected = self._type_call(node) if func.value == "type" else self._getattr_call(node)
            if reflected is not None:
                return reflected
        if type(func) is cst.Name and func.value not in self.env:
            builtin = builtin_call_value(func.value, node, self)
            if builtin is not None:
                return builtin
        return self._call_through(node, func, self.value(func))

    def _mapping_get(self, node: cst.Call, mappings: Value) -> Value:
        """`{kind: self.fast}.get(kind, self.slow)` on a dict the analysis knows: the value of a key known by name
        (`**kwargs` a caller passed), else every value the dict may hold and the default (None when none is given);
        unknown for a dict of unknown values."""
        key = node.args[0].value if node.args else None
        name = string_value(key) if isinstance(key, cst.SimpleString) else None
        default = self.value(node.args[1].value) if len(node.args) > 1 else NONE_VALUE
        parts = []
        for atom, cond in mappings.atoms.items():
            assert isinstance(atom, Mapping)
            keyed = dict(atom.keyed)
            if isinstance(name, str) and name in keyed:
                parts.append(keyed[name].under(cond))
            elif UNKNOWN in atom.value:  # a dict of anything (`**kwargs` nobody named): as unknown as before
                parts.append(UNKNOWN_VALUE.under(cond))
            else:
                parts.append(atom.every_value().join(default).under(cond))
        return join_all(parts)

    def _type_call(self, node: cst.Call) -> Value | None:
        """`type(self)`: the class of an instance of a known user class (to reach its class-level methods)."""
        if len(node.args) != 1 or self.program is None:
            return None
        parts = [
            (
                self.program.class_value(atom.cls)
                if isinstance(atom, (Module, Instance)) and atom.cls
                else UNKNOWN_VALUE
            ).under(cond)
            for atom, cond in self.value(node.args[0].value).atoms.items()
        ]
        joined = join_all(parts)
        return joined if joined.classes() else None

    def _getattr_call(self, node: cst.Call) -> Value | None:
        """`getattr(obj, "name")` and a dispatch by method name through a module-level table of strings,
        `getattr(type(self), MODES[mode])`: the methods of obj's class those names give (each one may run)."""
        if len(node.args) < 2 or self.program is None:
            return None
        names = self._constant_strings(node.args[1].value)
        if not names:
            return None
        parts: list[Value] = []
        for atom, cond in self.value(node.args[0].value).atoms.items():
            if isinstance(atom, (Module, Instance, ClassObject)) and atom.cls is not None:
                bound = None if isinstance(atom, ClassObject) else atom.cls
                keys = {key for key in (self.program.method(atom.cls, name) for name in names) if key is not None}
                parts.extend(Value.of(Function(key, bound=bound), cond=cond) for key in sorted(keys))
        return join_all(parts) or None

    def _constant_strings(self, node: cst.BaseExpression) -> list[str] | None:
        """The strings an expression can only be: a literal, or an item of a module-level dict of strings."""
        if isinstance(node, cst.SimpleString):
            text = string_value(node)
            return [text] if isinstance(text, str) else None
        table = node.value if isinstance(node, cst.Subscript) else None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get":
            table = node.func.value
        if not isinstance(table, cst.Name) or table.value in self.env or self.program is None:
            return None
        return self.program.string_table(self.path, table.value)

    def _guard_call(self, node: cst.Call, func: cst.BaseExpression, last: str) -> Value:
        """A tracing guard: what the package's own definition returns when it is constant under Dynamo (a
        library's `is_tracing(x)` that checks Dynamo too is True), else what the name says: `is_compiling()`
        True, other tracers' guards (`torch.jit.is_tracing()`, `is_fx_tracing()`) False."""
        callee = UNKNOWN_VALUE if self._is_module_path(func) else self.value(func)
        if callee.functions():
            defined = self._call_through(node, func, callee)
            if defined.only((TRUE,)) or defined.only((FALSE,)):
                return defined
        return TRUE_VALUE if last in COMPILING else FALSE_VALUE

    def _module_itself(self, func: cst.Attribute) -> Value | None:
        """`Net(...).eval()`, `model.to(device)`: nn.Module methods that return the module itself (unless
        its class defines the method)."""
        receiver = self.value(func.value)
        own = self.program.method if self.program is not None else None
        for atom in receiver:
            if not isinstance(atom, Module) or (atom.cls is not None and own and own(atom.cls, func.attr.value)):
                return None
        return receiver or None

    def _is_module_path(self, node: cst.BaseExpression) -> bool:
        """`torch.nn.functional`, `np.random`: an imported module, not a value."""
        while type(node) is cst.Attribute:  # the dotted name's head, without writing the name out
            node = node.value
        if type(node) is not cst.Name:
            return False
        head = node.value
        return (
            head not in self.env
            and head in self.imports.aliases
            and (self.program is None or self.program.global_value(self.path, head) is None)
        )

    def _library_name(self, func: cst.BaseExpression) -> str | None:
        """The resolved dotted name of a call into an imported library (torch.*, np.*, math.*, ...)."""
        return self.imports.resolve(func) if self._is_module_path(func) else None

    def _call_through(self, node: cst.Call, func: cst.BaseExpression, callee: Value) -> Value:
        """A call of a value: user functions, classes and modules via the program; otherwise unknown."""
        if self.program is None:
            return _opaque_call_value(callee)
        return self.program.call_value(self, node, func, callee)

    def arguments(self, node: cst.Call) -> tuple[list[Value], dict[str, Value], Value | None]:
        """Positional values, keyword values, and what `*args` spread (a join of their items; None when the
        call has no `*args`/`**kwargs`, which hide arguments)."""
        positional: list[Value] = []
        keywords: dict[str, Value] = {}
        spread: Value | None = None
        for arg in node.args:
            if arg.star == "**":
                spread = spread or BOTTOM
                keywords.update(_forwarded_keywords(self.value(arg.value), keywords))
            elif arg.star:
                spread = (spread or BOTTOM).join(_spread_items(self.value(arg.value)))
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = self.value(arg.value)
            else:
                positional.append(self.value(arg.value))
        return positional, keywords, spread

    # -- binding -----------------------------------------------------------------------------------
    def bind(self, target: cst.BaseExpression, value: Value, record: bool = True) -> None:
        """`target = value`: names, `self.x` attributes (recorded as the class's attribute values unless
        `record` is False, as for narrowing), and tuples spread item by item."""
        value = value.under(self.cond)
        if type(target) is cst.Name:  # exact types: libcst's node classes are ABCs (a failed isinstance is slow)
            self.env[target.value] = value
        elif type(target) is cst.Attribute:
            written = dotted(target)
            if written is not None and written.startswith("self."):
                self.env[written] = value
                if record and self.program is not None and self.self_class is not None and written.count(".") == 1:
                    self.program.record_attribute(self.self_class, target.attr.value, value)
        elif type(target) is cst.Tuple or type(target) is cst.List:
            elements = target.elements
            starred = any(type(element) is cst.StarredElement for element in elements)
            for position, element in enumerate(elements):
                if type(element) is cst.StarredElement:
                    self.bind(element.value, Value.of(Seq(_unpacked(value))))
                else:
                    item = _unpacked(value) if starred else _position(value, position, len(elements))
                    self.bind(element.value, item)
        elif type(target) is cst.StarredElement:
            self.bind(target.value, Value.of(Seq(_unpacked(value))))
        self.forget()


def _position(value: Value, position: int, length: int) -> Value:
    """What the name at `position` of `a, b, c = value` gets: a tuple of that length gives its own item."""
    parts = []
    for atom, cond in value.atoms.items():
        if isinstance(atom, Tup) and len(atom.items) == length:
            parts.append(atom.items[position].under(cond))
        else:
            parts.append(_unpacked(Value({atom: cond})))
    return join_all(parts) or UNKNOWN_VALUE


def _literal_slice(node: cst.Subscript) -> slice | None:
    """`t[1:]`, `t[:-1]`, `t[1:3]`: the slice when its bounds are integer literals (or left out), else None."""
    part = node.slice[0].slice if len(node.slice) == 1 else None
    if not isinstance(part, cst.Slice) or part.step is not None:
        return None
    written = (part.lower, part.upper)
    bounds = [None if bound is None else _literal_int(bound) for bound in written]
    if any(bound is not None and value is None for bound, value in zip(written, bounds, strict=True)):
        return None  # a bound that is not an integer literal
    return slice(*bounds)


def _literal_int(node: cst.BaseExpression) -> int | None:
    negative = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
    literal = node.expression if negative else node  # type: ignore[attr-defined]
    if not isinstance(literal, cst.Integer):
        return None
    return -int(literal.value) if negative else int(literal.value)


def _tuple_item(atom: Tup, node: cst.Subscript) -> Value:
    """`t[1]` of a known tuple: that item; any other index: the join of all."""
    index = node.slice[0].slice if len(node.slice) == 1 else None
    position = _literal_int(index.value) if isinstance(index, cst.Index) else None
    if position is not None and -len(atom.items) <= position < len(atom.items):
        return atom.items[position]
    return atom.item


def _unpacked(value: Value) -> Value:
    """What each name gets in `a, b = value`: a tensor unpacks into tensors, a tuple into its items."""
    parts = []
    for atom, cond in value.atoms.items():
        if isinstance(atom, (Seq, Tup)):
            parts.append(atom.item.under(cond))
        elif atom in TENSOR_LIKE or atom == STR:
            parts.append(Value.of(atom, cond=cond))
        elif isinstance(atom, Module):
            parts.append((atom.items or Value.of(Module())).under(cond))
        else:
            parts.append(Value.of(UNKNOWN, cond=cond))
    return join_all(parts) or UNKNOWN_VALUE


def _identity(left: Value, right: Value) -> bool | None:
    """`left is right` when one side is None and the other certainly is or is not None."""
    for one, other in ((left, right), (right, left)):
        if one.only((NONE,)):
            if other.only((NONE,)):
                return True
            if NONE not in other and UNKNOWN not in other and not other.any_of((ASSUMED,)):
                return False
    return None


def _tensor_attribute(attr: str, atom: Atom) -> Value:
    if attr in TENSOR_ATTRS:
        return Value.of(atom if atom != MASK or attr not in ("grad",) else TENSOR)
    if attr == "shape":
        return SHAPE_VALUE
    if attr in SIZE_ATTRS:
        return SIZE_VALUE
    if attr.startswith("is_") or attr in ("requires_grad",):
        return BOOL_VALUE
    return OBJECT_VALUE


MODULE_CONSTANTS = {"math.pi": FLOAT_VALUE, "math.e": FLOAT_VALUE, "math.inf": FLOAT_VALUE, "numpy.pi": FLOAT_VALUE}


def _module_attribute(full: str) -> Value | None:
    """Values of well-known library attributes (`torch.float32` is a dtype, `math.pi` a float)."""
    if full in MODULE_CONSTANTS:
        return MODULE_CONSTANTS[full]
    if full.startswith("torch.") and full.count(".") == 1 and full[6:] in DTYPE_NAMES:
        return OBJECT_VALUE
    return None


DTYPE_NAMES = frozenset(
    {"float32", "float", "float64", "double", "float16", "half", "bfloat16", "int64", "long", "int32", "int",
     "int16", "int8", "uint8", "bool", "complex64", "cfloat", "complex128"}
)  # fmt: skip


def combine(left: Value, right: Value, operator: cst.BaseBinaryOp) -> Value:
    """The value of `left <op> right`, atom by atom (a tensor on either side makes a tensor)."""
    if not left or not right:
        return left or right or UNKNOWN_VALUE
    result: dict[Atom, int] = {}
    for a, ca in left.atoms.items():
        for b, cb in right.atoms.items():
            atom = _combine_atoms(a, b, operator)
            cond = ca | cb
            result[atom] = result[atom] & cond if atom in result else cond
    return Value(result)


def _combine_atoms(a: Atom, b: Atom, operator: cst.BaseBinaryOp) -> Atom:
    if a in MASKS or b in MASKS:
        logical = isinstance(operator, MASK_OPERATORS)
        other = b if a in MASKS else a
        if logical and (other in MASKS or other in BOOLS):
            return MASK if MASK in (a, b) else ASSUMED_MASK
    for one, other in ((a, b), (b, a)):
        if one in (TENSOR, NUMPY, MASK):
            return TENSOR if other in (TENSOR, MASK) or one in (TENSOR, MASK) else NUMPY
    if ASSUMED in (a, b) or ASSUMED_MASK in (a, b):
        return ASSUMED
    if DATA in (a, b):
        return DATA
    if UNKNOWN in (a, b) or NONE in (a, b):
        return UNKNOWN
    if isinstance(a, Tup) and isinstance(b, Tup) and isinstance(operator, cst.Add):
        return Tup(a.items + b.items)
    if isinstance(a, (Seq, Tup)) and isinstance(b, (Seq, Tup)):
        return Seq(a.item.join(b.item))
    if isinstance(a, (Seq, Tup)) or isinstance(b, (Seq, Tup)):
        return Seq((a if isinstance(a, (Seq, Tup)) else b).item)  # type: ignore[union-attr]  # `[x] * n`
    if STR in (a, b):
        return STR
    if a in BOOLS and b in BOOLS and isinstance(operator, MASK_OPERATORS):  # `tracing |= is_proxy(x)`
        return TRUE if _BOOL_OPERATORS[type(operator)](a == TRUE, b == TRUE) else FALSE
    numbers = (a, b)
    if FLOAT in numbers or isinstance(operator, cst.Divide):
        return FLOAT
    if SIZE in numbers:
        return SIZE
    if all(n in (INT, TRUE, FALSE) for n in numbers):
        return INT
    return UNKNOWN


_BOOL_OPERATORS: dict[type[cst.BaseBinaryOp], Callable[[bool, bool], bool]] = {
    cst.BitAnd: and_,
    cst.BitOr: or_,
    cst.BitXor: xor,
}


def _opaque_call_value(callee: Value) -> Value:
    return TENSOR_VALUE if callee.modules() else UNKNOWN_VALUE


def tensor_method_value(method: str, node: cst.Call, receiver: Value, facts: TensorFacts) -> Value:
    """The value of `t.<method>(...)` for a tensor (or numpy array) `t`."""
    cond = receiver.cond_of(TENSOR_LIKE | {DATA})
    if DATA in receiver and not receiver.is_tensor_like:
        return Value.of(DATA, cond=cond)
    if method in SCALAR_METHODS:
        return (Value.of(Seq(DATA_VALUE)) if method == "tolist" else DATA_VALUE).under(cond)
    if method == "equal":
        return DATA_VALUE.under(cond)
    if method == "size":
        return (
            (SIZE_VALUE if node.args else SHAPE_VALUE).under(cond)
            if receiver.any_of(EVIDENT_TENSORS)
            else UNKNOWN_VALUE
        )
    if method in SIZE_METHODS:
        return SIZE_VALUE if receiver.any_of(EVIDENT_TENSORS) else UNKNOWN_VALUE
    if method == "numpy":
        return NUMPY_VALUE.under(cond)
    if method in ("keys", "values", "items", "get", "register_hook", "data_ptr", "type", "stride", "dim_order"):
        return UNKNOWN_VALUE if receiver.only((ASSUMED,)) else OBJECT_VALUE
    if method in ("storage", "untyped_storage", "backward", "has_names"):
        return OBJECT_VALUE
    if method.startswith("is_"):
        return BOOL_VALUE
    if method.startswith("get_"):  # `cache.get_seq_length()`, `t.get_device()`: Python numbers
        return INT_VALUE
    if method in SEQUENCE_METHODS or (method in ("max", "min", "median", "mode") and _has_dim(node)):
        return Value.of(Seq(TENSOR_VALUE), cond=cond)
    if method == "nonzero" and any(a.keyword and a.keyword.value == "as_tuple" for a in node.args):
        return Value.of(Seq(TENSOR_VALUE), cond=cond)
    kept = NUMPY if receiver.only((NUMPY,)) else TENSOR
    if method in MASK_METHODS or (method in ("to", "type") and _to_bool(node, facts)):
        return Value.of(MASK, cond=cond)
    if method in CONTAINER_METHODS and not receiver.any_of(EVIDENT_TENSORS):
        return UNKNOWN_VALUE  # `mems.copy()` on an input only guessed to be a tensor: probably a list
    return Value.of(kept, cond=cond)


def _has_dim(node: cst.Call) -> bool:
    return any((a.keyword is None and not a.star) or (a.keyword and a.keyword.value == "dim") for a in node.args)


def _to_bool(node: cst.Call, facts: TensorFacts) -> bool:
    return any(facts.imports.resolve(arg.value) == "torch.bool" for arg in node.args)


def library_call_value(name: str, node: cst.Call, facts: TensorFacts) -> Value | None:
    """Calls into torch, numpy, einops, math...; None when the name is not one we model."""
    if name in MODULE_CONTAINERS:
        return _container_value(name, node, facts)
    if name in TORCH_GENERATOR_CLASSES:
        return Value.of(External(TORCH_GENERATOR))
    if name.startswith("torch."):
        value = torch_call_value(name)
        dtypes = [a.value for a in node.args if a.keyword and a.keyword.value == "dtype"]
        if value == TENSOR_VALUE and any(facts.imports.resolve(d) == "torch.bool" for d in dtypes):
            return MASK_VALUE
        if value == TENSOR_VALUE:
            return TENSOR_VALUE.under(_args_cond(node, facts))
        return value
    if name.startswith(NUMPY_MODULES):
        return _numpy_call_value(name, node, facts)
    if name.startswith(TENSOR_LIBRARIES):
        if name.rsplit(".", 1)[-1] in ("pack", "unpack", "unbind"):
            return Value.of(Seq(TENSOR_VALUE))
        values = [facts.value(a.value) for a in node.args]
        return TENSOR_VALUE if any(v.is_tensor_like for v in values) or not values else None
    if name.startswith(STATIC_MODULES):
        values = [facts.value(a.value) for a in node.args]
        if any(v.is_tensor_like or DATA in v for v in values):
            return Value.of(DATA, cond=_args_cond(node, facts))
        return Value.of(SIZE) if any(SIZE in v for v in values) else FLOAT_VALUE
    if name in ("collections.namedtuple", "typing.NamedTuple") and len(node.args) >= 2:
        fields = _field_names(node.args[1].value)
        return Value.of(Record(fields)) if fields else UNKNOWN_VALUE
    if name in ("logging.getLogger", "logging.get_logger") or name.endswith(".get_logger"):
        return Value.of(External("logging.Logger"))
    return None


MODULE_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.Sequential", "torch.nn.ModuleDict"})
TORCH_GENERATOR_CLASSES = frozenset({"torch.Generator", "torch._C.Generator"})
TORCH_GENERATOR = "torch.Generator()"  # an instance, in the analysis' values
RETURNS_SELF = frozenset({f"{TORCH_GENERATOR}.manual_seed"})  # library methods that return their receiver


def _spread_items(value: Value) -> Value:
    """The items `*value` passes: those of the lists and tuples it may be, unknown if it may be anything else."""
    sequences = value.sequences()
    if not sequences or len(sequences) != len(value.atoms):
        return UNKNOWN_VALUE
    return join_all(sequences)


def _forwarded_keywords(mapping: Value, explicit: dict[str, Value]) -> dict[str, Value]:
    """The keywords a `**kwargs` argument passes by name: those every mapping it may be knows (a caller's
    keyword arguments collected by the function's `**kwargs`), less the ones the call names itself."""
    maps = [atom for atom in mapping if isinstance(atom, Mapping)]
    if not maps or len(maps) != len(mapping.atoms):
        return {}
    return {key: value for key, value in common_keys(maps) if key not in explicit}


def _string_key(node: cst.Subscript) -> str | None:
    """`kwargs["bm"]`: the string constant a subscript reads, if it is one."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    key = node.slice[0].slice.value
    text = string_value(key) if isinstance(key, cst.SimpleString) else None
    return text if isinstance(text, str) else None


def _container_value(name: str, node: cst.Call, facts: TensorFacts) -> Value:
    """`nn.ModuleList([Block(c) for ...])`, `nn.Sequential(a, b)`, `nn.ModuleDict({...})`: a module that
    keeps the classes of the modules it holds (`for block in self.blocks: block.step(x)` reaches `step`)."""
    held: list[Value] = []
    for arg in node.args:
        if arg.keyword is not None:
            continue
        value = facts.value(arg.value)
        for atom in value:
            if isinstance(atom, Module):
                held.append(Value.of(atom))  # nn.Sequential(a, b)
            elif isinstance(atom, Mapping):
                held.append(atom.value)
            elif isinstance(atom, (Seq, Tup)):
                held.append(atom.item)
    modules = [atom for atom in join_all(held) if isinstance(atom, Module)]
    items = Value.of(*modules) if modules else None
    return Value.of(Module(name=name.rsplit(".", 1)[-1], items=items))


def _field_names(node: cst.BaseExpression) -> tuple[str, ...]:
    """`"a, b c"` or `["a", "b"]`: a namedtuple's fields, when written as literals."""
    text = string_value(node) if isinstance(node, cst.SimpleString) else None
    if isinstance(text, str):
        return tuple(text.replace(",", " ").split())
    if isinstance(node, (cst.List, cst.Tuple)):
        names = [string_value(e.value) for e in node.elements if isinstance(e.value, cst.SimpleString)]
        return tuple(n for n in names if isinstance(n, str)) if len(names) == len(node.elements) else ()
    return ()


def _args_cond(node: cst.Call, facts: TensorFacts) -> int:
    values = [facts.value(a.value) for a in node.args]
    tensors = [v for v in values if v.is_tensor_like]
    return join_all(tensors).cond_of(TENSOR_LIKE) if tensors else 0


def _numpy_call_value(name: str, node: cst.Call, facts: TensorFacts) -> Value:
    """Inside a region Dynamo traces numpy as tensors: numpy results on arrays, tensors and lists of
    numbers (`np.sum([1, 2])`, `np.prod(x.shape)`: measured, 2.13 and 2.14) are arrays (tensor-like);
    on Python numbers (`np.sqrt(dim)`) they are constant-folded."""
    random_object = numpy_random_object(name)
    if random_object is not None:
        return Value.of(External(random_object))
    values = [facts.value(a.value) for a in node.args]
    if name.rsplit(".", 1)[-1] in ("array", "asarray", "arange", "zeros", "ones", "linspace", "empty", "full"):
        return NUMPY_VALUE
    if any(v.any_of(EVIDENT_TENSORS) for v in values):
        return NUMPY_VALUE.under(_args_cond(node, facts))
    if values and any(_numbers(v) for v in values[:1]):
        return NUMPY_VALUE
    if any(v.any_of((ASSUMED, ASSUMED_MASK)) for v in values):
        return Value.of(ASSUMED)
    if values and all(v.only({INT, FLOAT, SIZE, TRUE, FALSE}) for v in values):
        return FLOAT_VALUE
    return UNKNOWN_VALUE


def numpy_random_object(name: str) -> str | None:
    """`np.random.SeedSequence(...)`, `np.random.default_rng(...)`: the generator object made (as the
    analysis names library instances, `numpy.random.Generator()`), or None for other numpy calls."""
    module, _, last = name.rpartition(".")
    if module not in ("numpy.random", "np.random"):
        return None
    if last == "default_rng":
        return "numpy.random.Generator()"
    return f"numpy.random.{last}()" if last[:1].isupper() else None


def _numbers(value: Value) -> bool:
    """A list or tuple of Python numbers (a literal list, a shape, a list the function appends ints to)."""
    sequences = value.sequences()
    return len(sequences) == len(value.atoms) and all(s.only(PYTHON_NUMBERS) for s in sequences)


def _fixed_container(value: Value) -> bool:
    """A module container, list, tuple, dict or string: Dynamo traces its length as a constant, not a size."""
    return bool(value) and all(isinstance(atom, (Module, Seq, Tup, Mapping, Record)) or atom == STR for atom in value)


def builtin_call_value(name: str, node: cst.Call, facts: TensorFacts) -> Value | None:
    """Python builtins called by their plain name (not shadowed by an import)."""
    if name in facts.imports.aliases:
        return None
    args = [facts.value(a.value) for a in node.args if a.keyword is None]
    first = args[0] if args else UNKNOWN_VALUE
    if name == "len":
        return INT_VALUE if _fixed_container(first) else SIZE_VALUE
    if name in SCALAR_BUILTINS:
        if first.is_tensor_like or DATA in first:
            return Value.of(DATA, cond=first.cond_of(TENSOR_LIKE | {DATA}))
        if SIZE in first:
            return SIZE_VALUE
        return BOOL_VALUE if name == "bool" else Value.of(SCALAR_BUILTINS[name])
    if name == "isinstance" and len(node.args) == 2:
        return _isinstance_value(facts.value(node.args[0].value), node.args[1].value, facts)
    if name in BOOLEAN_BUILTINS:
        return BOOL_VALUE
    if name in STRING_BUILTINS:
        return STR_VALUE
    if name in ("id", "hash"):
        return INT_VALUE
    if name == "range":
        items = join_all(args) if args else INT_VALUE
        return Value.of(Seq(Value.of(DATA) if items.is_tensor_like or DATA in items else INT_VALUE.join(items)))
    if name in SEQUENCE_BUILTINS:
        return Value.of(Seq(first.items())) if args else Value.of(Seq(BOTTOM))
    if name == "dict":
        return Value.of(Mapping(UNKNOWN_VALUE))
    if name == "enumerate":
        return Value.of(Seq(Value.of(Tup((SIZE_VALUE, first.items())))))
    if name == "zip":
        return Value.of(Seq(Value.of(Tup(tuple(a.items() for a in args)))))
    if name in REDUCING_BUILTINS:
        operands = [first.items()] if len(args) == 1 else args
        joined = join_all(operands)
        if joined.is_tensor_like:
            atom = TENSOR if joined.any_of(EVIDENT_TENSORS) else ASSUMED  # max(width, ratio) of bare parameters
            return Value.of(atom, cond=joined.cond_of(TENSOR_LIKE))
        return joined if joined else UNKNOWN_VALUE
    if name in ("print", "setattr", "delattr", "exec"):
        return NONE_VALUE
    if name in ("type", "object", "super", "vars", "globals", "locals", "getattr", "map", "filter", "next"):
        return UNKNOWN_VALUE
    return None


# nn.Module methods that return the module (`net = Net().eval()`).
MODULE_RETURNS_SELF = frozenset({"eval", "train", "to", "cpu", "cuda", "float", "double", "half", "bfloat16",
                                 "requires_grad_", "type", "apply", "share_memory", "to_empty"})  # fmt: skip

ARRAY_CLASSES = {
    "torch.Tensor": TENSOR_LIKE - {NUMPY},
    "torch.nn.Parameter": TENSOR_LIKE - {NUMPY},
    "numpy.ndarray": frozenset({NUMPY}),
}
UNDECIDED = frozenset({UNKNOWN, ASSUMED, ASSUMED_MASK, OBJECT})  # could be anything, an array included


def class_names(classes: cst.BaseExpression, imports: ImportMap) -> list[str]:
    """The resolved names in the second argument of `isinstance(x, C)` / `isinstance(x, (C, D))`."""
    elements = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
    return [imports.resolve(element) or "" for element in elements]


def _isinstance_value(subject: Value, classes: cst.BaseExpression, facts: TensorFacts) -> Value:
    """`isinstance(x, torch.Tensor)` is False for a value that certainly holds no tensor (a size, a
    tuple of ints, None), True for one that holds nothing else: so `if isinstance(...)` branches fold."""
    kinds = [ARRAY_CLASSES.get(name) for name in class_names(classes, facts.imports)]
    if not subject or any(kind is None for kind in kinds):
        return BOOL_VALUE
    accepted = frozenset().union(*kinds)  # type: ignore[arg-type]
    if subject.only(accepted) and not subject.any_of(UNDECIDED):
        return TRUE_VALUE
    if not subject.any_of(accepted | UNDECIDED) and not subject.externals():
        return FALSE_VALUE
    return BOOL_VALUE


_HANDLERS: dict[type[cst.CSTNode], Callable[[TensorFacts, cst.BaseExpression], Value]] = {
    cst.Attribute: TensorFacts._attribute,  # type: ignore[dict-item]
    cst.Call: TensorFacts._call,  # type: ignore[dict-item]
    cst.Subscript: TensorFacts._subscript,  # type: ignore[dict-item]
    cst.BinaryOperation: TensorFacts._binary,  # type: ignore[dict-item]
    cst.UnaryOperation: TensorFacts._unary,  # type: ignore[dict-item]
    cst.BooleanOperation: TensorFacts._boolean,  # type: ignore[dict-item]
    cst.Comparison: TensorFacts._comparison,  # type: ignore[dict-item]
    cst.IfExp: TensorFacts._if_expression,  # type: ignore[dict-item]
    cst.List: TensorFacts._sequence,  # type: ignore[dict-item]
    cst.Tuple: TensorFacts._sequence,  # type: ignore[dict-item]
    cst.Set: TensorFacts._sequence,  # type: ignore[dict-item]
    cst.Dict: TensorFacts._dict,  # type: ignore[dict-item]
    cst.ListComp: TensorFacts._comprehension,  # type: ignore[dict-item]
    cst.SetComp: TensorFacts._comprehension,  # type: ignore[dict-item]
    cst.GeneratorExp: TensorFacts._comprehension,  # type: ignore[dict-item]
    cst.DictComp: TensorFacts._dict_comprehension,  # type: ignore[dict-item]
    cst.NamedExpr: TensorFacts._named_expression,  # type: ignore[dict-item]
    cst.FormattedString: lambda facts, node: STR_VALUE,
    cst.Lambda: lambda facts, node: OBJECT_VALUE,
}


def dotted_code(node: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(node)


def short_code(node: cst.BaseExpression, limit: int = 40) -> str:
    """Source of `node` without outer parentheses, shortened to `limit` characters for messages."""
    text = one_line(dotted_code(node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(code: str) -> str:
    """A multi-line expression as one line, without its comments: messages are one line in every reporter."""
    if "\n" not in code:
        return code
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    lines = code.splitlines(keepends=True)
    for token in reversed(tokens):  # cut comments from the end, so earlier positions stay right
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col] + lines[row - 1][token.end[1] :]
    return " ".join(" ".join(lines).replace("\\\n", " ").split())


def receiver_code(node: cst.BaseExpression) -> str:
    """`short_code(node)`, parenthesized unless it is atomic, so `.method()` can follow it."""
    text = short_code(node)
    return text if isinstance(node, (cst.Name, cst.Call, cst.Attribute, cst.Subscript)) else f"({text})"


def without_item(node: cst.BaseExpression) -> cst.BaseExpression:
    """`x.sum().item() > 0` -> `x.sum() > 0`: a condition kept as a tensor, for a `torch.where` suggestion."""
    return node.visit(_DropItem())  # type: ignore[return-value]


class _DropItem(cst.CSTTransformer):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        func = updated_node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not updated_node.args:
            return func.value
        return updated_node


def default_param_value(param: cst.Param, annotation: Value | None, entry: bool) -> Value:
    """What an entry parameter holds when nothing calls it with known values.

    Annotated: the annotation. Un-annotated region entries take tensors, except flag-like names
    and parameters with a non-None default (their default's type); `=None` adds None.
    """
    default = param.default
    default_value = literal_value(default) if default is not None else None
    if annotation is not None and default_value is not None and default_value.only(BOOLS) and annotation.is_tensor_like:
        value = BOOL_VALUE  # `output_attentions: torch.Tensor | None = False`: the default says a flag
    elif annotation is not None:
        value = annotation
    elif default_value is not None and default_value != NONE_VALUE:
        value = _widened(default_value)
    elif default is not None and default_value is None:
        value = UNKNOWN_VALUE
    else:
        name = param.name.value
        tensor_like = entry and not name.startswith(FLAG_PREFIXES) and name not in NON_TENSOR_PARAMS
        value = Value.of(ASSUMED) if tensor_like else UNKNOWN_VALUE
    if default_value == NONE_VALUE:
        value = value.join(NONE_VALUE)
    return value


def _widened(value: Value) -> Value:
    """A default `False` says the parameter is a bool, not that it is always False."""
    return BOOL_VALUE if value.any_of(BOOLS) else value


def param_names(params: cst.Parameters) -> Sequence[cst.Param]:
    return [*params.posonly_params, *params.params, *params.kwonly_params]
