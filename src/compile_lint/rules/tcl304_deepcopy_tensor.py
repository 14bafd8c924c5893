"""TCL304: `copy.deepcopy(t)` / `copy.copy(t)` on a tensor inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import TensorFacts, dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

DEEPCOPY = "GB4198"  # Attempted to copy.deepcopy a tensor
SHALLOW_COPY = "GB0208"  # torch.* op returned non-Tensor (copy.copy goes through __reduce_ex__)
CODE_OF = {"copy.deepcopy": DEEPCOPY, "copy.copy": SHALLOW_COPY}


def holds_tensor(node: cst.BaseExpression, facts: TensorFacts) -> bool:
    """A tensor, or a list/tuple/set/dict display with a tensor in it (deepcopy recurses into those)."""
    if facts.is_tensor(node):
        return True
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return any(holds_tensor(element.value, facts) for element in node.elements)
    if isinstance(node, cst.Dict):
        return any(
            isinstance(element, cst.DictElement) and holds_tensor(element.value, facts) for element in node.elements
        )
    return False


class DeepcopyTensor(Rule):
    code = "TCL304"
    name = "copy-tensor"
    summary = "`copy.deepcopy(t)` / `copy.copy(t)` on a tensor breaks the graph"
    gb_codes = (DEEPCOPY, SHALLOW_COPY)
    fix = "Use `t.clone()` (with `.detach()` if the copy must not track gradients)."
    what = (
        "Flags `copy.deepcopy(...)` and `copy.copy(...)` (also imported as `from copy import deepcopy`) "
        "whose argument is a tensor or a list/tuple/set/dict display holding one, inside compiled regions. "
        "Deep copies of plain Python values (`copy.deepcopy({'a': 1})`) trace fine and are not flagged."
    )
    why = (
        "Dynamo refuses to run `copy.deepcopy` on a tensor, even inside a container (GB4198), and "
        "`copy.copy(t)` reaches `Tensor.__reduce_ex__`, a torch call that returns no tensor (GB0208). "
        "Either way it ends the graph, copies eagerly and resumes in a new graph. `t.clone()` is the "
        "traceable copy."
    )
    example = "import copy\n\n@torch.compile\ndef f(x):\n    snapshot = copy.deepcopy(x)\n    x.add_(1)\n    return x - snapshot\n"
    fixed_example = "@torch.compile\ndef f(x):\n    snapshot = x.clone()\n    x.add_(1)\n    return x - snapshot\n"
    invalid = (
        Example("import copy\n\n@torch.compile\ndef f(x):\n    y = x + 1\n    return copy.deepcopy(y)\n"),
        Example("from copy import deepcopy\n\nclass M(nn.Module):\n    def forward(self, x):\n        return deepcopy([x, 1])[0]\n"),
        Example("import copy\n\n@torch.compile\ndef f(x):\n    return copy.copy(x) * 2\n"),
    )  # fmt: skip
    valid = (
        Example("import copy\n\n@torch.compile\ndef f(x):\n    cfg = copy.deepcopy({'scale': 2})\n    return x * cfg['scale']\n"),
        Example("@torch.compile\ndef f(x):\n    return x.clone().detach()\n"),
        Example("import copy\n\ndef eager(x):\n    return copy.deepcopy(x)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        gb_code = CODE_OF.get(ctx.resolve(node.func) or "")
        if gb_code is None or not node.args or node.args[0].keyword is not None:
            return
        argument = node.args[0].value
        if not holds_tensor(argument, ctx.facts):
            return
        call, shown = dotted_code(node.func), dotted_code(argument)
        if gb_code == DEEPCOPY:
            message = f"`{call}({shown})` deep-copies a tensor, which Dynamo refuses to trace: the graph breaks here"
        else:
            message = f"`{call}({shown})` copies a tensor through `__reduce_ex__`, which Dynamo cannot trace: the graph breaks here"
        fix = f"Use `{shown}.clone()` (with `.detach()` if the copy must not track gradients)."
        if not ctx.facts.is_tensor(argument):
            fix = "Clone the tensors and build the container yourself, e.g. `[t.clone() for t in items]`."
        ctx.report(self, node, f"{message} ({gb_code})", gb_codes=(gb_code,), fix=fix)


RULE = DeepcopyTensor()
