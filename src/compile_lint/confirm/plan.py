"""Which targets `--confirm` runs: explicit factories first, then every region that can be called."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from compile_lint import notebooks
from compile_lint.confirm import GIVE_INPUTS
from compile_lint.engine import module_name
from compile_lint.project import Project

# Kernel state and the order cells ran in decide what a notebook does: running its cells top to bottom
# would confirm something else.
NOTEBOOK_NOT_RUN = "not run: a notebook (its cells are not run by --confirm)"


class UsageError(Exception):
    """A malformed `--target` or config entry; the message says what is expected."""


@dataclass(frozen=True)
class TargetSpec:
    kind: Literal["factory", "function", "module"]
    label: str
    module: str  # dotted name, importable from `root`
    root: str
    attr: str  # factory name, function name or class name
    region: tuple[str, str] | None = None  # (real path, qualname) of the automatic region

    def request(self, backend: str, shape: list[int]) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "module": self.module,
            "root": self.root,
            "attr": self.attr,
            "backend": backend,
            "shape": shape,
        }


@dataclass(frozen=True)
class Unrunnable:
    label: str
    reason: str


def import_location(path: str) -> tuple[str, str]:
    """(folder to put on sys.path, dotted module name) for a Python file."""
    dotted = module_name(path)
    root = Path(path).resolve().parent
    for _ in range(dotted.count(".") + (Path(path).stem == "__init__")):
        root = root.parent
    return str(root), dotted


def explicit_specs(entries: list[str], root: Path) -> list[TargetSpec]:
    """`pkg.mod:factory` (importable from `root`) or `path/to/file.py:factory`."""
    specs = []
    for entry in entries:
        module, sep, factory = entry.rpartition(":")
        if not sep or not module or not factory.isidentifier():
            raise UsageError(f"target `{entry}` must look like `package.module:factory` or `path/file.py:factory`")
        if module.endswith(".py"):
            path = module if os.path.isabs(module) else str(root / module)
            if not os.path.isfile(path):
                raise UsageError(f"target `{entry}`: no such file {path}")
            folder, dotted = import_location(path)
        else:
            folder, dotted = str(root.resolve()), module
        specs.append(TargetSpec("factory", entry, dotted, folder, factory))
    return specs


def automatic_specs(project: Project) -> tuple[list[TargetSpec], list[Unrunnable]]:
    """Module-level functions and nn.Module classes among the project's compiled regions."""
    specs: dict[tuple[str, str], TargetSpec] = {}
    unrunnable = []
    for path, qualname in project.roots():
        function = project.function((path, qualname))
        assert function is not None
        folder, dotted = import_location(path)
        label = f"{path}:{qualname}"
        region = (os.path.realpath(path), qualname)
        cls_key = function.class_key
        if notebooks.is_notebook(path):
            unrunnable.append(Unrunnable(label, NOTEBOOK_NOT_RUN))
        elif cls_key is None and "." not in qualname:
            specs[(dotted, qualname)] = TargetSpec("function", label, dotted, folder, qualname, region)
        elif (
            cls_key is not None and function.name == "forward" and "." not in cls_key[1] and project.is_module(cls_key)
        ):
            cls = cls_key[1]
            specs[(dotted, cls)] = TargetSpec("module", f"{path}:{cls}", dotted, folder, cls, region)
        else:
            unrunnable.append(Unrunnable(label, f"not run: `{qualname}` is a method or nested function; {GIVE_INPUTS}"))
    return list(specs.values()), unrunnable
