"""One pass over a parsed file: index functions, classes and calls, track tensor facts, run rules."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from compile_lint.analysis.names import ImportMap, dotted
from compile_lint.analysis.positions import spans_of
from compile_lint.analysis.summary import CallEdge, Candidate, ClassSummary, FileSummary, FunctionSummary
from compile_lint.analysis.tensors import Kind, TensorFacts
from compile_lint.finding import Finding, Severity
from compile_lint.versions import NEWEST, TorchVersion

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

Visitor = Callable[[cst.CSTNode, "RuleContext"], None]
COMPILE = frozenset({"torch.compile"})
DISABLE = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
IS_COMPILING = frozenset({"is_compiling", "is_torchdynamo_compiling", "is_dynamo_compiling"})
CAPTURE_FLAGS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops"})


@dataclass
class _Pending:
    rule: Rule
    node: cst.CSTNode
    message: str
    severity: Severity
    owner: str | None
    condition: str
    gb_codes: tuple[str, ...]
    fix: str


@dataclass
class RuleContext:
    """What a rule may ask while it visits a node."""

    path: str
    imports: ImportMap
    facts: TensorFacts
    function: FunctionSummary | None = None
    in_forward: bool = False
    compiled_names: frozenset[str] = frozenset()  # last names of what the file passes to `compile(...)`
    torch_version: TorchVersion = NEWEST  # the torch the project runs: codes and fixes depend on it
    reported: set[int] = field(default_factory=set)  # ids of nodes some rule claimed already
    pending: list[_Pending] = field(default_factory=list)
    _names: dict[tuple[str, str, str | None], set[str]] = field(default_factory=dict)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return self.imports.resolve(node)

    def names(self, rule: Rule, kind: str) -> set[str]:
        """A rule's own set of local names (e.g. those bound to a list of tensors) in the function
        being walked; fresh for every function and file."""
        owner = self.function.qualname if self.function else None
        return self._names.setdefault((rule.code, kind, owner), set())

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        condition: str | None = None,
        severity: Severity | None = None,
        gb_codes: tuple[str, ...] | None = None,
        fix: str | None = None,
    ) -> None:
        """Report `node`; the keyword arguments override the rule's defaults for this one finding."""
        if condition is None:
            condition = f"unless:{rule.silenced_by}" if rule.silenced_by else "always"
        owner = self.function.qualname if self.function else None
        self.pending.append(
            _Pending(
                rule,
                node,
                message or rule.summary,
                severity or rule.severity,
                owner,
                condition,
                rule.gb_codes if gb_codes is None else gb_codes,
                fix or rule.fix,
            )
        )
        if condition == "always":  # a report that a flag may drop must not hide others' findings
            self.reported.add(id(node))


def compiling_polarity(test: cst.BaseExpression, imports: ImportMap) -> bool | None:
    """True if `test` is true whenever Dynamo traces, False if always false then, else None."""
    if isinstance(test, cst.Call):
        name = imports.resolve(test.func)
        return True if name and name.rsplit(".", 1)[-1] in IS_COMPILING else None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = compiling_polarity(test.expression, imports)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        sides = (compiling_polarity(test.left, imports), compiling_polarity(test.right, imports))
        if isinstance(test.operator, cst.And) and False in sides:
            return False
        if isinstance(test.operator, cst.Or) and True in sides:
            return True
    return None


def _decorator_kind(decorator: cst.Decorator, imports: ImportMap) -> tuple[bool, str | None]:
    """(is @torch.compile, disable mode) of one decorator."""
    expr = decorator.decorator
    call = expr if isinstance(expr, cst.Call) else None
    name = imports.resolve(call.func if call else expr)
    if name in COMPILE:
        return True, None
    if name in DISABLE:
        recursive = True
        for arg in call.args if call else ():
            if arg.keyword and arg.keyword.value == "recursive":
                recursive = not (isinstance(arg.value, cst.Name) and arg.value.value == "False")
        return False, "recursive" if recursive else "non-recursive"
    return False, None


# Fields that hold only punctuation and whitespace: walking them is most of libcst's own visit cost.
SKIPPED_FIELDS = frozenset(
    {
        "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "dot", "semicolon", "equal",
        "colon", "star", "asynchronous", "leading_lines", "lines_after_decorators", "header", "footer",
        "trailing_whitespace", "operator", "attr", "keyword", "newline", "indent",
    }
)  # fmt: skip
LEAVES = (cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)
# Walk in evaluation order where libcst's field order differs: decorators before the body,
# a comprehension's loops before the element they bind.
FIELD_ORDER: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.ListComp: ("for_in", "elt"),
    cst.SetComp: ("for_in", "elt"),
    cst.GeneratorExp: ("for_in", "elt"),
    cst.DictComp: ("for_in", "key", "value"),
}
_fields_cache: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    found = _fields_cache.get(node_type)
    if found is None:
        if node_type in FIELD_ORDER:
            found = FIELD_ORDER[node_type]
        elif issubclass(node_type, LEAVES):
            found = ()
        else:
            found = tuple(
                f.name
                for f in dataclasses.fields(node_type)
                if f.name not in SKIPPED_FIELDS and not f.name.startswith("whitespace")
            )
        _fields_cache[node_type] = found
    return found


def iter_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`root` and the nodes below it, pre-order, skipping punctuation (cheaper than libcst matchers)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        children: list[cst.CSTNode] = []
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, (tuple, list)):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        pending.extend(reversed(children))


class FileWalker:
    """Walks the tree directly (libcst's visitor rebuilds every node, costing more than the parse)."""

    def __init__(
        self,
        path: str,
        module_name: str,
        dispatch: dict[type[cst.CSTNode], list[Visitor]],
        compiled_names: frozenset[str] = frozenset(),
        torch_version: TorchVersion = NEWEST,
    ) -> None:
        self.dispatch = dispatch
        self.imports = ImportMap()
        self.summary = FileSummary(path=path, module=module_name)
        facts = TensorFacts(self.imports)
        self.ctx = RuleContext(
            path=path, imports=self.imports, facts=facts, compiled_names=compiled_names, torch_version=torch_version
        )
        self.module_facts = self.ctx.facts
        self.class_stack: list[ClassSummary] = []
        self.function_depth = 0
        self.instances: dict[str, str] = {}  # `model = Net()` at any level: name -> class name
        self.edge_nodes: list[tuple[CallEdge, cst.Call]] = []

    def walk(self, node: cst.CSTNode) -> None:
        if self.on_visit(node):
            for name in child_fields(type(node)):
                value = getattr(node, name)
                if isinstance(value, cst.CSTNode):
                    self.walk(value)
                elif isinstance(value, (tuple, list)):
                    for item in value:
                        if isinstance(item, cst.CSTNode):
                            self.walk(item)
        self.on_leave(node)

    # -- structure ---------------------------------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        node_type = type(node)
        if node_type is cst.FunctionDef:
            self._enter_function(node)  # type: ignore[arg-type]
        elif node_type is cst.ClassDef:
            self._enter_class(node)  # type: ignore[arg-type]
        elif node_type is cst.If or node_type is cst.IfExp:
            if self._visit_guarded(node):  # type: ignore[arg-type]
                return False
        elif node_type is cst.Call:
            self._record_call(node)  # type: ignore[arg-type]
        elif node_type is cst.Import or node_type is cst.ImportFrom:
            self.imports.add(node)  # type: ignore[arg-type]
        elif node_type is cst.For or node_type is cst.CompFor:
            self._bind_loop(node)  # type: ignore[arg-type]
        handlers = self.dispatch.get(node_type)
        if handlers:
            for handler in handlers:
                handler(node, self.ctx)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        node_type = type(original_node)
        if node_type is cst.Assign:
            self._bind_assign(original_node)  # type: ignore[arg-type]
        elif node_type is cst.AnnAssign or node_type is cst.AugAssign or node_type is cst.NamedExpr:
            self._bind_single(original_node)  # type: ignore[arg-type]
        elif node_type is cst.FunctionDef:
            self._leave_function()
        elif node_type is cst.ClassDef:
            self.class_stack.pop()

    def _enter_class(self, node: cst.ClassDef) -> None:
        bases = [self.imports.resolve(arg.value) or "" for arg in node.bases if arg.keyword is None]
        methods = [s.name.value for s in node.body.body if isinstance(s, cst.FunctionDef)]
        prefix = ".".join(c.name for c in self.class_stack)
        name = f"{prefix}.{node.name.value}" if prefix else node.name.value
        summary = ClassSummary(name=name, bases=[b for b in bases if b], methods=methods)
        if self.function_depth == 0:
            self.summary.classes[name] = summary
        self.class_stack.append(summary)

    def _enter_function(self, node: cst.FunctionDef) -> None:
        self.function_depth += 1
        if self.function_depth > 1:  # nested: part of the enclosing function
            self.ctx.facts.add_params(node.params)
            return
        cls = self.class_stack[-1] if self.class_stack else None
        qualname = f"{cls.name}.{node.name.value}" if cls else node.name.value
        function = FunctionSummary(qualname=qualname, name=node.name.value, class_name=cls.name if cls else None)
        for decorator in node.decorators:
            compiled, disabled = _decorator_kind(decorator, self.imports)
            function.compiled = function.compiled or compiled
            function.disabled = function.disabled or disabled  # type: ignore[assignment]
        self.summary.functions[qualname] = function
        facts = TensorFacts(self.imports, frozenset(cls.methods) if cls else frozenset())
        facts.add_params(node.params)
        self.ctx.function = function
        self.ctx.facts = facts
        self.ctx.in_forward = cls is not None and node.name.value == "forward"

    def _leave_function(self) -> None:
        self.function_depth -= 1
        if self.function_depth == 0:
            self.ctx.function = None
            self.ctx.facts = self.module_facts
            self.ctx.in_forward = False

    def _visit_guarded(self, node: cst.If | cst.IfExp) -> bool:
        """Visit only the branch Dynamo traces under an is_compiling() check; True if handled."""
        polarity = compiling_polarity(node.test, self.imports)
        if polarity is None:
            return False
        traced: cst.CSTNode | None = node.body if polarity else node.orelse
        if traced is not None:
            self.walk(traced)
        return True

    # -- calls and compile targets -------------------------------------------------------------
    def _record_call(self, node: cst.Call) -> None:
        func = node.func
        name = self.imports.resolve(func)
        if name in COMPILE and node.args:
            self._record_compile_target(node.args[0].value)
        if name and name.startswith("torch._dynamo.config.patch"):
            self._record_flags(node.args)
        function = self.ctx.function
        if function is None or name is None:
            return
        text = dotted(func) or name
        if isinstance(func, cst.Name):
            edge = CallEdge("name", name, text, (0, 0, 0, 0))
        elif isinstance(func.value, cst.Name) and func.value.value == "self":  # type: ignore[attr-defined]
            edge = CallEdge("self", func.attr.value, text, (0, 0, 0, 0))  # type: ignore[attr-defined]
        elif text.split(".", 1)[0] in self.imports.aliases:  # through an import: `mod.helper(x)`
            edge = CallEdge("attr", name, text, (0, 0, 0, 0))
        else:
            return
        function.calls.append(edge)
        self.edge_nodes.append((edge, node))

    def _record_compile_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Call):
            target = target.func
        if isinstance(target, cst.Name):
            self.summary.compile_targets.append(self.instances.get(target.value, target.value))
        elif isinstance(target, cst.Attribute):
            self.summary.compile_targets.append(f".{target.attr.value}")

    def _record_flags(self, args: Sequence[cst.Arg]) -> None:
        for arg in args:
            if arg.keyword and arg.keyword.value in CAPTURE_FLAGS and _is_true(arg.value):
                self.summary.flags.append(arg.keyword.value)

    # -- tensor facts --------------------------------------------------------------------------
    def _bind_assign(self, node: cst.Assign) -> None:
        kind = self.ctx.facts.kind(node.value)
        for target in node.targets:
            self._bind_target(target.target, node.value, kind)

    def _bind_single(self, node: cst.AnnAssign | cst.AugAssign | cst.NamedExpr) -> None:
        if node.value is None:
            return
        kind = self.ctx.facts.kind(node.value)
        if isinstance(node, cst.AugAssign):
            kind = TensorFacts._combine(self.ctx.facts.kind(node.target), kind)
        self._bind_target(node.target, node.value, kind)

    def _bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression, kind: Kind) -> None:
        full = self.imports.resolve(target)
        if full and full.startswith("torch._dynamo.config.") and full.rsplit(".", 1)[-1] in CAPTURE_FLAGS:
            if _is_true(value):
                self.summary.flags.append(full.rsplit(".", 1)[-1])
            return
        if isinstance(target, cst.Name) and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            self.instances[target.value] = value.func.value
        self.ctx.facts.bind(target, kind, value)

    def _bind_loop(self, node: cst.For | cst.CompFor) -> None:
        iterable = node.iter
        is_self_attribute = isinstance(iterable, cst.Attribute) and isinstance(iterable.value, cst.Name)
        if is_self_attribute and iterable.value.value == "self":  # type: ignore[attr-defined] # self.layers
            self.ctx.facts.bind(node.target, Kind.MODULE)
            return
        kind = self.ctx.facts.kind(iterable)
        self.ctx.facts.bind(node.target, Kind.TENSOR if kind is Kind.TENSOR else Kind.UNKNOWN)


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def collect(module: cst.Module, walker: FileWalker) -> FileSummary:
    """Run the walker over `module` and turn its pending reports into positioned candidates.

    Call sites get no span here (most files have hundreds and nearly none is ever reported);
    `call_spans` finds them on demand.
    """
    walker.walk(module)
    pending = walker.ctx.pending
    spans = spans_of(module, [p.node for p in pending])
    summary = walker.summary
    for item in pending:
        line, col, end_line, end_col = _one_based(spans[id(item.node)])
        rule = item.rule
        finding = Finding(
            path=summary.path,
            line=line,
            col=col,
            end_line=end_line,
            end_col=end_col,
            code=rule.code,
            message=item.message,
            gb_codes=list(item.gb_codes),
            severity=item.severity,
            fix=item.fix,
            function=item.owner,
        )
        summary.candidates.append(Candidate(finding, item.owner, item.condition))
    return summary


def locate_calls(path: str, module_name: str, text: str) -> dict[str, FunctionSummary]:
    """The file's functions again, this time with the span of every call edge."""
    walker = FileWalker(path, module_name, {})
    module = cst.parse_module(text)
    walker.walk(module)
    spans = spans_of(module, [node for _, node in walker.edge_nodes])
    for edge, node in walker.edge_nodes:
        edge.span = _one_based(spans[id(node)])
    return walker.summary.functions


def _one_based(span: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    line, col, end_line, end_col = span
    return line, col + 1, end_line, end_col + 1
