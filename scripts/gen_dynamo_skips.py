"""Write the installed torch's Dynamo skip lists to src/compile_lint/dynamo_skips_<major>.<minor>.json.

Run it once per supported torch (each from an environment that has that torch installed):

    python scripts/gen_dynamo_skips.py           # write the file for the installed torch
    python scripts/gen_dynamo_skips.py --check   # exit 1 if the committed file differs

Everything comes from torch/_dynamo/trace_rules.py of the installed wheel: the modules whose files
Dynamo skips (BUILTIN_SKIPLIST less BUILTIN_INLINE_WHEN_CALLED, unittest, THIRDPARTY_SKIPLIST less
the numpy that Dynamo traces through torch._numpy), and, for those installed here, each public
callable of the standard-library ones that `trace_rules.lookup` does not skip, or that Dynamo
constant-folds though it is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import re
import sys
import types
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "src" / "compile_lint"
# `self.value in (importlib.util.find_spec, ...)` / `self.value in RE_CONSTANT_FOLD_FNS` in
# SkipFunctionVariable.call_function: skipped functions Dynamo runs at trace time on constant arguments.
FOLD_TUPLE = re.compile(r"self\.value in \(([^)]*)\)")
FOLD_SET = re.compile(r"self\.value in ([A-Z_]+)\b")


def skipped_modules(trace_rules: Any) -> list[str]:
    inline_dirs = trace_rules.BUILTIN_INLINE_WHEN_CALLED
    builtin = [m.__name__ for m in trace_rules.BUILTIN_SKIPLIST if trace_rules._module_dir(m) not in inline_dirs]
    numpy = getattr(trace_rules.np, "__name__", None)  # traced through torch._numpy, not skipped
    third_party = [name for name in trace_rules.THIRDPARTY_SKIPLIST if name != numpy]
    return sorted({*builtin, "unittest", *third_party})


def constant_folded() -> set[int]:
    """ids of the skipped functions that SkipFunctionVariable calls at trace time on constant arguments."""
    from torch._dynamo.variables import functions

    source = inspect.getsource(functions.SkipFunctionVariable.call_function)
    found: set[int] = set()
    for group in FOLD_TUPLE.findall(source):
        for name in (part.strip() for part in group.split(",")):
            module, _, attr = name.rpartition(".")
            if module:
                found.add(id(getattr(importlib.import_module(module), attr)))
    for set_name in FOLD_SET.findall(source):
        found.update(id(fn) for fn in getattr(functions, set_name))
    return found


def submodules(package: types.ModuleType) -> list[types.ModuleType]:
    """The module and, for a package, its public submodules (what `pkg.sub.f` reaches)."""
    found = [package]
    for info in pkgutil.iter_modules(getattr(package, "__path__", [])):
        if not info.name.startswith("_"):
            try:
                found.append(importlib.import_module(f"{package.__name__}.{info.name}"))
            except ImportError:
                continue
    return found


def not_skipped(module_name: str, trace_rules: Any, folded: set[int]) -> list[str]:
    """Public callables of a skipped module that Dynamo traces or folds: calls it does not break on."""
    from torch._dynamo.variables import SkipFunctionVariable

    names = []
    for module in submodules(importlib.import_module(module_name)):
        for attr, value in sorted(vars(module).items()):
            if attr.startswith("_") or not (inspect.isfunction(value) or inspect.isbuiltin(value)):
                continue
            owner = getattr(value, "__module__", None) or ""
            if owner != module_name and not owner.startswith(module_name + "."):
                continue  # imported from elsewhere
            if id(value) in folded or trace_rules.lookup(value) is not SkipFunctionVariable:
                names.append(f"{module.__name__}.{attr}")
    return names


def testcase_methods() -> list[str]:
    """`unittest.TestCase` methods a test calls as `self.assert...(...)` (Dynamo skips unittest's files)."""
    import unittest

    return sorted(
        name
        for name, value in vars(unittest.TestCase).items()
        if inspect.isfunction(value) and name.startswith(("assert", "fail", "skipTest"))
    )


def generate() -> dict[str, Any]:
    import torch
    from torch._dynamo import trace_rules

    modules = skipped_modules(trace_rules)
    folded = constant_folded()
    # Standard-library modules only: whether a third-party package is installed here must not change the file.
    stdlib = [name for name in modules if name in sys.stdlib_module_names]
    return {
        "torch": torch.__version__,
        "generated_by": "scripts/gen_dynamo_skips.py",
        "skipped_modules": modules,
        "not_skipped": sorted(name for module in stdlib for name in not_skipped(module, trace_rules, folded)),
        "testcase_methods": testcase_methods(),
    }


def output_path(version: str) -> Path:
    major, minor = version.split(".")[:2]
    return OUTPUT / f"dynamo_skips_{major}.{minor}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the committed file is current")
    args = parser.parse_args(argv)
    data = generate()
    path = output_path(data["torch"])
    text = json.dumps(data, indent=1) + "\n"
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path}: stale; run python scripts/gen_dynamo_skips.py with torch {data['torch']}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"{path}: {len(data['skipped_modules'])} skipped modules, {len(data['not_skipped'])} traced callables")
    return 0


if __name__ == "__main__":
    sys.exit(main())
