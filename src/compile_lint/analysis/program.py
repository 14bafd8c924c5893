"""All linted files together: names across modules, class hierarchies, attribute values and
function summaries (the value a call returns, given the values of its arguments).

Everything is computed on demand and memoized, so linting one model never analyses the helpers
it does not call. Sources the linted code imports from (another module of its package, an
installed library) are parsed when a name must be resolved there; they are never reported on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import libcst as cst

from compile_lint.analysis.annotations import annotation_value
from compile_lint.analysis.flow import Env, Flow
from compile_lint.analysis.index import COMPILE, DISABLE, ClassInfo, FileIndex, FunctionInfo
from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.nodes import iter_nodes, string_value
from compile_lint.analysis.packages import installed_source, relative_module, rooted_source, sibling_source
from compile_lint.analysis.tensors import (
    RETURNS_SELF,
    CallTarget,
    TensorFacts,
    default_param_value,
    param_names,
    torch_call_value,
)
from compile_lint.analysis.values import (
    ASSUMED,
    ASSUMED_MASK,
    BOOL_VALUE,
    FALSE_VALUE,
    NONE,
    OBJECT,
    TENSOR_LIKE,
    TENSOR_VALUE,
    TRUE_VALUE,
    UNKNOWN,
    UNKNOWN_VALUE,
    ClassKey,
    ClassObject,
    External,
    Function,
    FunctionKey,
    Instance,
    Mapping,
    Module,
    Record,
    Seq,
    Tup,
    Value,
    join_all,
)
from compile_lint.config import Mode

ASSUMED_ATOMS = (ASSUMED, ASSUMED_MASK)
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
DISTRIBUTIONS = "torch.distributions."
TRANSFORM_INVERSE = "_inv_call"  # torch's Transform method that runs `_inverse` (what `t.inv(y)` ends up calling)
TUPLE_MODULES = frozenset({"LSTM", "GRU", "RNN", "MultiheadAttention", "LSTMCell", "AdaptiveLogSoftmaxWithLoss"})
KNOWN_BASES = frozenset({"object", "typing.Generic", "typing.NamedTuple", "abc.ABC", "enum.Enum", "dict", "list",
                         "tuple", "Exception", "typing.Protocol", "torch.autograd.Function"})  # fmt: skip
MAX_SUMMARY_DEPTH = 12
MAX_PASS_THROUGH = 4  # decorator -> inner decorator -> helper it returns through, followed this deep
LIST_ITEMS = "<items>"  # the attribute under which a list subclass's items are recorded
Arguments = tuple[list[Value], dict[str, Value], Value | None]  # positional, keywords, what */** spread
SourceLoader = Callable[[str, str], FileIndex | None]  # (path, module name) -> index of a non-linted file


class Program:
    def __init__(self, indexes: list[FileIndex], mode: Mode = "all", load: SourceLoader | None = None) -> None:
        self.files: dict[str, FileIndex] = {index.path: index for index in indexes}
        self.linted = frozenset(self.files)
        self.mode: Mode = mode
        self._load = load
        self._by_module: dict[str, str] = {}
        self._module_order: dict[str, int] = {}  # each name of `_by_module`: its place there
        self._by_suffix: dict[str, tuple[int, str]] = {}  # a dotted tail of those names: the first one's place, path
        self._functions: dict[FunctionKey, FunctionInfo] = {}
        self._classes: dict[ClassKey, ClassInfo] = {}
        for index in indexes:
            self._register(index)
        self._globals: dict[str, Env] = {}
        self._summaries: dict[tuple[FunctionKey, frozenset[tuple[str, Value]]], Value] = {}
        self._running: set[tuple[FunctionKey, frozenset[tuple[str, Value]]]] = set()
        self._depth = 0
        self._attributes: dict[ClassKey, dict[str, Value]] = {}
        self._attribute_walks: set[FunctionKey] = set()  # methods walked for the attributes they assign
        self._module_reasons: dict[ClassKey, str | None] = {}
        self._none_checks: dict[FunctionKey, str | None] = {}
        self._missing_modules: set[str] = set()
        self._module_files: dict[str, FileIndex | None] = {}
        self._module_lookups: dict[tuple[str, str], FileIndex | None] = {}  # by module as written and importer
        self._real_paths: dict[str, Path] = {}
        self._mros: dict[ClassKey, list[ClassKey]] = {}
        self._metaclasses: dict[ClassKey, list[ClassKey]] = {}
        self._imports: dict[tuple[str, str], Value | None] = {}
        self._closures: dict[FunctionKey, Env] = {}
        self._pass_through: dict[FunctionKey, bool] = {}
        self._annotations: dict[tuple[FunctionKey, str], Value] = {}  # by function and parameter name
        self._ensured: set[tuple[ClassKey, str]] = set()  # (class, attribute) whose assigning methods were walked
        for info in list(self._functions.values()):
            if info.decorators:
                self._resolve_decorators(info)

    def _resolve_decorators(self, info: FunctionInfo) -> None:
        """Decorators that are `torch.compile` / `torch.compiler.disable` under another name: an alias
        (`disable = torch.compiler.disable`) or a function of the user's that applies them."""
        facts = TensorFacts(self.files[info.path].imports, self, info.path)
        kept = []
        for expression in info.decorators:
            call = expression if isinstance(expression, cst.Call) else None
            kind = self._decorator_kind(facts.value(call.func if call else expression))
            if kind == "compile":
                info.compiled = True
            elif kind == "disable":
                info.disabled = "non-recursive" if call is not None and _not_recursive(call) else "recursive"
            else:
                kept.append(expression)
        info.decorators = kept

    def _decorator_kind(self, value: Value) -> str | None:
        for atom in value:
            if isinstance(atom, External) and atom.name in COMPILE:
                return "compile"
            if isinstance(atom, External) and atom.name in DISABLE:
                return "disable"
            if isinstance(atom, Function):
                wrapper = self._functions.get(atom.key)
                applied = _applied_decorator(wrapper, self.files[wrapper.path].imports) if wrapper else None
                if applied is not None:
                    return applied
        return None

    def _register(self, index: FileIndex) -> None:
        self.files[index.path] = index
        if index.module and index.module not in self._by_module:
            self._by_module[index.module] = index.path
            place = self._module_order[index.module] = len(self._module_order)
            for tail in _dotted_tails(index.module):
                self._by_suffix.setdefault(tail, (place, index.path))
        for info in index.functions.values():
            self._functions[info.key] = info
        for cls in index.classes.values():
            self._classes[cls.key] = cls

    # -- lookups -------------------------------------------------------------------------------------
    def function(self, key: FunctionKey) -> FunctionInfo | None:
        return self._functions.get(key)

    def class_info(self, key: ClassKey) -> ClassInfo | None:
        return self._classes.get(key)

    def functions(self) -> Iterator[FunctionInfo]:
        return iter(list(self._functions.values()))

    def classes(self) -> Iterator[ClassInfo]:
        return iter(list(self._classes.values()))

    def index_of(self, path: str) -> FileIndex:
        return self.files[path]

    def is_linted(self, path: str) -> bool:
        return path in self.linted

    def training_value(self) -> Value:
        return {"inference": FALSE_VALUE, "training": TRUE_VALUE}.get(self.mode, BOOL_VALUE)

    # -- modules and names ---------------------------------------------------------------------------
    def file_for_module(self, module: str, importer: str) -> FileIndex | None:
        """The file of `module` (absolute, or relative like `..utils` to the importing file); looked up
        once per run (each lookup stats candidate files and reads and hashes the one found)."""
        key = (module, importer)
        if key not in self._module_lookups:
            self._module_lookups[key] = self._find_module(module, importer)
        return self._module_lookups[key]

    def _find_module(self, module: str, importer: str) -> FileIndex | None:
        if module.startswith("."):
            index = self.files[importer]
            absolute = relative_module(index.module, importer.endswith("__init__.py"), module)
            found = self._linted_module(absolute) if absolute else None
            if found is None:
                found = self._load_source(sibling_source(self._real_path(importer), module), absolute or module)
            return found
        index = self.files[importer]
        found = self._linted_module(module)
        if found is None:
            found = self._load_source(rooted_source(importer, self._real_path(importer), index.module, module), module)
        return found or self._load_source(installed_source(module), module)

    def _real_path(self, path: str) -> Path:
        """`path` resolved, once per file a program imports from (a 10-file run resolved 443 paths, now 137)."""
        found = self._real_paths.get(path)
        if found is None:
            found = self._real_paths[path] = Path(path).resolve()
        return found

    def _linted_module(self, module: str) -> FileIndex | None:
        if module not in self._module_files:
            self._module_files[module] = self._find_linted_module(module)
        return self._module_files[module]

    def _find_linted_module(self, module: str) -> FileIndex | None:
        """The file registered under `module`, else the first registered whose name ends with it or with which it
        ends, at a dot: a module name guessed from a path lacks its package. Looked up in `_by_suffix` rather
        than by scanning every name (a file whose context is the whole package asked 2,300 names 2,300 times)."""
        path = self._by_module.get(module)
        if path is not None:
            return self.files[path]
        found = [self._by_suffix[module]] if module in self._by_suffix else []
        order, paths = self._module_order, self._by_module
        found += [(order[tail], paths[tail]) for tail in _dotted_tails(module) if tail in paths]
        return self.files[min(found)[1]] if found else None

    def _load_source(self, path: str | None, module: str) -> FileIndex | None:
        if path is None or self._load is None or module in self._missing_modules:
            return None
        known = self.files.get(path)
        if known is not None:
            return known
        loaded = self._load(path, module)
        if loaded is None:
            self._missing_modules.add(module)
            return None
        self._register(loaded)
        return loaded

    def import_value(self, importer: str, full: str) -> Value | None:
        """The function, class or global an imported dotted name refers to, if it is in readable source."""
        key = (importer, full)
        if key not in self._imports:
            self._imports[key] = None  # a cycle of re-exports resolves to nothing
            self._imports[key] = self._import_value(importer, full)
        return self._imports[key]

    def _import_value(self, importer: str, full: str) -> Value | None:
        parts = full.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            if not module.strip("."):
                continue
            index = self.file_for_module(module, importer)
            if index is not None:
                return self._member(index, parts[cut:])
        return None

    def _member(self, index: FileIndex, names: list[str]) -> Value | None:
        value = self.global_value(index.path, names[0])
        full = index.imports.aliases.get(names[0], "")
        if value is None and full.split(".", 1)[0] == "torch":
            value = Value.of(External(full))  # torch's own name, re-exported: `from ..utils import is_compiling`
        for name in names[1:]:
            if value is None:
                return None
            classes = value.classes()
            value = self.attribute(classes[0].cls, name, instance=False) if classes else None
        return value

    def global_value(self, path: str, name: str) -> Value | None:
        """A module-level name of `path`: a function, a class, or what the module body assigns."""
        index = self.files.get(path)
        if index is None:
            return None
        info = index.functions.get(name)
        if info is not None:
            return Value.of(Function(info.key))
        cls = index.classes.get(name)
        if cls is not None:
            return self.class_value(cls.key)
        env = self._globals.get(path)
        if env is None:
            env = self._globals[path] = {}  # seen while it is being computed: what is bound so far
            self._bind_globals(index, env)
        found = env.get(name)
        if found is None and name in index.imports.aliases:  # a package re-exporting `from .loop import f`
            return self.import_value(path, index.imports.aliases[name])
        if found is None and not name.startswith("_"):
            return self._star_imported(index, name)
        return found

    def _bind_globals(self, index: FileIndex, env: Env, program: Program | None = None) -> None:
        """Bind the module's global names into `env`, its entry already (a cycle back to the module sees what is
        bound so far), walking its body with `program`'s view (this program's own by default)."""
        flow = Flow(program or self, index, None, {})
        flow.facts.env = env
        # A top-level `if`/`try` joins its branches into a new environment: keep the globals bound after it
        # too (imported names resolve through the imports, which know `try: import` / `except` fallbacks).
        bound = flow.run_module(index.shell.body)  # function bodies are not walked
        env.update({k: v for k, v in bound.items() if k not in env and k not in index.imports.aliases})

    def _star_imported(self, index: FileIndex, name: str) -> Value | None:
        """A public name a package gets with `from .core import *` (normflows' `nf.NormalizingFlow`)."""
        for module in index.imports.stars:
            key = (index.path, f"{module}.{name}")
            if key in self._imports:  # asked already, or being resolved (a cycle of star imports)
                found = self._imports[key]
            else:
                self._imports[key] = None
                source = self.file_for_module(module, index.path)
                found = self._imports[key] = self.global_value(source.path, name) if source is not None else None
            if found is not None:
                return found
        return None

    def string_table(self, path: str, name: str) -> list[str] | None:
        """The values of a module-level dict literal whose values are all string constants
        (`MODES = {Mode.SAMPLE: "_sample", ...}`), as a table of method names to dispatch through."""
        index = self.files.get(path)
        if index is None:
            return None
        for statement in index.shell.body:
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
            if isinstance(small, cst.AnnAssign):
                target, value = small.target, small.value
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            else:
                continue
            if isinstance(target, cst.Name) and target.value == name:
                if not isinstance(value, cst.Dict):
                    return None
                strings = [string_value(e.value) for e in value.elements if isinstance(e, cst.DictElement)
                           and isinstance(e.value, cst.SimpleString)]  # fmt: skip
                return [s for s in strings if isinstance(s, str)] if len(strings) == len(value.elements) else None
        return None

    def class_value(self, key: ClassKey) -> Value:
        return Value.of(ClassObject(key))

    # -- classes -------------------------------------------------------------------------------------
    def base_values(self, cls: ClassInfo) -> list[tuple[cst.BaseExpression, Value]]:
        facts = TensorFacts(self.files[cls.path].imports, self, cls.path)
        return [(base, facts.value(base)) for base in cls.bases]

    def mro(self, key: ClassKey) -> list[ClassKey]:
        """The class and its user-code ancestors, depth first (close enough to Python's C3 here); computed
        once per run (each call resolves every base expression again)."""
        if key not in self._mros:
            self._mros[key] = self._find_mro(key)
        return self._mros[key]

    def _find_mro(self, key: ClassKey) -> list[ClassKey]:
        order: list[ClassKey] = []
        pending = [key]
        while pending:
            current = pending.pop(0)
            info = self._classes.get(current)
            if info is None or current in order:
                continue
            order.append(current)
            for _, value in self.base_values(info):
                pending.extend(atom.cls for atom in value.classes())
        return order

    def metaclasses(self, key: ClassKey) -> list[ClassKey]:
        """The user-code classes named `metaclass=` by the class or an ancestor (Python uses the most derived;
        each is returned, first the closest); computed once per class."""
        known = self._metaclasses.get(key)
        if known is not None:
            return known
        found: list[ClassKey] = []
        for current in self.mro(key):
            info = self._classes[current]
            facts = TensorFacts(self.files[info.path].imports, self, info.path)
            for arg in info.node.keywords:
                if arg.keyword is not None and arg.keyword.value == "metaclass":
                    found.extend(atom.cls for atom in facts.value(arg.value).classes() if atom.cls not in found)
        self._metaclasses[key] = found
        return found

    def method(self, cls: ClassKey, name: str) -> FunctionKey | None:
        for key in self.mro(cls):
            found = self._classes[key].methods.get(name)
            if found is not None:
                return found
        return None

    def module_reason(self, key: ClassKey, seen: frozenset[ClassKey] = frozenset()) -> str | None:
        """Why the class is an nn.Module (None if it is not), e.g. "derives from torch.nn.Module"."""
        if key in self._module_reasons:
            return self._module_reasons[key]
        info = self._classes.get(key)
        if info is None or key in seen:
            return None
        reason: str | None = None
        unresolved: list[str] = []
        for base, value in self.base_values(info):
            written = dotted(base) or "?"
            for atom in value:
                if isinstance(atom, External):
                    last = atom.name.rsplit(".", 1)[-1]
                    if atom.name in NN_MODULE or (atom.name.startswith("torch.nn.") and last[:1].isupper()):
                        reason = f"derives from {atom.name}"
                    elif not _known_package(atom.name):
                        unresolved.append(written)
                elif isinstance(atom, ClassObject):
                    inherited = self.module_reason(atom.cls, seen | {key})
                    if inherited is not None:
                        elsewhere = atom.cls[0] != key[0] and self.files[atom.cls[0]].module
                        shown = f"{self.files[atom.cls[0]].module}.{atom.cls[1]}" if elsewhere else atom.cls[1]
                        reason = f"derives from {shown}, which {inherited}"
                elif atom == UNKNOWN:
                    unresolved.append(written)
            if reason is not None:
                break
        if reason is None and unresolved and "forward" in info.methods and self.files[info.path].imports_torch:
            reason = (
                f"is assumed to be one: its base `{unresolved[0]}` could not be read, it defines `forward` "
                "and its file imports torch (`exclude-regions` in the config says otherwise)"
            )
        self._module_reasons[key] = reason
        return reason

    def transform_base(self, key: ClassKey) -> str | None:
        """The torch.distributions Transform class `key` derives from (`torch.distributions.Transform`,
        `torch.distributions.ComposeTransform`, ...), through its user-code bases; None if it does not."""
        for ancestor in self.mro(key):
            for _, value in self.base_values(self._classes[ancestor]):
                for atom in value.externals():
                    if atom.name.startswith(DISTRIBUTIONS) and atom.name.endswith("Transform"):
                        return atom.name
        return None

    def is_module_class(self, key: ClassKey) -> bool:
        return self.module_reason(key) is not None

    def is_module_init(self, key: FunctionKey) -> bool:
        """Is `key` the `__init__` of an nn.Module subclass?"""
        info = self.function(key)
        return (
            info is not None
            and info.name == "__init__"
            and info.class_key is not None
            and self.is_module_class(info.class_key)
        )

    def instance_value(self, key: ClassKey) -> Value:
        return Value.of(Module(key, key[1]) if self.is_module_class(key) else Instance(key))

    # -- attributes ----------------------------------------------------------------------------------
    def attribute(self, cls: ClassKey, name: str, instance: bool = True) -> Value | None:
        """`obj.name` for an instance of `cls` (or the class itself, `instance=False`): an attribute some
        method assigns, a method, a class constant. On an instance, a class-level `None` is only a default:
        dataclass and output-object fields (`last_hidden_state: Tensor | None = None`) are set by the
        constructor's arguments, other attributes by `setattr` or `__init__(**kwargs)`."""
        for key in self.mro(cls):
            info = self._classes[key]
            self._ensure_attribute(key, name)
            found = self._attributes.get(key, {}).get(name)
            if found is not None:
                return found
            method = info.methods.get(name)
            if method is not None:
                function = self._functions[method]
                if function.kind == "property":
                    return self.summary(method, {_self_name(function): self.instance_value(cls)})
                return Value.of(Function(method, None if function.kind == "staticmethod" else cls))
            if name in info.body_assignments:
                constant = self._class_constant(info, name)
                return constant.join(UNKNOWN_VALUE) if instance and NONE in constant else constant
        return None

    def _class_constant(self, info: ClassInfo, name: str) -> Value:
        """A class-level `name = <expression>`, evaluated with the module's names."""
        expression = info.body_assignments[name]
        if expression is None:
            return UNKNOWN_VALUE
        return TensorFacts(self.files[info.path].imports, self, info.path).value(expression)

    def list_items(self, cls: ClassKey) -> Value | None:
        """What iterating an instance of a user subclass of `list` yields: the items its instances were given
        with `append`/`extend`/`insert` anywhere walked so far (None for other classes)."""
        if not self.is_list_class(cls):
            return None
        return self._attributes.get(cls, {}).get(LIST_ITEMS) or UNKNOWN_VALUE

    def record_list_items(self, cls: ClassKey, value: Value) -> None:
        if self.is_list_class(cls):
            self.record_attribute(cls, LIST_ITEMS, value)

    def is_list_class(self, cls: ClassKey) -> bool:
        """A user class deriving from the builtin `list` (`class LogitsProcessorList(list)`)."""
        for key in self.mro(cls):
            info = self._classes[key]
            imports = self.files[info.path].imports
            if any(isinstance(base, cst.Name) and base.value == "list" and "list" not in imports.aliases
                   for base in info.bases):  # fmt: skip
                return True
        return False

    def record_attribute(self, cls: ClassKey, name: str, value: Value) -> None:
        attributes = self._attributes.setdefault(cls, {})
        current = attributes.get(name)
        attributes[name] = (value if current is None else current.join(value)).widen()

    def _ensure_attribute(self, cls: ClassKey, name: str) -> None:
        """Walk (once each) the methods of the class that may assign `self.<name>`, recording what they assign:
        those writing it or registering buffers and parameters, and `__init__`, whose `super().__init__(**kwargs)`
        records a base class's attributes. Not every method assigning something: transformers' `PreTrainedModel`
        has 15, and `self.config` needs only its `__init__` (walking all of them, again for each file flake8
        hands the plugin, was most of the plugin's cost)."""
        if (cls, name) in self._ensured:
            return
        for method_name, key in self._classes[cls].methods.items():
            assigned = self._functions[key].assigned_attributes
            wanted = name in assigned or "<registered>" in assigned or method_name == "__init__"
            if assigned and wanted and key not in self._attribute_walks:
                self._attribute_walks.add(key)
                function = self._functions[key]
                self.summary(key, self.entry_params(function, self.instance_value(cls), entry=False))
        self._ensured.add((cls, name))  # only now: a walk above asking again must still walk the rest

    def setattr_targets(self, receiver: Value) -> list[CallTarget]:
        targets = []
        for atom in receiver:
            if isinstance(atom, (Module, Instance)) and atom.cls is not None:
                method = self.method(atom.cls, "__setattr__")
                if method is not None:
                    params = self.bind_params(self._functions[method], [UNKNOWN_VALUE] * 2, {}, None, Value.of(atom))
                    targets.append(CallTarget(method, params, "__setattr__", "setattr"))
        return targets

    def closure_env(self, info: FunctionInfo) -> Env:
        """The names a nested function sees from the function it is defined in, as they are where it is
        defined (`model = Net(...).eval()` before `@torch.compile def step(x): return model(x)`)."""
        if info.enclosing is None:
            return {}
        found = self._closures.get(info.key)
        if found is not None:
            return found
        self._closures[info.key] = {}  # a nested function inside its own enclosing walk sees nothing more
        outer = self._functions.get(info.enclosing)
        if outer is None:
            return {}
        receiver = self.instance_value(outer.class_key) if outer.class_key else None
        flow = Flow(
            self,
            self.files[outer.path],
            outer,
            {**self.closure_env(outer), **self.entry_params(outer, receiver, entry=False)},
        )
        try:
            flow.run()
        except RecursionError:
            return {}
        found = self._closures[info.key] = flow.closures.get(info.key, {})
        return found

    # -- calls ---------------------------------------------------------------------------------------
    def entry_params(self, info: FunctionInfo, receiver: Value | None, entry: bool = True) -> Env:
        """Parameter values when nothing is known of the caller (a region entry, a class's own walk)."""
        params: Env = {}
        ordered = param_names(info.node.params)
        for position, param in enumerate(ordered):
            name = param.name.value
            if position == 0 and receiver is not None and info.kind in ("method", "property", "classmethod"):
                params[name] = receiver
                continue
            params[name] = default_param_value(param, self._annotated(info, param), entry)
        _bind_stars(info, params)
        return params

    def bind_params(
        self,
        info: FunctionInfo,
        positional: list[Value],
        keywords: dict[str, Value],
        spread: Value | None,
        receiver: Value | None,
    ) -> Env:
        """Parameter values for a call with these argument values (defaults for the rest; `spread`: what the
        call's `*args` pass, None without `*args`/`**kwargs`)."""
        ordered = list(param_names(info.node.params))
        positional = list(positional)
        if receiver is not None and info.kind in ("method", "property", "classmethod") and ordered:
            positional.insert(0, receiver)
        params: Env = {}
        for position, param in enumerate(ordered):
            name = param.name.value
            if position < len(positional) and param not in info.node.params.kwonly_params:
                value = positional[position]
            elif name in keywords:
                value = keywords[name]
            elif spread is not None:
                value = UNKNOWN_VALUE
            else:
                value = default_param_value(param, None, entry=False)
            annotated = self._annotated(info, param)
            if annotated is not None:
                value = _with_annotation(value, annotated)
            params[name] = value
        star = info.node.params.star_arg
        if isinstance(star, cst.Param):
            spilled = [*positional[len(ordered) :], *([spread] if spread is not None else [])]
            params[star.name.value] = Value.of(Seq(join_all(spilled) or UNKNOWN_VALUE))
        kwargs = info.node.params.star_kwarg
        if kwargs is not None:
            extra = {k: v for k, v in keywords.items() if k not in params}
            params[kwargs.name.value] = Value.of(
                Mapping(join_all(extra.values()) or UNKNOWN_VALUE, tuple(extra.items()))
            )
        return params

    def _annotated(self, info: FunctionInfo, param: cst.Param) -> Value | None:
        """What the parameter's annotation says it holds (None without one); read once per run, not at every
        call that binds it."""
        if param.annotation is None:
            return None
        key = (info.key, param.name.value)
        found = self._annotations.get(key)
        if found is None:
            imports = self.files[info.path].imports
            found = self._annotations[key] = annotation_value(param.annotation.annotation, imports)
        return found

    def call_targets(self, facts: TensorFacts, node: cst.Call) -> list[CallTarget]:
        """The user functions a call runs, with their parameters' values."""
        memo = facts.targets_memo.get(id(node))
        if memo is not None:
            return memo
        func = node.func
        callee = facts.value(func)
        positional, keywords, spread = facts.arguments(node)
        targets: list[CallTarget] = []
        for atom in callee:
            if isinstance(atom, Function):
                target = self._function_target(facts, func, atom, positional, keywords, spread)
                if target is not None:
                    targets.append(target)
            elif isinstance(atom, ClassObject):
                init = self.method(atom.cls, "__init__")
                if init is not None:
                    params = self.bind_params(
                        self._functions[init], positional, keywords, spread, self.instance_value(atom.cls)
                    )
                    targets.append(CallTarget(init, params, "constructor", func))
            elif isinstance(atom, (Module, Instance)) and atom.cls is not None:
                own_call = self.method(atom.cls, "__call__")  # a module class may wrap nn.Module.__call__
                if isinstance(atom, Module) and own_call is not None:
                    params = self.bind_params(self._functions[own_call], positional, keywords, spread, Value.of(atom))
                    targets.append(CallTarget(own_call, params, "__call__", func))
                method = self.method(atom.cls, "forward" if isinstance(atom, Module) else "__call__")
                if method is None and self.transform_base(atom.cls) is not None:
                    method = self.method(atom.cls, "_call")  # torch.distributions' Transform.__call__ runs it
                if method is not None:
                    params = self.bind_params(self._functions[method], positional, keywords, spread, Value.of(atom))
                    how = "forward" if isinstance(atom, Module) else "__call__"
                    targets.append(CallTarget(method, params, how, func))
        if not targets and isinstance(func, cst.Attribute):
            targets = self._transform_inverse(facts, func, positional, keywords, spread)
        if not targets:
            targets = self._callbacks(facts, node, positional, keywords)
        facts.targets_memo[id(node)] = targets
        return targets

    def _transform_inverse(
        self,
        facts: TensorFacts,
        func: cst.Attribute,
        positional: list[Value],
        keywords: dict[str, Value],
        spread: Value | None,
    ) -> list[CallTarget]:
        """`t._inv_call(y)` on a torch.distributions Transform that does not override it runs its `_inverse`."""
        if func.attr.value != TRANSFORM_INVERSE:
            return []
        targets = []
        for atom in facts.value(func.value):
            if not isinstance(atom, (Module, Instance)) or atom.cls is None:
                continue
            if self.method(atom.cls, func.attr.value) is not None or self.transform_base(atom.cls) is None:
                continue
            inverse = self.method(atom.cls, "_inverse")
            if inverse is not None:
                params = self.bind_params(self._functions[inverse], positional, keywords, spread, Value.of(atom))
                targets.append(CallTarget(inverse, params, "call", func))
        return targets

    def _function_target(
        self,
        facts: TensorFacts,
        func: cst.BaseExpression,
        atom: Function,
        positional: list[Value],
        keywords: dict[str, Value],
        spread: Value | None,
    ) -> CallTarget | None:
        info = self._functions.get(atom.key)
        if info is None:
            return None
        receiver = None
        if atom.bound is not None:
            receiver = self.instance_value(atom.bound)
            if isinstance(func, cst.Attribute):
                # Only the receivers that run this method: `layer.get_mask_sizes()` on a join of layer classes
                # walks each class's method with its own instances.
                name = func.attr.value
                value = facts.value(func.value)
                kept = {
                    a: c
                    for a, c in value.atoms.items()
                    if not isinstance(a, (Module, Instance)) or a.cls is None or self.method(a.cls, name) == atom.key
                }
                if any(isinstance(a, (Module, Instance)) for a in kept) or len(kept) == len(value.atoms):
                    receiver = Value(kept)
        params = self.bind_params(info, positional, keywords, spread, receiver)
        return CallTarget(atom.key, params, "call", func)

    def _callbacks(
        self, facts: TensorFacts, node: cst.Call, positional: list[Value], keywords: dict[str, Value]
    ) -> list[CallTarget]:
        """Functions handed to a library call (`checkpoint(fn, x)`, `torch.cond(p, f, g, ops)`) run too."""
        targets = []
        checkpoint = (facts.imports.resolve(node.func) or "").startswith("torch.utils.checkpoint")
        for position, value in enumerate([*positional, *keywords.values()]):
            for atom in value.functions():
                info = self._functions.get(atom.key)
                if info is None:
                    continue
                arguments = positional[position + 1 :] if checkpoint and position == 0 else []
                receiver = self.instance_value(atom.bound) if atom.bound is not None else None
                params = self.bind_params(info, arguments, {}, None if checkpoint else UNKNOWN_VALUE, receiver)
                targets.append(CallTarget(atom.key, params, "checkpoint" if checkpoint else "callback", node.func))
        return targets

    def call_value(self, facts: TensorFacts, node: cst.Call, func: cst.BaseExpression, callee: Value) -> Value:
        targets = {target.key: target for target in self.call_targets(facts, node)}
        arguments = facts.arguments(node)
        parts: list[Value] = []
        for atom, cond in callee.atoms.items():
            parts.append(self._call_atom(atom, targets, arguments).under(cond))
        return join_all(parts) or UNKNOWN_VALUE

    def _call_atom(self, atom: object, targets: dict[FunctionKey, CallTarget], arguments: Arguments) -> Value:
        if isinstance(atom, Function):
            target = targets.get(atom.key)
            return self.summary(atom.key, target.params) if target else UNKNOWN_VALUE
        if isinstance(atom, ClassObject):
            init = self.method(atom.cls, "__init__")
            target = targets.get(init) if init else None
            if target is not None:  # what this construction passes becomes the attributes `__init__` assigns
                self.summary(target.key, target.params)
            return self.instance_value(atom.cls)
        if isinstance(atom, Module):
            if atom.cls is not None:
                method = self.method(atom.cls, "forward")
                target = targets.get(method) if method else None
                if target is not None:
                    return self.summary(target.key, target.params)
            return Value.of(Seq(TENSOR_VALUE)) if atom.name in TUPLE_MODULES else TENSOR_VALUE
        if isinstance(atom, Record):
            positional, keywords, _ = arguments
            items = [*positional, *(keywords.get(name, UNKNOWN_VALUE) for name in atom.fields[len(positional) :])]
            return Value.of(Tup(tuple(items[: len(atom.fields)]), atom.fields))
        if isinstance(atom, Instance):
            method = self.method(atom.cls, "__call__")
            target = targets.get(method) if method else None
            return self.summary(target.key, target.params) if target else UNKNOWN_VALUE
        if isinstance(atom, External) and atom.name in RETURNS_SELF:
            return Value.of(External(atom.name.rpartition(".")[0]))  # `torch.Generator().manual_seed(0)`
        if isinstance(atom, External) and atom.name.rsplit(".", 1)[-1][:1].isupper():
            return Value.of(External(atom.name + "()"))  # an instance of a library class: `ContextVar("x")`
        if isinstance(atom, External) and atom.name.startswith("torch."):
            return torch_call_value(atom.name)  # a torch function re-exported by another module of the package
        return UNKNOWN_VALUE

    def summary(self, key: FunctionKey, params: Env) -> Value:
        """What the function returns for these parameter values (memoized; recursion gives unknown)."""
        info = self._functions.get(key)
        if info is None:
            return UNKNOWN_VALUE
        memo_key = (key, frozenset((name, value.widen()) for name, value in params.items()))
        found = self._summaries.get(memo_key)
        if found is not None:
            return found
        if memo_key in self._running or self._depth >= MAX_SUMMARY_DEPTH:
            return UNKNOWN_VALUE
        self._running.add(memo_key)
        self._depth += 1
        try:
            value = self._summarise(info, params)
        finally:
            self._depth -= 1
            self._running.discard(memo_key)
        self._summaries[memo_key] = value
        return value

    def _summarise(self, info: FunctionInfo, params: Env) -> Value:
        """`summary` not known yet: the function walked with these parameters (unknown if too deep for Python)."""
        try:
            return Flow(self, self.files[info.path], info, params).run().widen()
        except RecursionError:
            return UNKNOWN_VALUE

    def none_check(self, callee: Value) -> str | None:
        """ "not-none" for a helper like `def exists(v): return v is not None`, "is-none" for its opposite."""
        functions = callee.functions()
        if len(functions) != 1:
            return None
        key = functions[0].key
        if key not in self._none_checks:
            self._none_checks[key] = _none_check_body(self._functions.get(key))
        return self._none_checks[key]

    def passes_through(self, key: FunctionKey, depth: int = MAX_PASS_THROUGH) -> bool:
        """A decorator that returns what it is given (`@register("name")` storing the function, a docstring
        generator such as transformers' `auto_docstring`): no code of its runs when the decorated function is
        called. Every `return` gives back one of its parameters, or that parameter through a call of another
        such function, or (a decorator factory) a nested function that passes through itself."""
        if key not in self._pass_through:
            self._pass_through[key] = False  # a recursive decorator is not one that passes through
            info = self._functions.get(key)
            self._pass_through[key] = info is not None and depth > 0 and self._returns_argument(info, depth)
        return self._pass_through[key]

    def returns_new_object(self, key: FunctionKey) -> bool:
        """Every `return` of the function constructs an instance of a user class (`return Spline(params)`): a
        factory whose result, like a construction in the caller, is an object Dynamo makes while tracing."""
        info = self._functions.get(key)
        if info is None:
            return False
        facts = TensorFacts(self.index_of(info.path).imports, self, info.path)
        returns = _returned(info)
        return bool(returns) and all(
            isinstance(value, cst.Call) and bool(facts.value(value.func).classes()) for value in returns
        )

    def _returns_argument(self, info: FunctionInfo, depth: int) -> bool:
        params = {param.name.value for param in param_names(info.node.params)}
        facts = TensorFacts(self.index_of(info.path).imports, self, info.path)
        returns = _returned(info)
        if not returns or any(value is None for value in returns):
            return False
        return all(self._gives_back(info, facts, params, value, depth) for value in returns if value is not None)

    def _gives_back(
        self, info: FunctionInfo, facts: TensorFacts, params: set[str], value: cst.BaseExpression, depth: int
    ) -> bool:
        if isinstance(value, cst.Name) and value.value in params:
            return True
        callee = value.func if isinstance(value, cst.Call) else value
        if isinstance(value, cst.Call):
            first = value.args[0] if value.args else None
            if first is None or first.star or not (isinstance(first.value, cst.Name) and first.value.value in params):
                return False
        if not isinstance(callee, cst.Name):
            return False
        nested = (info.path, f"{info.qualname}.<locals>.{callee.value}")
        if nested in self._functions:
            return self.passes_through(nested, depth - 1)
        targets = facts.value(callee).functions()
        return bool(targets) and all(self.passes_through(atom.key, depth - 1) for atom in targets)


def _returned(info: FunctionInfo) -> list[cst.BaseExpression | None]:
    """What each `return` of the function itself (not of a nested function) gives back; None for a bare one."""
    return [
        node.value
        for node in iter_nodes(info.node.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
        if isinstance(node, cst.Return)
    ]


def _self_name(info: FunctionInfo) -> str:
    ordered = param_names(info.node.params)
    return ordered[0].name.value if ordered else "self"


def _bind_stars(info: FunctionInfo, params: Env) -> None:
    star = info.node.params.star_arg
    if isinstance(star, cst.Param):
        params[star.name.value] = Value.of(Seq(UNKNOWN_VALUE))
    if info.node.params.star_kwarg is not None:
        params[info.node.params.star_kwarg.name.value] = Value.of(Mapping(UNKNOWN_VALUE))


def _none_check_body(info: FunctionInfo | None) -> str | None:
    if info is None:
        return None
    params = param_names(info.node.params)
    body = info.node.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    if len(params) != 1 or len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    small = statements[0].body[0]
    if not isinstance(small, cst.Return) or not isinstance(small.value, cst.Comparison):
        return None
    test = small.value
    if len(test.comparisons) != 1 or dotted(test.left) != params[0].name.value:
        return None
    comparison = test.comparisons[0]
    if not (isinstance(comparison.comparator, cst.Name) and comparison.comparator.value == "None"):
        return None
    if isinstance(comparison.operator, cst.IsNot):
        return "not-none"
    return "is-none" if isinstance(comparison.operator, cst.Is) else None


def _known_package(name: str) -> bool:
    """A base from torch, the standard library or builtins: resolved, and not an nn.Module."""
    top = name.split(".", 1)[0]
    return name in KNOWN_BASES or top == "torch" or top in sys.stdlib_module_names


def _applied_decorator(info: FunctionInfo, imports: ImportMap) -> str | None:
    """ "disable" / "compile" when the function's own code calls torch.compiler.disable / torch.compile."""
    for node in iter_nodes(info.node.body):
        if type(node) is cst.Call:  # exact: libcst's node classes are ABCs (a failed isinstance is slow)
            name = imports.resolve(node.func)
            if name in DISABLE:
                return "disable"
            if name in COMPILE:
                return "compile"
    return None


def _not_recursive(call: cst.Call) -> bool:
    return any(
        arg.keyword is not None and arg.keyword.value == "recursive" and dotted(arg.value) == "False"
        for arg in call.args
    )


def _with_annotation(passed: Value, annotated: Value) -> Value:
    """A parameter's value given what callers pass and what it is annotated. The annotation outweighs
    guesses (an entry's input taken for a tensor) and denies tensors to `int`/`tuple[int, int]`
    parameters (a value the analysis got wrong upstream); functions, modules and the like passed in
    are kept, since annotations such as `Callable` or `nn.Module` say less than they."""
    if annotated.only((UNKNOWN,)):
        return passed
    if passed.only((UNKNOWN,)) or passed.any_of(ASSUMED_ATOMS):
        return annotated.join(passed.without(UNKNOWN, *ASSUMED_ATOMS))
    if passed.is_tensor_like and not annotated.is_tensor_like and not annotated.any_of((UNKNOWN, OBJECT)):
        return annotated.join(passed.without(*TENSOR_LIKE))
    return passed


def _dotted_tails(name: str) -> Iterator[str]:
    """What follows each dot of `name`: `a.b.c` gives `b.c` and `c`."""
    start = name.find(".")
    while start != -1:
        yield name[start + 1 :]
        start = name.find(".", start + 1)
