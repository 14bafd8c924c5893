"""A recompile, explained (runs in the worker): which function, which guard, the user line the guard came
from and the parameter or attribute it guards, read off Dynamo's `recompiles` log message.

Dynamo (2.13 and 2.14 alike) logs one failed guard per cached graph of the function, each followed by the
user stack of the code that installed the guard:

    Recompiling function forward in /m.py:10
        triggered by the following guard failure(s):
        - 0/1: self.calls == 1                # self.calls += 1  # m.py:11 in forward (HINT: ...)
        - User stack trace:
        -   File "/m.py", line 11, in forward
        -     self.calls += 1
        - 0/0: n_steps == 2                   # for _ in range(n_steps):  # m.py:12 in forward
        ...

A guard with no user stack (a tensor's dtype or size, checked on entry) is explained by its source alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass

RECOMPILING = re.compile(r"Recompiling function (\S+) in (.*):(\d+)")
FAILURE = re.compile(r"^\s*-\s*(\d+)/(\d+): (.*)$")
STACK_FRAME = re.compile(r'^\s*-\s*File "(.*)", line (\d+), in (.*)$')
COMMENT_WHERE = re.compile(r"#\s*(.*?)\s*#\s*(\S+):(\d+) in (\S+)")
HINT = re.compile(r"\(HINT: (.*)\)\s*$")
TENSOR = re.compile(r"^tensor '(.+?)' ")
LENGTH = re.compile(r"^len\(([^)]+)\)")
EXPRESSION = re.compile(r"[A-Za-z_]\w*(?:\.\w+|\[[^\]]*\])*")
TENSOR_METHODS = frozenset({"size", "stride", "storage_offset", "dim"})
NOT_SOURCES = frozenset({"not", "len", "type", "id", "isinstance", "hasattr", "and", "or", "is", "None"})


@dataclass
class Explained:
    """One failed guard of one cached graph, at the recompile it caused."""

    function: str  # the recompiled function's name
    function_file: str
    function_line: int  # its `def` line
    graph: str  # the cached graph whose guard failed, "frame/compile" ("0/1")
    guard: str  # as Dynamo words it, without its source comment
    source: str  # what the guard checks: `n_steps`, `self.calls`, `args[0]`, `x`
    kind: str  # parameter, attribute, global or tensor (a tensor argument's dtype, size, stride...)
    user_file: str | None  # the user code that installed the guard
    user_line: int | None
    user_code: str
    hint: str  # Dynamo's own advice, if any
    graphs: int  # graphs cached for the function when it recompiled (one failed guard each)


def guard_source(guard: str) -> tuple[str, str]:
    """(source, kind) of a guard: `tensor 'x' dtype mismatch` -> ("x", "tensor"),
    `self.calls == 1` -> ("self.calls", "attribute"), `n_steps == 2` -> ("n_steps", "parameter")."""
    tensor = TENSOR.match(guard)
    if tensor:
        return tensor.group(1), "tensor"
    if guard.startswith("GLOBAL_STATE changed: "):  # grad mode, autocast, default dtype...
        return guard.removeprefix("GLOBAL_STATE changed: "), "global state"
    length = LENGTH.match(guard)
    text = length.group(1) if length else guard
    for match in EXPRESSION.finditer(text):
        source = match.group(0)
        if source not in NOT_SOURCES and not source.startswith("___"):
            break
    else:
        return "", "unknown"
    owner, _, method = source.rpartition(".")
    if method in TENSOR_METHODS and text[match.end() :].startswith("()"):  # `2 <= x.size()[1] <= 9`
        return owner, "tensor"
    if source.startswith("self."):
        return source, "attribute"
    if source.startswith("G["):
        return source, "global"
    return source, "parameter"


def explain(message: str, is_user_file: Callable[[str], bool]) -> list[Explained]:
    """Every failed guard of a `Recompiling function ...` message, the newest graph's first."""
    head = RECOMPILING.search(message)
    if head is None:
        return []
    function, function_file, function_line = head.group(1), head.group(2), int(head.group(3))
    blocks: list[tuple[str, str, list[tuple[str, int, str]], list[str]]] = []  # graph, text, frames, code lines
    for line in message.splitlines():
        failure = FAILURE.match(line)
        if failure:
            blocks.append((f"{failure.group(1)}/{failure.group(2)}", failure.group(3), [], []))
            continue
        if not blocks:
            continue
        frame = STACK_FRAME.match(line)
        if frame:
            blocks[-1][2].append((frame.group(1), int(frame.group(2)), frame.group(3)))
        elif blocks[-1][2] and line.strip().startswith("-") and "User stack trace" not in line:
            blocks[-1][3].append(line.strip().removeprefix("-").strip())
    found = []
    for graph, text, frames, code in blocks:
        guard, _, comment = text.partition("  #")
        guard = " ".join(guard.split())
        hint = HINT.search(text)
        source, kind = guard_source(guard)
        user = [(i, f) for i, f in enumerate(frames) if is_user_file(f[0])]
        user_file, user_line, user_code = None, None, ""
        if user:
            index, (user_file, user_line, _) = user[-1]
            user_code = code[index] if index < len(code) else ""
        else:
            where = COMMENT_WHERE.search("#" + comment)
            if where and is_user_file(where.group(2)):
                user_file, user_line, user_code = where.group(2), int(where.group(3)), where.group(1)
        found.append(
            Explained(
                function,
                function_file,
                function_line,
                graph,
                guard,
                source,
                kind,
                user_file,
                user_line,
                user_code,
                hint.group(1) if hint else "",
                len(blocks),
            )
        )
    return found


def values_to_limit(graphs_before: int, limit: int) -> int:
    """After how many distinct values of something the function specializes on `recompile_limit` is hit,
    counting the value its first graph was compiled for: each value adds one graph, and once the function
    has `limit` graphs the next new value runs eagerly."""
    return max(1, limit - graphs_before + 1)


def user_file_test(files: Collection[str]) -> Callable[[str], bool]:
    """Is a path (possibly Dynamo's shortened `dir/file.py`) one of `files`?"""
    suffixes = tuple(files)

    def test(path: str) -> bool:
        return path in files or any(f.endswith("/" + path) for f in suffixes)

    return test


def explanation_text(explained: dict[str, object], limit_after: int = 0) -> str:
    """`n_steps` (parameter) at m.py:12 `for _ in range(n_steps):`: Dynamo's guard `n_steps == 3` failed in
    `forward`, 2 graphs cached before this recompile; recompile_limit is hit after 8 distinct values."""
    line, file = explained["user_line"], explained["user_file"]
    where = f" at {_shown(str(file))}:{line}" if line and file else ""
    code = f" `{explained['user_code']}`" if explained["user_code"] else ""
    subject = f"`{explained['source']}` ({explained['kind']})" if explained["source"] else "a guard"
    graphs = explained["graphs"]
    text = f"{subject}{where}{code}: Dynamo's guard `{explained['guard']}` failed in `{explained['function']}`"
    text += f", {graphs} graph{'s' * (graphs != 1)} cached before this recompile"
    if limit_after:
        text += f"; recompile_limit is hit after {limit_after} distinct values, eager from then on"
    return text


def _shown(path: str) -> str:
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    return path if relative.startswith(os.pardir) else relative
