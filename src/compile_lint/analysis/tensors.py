"""Which expressions are tensors: a light, flow-insensitive, intra-procedural inference.

Shapes, dtypes, devices, `dim()`, `numel()`, `len()`, `requires_grad`, `self.training` and
`is None` checks are Python values that Dynamo guards on; they never make a branch data-dependent.
"""

from __future__ import annotations

import enum

import libcst as cst

from compile_lint.analysis.names import ImportMap


class Kind(enum.Enum):
    TENSOR = "tensor"
    SCALAR = "scalar"  # a Python number read out of a tensor (`.item()`, `int(t)`): data-dependent
    STR = "str"
    MODULE = "module"  # an nn.Module-like callable (`self.proj`, `for layer in self.layers`)
    OTHER = "other"  # a known Python value (shape, dtype, literal, ...)
    UNKNOWN = "unknown"


TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
PYTHON_METHODS = frozenset(
    {
        "size", "dim", "ndimension", "numel", "nelement", "element_size", "stride", "get_device",
        "data_ptr", "storage_offset", "type", "dim_order", "numpy", "storage", "untyped_storage",
        "__len__", "has_names", "register_hook", "backward", "keys", "values", "items", "get",
    }
)  # fmt: skip
SCALAR_METHODS = frozenset({"item", "tolist"})
TORCH_NON_TENSOR_NAMESPACES = frozenset(
    {
        "cuda", "backends", "compiler", "_dynamo", "jit", "distributed", "utils", "fx", "export",
        "library", "profiler", "overrides", "testing", "onnx", "hub", "mps", "cpu", "xpu", "_C",
        "_logging", "_inductor", "amp", "optim", "multiprocessing", "package", "ao", "config",
    }
)  # fmt: skip
TORCH_NON_TENSOR_FUNCS = frozenset(
    {
        "manual_seed", "seed", "initial_seed", "no_grad", "enable_grad", "inference_mode", "device",
        "dtype", "finfo", "iinfo", "compile", "typename", "promote_types", "result_type", "can_cast",
        "broadcast_shapes", "numel", "autocast", "save", "load", "cond", "Size", "Generator",
    }
)  # fmt: skip
TENSOR_BUILTINS = frozenset({"max", "min", "abs", "sum", "pow", "round"})
SCALAR_BUILTINS = frozenset({"int", "float", "bool", "complex"})
PYTHON_BUILTINS = frozenset(
    {"len", "isinstance", "hasattr", "getattr", "type", "str", "repr", "range", "id", "hash", "list",
     "tuple", "dict", "set", "enumerate", "zip", "sorted", "print", "callable", "format"}
)  # fmt: skip
# Calls whose result is a boolean tensor (a mask): `x[mask]` then has a data-dependent size.
MASK_METHODS = frozenset(
    {
        "bool", "eq", "ne", "gt", "lt", "ge", "le", "greater", "less", "greater_equal", "less_equal",
        "not_equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "isclose", "isin",
        "signbit", "logical_and", "logical_or", "logical_xor", "logical_not",
    }
)  # fmt: skip
MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)
# Un-annotated parameters are taken as tensors, except flag-like names such as `return_dict=None`.
FLAG_PREFIXES = ("output_", "return_", "use_", "is_", "has_", "do_", "enable_", "num_", "n_")
NON_TENSOR_PARAMS = frozenset({"device", "dtype"})  # `str(device)` is not a tensor's text


def torch_call_kind(full_name: str) -> Kind:
    """Kind of the value returned by calling `torch.<...>` (a resolved dotted name)."""
    parts = full_name.split(".")
    if len(parts) < 2 or parts[0] != "torch":
        return Kind.UNKNOWN
    last = parts[-1]
    if parts[1] == "nn":
        return Kind.TENSOR if len(parts) > 3 and parts[2] == "functional" else Kind.MODULE
    if parts[1] in TORCH_NON_TENSOR_NAMESPACES or last in TORCH_NON_TENSOR_FUNCS:
        return Kind.OTHER
    if last.startswith(("is_", "get_", "set_", "use_")) or last[:1].isupper():
        return Kind.OTHER
    return Kind.TENSOR


def is_tensor_annotation(annotation: cst.Annotation | None) -> bool | None:
    """True for `Tensor`-like annotations, False for other annotations, None when absent."""
    if annotation is None:
        return None
    return "Tensor" in dotted_code(annotation.annotation)


class TensorFacts:
    """What each local name holds, and the kind of any expression built from them."""

    def __init__(self, imports: ImportMap, methods: frozenset[str] = frozenset()) -> None:
        self.imports = imports
        self.methods = methods  # methods of the enclosing class: `self.m(...)` is a helper call
        self.names: dict[str, Kind] = {}
        self.masks: set[str] = set()  # names currently bound to a boolean tensor
        self.assumed: set[str] = set()  # tensors only because they are un-annotated parameters (see has_evidence)
        self._memo: dict[int, Kind] = {}

    def add_params(self, params: cst.Parameters) -> None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            name = param.name.value
            if name in ("self", "cls"):
                continue
            self.names[name] = kind = self._param_kind(param)
            if kind is Kind.TENSOR and param.annotation is None:
                self.assumed.add(name)

    def _param_kind(self, param: cst.Param) -> Kind:
        annotated = is_tensor_annotation(param.annotation)
        if annotated is not None:
            if annotated:
                return Kind.TENSOR
            assert param.annotation is not None
            return Kind.STR if dotted_code(param.annotation.annotation) == "str" else Kind.OTHER
        name = param.name.value
        default = param.default
        if isinstance(default, (cst.SimpleString, cst.ConcatenatedString)):  # mode="train"
            return Kind.STR
        if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
            return Kind.OTHER
        if name.startswith(FLAG_PREFIXES) or name in NON_TENSOR_PARAMS:
            return Kind.OTHER
        return Kind.TENSOR

    def bind(self, target: cst.BaseExpression, kind: Kind, value: cst.BaseExpression | None = None) -> None:
        """Record an assignment `target = value` of `kind` (tuples spread the kind to each name)."""
        if isinstance(target, cst.Name):
            self.names[target.value] = kind
            if value is not None and self.is_mask(value):
                self.masks.add(target.value)
            else:
                self.masks.discard(target.value)
            if kind is Kind.TENSOR and value is not None and not self.has_evidence(value):
                self.assumed.add(target.value)
            else:
                self.assumed.discard(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            element_kind = kind if kind in (Kind.TENSOR, Kind.MODULE) else Kind.UNKNOWN
            for element in target.elements:
                self.bind(element.value, element_kind)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, Kind.UNKNOWN)

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return self.kind(node) is Kind.TENSOR

    def may_be_tensor(self, node: cst.BaseExpression) -> bool:
        """A tensor, or nothing known against it: for calls only tensors have (`.item()`, `.storage()`)."""
        return self.kind(node) in (Kind.TENSOR, Kind.UNKNOWN)

    def has_evidence(self, node: cst.BaseExpression) -> bool:
        """A tensor for a reason beyond un-annotated parameters being taken as tensors: a torch call, a tensor
        method, a `Tensor` annotation. `int(width * ratio)` on bare parameters has none (they are often numbers)."""
        if isinstance(node, cst.Name):
            return self.kind(node) is Kind.TENSOR and node.value not in self.assumed
        if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
            return self.has_evidence(node.left) or self.has_evidence(node.right)
        if isinstance(node, cst.Comparison):
            return self.has_evidence(node.left) or any(self.has_evidence(t.comparator) for t in node.comparisons)
        if isinstance(node, cst.UnaryOperation):
            return self.has_evidence(node.expression)
        if isinstance(node, (cst.Subscript, cst.Attribute, cst.NamedExpr)):
            return self.has_evidence(node.value)
        if isinstance(node, cst.IfExp):
            return self.has_evidence(node.body) or self.has_evidence(node.orelse)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in TENSOR_BUILTINS:
            return any(self.has_evidence(arg.value) for arg in node.args)  # max(a, b) of bare parameters
        return self.kind(node) is Kind.TENSOR

    def is_mask(self, node: cst.BaseExpression) -> bool:
        """True if `node` is certainly a boolean tensor: a tensor comparison, `~m`, `m & n`, `t.bool()`..."""
        if isinstance(node, cst.Name):
            return node.value in self.masks
        if isinstance(node, cst.Comparison):
            return self.kind(node) is Kind.TENSOR
        if isinstance(node, cst.UnaryOperation):
            return isinstance(node.operator, cst.BitInvert) and self.is_mask(node.expression)
        if isinstance(node, cst.BinaryOperation):
            both = self.is_mask(node.left) and self.is_mask(node.right)
            return isinstance(node.operator, MASK_OPERATORS) and both
        if isinstance(node, cst.NamedExpr):
            return self.is_mask(node.value)
        if isinstance(node, cst.Call):
            return self._is_mask_call(node)
        return False

    def _is_mask_call(self, node: cst.Call) -> bool:
        dtypes = [arg.value for arg in node.args if arg.keyword and arg.keyword.value == "dtype"]
        if any(self._is_bool_dtype(dtype) for dtype in dtypes):
            return self.kind(node) is Kind.TENSOR  # torch.zeros(n, dtype=torch.bool), t.to(dtype=torch.bool)
        func = node.func
        full = self.imports.resolve(func)
        if full is not None and full.startswith("torch."):
            return full.rsplit(".", 1)[-1] in MASK_METHODS and self.kind(node) is Kind.TENSOR
        if not isinstance(func, cst.Attribute) or self.kind(func.value) is not Kind.TENSOR:
            return False
        if func.attr.value in ("to", "type"):  # t.to(torch.bool)
            return bool(node.args) and self._is_bool_dtype(node.args[0].value)
        return func.attr.value in MASK_METHODS

    def _is_bool_dtype(self, node: cst.BaseExpression) -> bool:
        return self.imports.resolve(node) == "torch.bool"

    def kind(self, node: cst.BaseExpression) -> Kind:
        key = id(node)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._kind(node)
        return found

    def _kind(self, node: cst.BaseExpression) -> Kind:
        if isinstance(node, cst.Name):
            return self.names.get(node.value, Kind.UNKNOWN)
        if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary)):
            return Kind.OTHER
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return Kind.STR
        if isinstance(node, cst.Attribute):
            return self._attribute_kind(node)
        if isinstance(node, cst.Call):
            return self._call_kind(node)
        if isinstance(node, cst.Subscript):
            base = self.kind(node.value)
            return base if base in (Kind.TENSOR, Kind.MODULE) else Kind.UNKNOWN
        if isinstance(node, cst.BinaryOperation):
            return self._combine(self.kind(node.left), self.kind(node.right))
        if isinstance(node, cst.UnaryOperation):
            if isinstance(node.operator, cst.Not):
                return Kind.OTHER
            return self.kind(node.expression)
        if isinstance(node, cst.Comparison):
            return self._comparison_kind(node)
        if isinstance(node, cst.BooleanOperation):
            return self._combine(self.kind(node.left), self.kind(node.right))
        if isinstance(node, cst.IfExp):
            return self._combine(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, cst.NamedExpr):
            return self.kind(node.value)
        return Kind.UNKNOWN

    @staticmethod
    def _combine(left: Kind, right: Kind) -> Kind:
        if Kind.TENSOR in (left, right):
            return Kind.TENSOR
        if Kind.SCALAR in (left, right):
            return Kind.SCALAR
        if left is right:
            return left
        return Kind.UNKNOWN

    def _comparison_kind(self, node: cst.Comparison) -> Kind:
        if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in node.comparisons):
            return Kind.OTHER
        kinds = [self.kind(node.left), *(self.kind(t.comparator) for t in node.comparisons)]
        if Kind.STR in kinds:  # `mode == "train"`: a string is never compared with a tensor
            return Kind.OTHER
        if Kind.TENSOR in kinds:
            return Kind.TENSOR
        return Kind.SCALAR if Kind.SCALAR in kinds else Kind.OTHER

    def _attribute_kind(self, node: cst.Attribute) -> Kind:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            return Kind.OTHER if node.attr.value == "training" else Kind.UNKNOWN
        base = self.kind(node.value)
        if base is Kind.TENSOR:
            return Kind.TENSOR if node.attr.value in TENSOR_ATTRS else Kind.OTHER
        return Kind.UNKNOWN

    def _call_kind(self, node: cst.Call) -> Kind:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            receiver = func.value
            if isinstance(receiver, cst.Name) and receiver.value == "self":
                return Kind.UNKNOWN if method in self.methods else Kind.TENSOR
            full = self.imports.resolve(func)
            if full is not None and full.startswith("torch."):
                return torch_call_kind(full)
            receiver_kind = self.kind(receiver)
            if receiver_kind is Kind.TENSOR:
                if method in SCALAR_METHODS:
                    return Kind.SCALAR
                return Kind.OTHER if method in PYTHON_METHODS or method.startswith(("is_", "get_")) else Kind.TENSOR
            if receiver_kind is Kind.MODULE:
                return Kind.TENSOR if method == "forward" else Kind.UNKNOWN
            return Kind.UNKNOWN
        if isinstance(func, cst.Name):
            return self._named_call_kind(func, node)
        if self.kind(func) is Kind.MODULE:  # self.layers[i](x)
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _named_call_kind(self, func: cst.Name, node: cst.Call) -> Kind:
        name = func.value
        if self.names.get(name) is Kind.MODULE:
            return Kind.TENSOR
        full = self.imports.resolve(func) or name
        if full.startswith("torch."):
            return torch_call_kind(full)
        args = [arg.value for arg in node.args]
        if name in SCALAR_BUILTINS:
            return Kind.SCALAR if args and self.kind(args[0]) in (Kind.TENSOR, Kind.SCALAR) else Kind.OTHER
        if name in TENSOR_BUILTINS:
            return Kind.TENSOR if any(self.is_tensor(a) for a in args) else Kind.UNKNOWN
        if name in PYTHON_BUILTINS:
            return Kind.STR if name in ("str", "repr", "format") else Kind.OTHER
        return Kind.UNKNOWN


def dotted_code(node: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(node)


def short_code(node: cst.BaseExpression, limit: int = 40) -> str:
    """Source of `node` without outer parentheses, shortened to `limit` characters for messages."""
    text = dotted_code(node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
