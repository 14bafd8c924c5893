"""Recompile probe (runs in the worker): after the break run, vary one thing at a time.

By default, in the break run's compiled state: the same inputs again, to catch state that
changes on every call (a module counter), each Python scalar argument changed twice, and each
float tensor cast to float64, checked against the cached graphs' own guards, which say whether
the call would recompile, and why, without compiling. None of these compiles unless the code
recompiles (a scalar the code specializes on costs one compile per new value).

With `--deep`, also one compile with every tensor size dynamic, in which each dimension grows
twice (4 -> 5 -> 6): a size that still recompiles there is specialized by the code. (By default
Dynamo compiles sizes statically and recompiles once per dimension on the first new size,
"automatic dynamic"; probing that per dimension would cost a compile each, for an answer Dynamo
documents.) That compile costs about as much as the break run, often more. A dtype change whose
guards cannot be checked (nothing cached for the code) is then compiled to see.
Recompiles and their guard-failure reasons come from Dynamo's recompiles log.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch._dynamo

from compile_lint.confirm.run.capture import DynamoLog, library_of
from compile_lint.confirm.run.explain import explain, values_to_limit

RECOMPILING = re.compile(r"Recompiling function (\S+) in (.*):(\d+)")
GUARD_LINE = re.compile(r"^\s*-\s*(\d+/\d+: .+)$", re.M)  # "- 0/0: tensor 'x' size mismatch ..."
HINT = re.compile(r"\(HINT: (.*)\)\s*$")
MAX_REASONS = 3  # kept per variation, those naming the varied argument first


@dataclass
class Variation:
    trigger: str  # what changed, e.g. "x dim 0 (4 -> 5 -> 6)"
    calls: int = 0
    recompiled_calls: int = 0
    reasons: list[str] = field(default_factory=list)  # guard failures, as Dynamo words them
    functions: list[str] = field(default_factory=list)  # "file:line:name" of the recompiled code
    limit_hit: str = ""
    suggestion: str = ""
    hint: str = ""  # Dynamo's own advice attached to the guard, if any
    free_dims: list[int] = field(default_factory=list)  # dimensions that varied with no recompile
    other_recompiles: int = 0  # recompiles whose guards blame something else (e.g. a branch's data)
    explained: list[dict[str, Any]] = field(default_factory=list)  # explain.Explained of its failed guards
    limit_after: int = 0  # distinct values after which recompile_limit is hit, when every value recompiles
    not_probed: str = ""  # why this could not be varied (the call raised), shown instead of a verdict

    @property
    def every_call(self) -> bool:
        return self.calls > 0 and self.recompiled_calls == self.calls


Call = Callable[[tuple[Any, ...], dict[str, Any]], object]
Slot = tuple[int | str, str]  # positional index or keyword, and the parameter's name


def probe_calls(
    call: Call, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str], log: DynamoLog
) -> tuple[list[Variation], bool]:
    """The variations that recompiled, and whether the same inputs recompile on every call (then the
    scalars are told apart by the guards of the graph each new value compiled). `call` has just run
    `args` under the default settings."""
    repeat = _repeat(call, args, kwargs, log)
    found = [repeat]
    for slot, value in _slots(args, kwargs, names):
        for trigger, values, advice in _scalar_variants(slot[1], value):
            if repeat.every_call:
                found.append(_specialized(call, original, args, kwargs, slot, values, Variation(trigger), advice))
            else:
                caused = _naming(slot[1])
                found.append(_vary(call, args, kwargs, slot, values, Variation(trigger), log, advice, caused))
    return [v for v in found if v.recompiled_calls], repeat.every_call


def _specialized(
    call: Call,
    original: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    slot: Slot,
    values: list[Any],
    variation: Variation,
    advice: tuple[str, str],
) -> Variation:
    """When every call recompiles anyway (a counter), a scalar recompiles per value if the graph compiled
    for each new value guards it by that value (`L['n_steps'] == 3`, a loop bound); from a fresh state
    with room for the counter's graphs."""
    code = _code_of(original)
    if code is None:
        return variation
    torch._dynamo.reset()
    limit = int(torch._dynamo.config.recompile_limit)
    with torch._dynamo.config.patch(recompile_limit=limit + 2 * len(values) + 2):
        try:
            call(args, kwargs)
            for value in values:
                call(*_changed(args, kwargs, slot[0], value))
                variation.calls += 1
                found = _value_guard(code, slot[1], value)
                if found is not None:
                    variation.recompiled_calls += 1
                    variation.reasons.append(found["guard"])
                    if not variation.explained:
                        variation.explained.append(found)
        except Exception as error:
            torch._dynamo.reset()
            return Variation(variation.trigger, not_probed=f"the call raises with {slot[1]} changed: {_brief(error)}")
    if variation.every_call:
        variation.suggestion = advice[1]
        variation.limit_after = values_to_limit(1, limit)
        variation.functions = [f"{code.co_filename}:{code.co_firstlineno}:{code.co_name}"]
    torch._dynamo.reset()
    return variation


def _code_of(original: Any) -> Any:
    return getattr(_function_of(original), "__code__", None)


def _function_of(original: Any) -> Any:
    """The plain function whose code Dynamo compiles for `original` (a module's `forward`, a bound method's)."""
    function = type(original).forward if isinstance(original, torch.nn.Module) else original
    return getattr(function, "__func__", function)


def _value_guard(code: Any, name: str, value: Any) -> dict[str, Any] | None:
    """The newest graph of `code`'s guard `L['name'] == value`, explained, if it has one."""
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(code)
    if not entries:
        return None
    root = entries[0].guard_manager.root
    wanted = f"L[{name!r}] == {value!r}"
    parts = [p for g in root.get_epilogue_lambda_guards() for p in g.verbose_code_parts()]
    stack: list[Any] = [root]
    while stack:
        manager = stack.pop()
        parts.extend(p for g in manager.get_leaf_guards() for p in g.verbose_code_parts())
        stack.extend(manager.get_child_managers())
    for part in parts:
        guard, _, comment = part.partition("#")
        if guard.strip() != wanted:
            continue
        user_code, _, where = comment.partition("#")
        file_line = where.strip().split(" in ")[0]
        short, _, line = file_line.rpartition(":")
        user_file = code.co_filename if short and code.co_filename.endswith(short) else short or None
        return {
            "function": code.co_name,
            "function_file": code.co_filename,
            "function_line": code.co_firstlineno,
            "graph": "",
            "guard": f"{name} == {value!r}",
            "source": name,
            "kind": "parameter",
            "user_file": user_file,
            "user_line": int(line) if line.isdigit() else None,
            "user_code": user_code.strip(),
            "hint": "",
            "graphs": len(entries),
        }
    return None


def probe_sizes(
    call: Call, args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str], log: DynamoLog
) -> list[Variation]:
    """From a fresh compile with every size dynamic: dimensions that still recompile, those that vary
    freely, and those that could not be probed (with why). Tensors with the same size at a dimension
    in this call grow together there (`input_ids` and `attention_mask` share their batch)."""
    tensors = [(slot, value) for slot, value in _slots(args, kwargs, names) if isinstance(value, torch.Tensor)]
    if not tensors:
        return []
    torch._dynamo.reset()
    found = []
    with torch._dynamo.config.patch(assume_static_by_default=False):
        try:
            call(args, kwargs)
        except Exception as error:
            return [Variation("tensor sizes", not_probed=f"the code does not run with dynamic sizes: {_brief(error)}")]
        groups: dict[tuple[int, int], list[tuple[Slot, torch.Tensor]]] = {}
        for slot, value in tensors:
            for dim, size in enumerate(value.shape):
                groups.setdefault((dim, size), []).append((slot, value))
        free: dict[str, list[int]] = {}  # dims that varied with no recompile, per group of tensors
        for (dim, size), group in groups.items():
            variation = _grown_together(call, args, kwargs, group, dim, size, log)
            if variation.free_dims:
                free.setdefault(", ".join(slot[1] for slot, _ in group), []).append(dim)
            elif variation.recompiled_calls or variation.not_probed:
                found.append(variation)
    for tensors_named, dims in free.items():
        marks = "; ".join(f"torch._dynamo.mark_dynamic({n}, {d})" for n in tensors_named.split(", ") for d in dims)
        found.append(
            Variation(
                f"{tensors_named} dims {', '.join(map(str, dims))} (each grown by 1 and 2, sizes dynamic)",
                free_dims=dims,
                suggestion=f"no recompile once dynamic; by default the first new size of each recompiles once "
                f"(automatic dynamic): if they vary, `{marks}` before the first call, or `dynamic=True`",
            )
        )
    return found


def _grown_together(
    call: Call,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    group: list[tuple[Slot, torch.Tensor]],
    dim: int,
    size: int,
    log: DynamoLog,
) -> Variation:
    """Dimension `dim` (of size `size`) of every tensor in `group`, grown by 1 and then 2 at once."""
    names = ", ".join(slot[1] for slot, _ in group)
    marks = "; ".join(f"torch._dynamo.mark_dynamic({slot[1]}, {dim})" for slot, _ in group)
    advice = (
        f"size {dim} recompiled once even with dynamic sizes: check for code that specializes on it",
        f"every new size of dim {dim} recompiles even with dynamic sizes: the code specializes on it "
        f"(a shape-dependent branch, loop or view); `{marks}` before the first call would raise and show where",
    )
    variation = Variation(f"{names} dim {dim} ({size} -> {size + 1} -> {size + 2})")
    changes = [{slot[0]: _resized(value, dim, size + grow) for slot, value in group} for grow in (1, 2)]
    naming = re.compile("|".join(rf"\b{re.escape(slot[1])}\b" for slot, _ in group))
    for change in changes:
        changed_args = tuple(change.get(i, a) for i, a in enumerate(args))
        changed_kwargs = {k: change.get(k, v) for k, v in kwargs.items()}
        try:
            _observe(
                variation,
                lambda a=changed_args, k=changed_kwargs: call(a, k),  # type: ignore[misc]
                log,
                lambda guard: "size mismatch" in guard or "stride mismatch" in guard,
            )
        except Exception as error:
            alone = " grown alone" if len(group) == 1 else " grown together"
            return Variation(variation.trigger, not_probed=f"the call raises with {names}{alone}: {_brief(error)}")
    if variation.recompiled_calls:
        variation.suggestion = advice[1] if variation.every_call and variation.calls > 1 else advice[0]
        variation.reasons = sorted(variation.reasons, key=lambda r: naming.search(r) is None)[:MAX_REASONS]
    elif variation.calls:
        variation.free_dims = [dim]
    return variation


def _brief(error: Exception) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]


def probe_dtypes(
    call: Call,
    original: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    names: list[str],
    log: DynamoLog,
    compile_unknown: bool,
) -> list[Variation]:
    """Each float tensor argument cast to float64, checked against the guards of the graphs cached
    for `original`; where nothing is cached, compiled to see if `compile_unknown`, else skipped."""
    found = []
    for slot, value in _slots(args, kwargs, names):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != torch.float64:
            variation = _dtype_variation(call, original, args, kwargs, slot, value, log, compile_unknown)
            if variation.recompiled_calls:
                found.append(variation)
    return found


def _dtype_variation(
    call: Call,
    original: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    slot: Slot,
    value: torch.Tensor,
    log: DynamoLog,
    compile_unknown: bool,
) -> Variation:
    cast = f"each dtype of `{slot[1]}` compiles its own graph: cast once, before the compiled call"
    variation = Variation(f"{slot[1]} dtype ({str(value.dtype).removeprefix('torch.')} -> float64)")
    rejections = guard_rejections(original, *_changed(args, kwargs, slot[0], value.double()))
    if rejections is None and compile_unknown:  # nothing to check the guards of: compile to see
        dtype_guard = "dtype mismatch".__contains__
        return _vary(call, args, kwargs, slot, [value.double()], variation, log, (cast, cast), dtype_guard)
    if rejections:
        variation.calls = variation.recompiled_calls = 1
        variation.reasons = rejections[:MAX_REASONS]
        variation.suggestion = cast
    return variation


def guard_rejections(original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str] | None:
    """Would calling with these arguments recompile? Dynamo's own guards of the graphs cached for
    `original`'s code, checked without compiling: [] if one graph accepts them, else each graph's
    failed guard as Dynamo words it; None when nothing is cached for that code or the guards cannot
    be checked here (the caller compiles to find out)."""
    bound_self = original if isinstance(original, torch.nn.Module) else getattr(original, "__self__", None)
    function = _function_of(original)
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(code)
    if not entries:
        return None
    try:  # the code's own parameters: a `(self, *args, **kwargs)` wrapper is guarded as `args[0]`
        signature = inspect.signature(function, follow_wrapped=False)
        bound = signature.bind(*((bound_self,) if bound_self is not None else ()), *args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    frame_locals = dict(bound.arguments)
    for name, cell in zip(code.co_freevars, getattr(function, "__closure__", None) or (), strict=False):
        try:
            frame_locals[name] = cell.cell_contents  # a wrapper's `fn`: Dynamo guards it too
        except ValueError:
            return None  # an empty cell: this is not how the frame will look
    reasons = []
    for entry in entries:
        try:
            if entry.guard_manager.check_verbose(frame_locals).result:
                return []
            reasons.append(_fail_reason(entry, frame_locals))
        except Exception:
            return None  # the guards read something this frame lacks: compile to find out
    return reasons


def _fail_reason(entry: Any, frame_locals: dict[str, Any]) -> str:
    """Dynamo's own wording of the entry's first failed guard (`tensor 'args[0]' dtype mismatch. ...`)."""
    from torch._dynamo.guards import get_guard_fail_reason_helper

    reason = get_guard_fail_reason_helper(entry.guard_manager, frame_locals, None, getattr(entry, "backend", None))
    return reason.removeprefix("None: ").splitlines()[0]


def _repeat(call: Call, args: tuple[Any, ...], kwargs: dict[str, Any], log: DynamoLog) -> Variation:
    """Same inputs again; if both repeats recompile, go on until the recompile limit shows."""
    variation = Variation("nothing (the same inputs again)")
    limit = int(torch._dynamo.config.recompile_limit)
    while variation.calls < 2 or (variation.every_call and variation.calls <= limit and not variation.limit_hit):
        _observe(variation, lambda: call(args, kwargs), log)
    variation.reasons = variation.reasons[:MAX_REASONS]
    if variation.every_call and variation.explained:
        variation.limit_after = values_to_limit(variation.explained[0]["graphs"], limit)
    variation.suggestion = (
        "a value the function reads changes between calls (see the failed guard): keep it in a tensor "
        "(e.g. a registered buffer) or outside the compiled region"
    )
    return variation


def _slots(args: tuple[Any, ...], kwargs: dict[str, Any], names: list[str]) -> Iterator[tuple[Slot, Any]]:
    for index, value in enumerate(args):
        yield (index, names[index] if index < len(names) else f"arg{index}"), value
    for key, value in kwargs.items():
        yield (key, key), value


def _scalar_variants(name: str, value: Any) -> Iterator[tuple[str, list[Any], tuple[str, str]]]:
    """(trigger, changed values, (advice if it recompiled once, advice if on every change))."""
    if isinstance(value, bool):
        advice = f"each value of `{name}` compiles its own graph: pass it as a tensor or branch outside the region"
        yield f"{name} ({value} -> {not value})", [not value], (advice, advice)
    elif isinstance(value, (int, float, str)):
        changed = [value + "x", value + "xx"] if isinstance(value, str) else [value + 1, value + 2]
        yield (
            f"{name} ({value!r} -> {changed[0]!r} -> {changed[1]!r})",
            changed,
            (
                f"one recompile, then `{name}` is dynamic; pass it as a 0-d tensor to avoid even that",
                f"every value of `{name}` compiles a new graph: pass it as a tensor, "
                "or hoist the choice out of the region",
            ),
        )


def _resized(value: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    """`value` grown to `size` along `dim` with zeros: sums and signs stay put, so a data-dependent
    branch goes the same way, and zero is a valid index for an Embedding."""
    shape = list(value.shape)
    shape[dim] = size - shape[dim]
    padding = torch.zeros(shape, dtype=value.dtype, device=value.device)
    return torch.cat([value.detach(), padding], dim).requires_grad_(value.requires_grad)


def _vary(
    call: Call,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    slot: Slot,
    values: list[Any],
    variation: Variation,
    log: DynamoLog,
    advice: tuple[str, str],
    caused: Callable[[str], bool],
) -> Variation:
    for value in values:
        changed_args, changed_kwargs = _changed(args, kwargs, slot[0], value)
        try:
            run = lambda a=changed_args, k=changed_kwargs: call(a, k)  # noqa: E731
            _observe(variation, run, log, caused)
        except Exception:
            return Variation(variation.trigger)
    per_value = variation.every_call and variation.calls > 1
    variation.suggestion = advice[1] if per_value else advice[0]
    if per_value and variation.explained:
        limit = int(torch._dynamo.config.recompile_limit)
        variation.limit_after = values_to_limit(variation.explained[0]["graphs"], limit)
    # Every cache entry lists its failed guards; the varied argument's guard is the telling one.
    naming = re.compile(rf"\b{re.escape(slot[1])}\b")
    variation.reasons = sorted(variation.reasons, key=lambda r: naming.search(r) is None)[:MAX_REASONS]
    return variation


def _is_user_file(path: str) -> bool:
    return os.path.isabs(path) and library_of(path) is None


def _naming(name: str) -> Callable[[str], bool]:
    """Does a guard mention the parameter `name`?"""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return lambda guard: pattern.search(guard) is not None


def _changed(
    args: tuple[Any, ...], kwargs: dict[str, Any], key: int | str, value: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return tuple(value if i == key else a for i, a in enumerate(args)), {
        k: value if k == key else v for k, v in kwargs.items()
    }


def _observe(
    variation: Variation, run: Callable[[], object], log: DynamoLog, caused: Callable[[str], bool] = bool
) -> None:
    """Run once; a recompile counts for `variation` if one of its failed guards passes `caused`
    (others, e.g. a data-dependent branch that went the other way, are only counted apart)."""
    seen, hits = len(log.recompiles), len(log.limit_hits)
    run()
    variation.calls += 1
    ours = []
    for message in log.recompiles[seen:]:
        failed = [
            (" ".join(g.split()), c) for g, _, c in (line.partition("  #") for line in GUARD_LINE.findall(message))
        ]
        if any(caused(guard) for guard, _ in failed):
            ours.append((message, failed))
        else:
            variation.other_recompiles += 1
    if ours:
        variation.recompiled_calls += 1
    for message, _ in ours:
        for explained in explain(message, _is_user_file):
            record = asdict(explained)
            known = {(e["function"], e["source"], e["user_line"]) for e in variation.explained}
            if caused(explained.guard) and (explained.function, explained.source, explained.user_line) not in known:
                variation.explained.append(record)
    for message, failed in ours:
        for reason, comment in failed:  # the guard, then the source line it came from
            hint = HINT.search(comment)
            variation.hint = variation.hint or (hint.group(1) if hint else "")
            if reason not in variation.reasons:
                variation.reasons.append(reason)
        head = RECOMPILING.search(message)
        if head:
            where = f"{head.group(2)}:{head.group(3)}:{head.group(1)}"
            if where not in variation.functions:
                variation.functions.append(where)
    if len(log.limit_hits) > hits and not variation.limit_hit:
        variation.limit_hit = log.limit_hits[hits].splitlines()[0]
