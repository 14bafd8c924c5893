"""TCL310: a call into a module whose code Dynamo skips (its skip list: unittest, importlib, tqdm, ...)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import libcst as cst

from compile_lint.analysis.tensors import dotted_code
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule
from compile_lint.rules.tcl301_skipped_call import claims
from compile_lint.versions import TorchVersion, label

CALL_SKIPPED = "GB0007"  # Attempted to call function marked as skipped
INLINE_SKIPPED = "GB0008"  # Attempted to inline function marked as skipped (a method of a skipped class)


def _own_method(ctx: RuleContext, method: str) -> bool:
    """The class (or a base in the user's code) defines `method` itself: `self.method()` is not unittest's."""
    function = ctx.function
    if function is None or function.class_key is None or ctx.program is None:
        return False
    return ctx.program.method(function.class_key, method) is not None


@dataclass(frozen=True)
class SkipLists:
    """What scripts/gen_dynamo_skips.py read from one torch's trace_rules.py."""

    modules: frozenset[str]  # modules and packages whose files Dynamo skips
    not_skipped: frozenset[str]  # their callables that Dynamo traces or constant-folds anyway
    testcase_methods: frozenset[str]  # unittest.TestCase assertion methods

    def skipped_module(self, full: str) -> str | None:
        """The skipped module `full` (a resolved dotted name) is in, unless Dynamo handles that callable."""
        if full in self.not_skipped:
            return None
        parts = full.split(".")
        return next((m for m in (".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)) if m in self.modules), None)


@cache
def skip_lists(version: TorchVersion) -> SkipLists:
    # Package data, found beside the package's modules: importlib.resources imports tempfile, shutil and random.
    path = Path(__file__).parents[1] / f"dynamo_skips_{label(version)}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    return SkipLists(
        frozenset(data["skipped_modules"]), frozenset(data["not_skipped"]), frozenset(data["testcase_methods"])
    )


class SkippedModuleCall(Rule):
    code = "TCL310"
    name = "skipped-module-call"
    summary = "Call into a module Dynamo skips (unittest, importlib, linecache, abc, tqdm, pandas, ...)"
    gb_codes = (CALL_SKIPPED, INLINE_SKIPPED)
    fix = (
        "Make the call outside the compiled function (import modules at module level, report progress "
        "around the call) and pass its result in."
    )
    what = (
        "Flags calls, resolved through the file's imports, into the modules torch's `trace_rules.py` tells "
        "Dynamo to skip: `abc`, `importlib`, `linecache`, `re`, `unittest` and third-party packages "
        "(`tqdm`, `tabulate`, `pandas`, `sklearn`, `networkx`, `hypothesis`, `onnx`, `tensorflow`, ...), "
        "and `self.assert...()` in a `unittest.TestCase`. The lists are generated per torch version from the "
        "wheel (scripts/gen_dynamo_skips.py). Functions Dynamo still handles are not flagged: "
        "`importlib.util.find_spec` and `importlib.metadata.version` and `re.match/search/sub/compile/...` "
        "are run at trace time on constant arguments. `random` and `time` are TCL301's."
    )
    why = (
        "Dynamo does not trace into the files of these modules: a call ends the graph, runs eagerly and "
        "a new graph starts after it (GB0007; GB0008 when the skipped function is reached as a method, "
        "such as `tqdm.tqdm.write` or `self.assertEqual`). Measured with torch 2.13 and 2.14: "
        "`importlib.import_module`, `linecache.getline`, `abc.get_cache_token`, `hypothesis.assume`, "
        "`tabulate.tabulate`, `tqdm(...)` break; `importlib.util.find_spec('x')` and `re.match` on "
        "constants do not."
    )
    example = (
        "import importlib\n\n@torch.compile\ndef f(x, backend):\n    ops = importlib.import_module(backend)\n"
        "    return ops.scale(x)\n"
    )
    fixed_example = (
        "import importlib\n\n@torch.compile\ndef f(x, ops):\n    return ops.scale(x)\n\n"
        "def run(x, backend):\n    return f(x, importlib.import_module(backend))\n"
    )
    invalid = (
        Example("from tqdm import tqdm\n\nclass M(nn.Module):\n    def forward(self, x):\n        tqdm.write('step')\n        return x\n"),
        Example("import linecache\n\n@torch.compile\ndef f(x):\n    src = linecache.getline(__file__, 1)\n    return x\n"),
        Example("import unittest\n\nclass T(unittest.TestCase):\n    def check(self, x):\n        self.assertEqual(x.shape, (2,))\n        return x\n\n"
                "opt = torch.compile(T().check)\n"),
    )  # fmt: skip
    valid = (
        Example("import importlib.util, re\n\n@torch.compile\ndef f(x):\n    ok = importlib.util.find_spec('numpy') is not None\n"
                "    m = re.match('a+', 'aaa')\n    return x * 2 if ok else x\n"),
        Example("import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n"),
        Example("class Checker:\n    def assertEqual(self, a, b):\n        pass\n\n    def check(self, x):\n        self.assertEqual(x, x)\n        return x\n\n"
                "opt = torch.compile(Checker().check)\n"),
    )  # fmt: skip

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self._check_testcase_method(node, func.attr.value, ctx)
            return
        head = func
        while isinstance(head, cst.Attribute):
            head = head.value
        if not isinstance(head, cst.Name) or head.value not in ctx.imports.aliases:
            return  # only names that come from an import
        full = ctx.resolve(func)
        if full is None or claims(full):
            return
        module = skip_lists(ctx.torch_version).skipped_module(full)
        if module is None:
            return
        written = dotted_code(func)
        shown = f"`{written}()`" if written == full else f"`{written}()` ({full})"
        method = full.count(".") > module.count(".") + 1
        codes = (CALL_SKIPPED, INLINE_SKIPPED) if method else (CALL_SKIPPED,)
        ctx.report(
            self,
            node,
            f"{shown} is code of `{module}`, which Dynamo skips: the graph breaks here ({' / '.join(codes)})",
            gb_codes=codes,
        )

    def _check_testcase_method(self, node: cst.Call, method: str, ctx: RuleContext) -> None:
        if method not in skip_lists(ctx.torch_version).testcase_methods or _own_method(ctx, method):
            return
        if not any(
            full.split(".")[0] == "unittest" or full.endswith("TestCase") for full in ctx.imports.aliases.values()
        ):
            return
        ctx.report(
            self,
            node,
            f"`self.{method}()` is a `unittest.TestCase` method, and Dynamo skips unittest's code: the graph "
            f"breaks here ({INLINE_SKIPPED})",
            gb_codes=(INLINE_SKIPPED,),
            fix="Assert on the compiled function's result, outside it: return what you want to check.",
        )


RULE = SkippedModuleCall()
