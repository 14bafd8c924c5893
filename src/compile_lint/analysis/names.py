"""Resolve dotted names through a file's imports (`np.random.rand` -> `numpy.random.rand`)."""

from __future__ import annotations

import libcst as cst


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as written, or None when the expression is not a plain dotted name."""
    if type(node) is cst.Name:  # exact types: isinstance against libcst's ABCs is slow, and this is hot
        return node.value
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _module_name(node: cst.BaseExpression) -> str:
    name = dotted(node)
    assert name is not None  # import targets are always dotted names
    return name


class ImportMap:
    """Local name -> fully qualified name, from `import` and `from ... import` statements."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.stars: list[str] = []  # modules imported with `from module import *`, as written (maybe relative)

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    top = full.split(".")[0]
                    self.aliases[top] = top
            return
        dots = "." * len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            if node.module is not None:
                self.stars.append(dots + _module_name(node.module))
            return
        if node.module is None:  # `from . import utils`: a module of the package
            for alias in node.names:
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else None
                self.aliases[local or _module_name(alias.name)] = dots + _module_name(alias.name)
            return
        module = dots + _module_name(node.module)
        for alias in node.names:
            name = _module_name(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def resolve(self, node: cst.BaseExpression) -> str | None:
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        full = self.aliases.get(head)
        if full is None:
            return name
        return f"{full}.{rest}" if rest else full
