"""TCL704: a `with` on a context manager Dynamo cannot enter: it skips the whole frame."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.versions import TorchVersion

UNSUPPORTED_CM = "GB0142"  # Unsupported context manager
# Resolved constructor -> the breaks Dynamo logs on the `with` line, per torch version (measured with
# 2.13.0 and 2.14.1). The first code is a plain break while building the object, the last one the frame skip.
MEASURED: dict[str, dict[TorchVersion, tuple[str, ...]]] = {
    "torch.device": {(2, 13): ("GB0142",), (2, 14): ("GB0142",)},
    "threading.Lock": {(2, 13): ("GB0007", "GB0142"), (2, 14): ("GB0007", "GB0142")},
    "threading.RLock": {(2, 13): ("GB0156", "GB0142"), (2, 14): ("GB0156", "GB0142")},
    "threading.Condition": {(2, 13): ("GB0156", "GB0142"), (2, 14): ("GB0156",)},
    "tempfile.TemporaryDirectory": {(2, 13): ("GB0156", "GB0142"), (2, 14): ("GB0156", "GB0007")},
    "torch.random.fork_rng": {(2, 13): ("GB0208", "GB0142"), (2, 14): ("GB0208",)},
    "torch.autograd.detect_anomaly": {(2, 13): ("GB0008", "GB0142"), (2, 14): ("GB0008",)},
}
# The same objects made before the region (`_lock = threading.Lock()` at module level) and entered in it:
# the `with` line breaks, whole frame (measured with 2.13.0 and 2.14.1).
PREMADE: dict[str, dict[TorchVersion, tuple[str, ...]]] = {
    "threading.Lock": {(2, 13): ("GB0142",), (2, 14): ("GB0142",)},
    "threading.RLock": {(2, 13): ("GB0142",), (2, 14): ("GB0142",)},
    "threading.Condition": {(2, 13): ("GB0142",), (2, 14): ("GB0156",)},
}
FIXES = {
    "torch.device": "Create tensors with an explicit `device=` argument (e.g. `torch.zeros(3, device=x.device)`) "
    "instead of a default-device block.",
    "torch.random.fork_rng": "Save and restore the RNG state outside the compiled function.",
    "torch.autograd.detect_anomaly": "Turn anomaly detection on around the call of the compiled function.",
}


class UnsupportedContextManager(Rule):
    code = "TCL704"
    name = "unsupported-context-manager"
    summary = "A `with` block on a context manager Dynamo cannot enter: the whole function runs eagerly"
    gb_codes = ("GB0142", "GB0007", "GB0156", "GB0208", "GB0008")
    frame_skip = True
    fix = "Enter the context outside the compiled function, around the call to it."
    what = (
        "Flags `with` statements in compiled regions whose context manager is built by a call Dynamo cannot "
        "trace into a supported context: `torch.device(...)`, `threading.Lock()` / `RLock()` / `Condition()`, "
        "`tempfile.TemporaryDirectory()`, `torch.random.fork_rng()`, `torch.autograd.detect_anomaly()`. "
        "`torch.no_grad()`, `torch.autocast(...)`, `torch.inference_mode()`, `torch.set_grad_enabled(...)`, "
        "`contextlib.nullcontext()`, `contextlib.suppress(...)`, `contextlib.ExitStack()` and "
        "`warnings.catch_warnings()` trace fine."
    )
    why = (
        "Dynamo supports only the context managers it models. Measured with torch 2.13 and 2.14: on these "
        "it gives up on the whole frame at the `with` line (GB0142 unsupported context manager, after a "
        "break building the object for some: GB0007, GB0156, GB0208, GB0008; torch 2.14 reports the frame "
        "skip under that first code for Condition, TemporaryDirectory, fork_rng and detect_anomaly), so "
        "nothing in the function is compiled. In an `nn.Module.forward` Dynamo logs the break twice."
    )
    example = (
        "@torch.compile\ndef f(x):\n    with torch.device(x.device):\n        bias = torch.zeros(3)\n"
        "    return x + bias\n"
    )
    fixed_example = "@torch.compile\ndef f(x):\n    bias = torch.zeros(3, device=x.device)\n    return x + bias\n"
    invalid = (
        Example("import threading\n\nclass M(nn.Module):\n    def forward(self, x):\n        with threading.Lock():\n            return x * 2\n"),
        Example("import threading\n\nLOCK = threading.Lock()\n\nclass M(nn.Module):\n    def forward(self, x):\n        with LOCK:\n            return x * 2\n"),
    )  # fmt: skip
    valid = (
        Example("@torch.compile\ndef f(x):\n    with torch.no_grad():\n        return x * 2\n"),
        Example("def eager(x):\n    with torch.device('cpu'):\n        return torch.zeros(3)\n"),
    )  # fmt: skip

    def visit_With(self, node: cst.With, ctx: RuleContext) -> None:
        for item in node.items:
            manager = item.item
            if not isinstance(manager, cst.Call):
                premade = self._premade(manager, ctx)
                if premade is not None:
                    codes = PREMADE[premade][ctx.torch_version]
                    ctx.report(
                        self,
                        node,
                        f"Dynamo cannot enter the `{premade}` `{short_code(manager)}`: it skips the whole function, "
                        f"which runs eagerly with no graph ({' then '.join(codes)})",
                        gb_codes=codes,
                    )
                    return
                continue
            full = ctx.resolve(manager.func)
            measured = MEASURED.get(full or "")
            if full is None or measured is None:
                continue
            codes = measured[ctx.torch_version]
            ctx.report(
                self,
                node,
                f"Dynamo cannot enter `{short_code(manager)}`: it skips the whole function, which runs eagerly "
                f"with no graph ({' then '.join(codes)})",
                gb_codes=codes,
                fix=FIXES.get(full, self.fix),
            )
            return

    def _premade(self, manager: cst.BaseExpression, ctx: RuleContext) -> str | None:
        """`threading.Lock` when `manager` holds a lock made outside the `with` (a module global, an attribute)."""
        for atom in ctx.facts.value(manager).externals():
            made = atom.name.removesuffix("()")
            if made != atom.name and made in PREMADE:
                return made
        return None


RULE = UnsupportedContextManager()
