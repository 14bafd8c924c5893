"""TCL801: a graph break Dynamo reported where no static rule predicted one (`--confirm` only)."""

from __future__ import annotations

from compile_lint.rules.base import Rule


class DynamicOnlyBreak(Rule):
    code = "TCL801"
    name = "dynamic-only-break"
    summary = "Dynamo broke the graph on a line no static rule flagged"
    gb_codes = ()  # the finding carries the GB code Dynamo reported
    fix = "Follow Dynamo's hint in the finding; the GB code's page lists the usual rewrites."
    scope = "module"
    what = (
        "Reported only by `compile-lint --confirm`: it runs each compiled region under torch.compile and "
        "records every graph break from Dynamo's `graph_breaks` log, at the innermost frame in your files. "
        "A break on a line where the static pass found nothing becomes a TCL801 finding carrying the GB "
        "code, Dynamo's explanation and its hints."
    )
    why = (
        "Some breaks cannot be seen from the source alone: a call through a dict or `getattr`, a helper "
        "in a file that was not linted, a library function Dynamo cannot trace. The break is real (it "
        "happened on your inputs) even though no rule predicts it."
    )
    example = (
        "HOOKS = {'log': lambda t: print(t)}\n\n@torch.compile\ndef step(x):\n"
        "    HOOKS['log'](x)  # the print inside breaks; statically it is an opaque call\n    return x * 2\n"
    )
    fixed_example = "@torch.compile\ndef step(x):\n    return x * 2\n"
    invalid = ()  # found by running code, never by the static pass; tested in tests/test_confirm_e2e.py
    valid = ()


RULE = DynamicOnlyBreak()
