"""What an unsafe codemod must prove before it rewrites: the expressions it moves are tensors (not
merely maybe), free of side effects, and of one shape and dtype.

`signature(expr)` is a symbolic (shape, dtype, failures) of a tensor expression built only from
proven tensors, number literals and the pure, deterministic operations in the tables below (no
in-place method, no `out=`, no random op, no call into unknown code), or None. Shapes are the set
of leaves broadcast together (empty: 0-d); dtypes the set of operands promoted together, where a
Python number promotes a bool tensor to int64 (`+ 1`) or an integer one to the default float
(`* 0.5`); failures say for which dtypes an operation raises (`-` on bool, `~` on float). Two
expressions with equal signatures have the same shape, dtype and errors for every input; dtypes
are not tracked through names, so `x * 0.5` and `x` differ (they do when x holds integers).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import libcst as cst

from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.tensors import TensorFacts
from compile_lint.analysis.values import MASK, TENSOR

PROVEN_TENSORS = (TENSOR, MASK)  # not assumed-tensor parameters, numpy arrays or maybes
Dtype = frozenset[str]  # promoted together: "leaf:x", "const:float32", "py:int", "py:float"
Failure = tuple[str, Dtype]  # ("bool" | "float" | "nonfloat", dtype): raises when the dtype is that
BOOL: Dtype = frozenset({"const:bool"})
FLOATING = frozenset({"float16", "bfloat16", "float32", "float64"})
FLOATING_DTYPES = frozenset({f"const:{name}" for name in (*FLOATING, "default_float")})
INTEGRAL = frozenset({"uint8", "int8", "int16", "int32", "int64"})

# Elementwise methods and torch functions of one tensor, by how they treat dtypes (measured on
# bool, uint8, int64, float16 and float32 tensors): keep it, keep it but raise on bool, promote it
# like a Python int or float operand would, or keep it but raise on anything but floats.
KEEP = frozenset({"clone", "detach", "contiguous", "zeros_like", "ones_like"})
KEEP_NOT_BOOL = frozenset({"neg", "negative", "abs", "relu"})
AS_INT = frozenset({"square"})
AS_FLOAT = frozenset({"sigmoid", "tanh", "sin", "cos"})
FLOAT_ONLY = frozenset({"silu", "gelu"})
CASTS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
         "int": "int32", "bool": "bool"}  # fmt: skip
# Full reductions (no arguments): 0-d results, allowed in conditions only (an empty tensor makes
# `max` raise, which must not happen in a branch the original never ran).
REDUCTIONS = frozenset({"any", "all", "sum", "mean", "max", "min", "amax", "amin", "norm"})
BOOL_TESTS = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"})
BOOL_PAIRS = frozenset({"logical_and", "logical_or", "logical_xor", "eq", "ne", "gt", "lt", "ge", "le"})
FUNCTION_NAMESPACES = ("torch.", "torch.nn.functional.")


@dataclass(frozen=True)
class Signature:
    shape: frozenset[str]  # leaves broadcast together; empty: 0-d
    dtype: Dtype
    failures: frozenset[Failure] = frozenset()


def proven_tensor(facts: TensorFacts, node: cst.BaseExpression) -> bool:
    return facts.value(node).only(PROVEN_TENSORS)


def promote(*dtypes: Dtype) -> Dtype:
    members = set().union(*dtypes)
    if "py:float" in members:
        members.discard("py:int")  # (bool + 1) * 0.5 and bool * 0.5 are both the default float
    tensors = [m for m in members if not m.startswith("py:")]
    if len(tensors) == 1 and tensors[0].startswith("const:"):
        return frozenset({"const:" + _with_number(tensors[0][6:], members)})
    return frozenset(members)


def _with_number(dtype: str, members: set[str]) -> str:
    if "py:float" in members and dtype not in FLOATING:
        return "default_float"
    if "py:int" in members and dtype == "bool":
        return "int64"
    return dtype


def _failing(kind: str, dtype: Dtype) -> frozenset[Failure] | None:
    """The failure `kind` on `dtype`; None if the dtype is known and fails, empty if it cannot."""
    const = const_dtype(dtype)
    if const is None:
        return frozenset({(kind, dtype)})
    floating = const in FLOATING or const == "default_float"
    fails = {"bool": const == "bool", "float": floating, "nonfloat": not floating}[kind]
    return None if fails else frozenset()


class Prover:
    """Signatures of expressions in one place of one file (its facts and imports)."""

    def __init__(self, facts: TensorFacts, imports: ImportMap) -> None:
        self.facts = facts
        self.imports = imports

    def signature(self, node: cst.BaseExpression, reductions: bool = False) -> Signature | None:
        if isinstance(node, (cst.Name, cst.Attribute)):
            return self._leaf(node)
        if isinstance(node, cst.UnaryOperation):
            return self._unary(node, reductions)
        if isinstance(node, cst.BinaryOperation):
            return self._binary(node, reductions)
        if isinstance(node, cst.Comparison):
            return self._comparison(node, reductions)
        if isinstance(node, cst.Call):
            return self._call(node, reductions)
        return None

    def _leaf(self, node: cst.Name | cst.Attribute) -> Signature | None:
        key = dotted(node)
        if key is None or not proven_tensor(self.facts, node):
            return None
        dtype = BOOL if self.facts.value(node).only((MASK,)) else frozenset({f"leaf:{key}"})
        return Signature(frozenset({key}), dtype)

    def operand(self, node: cst.BaseExpression, reductions: bool) -> Signature | None:
        """A tensor's signature, or a number literal's (no shape; dtype py:int or py:float)."""
        number = number_literal(node)
        if number is not None:
            return Signature(frozenset(), frozenset({"py:float" if isinstance(number, float) else "py:int"}))
        return self.signature(node, reductions)

    def _unary(self, node: cst.UnaryOperation, reductions: bool) -> Signature | None:
        inner = self.signature(node.expression, reductions)
        if inner is None:
            return None
        if isinstance(node.operator, cst.Minus):
            return _with_failure(inner, "bool", inner.dtype)
        if isinstance(node.operator, cst.BitInvert):
            return _with_failure(inner, "float", inner.dtype)
        return inner if isinstance(node.operator, cst.Plus) else None

    def _binary(self, node: cst.BinaryOperation, reductions: bool) -> Signature | None:
        left, right = self.operand(node.left, reductions), self.operand(node.right, reductions)
        if left is None or right is None or not _tensor_dtype(left, right):
            return None
        operator = node.operator
        shape = left.shape | right.shape
        failures = left.failures | right.failures
        if isinstance(operator, cst.Divide):
            if not _tensor_dtype(left) or not nonzero_literal(node.right):
                return None  # a tensor divisor can be 0 where the original never divided: inf/NaN gradients
            return Signature(shape, promote(left.dtype, frozenset({"py:float"})), failures)
        if isinstance(operator, (cst.Add, cst.Multiply)):
            return Signature(shape, promote(left.dtype, right.dtype), failures)
        if isinstance(operator, cst.Subtract):
            signature: Signature | None = Signature(shape, promote(left.dtype, right.dtype), failures)
            for side in (left, right):
                if signature is not None and _tensor_dtype(side):
                    signature = _with_failure(signature, "bool", side.dtype)
            return signature
        if isinstance(operator, (cst.BitAnd, cst.BitOr, cst.BitXor)) and _tensor_dtype(left, right):
            signature = Signature(shape, promote(left.dtype, right.dtype), failures)
            for side in (left, right):
                if signature is not None:
                    signature = _with_failure(signature, "float", side.dtype)
            return signature
        return None

    def _comparison(self, node: cst.Comparison, reductions: bool) -> Signature | None:
        if len(node.comparisons) != 1:
            return None  # `a < t < b` is a Python `and`
        target = node.comparisons[0]
        if not isinstance(target.operator, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual,
                                            cst.GreaterThanEqual, cst.Equal, cst.NotEqual)):  # fmt: skip
            return None
        left, right = self.operand(node.left, reductions), self.operand(target.comparator, reductions)
        if left is None or right is None or not _tensor_dtype(left, right):
            return None
        return Signature(left.shape | right.shape, BOOL, left.failures | right.failures)

    def _call(self, node: cst.Call, reductions: bool) -> Signature | None:
        if any(arg.keyword is not None or arg.star for arg in node.args):
            return None  # `out=`, `dim=`, `inplace=True`...: none of the tables' forms
        func = node.func
        full = self.imports.resolve(func)
        if full is not None and full.startswith(FUNCTION_NAMESPACES):
            name = full.rpartition(".")[2]
            operands = [arg.value for arg in node.args]
        elif isinstance(func, cst.Attribute):
            name = func.attr.value
            operands = [func.value, *(arg.value for arg in node.args)]
        else:
            return None
        if len(operands) == 2 and name in BOOL_PAIRS:
            left, right = self.operand(operands[0], reductions), self.operand(operands[1], reductions)
            if left is None or right is None or not _tensor_dtype(left, right):
                return None
            return Signature(left.shape | right.shape, BOOL, left.failures | right.failures)
        if len(operands) == 2 and name == "type_as":
            receiver, like = self.signature(operands[0], reductions), self.signature(operands[1], reductions)
            if receiver is None or like is None:
                return None
            return Signature(receiver.shape, like.dtype, receiver.failures | like.failures)
        if len(operands) != 1:
            return None
        inner = self.signature(operands[0], reductions)
        if inner is None:
            return None
        return _method(name, inner, reductions)


def _method(name: str, inner: Signature, reductions: bool) -> Signature | None:
    if name in KEEP:
        return inner
    if name in KEEP_NOT_BOOL:
        return _with_failure(inner, "bool", inner.dtype)
    if name in AS_INT:
        return Signature(inner.shape, promote(inner.dtype, frozenset({"py:int"})), inner.failures)
    if name in AS_FLOAT:
        return Signature(inner.shape, promote(inner.dtype, frozenset({"py:float"})), inner.failures)
    if name in FLOAT_ONLY:
        return _with_failure(inner, "nonfloat", inner.dtype)
    if name in CASTS:
        return Signature(inner.shape, frozenset({"const:" + CASTS[name]}), inner.failures)
    if name in BOOL_TESTS:
        return Signature(inner.shape, BOOL, inner.failures)
    if reductions and name in REDUCTIONS:
        return _reduction(name, inner)
    return None


def _reduction(name: str, inner: Signature) -> Signature | None:
    """The 0-d result of a full reduction: max/min keep the dtype, mean/norm need floats, sum makes
    bools and integers int64, any/all give bool (uint8 for uint8)."""
    if name in ("mean", "norm"):
        floats_only = _with_failure(inner, "nonfloat", inner.dtype)
        if floats_only is None:
            return None
        inner = floats_only
    const = const_dtype(inner.dtype)
    dtype = inner.dtype
    if name in ("any", "all"):
        dtype = frozenset({f"{name}-of:{','.join(sorted(dtype))}"}) if const is None else BOOL
        if const == "uint8":
            dtype = inner.dtype
    elif name == "sum" and const not in FLOATING | {"default_float"}:
        dtype = frozenset({f"sum-of:{','.join(sorted(dtype))}"}) if const is None else frozenset({"const:int64"})
    return Signature(frozenset(), dtype, inner.failures)


def const_dtype(dtype: Dtype) -> str | None:
    """The dtype's name when it is known (`const:float32` -> `float32`)."""
    only = next(iter(dtype)) if len(dtype) == 1 else ""
    return only[6:] if only.startswith("const:") else None


def _tensor_dtype(*signatures: Signature) -> bool:
    """Some operand is a tensor (not only Python numbers)."""
    return any(not m.startswith("py:") for s in signatures for m in s.dtype)


def _with_failure(signature: Signature, kind: str, dtype: Dtype) -> Signature | None:
    failures = _failing(kind, dtype)
    if failures is None:
        return None
    return Signature(signature.shape, signature.dtype, signature.failures | failures)


def number_literal(node: cst.BaseExpression) -> int | float | None:
    """The value of `3`, `-0.5`, `1e-3` (no bools, no names)."""
    sign = 1
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        sign, node = -1, node.expression
    if isinstance(node, (cst.Integer, cst.Float)) and not node.lpar:
        return sign * node.evaluated_value
    return None


def nonzero_literal(node: cst.BaseExpression) -> bool:
    number = number_literal(node)
    return number is not None and number != 0


def exact_in_every_dtype(node: cst.BaseExpression) -> bool:
    """A literal a tensor comparison treats exactly as Python does, whatever the tensor's dtype:
    an int from 0 to 127 (fits uint8 and int8), or a float bfloat16 and float16 both hold exactly
    (torch casts the number to a float tensor's dtype before comparing)."""
    number = number_literal(node)
    if isinstance(number, int):
        return 0 <= number <= 127
    if number is None or number != number or abs(number) == float("inf"):
        return False
    if number == 0:
        return True
    ratio = Fraction(number)
    numerator, denominator = abs(ratio.numerator), ratio.denominator
    while numerator % 2 == 0:
        numerator //= 2
    return numerator < 2**8 and denominator <= 2**14 and abs(number) <= 65504


def mutated_in(node: cst.CSTNode) -> set[str]:
    """Dotted names changed in place somewhere under `node`: `x.add_(1)`, `x += 1`, `x[i] = v`,
    `torch.add(a, b, out=x)`."""
    found: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._add(node.target)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            if isinstance(node.target, cst.Subscript):
                self._add(node.target.value)

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and _in_place(func.attr.value):
                self._add(func.value)
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "out":
                    self._add(arg.value)

        def _add(self, target: cst.BaseExpression) -> None:
            """`x.data[0]` changes `x.data` and `x`: every prefix of the dotted name under the subscripts."""
            while isinstance(target, cst.Subscript):
                target = target.value
            name = dotted(target)
            parts = name.split(".") if name is not None else []
            found.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))

    node.visit(_Collect())
    return found


def _in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")


# Calls that may hand back their operand itself or a view of it (`x.float()` of a float32 x is x).
ALIASING = frozenset({"detach", "contiguous", "type_as", *CASTS})


def may_alias(node: cst.BaseExpression) -> bool:
    """Could the value be an existing tensor (or share its memory) rather than a new one?"""
    if isinstance(node, (cst.Name, cst.Attribute)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Plus):
        return True
    func = node.func if isinstance(node, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value in ALIASING
