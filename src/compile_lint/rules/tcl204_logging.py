"""TCL204: logger methods and `logging.*` calls inside a compiled region."""

from __future__ import annotations

import libcst as cst

from compile_lint.analysis.names import dotted
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


def _creates_logger(value: cst.BaseExpression | None) -> bool:
    if not isinstance(value, cst.Call):
        return False
    name = dotted(value.func)
    return name is not None and name.rsplit(".", 1)[-1] in LOGGER_FACTORIES


class LoggingCall(Rule):
    code = "TCL204"
    name = "logging-in-region"
    summary = "A logger method or `logging.*` call in a compiled region breaks the graph"
    gb_codes = (GB_LOGGER, GB_ROOT, GB_CHAINED)
    fix = (
        "Write `if not torch.compiler.is_compiling(): logger.info(...)` so it only runs eagerly, or log "
        "after the compiled call returns."
    )
    what = (
        "Flags calls of logger methods (`debug`, `info`, `warning`, `error`, `exception`, `critical`, "
        "`log`, `isEnabledFor`, transformers' `warning_once`) on a name bound to `logging.getLogger(...)` in the file or conventionally "
        "named `logger`/`log`/`_logger`/`LOGGER`, on `logging.getLogger(...)` directly, and the "
        "module-level functions `logging.info(...)` and friends, inside compiled regions. It flags the "
        "call whatever the log level: a disabled `logger.debug` breaks the graph all the same."
    )
    why = (
        "Dynamo does not trace `logging.Logger` methods: it ends the graph at the call, runs it eagerly "
        "and starts a new graph after it (GB0291). The module-level `logging.info(...)` breaks inside "
        "logging's own code (GB4841, blamed on your line), and `logging.getLogger(...).info(...)` breaks "
        "twice (GB6215, then GB0291). `torch._dynamo.config.reorderable_logging_functions` does not help "
        "for logger methods: in torch 2.13 they still break when added to it."
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
            self._report(node, ctx, f"{dotted(func.value)}.{method}", GB_LOGGER, "calls a `logging.Logger` method")

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
        ctx.report(
            self,
            node,
            f"`{call}(...)` {how}: Dynamo cannot trace it, graph break ({codes})",
            gb_codes=tuple(codes.split(", ")),
            fix=f"Write `if not torch.compiler.is_compiling(): {call}(...)` so it only runs eagerly, or log "
            "after the compiled call returns.",
        )


RULE = LoggingCall()
