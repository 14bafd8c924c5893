"""TCL601: a numpy function called directly on a tensor gives a different result once compiled."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import dotted_code, receiver_code, short_code
from compile_lint.analysis.values import MASK, TENSOR
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

# Measured with torch 2.13 / numpy 2 on a float tensor: eager numpy dispatches these to the tensor's
# own method with numpy keywords (`t.sum(axis=None, out=None)`) and raises TypeError, while
# Dynamo traces them with numpy semantics and returns an ndarray.
EAGER_RAISES = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "flip"})
# Measured to give the same type and values eager and compiled: explicit conversions and a few
# functions that convert their inputs to arrays first.
SAME_RESULT = frozenset(
    {
        "array", "asarray", "asanyarray", "ascontiguousarray", "copy", "sort", "ravel", "expand_dims",
        "dot", "where", "concatenate", "stack", "zeros_like", "ones_like",
    }
)  # fmt: skip


def _argument_code(arg: cst.Arg) -> str:
    return dotted_code(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)).strip()  # type: ignore[arg-type]


TORCH_TENSORS = (TENSOR, MASK)


class NumpyOnTensor(Rule):
    code = "TCL601"
    name = "numpy-on-tensor"
    summary = "A numpy function called on a tensor returns something else once compiled"
    gb_codes = ()
    fix = "Call the torch op on the tensor (`t.sum()`, `torch.sin(t)`), or convert first: `np.sum(t.numpy())`."
    what = (
        "Flags calls of numpy functions (`np.sum(t)`, `np.sin(t)`, `np.argmax(t)`, ...) whose first "
        "argument is a tensor, inside compiled regions. A bare un-annotated parameter is not enough "
        "evidence (it is often a number or an array): the argument must come from torch or be annotated. Calls on an explicit conversion "
        "(`np.sin(t.numpy())`) and conversions themselves (`np.asarray(t)`) are fine."
    )
    why = (
        "There is no graph break, but the compiled function no longer computes what the eager one "
        "does. Dynamo traces numpy calls with numpy semantics (via `torch._numpy`) and returns a "
        "`numpy.ndarray`, while eagerly numpy hands the tensor back to torch: ufuncs such as `np.sin(t)` "
        "return a `torch.Tensor`, and reductions such as `np.sum(t)` call `t.sum(axis=...)` and raise "
        "TypeError. Code that works compiled can fail or change type when compilation is turned off "
        "(or falls back to eager after a break), and the other way round."
    )
    example = (
        "import numpy as np\n\n@torch.compile\ndef f(x: torch.Tensor):\n    total = np.sum(x)\n    return x / total\n"
    )
    fixed_example = (
        "import numpy as np\n\n@torch.compile\ndef f(x: torch.Tensor):\n    total = x.sum()\n    return x / total\n"
    )
    invalid = (
        Example("import numpy as np\n\n@torch.compile\ndef f(x: torch.Tensor):\n    return np.sum(x)\n"),
        Example("import numpy\n\nclass M(nn.Module):\n    def forward(self, x):\n        return numpy.sin(x.cos())\n"),
    )
    valid = (
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return np.sin(x.numpy())\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return np.asarray(x)\n"),
        Example("import numpy as np\n\ndef eager_only(x):\n    return np.sum(x)\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x):\n    return x * np.sqrt(x.shape[0])\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x, seed):\n    np.random.seed(seed)\n    return x\n"),
        Example("import numpy as np\n\n@torch.compile\ndef f(x, blocks):\n    return x * np.sum(blocks[:2])\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        full = ctx.resolve(node.func)
        if full is None or not full.startswith("numpy.") or full.startswith("numpy.random."):
            return  # np.random.* takes seeds and sizes, not data
        if not node.args or node.args[0].keyword:
            return
        function = full.rsplit(".", 1)[-1]
        argument = node.args[0].value
        if function in SAME_RESULT or not ctx.facts.value(argument).any_of(TORCH_TENSORS):
            return  # a numpy array (`np.sin(t.numpy())`) or a bare parameter
        shown, call, receiver = short_code(argument), short_code(node.func), receiver_code(argument)
        rest = ", ".join(_argument_code(arg) for arg in node.args[1:])
        more = f", {rest}" if rest else ""
        if function in EAGER_RAISES:
            effect = "raises TypeError eagerly but returns an ndarray when compiled"
        else:
            effect = "returns a torch.Tensor (or numpy scalar) eagerly but a numpy.ndarray when compiled"
        ctx.report(
            self,
            node,
            f"`{short_code(node, 60)}` calls numpy on a tensor: it {effect}",
            fix=f"Use the torch op on `{shown}` (e.g. `{receiver}.{function}({rest})` or "
            f"`torch.{function}({shown}{more})`), or convert first: `{call}({receiver}.numpy(){more})`.",
        )


RULE = NumpyOnTensor()
