"""TCL802: `--confirm`'s recompile probe saw a function recompile on every call or hit the limit."""

from __future__ import annotations

from compile_lint.rules.base import Rule


class ObservedRecompile(Rule):
    code = "TCL802"
    name = "observed-recompile"
    summary = "A compiled function recompiled on every call, or hit `recompile_limit`, under the probe"
    gb_codes = ()
    fix = "Follow the suggestion in the finding: mark the varying dimension dynamic, or keep the changing value in a tensor."
    scope = "module"
    what = (
        "Reported only by `compile-lint --confirm`. After the break run it calls each target again, "
        "varying one thing at a time (the same inputs again, each tensor dimension, dtype, each Python "
        "scalar argument), and reads Dynamo's `recompiles` log. One recompile then a dynamic graph is "
        "normal (automatic dynamic shapes) and only shown in the summary; a recompile on every call, or "
        "hitting `torch._dynamo.config.recompile_limit` (8), is reported here with the guard that failed."
    )
    why = (
        "Dynamo guards each graph on the Python values and tensor properties it specialized on. A value "
        "that changes on every call (a module counter, a string argument, a list's length) fails the "
        "guard every time, so each call pays a full compile; after `recompile_limit` recompiles the "
        "function silently runs eagerly."
    )
    example = (
        "class Counter(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.calls = 0\n\n"
        "    def forward(self, x):\n        self.calls += 1\n        return x * self.calls\n"
    )
    fixed_example = (
        "class Counter(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('calls', torch.zeros(()))\n\n"
        "    def forward(self, x):\n        self.calls += 1\n        return x * self.calls\n"
    )
    invalid = ()  # found by running code, never by the static pass; tested in tests/test_confirm_e2e.py
    valid = ()


RULE = ObservedRecompile()
