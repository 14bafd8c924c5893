"""TCL204: logger methods and `logging.*` calls inside a compiled region."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst

from compile_lint.analysis.names import dotted
from compile_lint.analysis.tensors import short_code
from compile_lint.analysis.values import External
from compile_lint.analysis.walker import RuleContext
from compile_lint.rules.base import Example, Rule

EMITTERS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
# Measured: any Logger method call breaks with GB0291, including transformers' lru_cache-wrapped
# `warning_once`/`info_once` extensions (even when the cache would skip the call).
LOGGER_METHODS = EMITTERS | {"isEnabledFor", "warning_once", "info_once"}
CONVENTIONAL_NAMES = frozenset({"logger", "log", "_logger", "LOGGER", "_log"})
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})  # logging.getLogger, transformers' logging.get_logger
LOGGER = External("logging.Logger")  # what `logging.getLogger(...)` returns, in the analysis' values
GB_LOGGER = "GB0291"  # logging.Logger method not supported for non-export cases
GB_ROOT = "GB4841"  # Unsupported python_type() call, inside logging's module-level functions
GB_CHAINED = "GB6215"  # Unresolved GetAttrVariable comparison, for `getLogger(...).info(...)`
GB_NOT_REORDERABLE = "GB0296"  # attempted to reorder a debugging function that can't actually be reordered
REORDERABLE = "reorderable_logging_functions"
# Measured with torch 2.14: a registered logger method is replayed after the graph unless a keyword
# argument is passed, or an argument is a container display or a torch.Size (`t.shape`, `t.size()`).
# (Ints become SymInts once Dynamo makes a shape dynamic and stop the reorder too; that is not predicted.)
DISPLAYS = (cst.List, cst.Tuple, cst.Set, cst.Dict)


def _creates_logger(value: cst.BaseExpression | None) -> bool:
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func)
    return name is not None and name.rsplit(".", 1)[-1] in LOGGER_FACTORIES


def _small_statements(statements: Sequence[cst.BaseStatement]) -> Iterator[cst.BaseSmallStatement]:
    """Every simple statement, at any depth, without walking into expressions (cheap)."""
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, cst.BaseCompoundStatement):
            for suite in _suites(statement):
                if isinstance(suite, cst.SimpleStatementSuite):
                    yield from suite.body
                else:
                    yield from _small_statements(suite.body)  # type: ignore[arg-type]


Block = cst.BaseCompoundStatement | cst.Else | cst.Finally | cst.ExceptHandler | cst.ExceptStarHandler | cst.MatchCase


def _suites(statement: Block) -> Iterator[cst.BaseSuite]:
    """The blocks of a compound statement: body, elif/else, except handlers, finally, match cases."""
    if isinstance(statement, cst.Match):
        for case in statement.cases:
            yield case.body
        return
    yield statement.body
    orelse, finalbody = getattr(statement, "orelse", None), getattr(statement, "finalbody", None)
    for part in (orelse, finalbody, *getattr(statement, "handlers", ())):
        if part is not None:
            yield from _suites(part)


def registered_methods(module: cst.Module) -> set[tuple[str | None, str]]:
    """(logger name, method) pairs the file adds to `torch._dynamo.config.reorderable_logging_functions`
    (`.add(logger.info)`, `.update({...})`, `|= {...}`); the name is None for `logging.Logger.info`,
    which covers every logger."""
    items: list[cst.BaseExpression] = []
    for small in _small_statements(module.body):
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            func = call.func
            if isinstance(func, cst.Attribute) and _is_registry(func.value) and call.args:
                if func.attr.value == "add":
                    items.append(call.args[0].value)
                elif func.attr.value == "update":
                    items.extend(_elements(call.args[0].value))
        elif isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.BitOrAssign):
            items.extend(_elements(small.value) if _is_registry(small.target) else [])
    found: set[tuple[str | None, str]] = set()
    for item in items:
        name = dotted(item)
        if name and "." in name:
            receiver, method = name.rsplit(".", 1)
            found.add((None if receiver.rsplit(".", 1)[-1] == "Logger" else receiver, method))
    return found


def _is_registry(node: cst.BaseExpression) -> bool:
    name = dotted(node)
    return name is not None and name.rsplit(".", 1)[-1] == REORDERABLE


def _elements(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    return [element.value for element in node.elements] if isinstance(node, (cst.List, cst.Tuple, cst.Set)) else []


def blocks_reorder(call: cst.Call) -> str | None:
    """The argument (as written) that keeps torch 2.14 from replaying a registered logger call after the graph."""
    for arg in call.args:
        if arg.keyword is not None:
            return f"{arg.keyword.value}=..."
        if arg.star:
            return f"{arg.star}{short_code(arg.value, limit=40)}"
        if isinstance(arg.value, DISPLAYS) or _is_torch_size(arg.value):
            return short_code(arg.value, limit=40)
    return None


def _is_torch_size(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape"
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return node.func.attr.value == "size" and not node.args
    return False


def _reorderable(ctx: RuleContext) -> set[tuple[str | None, str]]:
    """Logger methods the file registers as reorderable; torch 2.13 ignores the registry."""
    if ctx.torch_version < (2, 14) or ctx.program is None:
        return set()
    return registered_methods(ctx.program.index_of(ctx.path).tree)


class LoggingCall(Rule):
    code = "TCL204"
    name = "logging-in-region"
    summary = "A logger method or `logging.*` call in a compiled region breaks the graph"
    gb_codes = (GB_LOGGER, GB_ROOT, GB_CHAINED, GB_NOT_REORDERABLE)
    gb_codes_by_version = {(2, 13): (GB_LOGGER, GB_ROOT, GB_CHAINED), (2, 14): gb_codes}
    fix = (
        "Write `if not torch.compiler.is_compiling(): logger.info(...)` so it only runs eagerly, or log "
        "after the compiled call returns."
    )
    what = (
        "Flags calls of logger methods (`debug`, `info`, `warning`, `error`, `exception`, `critical`, "
        "`log`, `isEnabledFor`, transformers' `warning_once`) on a name bound to `logging.getLogger(...)` in the file or conventionally "
        "named `logger`/`log`/`_logger`/`LOGGER`, on `logging.getLogger(...)` directly, and the "
        "module-level functions `logging.info(...)` and friends, inside compiled regions. It flags the "
        "call whatever the log level: a disabled `logger.debug` breaks the graph all the same. When the "
        "project targets torch 2.14 and the same file registers the method as reorderable, only calls "
        "Dynamo cannot replay are flagged."
    )
    why = (
        "Dynamo does not trace `logging.Logger` methods: it ends the graph at the call, runs it eagerly "
        "and starts a new graph after it (GB0291). The module-level `logging.info(...)` breaks inside "
        "logging's own code (GB4841, blamed on your line), and `logging.getLogger(...).info(...)` breaks "
        "twice (GB6215, then GB0291). From torch 2.14 on, a logger method the source adds to "
        "`torch._dynamo.config.reorderable_logging_functions` (`.add(logger.info)`, or `logging.Logger.info` "
        "for every logger) no longer breaks: Dynamo replays the call after the graph, unless it passes a "
        "keyword argument, a list/tuple/dict display or a `t.shape` (GB0296). In torch 2.13 the registration "
        "has no effect on logger methods: they still break."
    )
    example = (
        "logger = logging.getLogger(__name__)\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        '        logger.debug("input %s", x.shape)\n        return x.relu()\n'
    )
    fixed_example = (
        "logger = logging.getLogger(__name__)\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        '        if not torch.compiler.is_compiling():\n            logger.debug("input %s", x.shape)\n'
        "        return x.relu()\n"
    )
    invalid = (
        Example(
            "import logging\nlogger = logging.getLogger(__name__)\n\n@torch.compile\ndef f(x):\n    logger.info('step')\n    return x\n"
        ),
        Example("import logging\n\n@torch.compile\ndef f(x):\n    logging.warning('careful')\n    return x\n"),
        Example(
            "import logging\nlog = logging.getLogger()\n\n@torch.compile\ndef f(x):\n    log.log(logging.INFO, 'x')\n    return x\n"
        ),
        Example("import logging\n\n@torch.compile\ndef f(x):\n    logging.getLogger('m').debug('x')\n    return x\n"),
        Example(
            "from transformers.utils import logging\nlogger = logging.get_logger(__name__)\n\n"
            "@torch.compile\ndef f(x):\n    logger.warning_once('slow')\n    return x\n"
        ),
        Example(
            "@torch.compile\ndef f(x):\n    audit.error('bad')\n    return x\n\nimport logging\naudit = logging.getLogger('audit')\n"
        ),
        Example(
            "class M(nn.Module):\n    def forward(self, x):\n        self.logger.warning('hi')\n        return x\n"
        ),
    )
    valid = (
        Example(
            "import logging\nlogger = logging.getLogger(__name__)\n\n@torch.compile\ndef f(x):\n"
            "    if not torch.compiler.is_compiling():\n        logger.info('step')\n    return x\n"
        ),
        Example("from tracking import log\n\n@torch.compile\ndef f(x):\n    log.info('step')\n    return x\n"),
        Example("@torch.compile\ndef f(x, history):\n    history.info('step')\n    return x\n"),
        Example("import logging\nlogger = logging.getLogger(__name__)\n\ndef eager(x):\n    logger.info('step')\n"),
        Example("@torch.compile\ndef f(x):\n    log = x.softmax(-1)\n    return log.log()\n"),
    )

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in LOGGER_METHODS:
            return
        method = func.attr.value
        if method == "log" and len(node.args) < 2:
            return  # `Logger.log(level, msg)` needs both; `t.log()` is the tensor method
        full = ctx.resolve(func)
        if full == f"logging.{method}" and method in EMITTERS:
            self._report(node, ctx, f"logging.{method}", GB_ROOT, "breaks inside logging's own code")
        elif isinstance(func.value, cst.Call) and _creates_logger(func.value):
            factory = dotted(func.value.func)
            self._report(node, ctx, f"{factory}(...).{method}", f"{GB_CHAINED}, {GB_LOGGER}", "breaks twice")
        elif self._is_logger(func.value, ctx):
            logger = dotted(func.value)
            reorderable = _reorderable(ctx)
            if (logger, method) in reorderable or (None, method) in reorderable:
                self._check_reorder(node, ctx, f"{logger}.{method}")
            else:
                self._report(node, ctx, f"{logger}.{method}", GB_LOGGER, "calls a `logging.Logger` method")

    def _is_logger(self, receiver: cst.BaseExpression, ctx: RuleContext) -> bool:
        name = dotted(receiver)
        if name is None:
            return False
        if LOGGER in ctx.facts.value(receiver):
            return True
        if isinstance(receiver, cst.Name):
            return name in CONVENTIONAL_NAMES and name not in ctx.imports.aliases
        return name.startswith("self.") and name.count(".") == 1 and name[5:] in CONVENTIONAL_NAMES

    def _report(self, node: cst.Call, ctx: RuleContext, call: str, codes: str, how: str) -> None:
        fix = (
            f"Write `if not torch.compiler.is_compiling(): {call}(...)` so it only runs eagerly, or log after "
            "the compiled call returns."
        )
        receiver = call.rsplit(".", 1)[0]
        if codes == GB_LOGGER and ctx.torch_version >= (2, 14) and "." not in receiver and blocks_reorder(node) is None:
            fix += (
                f" Or register it once, outside the region: `torch._dynamo.config.{REORDERABLE}.add({call})`; "
                "Dynamo then runs it after the graph (positional arguments only: tensors, constants, strings)."
            )
        ctx.report(
            self,
            node,
            f"`{call}(...)` {how}: Dynamo cannot trace it, graph break ({codes})",
            gb_codes=tuple(codes.split(", ")),
            fix=fix,
        )

    def _check_reorder(self, node: cst.Call, ctx: RuleContext, call: str) -> None:
        """A registered method: torch 2.14 replays the call after the graph if it can."""
        shown = blocks_reorder(node)
        if shown is None:
            return
        change = (
            "drop the keyword argument"
            if shown.endswith("=...")
            else f"format `{shown}` into the message (an f-string)"
        )
        ctx.report(
            self,
            node,
            f"`{call}` is registered in `{REORDERABLE}`, but Dynamo cannot replay this call after the graph "
            f"(it passes `{shown}`): graph break ({GB_NOT_REORDERABLE})",
            gb_codes=(GB_NOT_REORDERABLE,),
            fix=f"Dynamo replays only calls with positional tensors, constants and strings: {change}, or guard "
            "the call with `if not torch.compiler.is_compiling():`.",
        )


RULE = LoggingCall()
