"""TCL107: a tensor used where Python needs an int: a slice bound, a size or shape argument, `range()`."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import FALSE, FLOAT, INT, NUMPY, SIZE, TRUE
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import TorchVersion

ITEM = "GB0124"  # Unsupported Tensor.item() call with capture_scalar_outputs=False
DATA_DEPENDENT = "GB0033"  # Data dependent operator
BUILTIN = "GB0059"  # Failed to trace builtin operator (range() on torch 2.13)
# torch functions whose positional arguments are sizes (`torch.zeros(n, 3)`, `torch.full((n,), 0.0)`).
SIZE_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "arange"})
# numpy functions whose first argument is a shape (Dynamo traces numpy as tensors inside a region).
NUMPY_FACTORIES = frozenset({"zeros", "ones", "empty", "full"})
# Tensor methods whose positional arguments are sizes, or (narrow) a start and a length.
SIZE_METHODS = frozenset({"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "new_full"})
NARROW = "narrow"
ONE_HOT = "torch.nn.functional.one_hot"  # one_hot(tensor, num_classes): the class count is the last dim's size
FILLED = frozenset({"full", "new_full"})  # the second argument is the fill value, not a size
CONSTANT_TENSORS = frozenset({"torch.tensor", "torch.as_tensor"})
NUMBERS = (SIZE, INT, FLOAT, TRUE, FALSE)  # Python numbers: sizes, ints, literals


def range_code(version: TorchVersion) -> str:
    """Measured: `range(t)` fails in the range builtin on torch 2.13, and reads `.item()` on 2.14."""
    return BUILTIN if version < (2, 14) else ITEM


def is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return is_literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and is_literal(e.value) for e in node.elements)
    return False


def _keyword(node: cst.Call, name: str) -> cst.Arg | None:
    return next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == name), None)


class TensorAsSize(Rule):
    code = "TCL107"
    name = "tensor-as-size"
    summary = "A tensor used as a slice bound, a size/shape argument or a `range()` bound breaks the graph"
    gb_codes = (ITEM, DATA_DEPENDENT, BUILTIN)
    fix = (
        "Keep sizes Python ints (from `x.shape`, `len()`, or arguments), or mask instead of slicing: "
        "`torch.where(torch.arange(len(x)) < n, x, 0)`."
    )
    what = (
        "Flags tensors computed in the region used as slice bounds (`x[:n]`), as size or shape arguments "
        "(`torch.zeros(n)`, `torch.full((n,), v)`, `x.view(n, -1)`, `x.reshape(n)`, `x.expand(n, 4)`, "
        "`x.new_zeros(n)`, `x.repeat(n, 1)`, `x.narrow(0, 0, n)`, `torch.arange(n)`, `np.zeros((k, n))`, the class "
        "count of `F.one_hot(idx, n)`) and "
        "as `range()` bounds. numpy results count as tensors: in a region Dynamo traces numpy as tensor ops, "
        "on tensors and on lists of numbers (`np.sum(counts)`, `np.prod(x.shape)`). A tensor made from literals (`n = torch.tensor(3)`) is not flagged, nor are un-annotated "
        "parameters (often ints), nor a tensor torch computes from Python ints only "
        "(`torch.div(x.size(1), 2, rounding_mode='trunc')`): Dynamo folds it to a constant while the sizes are "
        "static (it breaks, GB0033, once they are dynamic, which the static pass does not predict)."
    )
    why = (
        "A size or a slice bound must be a Python int, and a tensor holds its value only at run time. "
        "Measured with torch 2.13 and 2.14: a slice bound reads it with `.item()` (GB0124) at an instruction "
        "Dynamo cannot resume from, so the rest of the function runs eagerly; size and shape "
        "arguments are data-dependent operators (GB0033), and `range(t)` fails in the builtin on 2.13 "
        "(GB0059) and reads `.item()` on 2.14 (GB0124). A tensor built from literals is a constant to "
        "Dynamo: as a size it traces, but as a slice bound it makes Dynamo skip the whole frame."
    )
    example = "@torch.compile\ndef f(x):\n    n = (x > 0).sum()\n    return x[:n]\n"
    fixed_example = (
        "@torch.compile\ndef f(x):\n    keep = torch.arange(x.shape[0]) < (x > 0).sum()\n"
        "    return torch.where(keep, x, 0)\n"
    )
    invalid = (
        Example("@torch.compile\ndef f(x):\n    n = x.sum().long()\n    return torch.zeros(n, 3)\n"),
        Example("class M(nn.Module):\n    def forward(self, x):\n        rows = x.argmax()\n        return x.view(rows, -1)\n"),
        Example("@torch.compile\ndef f(x):\n    steps = x.max().long()\n    for _ in range(steps):\n        x = x * 2\n    return x\n"),
        Example("@torch.compile\ndef f(idx):\n    return torch.nn.functional.one_hot(idx, max(idx.max() + 1, 4))[..., :4]\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x, n):\n    return x[:n] + torch.zeros(n)\n"),
        Example("@torch.compile\ndef f(x):\n    half = x.shape[0] // 2\n    return x[:half].view(half, -1)\n"),
        Example("@torch.compile\ndef f(x):\n    n = torch.tensor(3)\n    return torch.zeros(n) + x.sum()\n"),
        Example("@torch.compile\ndef f(idx, x):\n    return torch.nn.functional.one_hot(idx, x.shape[-1]) * x\n"),
    )  # fmt: skip

    def _constants(self, ctx: RuleContext) -> set[str]:
        return ctx.names(self, "constant-tensors")

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        value = node.value
        literal = (
            isinstance(value, cst.Call)
            and ctx.resolve(value.func) in CONSTANT_TENSORS
            and bool(value.args)
            and is_literal(value.args[0].value)
        )
        constant = literal or self._from_numbers(value, ctx)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if constant:
                    self._constants(ctx).add(target.target.value)
                else:
                    self._constants(ctx).discard(target.target.value)

    def _from_numbers(self, node: cst.BaseExpression, ctx: RuleContext) -> bool:
        """A tensor computed by torch from Python numbers only (`torch.div(x.size(1), 2, rounding_mode="trunc")`,
        and arithmetic on it): Dynamo folds it to a constant while the sizes are static (measured: no break)."""
        if isinstance(node, cst.Name):
            return node.value in self._constants(ctx)
        if isinstance(node, cst.UnaryOperation):
            return self._from_numbers(node.expression, ctx)
        if isinstance(node, cst.BinaryOperation):
            sides = (node.left, node.right)
            folded = [self._from_numbers(side, ctx) for side in sides]
            return any(folded) and all(
                f or ctx.facts.value(s).only(NUMBERS) for f, s in zip(folded, sides, strict=True)
            )
        if not isinstance(node, cst.Call) or not (ctx.resolve(node.func) or "").startswith("torch."):
            return False
        values = [arg.value for arg in node.args if not arg.star and arg.keyword is None]
        return bool(values) and all(
            ctx.facts.value(value).only(NUMBERS) or self._from_numbers(value, ctx) for value in values
        )

    def _runtime_tensor(self, node: cst.BaseExpression, ctx: RuleContext) -> bool:
        if self._from_numbers(node, ctx):
            return False
        return ctx.facts.is_tensor(node) and ctx.facts.has_evidence(node)

    def _first_tensor(self, values: list[cst.BaseExpression], ctx: RuleContext) -> cst.BaseExpression | None:
        for value in values:
            if isinstance(value, (cst.Tuple, cst.List)):
                inner = [e.value for e in value.elements if isinstance(e, cst.Element)]
                found = self._first_tensor(inner, ctx)
                if found is not None:
                    return found
            elif self._runtime_tensor(value, ctx):
                return value
        return None

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        if not ctx.facts.is_tensor(node.value):
            return
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Slice):
                continue
            bound = self._first_tensor([b for b in (index.lower, index.upper, index.step) if b is not None], ctx)
            if bound is not None and ctx.facts.value(bound).only((NUMPY,)):
                ctx.report(
                    self,
                    node,
                    f"The slice bound `{short_code(bound)}` is a numpy value, which Dynamo traces as a tensor: "
                    f"slicing `{short_code(node.value)}` with it is data-dependent ({DATA_DEPENDENT})",
                    gb_codes=(DATA_DEPENDENT,),
                    fix=f"Compute `{short_code(bound)}` with Python ints (e.g. `sum(...)` over a list or tuple "
                    "attribute), or slice outside the compiled region.",
                )
                return
            if bound is not None:
                ctx.report(
                    self,
                    node,
                    f"The slice bound `{short_code(bound)}` is a tensor: Dynamo reads it with `.item()` to "
                    f"slice `{short_code(node.value)}`; Dynamo cannot resume after it, so the rest of the function "
                    f"runs eagerly ({ITEM})",
                    gb_codes=(ITEM,),
                )
                return

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        sizes = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        full = ctx.resolve(func) or ""
        if isinstance(func, cst.Name) and func.value == "range" and "range" not in ctx.imports.aliases:
            code, what, op = range_code(ctx.torch_version), "a `range()` bound", "range"
        elif full.startswith("torch.") and full.count(".") == 1 and full.split(".")[1] in SIZE_FACTORIES:
            op = full.split(".")[1]
            code, what = DATA_DEPENDENT, f"a size of `{full}`"
        elif full.startswith("numpy.") and full.count(".") == 1 and full.split(".")[1] in NUMPY_FACTORIES:
            op = full.split(".")[1]  # traced as torch._numpy: the shape must be ints, as for torch.zeros
            code, what = DATA_DEPENDENT, f"a size of `{full}`"
            sizes = sizes[:1]
        elif full == ONE_HOT:
            op, code, what = "one_hot", DATA_DEPENDENT, "the class count of `F.one_hot`"
            classes = _keyword(node, "num_classes")
            sizes = sizes[1:2] if classes is None else [classes.value]
        elif isinstance(func, cst.Attribute) and func.attr.value in (*SIZE_METHODS, NARROW):
            if not ctx.facts.is_tensor(func.value):
                return
            op = func.attr.value
            code, what = DATA_DEPENDENT, f"a size given to `.{op}()`"
        else:
            return
        if op in FILLED:
            sizes = sizes[:1]
        elif op == NARROW:
            sizes = sizes[1:]  # narrow(dim, start, length): start and length
        size = self._first_tensor(sizes, ctx)
        if size is not None:
            ctx.report(
                self,
                node,
                f"`{short_code(size)}` is a tensor used as {what}, which must be a Python int: the graph breaks "
                f"here ({code})",
                gb_codes=(code,),
            )


RULE = TensorAsSize()
