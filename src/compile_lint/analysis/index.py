"""What one parsed file declares: its imports, classes, functions (with nested ones), compile targets,
hook registrations and the capture flags its source sets. A walk over statements only (not into
expressions), except for the few files whose text mentions `compile(`, hooks or Dynamo's config.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.nodes import iter_nodes
from compile_lint.analysis.packing import unpack_body
from compile_lint.analysis.values import ClassKey, FunctionKey

COMPILE = frozenset({"torch.compile"})
DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
CAPTURE_FLAGS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})
HOOK_REGISTRARS = frozenset(
    {"register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
     "register_full_backward_pre_hook", "register_module_forward_hook", "register_module_forward_pre_hook"}
)  # fmt: skip
# Decorators that do not wrap the function in code of the user's (or that Dynamo handles itself).
PLAIN_DECORATORS = frozenset(
    {"staticmethod", "classmethod", "property", "functools.wraps", "functools.lru_cache", "functools.cache",
     "abc.abstractmethod", "typing.overload", "typing.final", "dataclasses.dataclass", "torch.no_grad",
     "torch.inference_mode", "torch.enable_grad", "torch.jit.unused", "torch.jit.ignore", "torch.jit.export",
     "torch.autocast", "contextlib.contextmanager", "torch._dynamo.allow_in_graph", "torch.compiler.allow_in_graph"}
)  # fmt: skip
SCAN_TEXT = re.compile(r"compile\(|register_\w*hook|_dynamo\.config|reorderable_logging")


@dataclass
class FunctionInfo:
    key: FunctionKey  # (path, qualname); nested: "outer.<locals>.inner"
    name: str
    definition: cst.FunctionDef  # its body left out while `packed_body` holds it (read `node` instead)
    class_key: ClassKey | None  # the class it is a method of
    enclosing: FunctionKey | None = None  # for nested functions
    compiled: bool = False  # decorated with @torch.compile
    disabled: Literal["recursive", "non-recursive"] | None = None  # @torch.compiler.disable
    decorators: list[cst.BaseExpression] = field(default_factory=list)  # other decorators, as written
    kind: Literal["function", "method", "staticmethod", "classmethod", "property"] = "function"
    assigned_attributes: set[str] = field(default_factory=set)  # `self.x = ...` in its body
    is_generator: bool = False  # a `yield` statement (or `x = yield ...`) in its own body
    packed_body: bytes | None = None  # its body, pickled, in an index read from the cache (`packing`)

    @property
    def node(self) -> cst.FunctionDef:
        """The function's tree, its body unpickled the first time it is read."""
        if self.packed_body is not None:
            unpack_body(self)
        return self.definition

    @property
    def path(self) -> str:
        return self.key[0]

    @property
    def qualname(self) -> str:
        return self.key[1]

    @property
    def class_name(self) -> str | None:
        return self.class_key[1] if self.class_key else None


@dataclass
class ClassInfo:
    key: ClassKey
    name: str
    node: cst.ClassDef
    bases: list[cst.BaseExpression]
    methods: dict[str, FunctionKey] = field(default_factory=dict)
    decorators: list[cst.BaseExpression] = field(default_factory=list)
    body_assignments: dict[str, cst.BaseExpression | None] = field(default_factory=dict)  # class-level `x = ...`

    @property
    def path(self) -> str:
        return self.key[0]


@dataclass
class HookRegistration:
    """`m.register_forward_hook(fn)`: `fn` runs inside the module's region."""

    target: cst.BaseExpression
    owner: FunctionKey | None  # the function the registration is written in
    registrar: str
    line_node: cst.Call


@dataclass
class FileIndex:
    path: str
    module: str  # dotted module name guessed from the path
    imports: ImportMap
    shell: cst.Module  # the tree, less the bodies its functions keep packed (read `tree` instead)
    text: str
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    compile_targets: list[cst.BaseExpression] = field(default_factory=list)  # first arguments of torch.compile(...)
    hooks: list[HookRegistration] = field(default_factory=list)
    flags: set[str] = field(default_factory=set)  # capture flags the source sets to True
    instances: dict[str, str] = field(default_factory=dict)  # `model = Net()` anywhere: name -> class as written
    imports_torch: bool = False
    # Set when `text` is the file with odd whitespace made plain (`normalise_odd_whitespace`): the
    # characters removed from each line's start, to put findings back at the file's columns.
    column_shifts: dict[int, int] | None = None
    packed: bool = False  # some function's body is still packed (the index was read from the cache)
    # `positions.function_starts` of `text`, taken from the parse guard's tree when it parsed this text (the
    # findings need them, and parsing the file again with Python's parser cost 5 ms per modeling file).
    starts: dict[str, tuple[int, str]] | None = None

    @property
    def tree(self) -> cst.Module:
        """The whole tree (every packed body unpickled first); `shell` is enough for module-level names."""
        if self.packed:
            for info in self.functions.values():
                if info.packed_body is not None:
                    unpack_body(info)
            self.packed = False
        return self.shell

    def function(self, qualname: str) -> FunctionInfo | None:
        return self.functions.get(qualname)


def build_index(path: str, module_name: str, tree: cst.Module, text: str) -> FileIndex:
    index = FileIndex(path=path, module=module_name, imports=ImportMap(), shell=tree, text=text)
    _Indexer(index).statements(tree.body, None, None, "")
    index.imports_torch = any(full.split(".")[0] == "torch" for full in index.imports.aliases.values())
    if SCAN_TEXT.search(text):
        _scan_expressions(index)
    return index


class _Indexer:
    def __init__(self, index: FileIndex) -> None:
        self.index = index

    def statements(
        self, body: Sequence[cst.BaseStatement], cls: ClassInfo | None, function: FunctionInfo | None, prefix: str
    ) -> None:
        for statement in body:
            self.statement(statement, cls, function, prefix)

    def statement(
        self, node: cst.BaseStatement, cls: ClassInfo | None, function: FunctionInfo | None, prefix: str
    ) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, cls, function)
        elif isinstance(node, cst.FunctionDef):
            self.function(node, cls, function, prefix)
        elif isinstance(node, cst.ClassDef):
            self.cls(node, function, prefix)
        elif isinstance(node, cst.Try) and function is None and cls is None and _catches_import_error(node):
            self.import_fallback(node, prefix)
        else:
            for block in _blocks(node):
                self.statements(block, cls if function is None else None, function, prefix)

    def import_fallback(self, node: cst.Try, prefix: str) -> None:
        """`try: from torch.compiler import is_compiling` / `except ImportError: def is_compiling(): ...`:
        the installed library has what the `try` imports (it is what the code runs with), so a name the
        `try` imports keeps that meaning; the handler's imports and definitions of it are fallbacks."""
        index = self.index
        self.statements(_body(node.body), None, None, prefix)
        imported = dict(index.imports.aliases)
        functions = dict(index.functions)
        for handler in node.handlers:
            self.statements(_body(handler.body), None, None, prefix)
        for block in (node.orelse, node.finalbody):
            if block is not None:
                self.statements(_body(block.body), None, None, prefix)
        for name, full in imported.items():
            index.imports.aliases[name] = full
            if index.functions.get(name) is not functions.get(name):
                if name in functions:
                    index.functions[name] = functions[name]
                else:
                    del index.functions[name]

    def small(self, node: cst.BaseSmallStatement, cls: ClassInfo | None, function: FunctionInfo | None) -> None:
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            self.index.imports.add(node)
        elif function is not None:
            for target in _assigned(node):
                written = dotted(target)
                if written and written.startswith("self.") and written.count(".") == 1:
                    function.assigned_attributes.add(written[5:])
            value = getattr(node, "value", None)
            if isinstance(value, (cst.Yield, cst.Await)) and isinstance(node, (cst.Expr, cst.Assign, cst.AnnAssign)):
                function.is_generator = function.is_generator or isinstance(value, cst.Yield)
            if isinstance(node, cst.Expr) and _registers_attribute(node.value):
                function.assigned_attributes.add("<registered>")
        elif cls is not None and isinstance(node, (cst.Assign, cst.AnnAssign)):
            for target in _assigned(node):
                if isinstance(target, cst.Name):
                    cls.body_assignments[target.value] = node.value

    def function(self, node: cst.FunctionDef, cls: ClassInfo | None, outer: FunctionInfo | None, prefix: str) -> None:
        qualname = _qualname(node.name.value, outer, prefix)
        info = FunctionInfo(
            key=(self.index.path, qualname),
            name=node.name.value,
            definition=node,
            class_key=cls.key if cls is not None and outer is None else None,
            enclosing=outer.key if outer is not None else None,
        )
        if info.class_key is not None:
            info.kind = "method"
        for decorator in node.decorators:
            self.decorator(info, decorator.decorator)
        if qualname in self.index.functions and _property_accessor(node):
            return  # `@x.setter` / `@x.deleter` share the getter's qualname: reading `obj.x` runs the getter
        self.index.functions[qualname] = info
        if cls is not None and outer is None:
            cls.methods.setdefault(node.name.value, info.key)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        self.statements(body, None, info, qualname + ".")

    def decorator(self, info: FunctionInfo, expression: cst.BaseExpression) -> None:
        call = expression if isinstance(expression, cst.Call) else None
        name = self.index.imports.resolve(call.func if call else expression) or ""
        if name in COMPILE:
            info.compiled = True
        elif name in DISABLE:
            recursive = True
            for arg in call.args if call else ():
                if arg.keyword and arg.keyword.value == "recursive":
                    recursive = not (isinstance(arg.value, cst.Name) and arg.value.value == "False")
            info.disabled = "recursive" if recursive else "non-recursive"
        elif name in ("staticmethod", "classmethod", "property"):
            info.kind = name  # type: ignore[assignment]
        elif name.endswith((".setter", ".getter", ".deleter")):
            info.kind = "property"
        elif name not in PLAIN_DECORATORS:
            info.decorators.append(expression)

    def cls(self, node: cst.ClassDef, outer: FunctionInfo | None, prefix: str) -> None:
        qualname = _qualname(node.name.value, outer, prefix)
        info = ClassInfo(
            key=(self.index.path, qualname),
            name=node.name.value,
            node=node,
            bases=[arg.value for arg in node.bases if arg.keyword is None],
            decorators=[d.decorator for d in node.decorators],
        )
        self.index.classes[qualname] = info
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        self.statements(body, info, None, qualname + ".")


def _property_accessor(node: cst.FunctionDef) -> bool:
    """Decorated `@<name>.setter` or `@<name>.deleter`."""
    return any(
        isinstance(d.decorator, cst.Attribute) and d.decorator.attr.value in ("setter", "deleter")
        for d in node.decorators
    )


def _qualname(name: str, outer: FunctionInfo | None, prefix: str) -> str:
    return f"{outer.qualname}.<locals>.{name}" if outer is not None else f"{prefix}{name}"


def _blocks(node: cst.BaseStatement) -> Iterator[Sequence[cst.BaseStatement]]:
    """The statement lists nested in a compound statement (if/for/while/try/with/match)."""
    for name in ("body", "orelse", "finalbody"):
        part = getattr(node, name, None)
        if isinstance(part, cst.BaseSuite):
            yield part.body if isinstance(part, cst.IndentedBlock) else ()
        elif isinstance(part, (cst.Else, cst.Finally)):
            yield part.body.body if isinstance(part.body, cst.IndentedBlock) else ()
        elif isinstance(part, cst.If):
            yield (part,)
    for handler in getattr(node, "handlers", ()):
        yield handler.body.body if isinstance(handler.body, cst.IndentedBlock) else ()
    for case in getattr(node, "cases", ()):
        yield case.body.body if isinstance(case.body, cst.IndentedBlock) else ()


IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def _catches_import_error(node: cst.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        names = caught.elements if isinstance(caught, cst.Tuple) else [caught] if caught is not None else []
        for name in names:
            value = name.value if isinstance(name, cst.Element) else name
            if isinstance(value, cst.Name) and value.value in IMPORT_ERRORS:
                return True
    return False


def _body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def _assigned(node: cst.BaseSmallStatement) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    return []


def _registers_attribute(value: cst.BaseExpression) -> bool:
    func = value.func if isinstance(value, cst.Call) else None
    return isinstance(func, cst.Attribute) and func.attr.value in ("register_buffer", "register_parameter")


def _scan_expressions(index: FileIndex) -> None:
    """torch.compile targets, hook registrations and capture flags, wherever they are written."""
    owners = _owner_of_nodes(index)
    for node in iter_nodes(index.tree):
        if isinstance(node, cst.Call):
            name = index.imports.resolve(node.func) or ""
            if name in COMPILE and node.args:
                index.compile_targets.append(node.args[0].value)
            elif name.startswith("torch._dynamo.config.patch"):
                for arg in node.args:
                    if arg.keyword and arg.keyword.value in CAPTURE_FLAGS and _is_true(arg.value):
                        index.flags.add(arg.keyword.value)
            elif isinstance(node.func, cst.Attribute) and node.func.attr.value in HOOK_REGISTRARS and node.args:
                index.hooks.append(
                    HookRegistration(node.args[0].value, owners.get(id(node)), node.func.attr.value, node)
                )
        elif isinstance(node, cst.Assign):
            value = node.value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        index.instances[target.target.value] = value.func.value
            for target in node.targets:
                full = index.imports.resolve(target.target) or ""
                flag = full.rsplit(".", 1)[-1]
                if full.startswith("torch._dynamo.config.") and flag in CAPTURE_FLAGS and _is_true(node.value):
                    index.flags.add(flag)


def _owner_of_nodes(index: FileIndex) -> dict[int, FunctionKey]:
    """id(call) -> the top-level function or method that contains it (for hook registrations)."""
    owners: dict[int, FunctionKey] = {}
    for info in index.functions.values():
        if info.enclosing is None:
            for node in iter_nodes(info.node.body):
                if isinstance(node, cst.Call):
                    owners.setdefault(id(node), info.key)
    return owners


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
