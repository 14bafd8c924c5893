"""`--timing` / `--coverage` in the worker: eager against compiled on the same inputs.

Per target (the entries of a factory that share one callable are its input sets): the first call
of each mode, split into compile and run from Dynamo's compilation metrics; the steady state
(eager and compiled in alternating blocks, each opened by untimed calls; every timed call between
two clock reads that synchronise the device); whether the outputs agree (compare.py: every tensor
inside them); a profiled steady step (coverage); every input set in turn on the same compiled
function (recompiles, cache entries, memory, latency); last, a second compile after
`torch._dynamo.reset()`, which finds inductor's caches warm. Eager runs use
`set_stance("force_eager")`, so nested compiled code runs eagerly too.
"""

from __future__ import annotations

import copy
import inspect
import os
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
import torch._dynamo
from torch._dynamo.utils import clear_compilation_metrics, get_compilation_metrics

from compile_lint.confirm.measure.compare import agreement
from compile_lint.confirm.measure.profile import Attribution, compile_ids, coverage, synchronize
from compile_lint.confirm.run.capture import DynamoLog, capture_dynamo_log
from compile_lint.confirm.run.inputs import Made, NoInputs, unwrapped
from compile_lint.confirm.run.probe import GUARD_LINE
from compile_lint.confirm.run.targets import Target, original
from compile_lint.confirm.run.worker import Context, break_record, build, describe_error, forget, load, user_files

MIN_RUN_TIME = 1.0  # seconds of steady-state calls per mode
MIN_CALLS, MAX_CALLS = 10, 100_000  # timed calls per mode
BLOCK_TIME = 0.1  # seconds of timed calls of one mode before switching to the other
BLOCK_MIN_CALLS = 2  # timed calls per block at least (a call longer than BLOCK_TIME)
BLOCK_WARMUP = 0.005  # seconds of untimed calls (at least one) opening each block: the switch's cost
NOISE = 0.10  # interquartile range / median above this: the steady-state figure is noisy
PREEMPTED_AT_MOST = 0.5  # share of timed calls switched out by the scheduler beyond which a median cannot be trusted
BLOCKS_DISAGREE = 1.3  # upper / lower quartile of the blocks' medians above this: the figure is unreliable
# The calling thread's involuntary context switches (Linux; elsewhere the process's).
RUSAGE_WHO = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
SET_CALLS = 20  # timed calls per input set after its first one
OUT_OF_LINE = 2.0  # an input set this many times slower than a set at least as large is flagged
MEMORY_JUMP_MB = 64.0  # RSS growth over one input set that is flagged
MB = 1 << 20


def measure(request: dict[str, Any], context: Context) -> dict[str, Any]:
    """The worker's `measure` job: import the target's module afresh (every torch.compile in it
    forced to the measuring backend), then measure each callable with its input sets."""
    spec, options = request["target"], request["measure"]
    files = user_files(request["files"])
    forget(files, spec["module"])
    context.states.forget(spec["module"])
    try:
        try:
            module = load(spec, context.states)
        except BaseException as error:
            return {"outcome": "error", "error": f"cannot import {spec['module']}: {describe_error(error, files)}"}
        try:
            made = build(spec, module, context.channel)
        except NoInputs as error:
            return {"outcome": "not-run", "error": str(error)}
        except Exception as error:
            return {"outcome": "error", "error": f"factory {spec['attr']}: {describe_error(error, files)}"}
        runs = []
        for index, group in grouped(made):
            first = group[0]
            result: dict[str, Any] = {
                "index": index,
                "name": first.target.name,
                "sets": len(group),
                "repro": {"setup": first.setup, "args": first.args, "kwargs": first.kwargs},
            }
            trace = Path(options["trace_dir"]) / f"trace-{os.getpid()}-{spec['attr']}-{index}.json"
            try:
                targets = [one.target for one in group]
                runs.append(
                    {**result, "outcome": "ok", **measure_target(targets, spec["backend"], options, files, trace)}
                )
            except Exception as error:
                runs.append({**result, "outcome": "raised", "error": describe_error(error, files)})
            finally:
                torch._dynamo.reset()
        return {"outcome": "ok", "runs": runs}
    finally:
        forget(files, spec["module"])


def grouped(made: list[Made]) -> list[tuple[int, list[Made]]]:
    """Factory entries sharing one callable are input sets of one target, keyed by the first index."""
    groups: dict[int, tuple[int, list[Made]]] = {}
    for index, one in enumerate(made):
        groups.setdefault(id(original(one.target.fn)), (index, []))[1].append(one)
    return list(groups.values())


def measure_target(
    sets: list[Target], backend: str, options: dict[str, Any], files: set[str], trace: Path
) -> dict[str, Any]:
    primary = sets[0]
    if options.get("threads"):  # after the import and the factory: the worker's clean state resets threads
        torch.set_num_threads(options["threads"])
    state = Snapshot(primary)
    with torch.compiler.set_stance("force_eager"):
        eager_out, eager_first = first_call(unwrapped(primary.fn), primary)
    state.restore()
    torch._dynamo.reset()
    clear_compilation_metrics()
    fn = compile_target(primary, backend, options.get("mode"))
    result: dict[str, Any] = {"backend": backend, "mode": options.get("mode") or "default", "setup": setup(primary)}
    load_before = load_average()
    with capture_dynamo_log() as log, compile_ids(log) as ids:
        compiled_out, compiled_first = first_call(fn, primary)
        first_compiles = compile_records(take_metrics())
        logged = [{**break_record(b), "compile_id": ids.get(i)} for i, b in enumerate(log.breaks)]
        eager_steady, compiled_steady = steady(unwrapped(primary.fn), fn, primary)
        result["timing"] = {
            "eager": {"first_ms": eager_first * 1e3, **eager_steady},
            "compiled": {
                "first_ms": compiled_first * 1e3,
                "compile_ms": sum(c["seconds"] for c in first_compiles) * 1e3,
                "run_ms": max(0.0, compiled_first - sum(c["seconds"] for c in first_compiles)) * 1e3,
                "cache": cache_state(first_compiles),
                "frames": first_compiles,
                **compiled_steady,
            },
            "speedup": eager_steady["median_ms"] / compiled_steady["median_ms"],
            "agreement": agreement(eager_out, compiled_out, options.get("tolerance")),
            "breaks": len(log.breaks),
            "machine": machine(load_before, options.get("threads")),
        }
        if options.get("coverage"):
            attribution = Attribution(logged, first_compiles)
            result["coverage"] = coverage(lambda: fn(*primary.args, **primary.kwargs), trace, attribution)
        result["timing"]["input_sets"] = run_input_sets(fn, sets, log, len(first_compiles))
    result["timing"]["warm_compile"] = warm_compile(primary, backend, options.get("mode"))
    return result


def machine(load_before: tuple[float, float, float], asked: int | None) -> dict[str, Any]:
    """What the machine was doing: the load average (1, 5, 15 minutes) when the measurement started
    and after the steady state, the CPUs this process may run on, and the threads used (and why)."""
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "load_average": list(load_before),
        "load_average_after": list(load_average()),
        "cpus": os.cpu_count(),
        "cpus_usable": len(affinity) if affinity is not None else os.cpu_count(),
        "cpu_affinity": affinity,
        "threads": torch.get_num_threads(),
        "threads_from": "--threads" if asked else "torch's default",
        "interop_threads": torch.get_num_interop_threads(),
    }


def load_average() -> tuple[float, float, float]:
    """The system's load average over 1, 5 and 15 minutes (runnable and waiting processes)."""
    return os.getloadavg()


def compile_target(target: Target, backend: str, mode: str | None) -> Callable[..., Any]:
    """torch.compile with the measuring backend; under `reduce-overhead` (CUDA graphs) each call
    starts a new step, as torch.compiler.cudagraph_mark_step_begin() documents for loops."""
    fn: Callable[..., Any] = torch.compile(original(target.fn), backend=backend, mode=mode)
    if mode != "reduce-overhead":
        return fn

    def step(*args: Any, **kwargs: Any) -> Any:
        torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]
        return fn(*args, **kwargs)

    return step


def setup(target: Target) -> dict[str, Any]:
    """What both modes share and a reader must know: input dtypes and devices, autocast, train/eval."""
    tensors = list(tensors_in((target.args, target.kwargs)))
    modules = [m for m in reachable(target.fn) if isinstance(m, torch.nn.Module)]
    return {
        "inputs": [describe_tensor(t) for t in tensors],
        "autocast": torch.is_autocast_enabled(),
        "training": modules[0].training if modules else None,
        "grad_enabled": torch.is_grad_enabled(),
        "threads": torch.get_num_threads(),
        "seed": 0,
    }


def describe_tensor(t: torch.Tensor) -> str:
    layout = "" if t.is_contiguous() else " non-contiguous"
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}{layout} {t.device}"


def first_call(fn: Callable[..., Any], target: Target) -> tuple[Any, float]:
    """(output, seconds) of one call on fresh clones of the inputs, seeded, device synchronised. Timed on Dynamo's
    own clock (`time.time_ns`, which its compile metrics use), so the compile seconds it reports for the frames
    compiled in this call are a part of this figure, not a figure on another clock that can exceed it."""
    args, kwargs = clone((target.args, target.kwargs))
    torch.manual_seed(0)
    synchronize()
    start = time.time_ns()
    out = fn(*args, **kwargs)
    synchronize()
    return clone(out), (time.time_ns() - start) * 1e-9


def synced_clock() -> float:
    synchronize()
    return time.perf_counter()


Summary = dict[str, Any]


class Samples:
    """One mode's timed calls: seconds, whether the scheduler switched the calling thread out during
    the call (another process took the CPU: the call's time then includes the wait), and the block
    each call belongs to."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.preempted: list[bool] = []
        self.blocks: list[int] = []
        self.block = -1

    def add(self, seconds: float, preempted: bool) -> None:
        self.times.append(seconds)
        self.preempted.append(preempted)
        self.blocks.append(self.block)

    def open_block(self) -> None:
        self.block += 1


def steady(eager: Callable[..., Any], compiled: Callable[..., Any], target: Target) -> tuple[Summary, Summary]:
    """The steady state of both modes in alternating blocks, an eager block then a compiled one, each
    BLOCK_TIME of timed calls after BLOCK_WARMUP of untimed ones, for about MIN_RUN_TIME of timed calls
    per mode (MIN_CALLS at least): a change in the machine's load reaches both alike (timed one mode
    after the other, the eager median of the same code moved 16% between two runs on a shared box).

    Not single calls in alternation: the first calls after a switch find the caches holding the other
    mode's code and data. On fixtures/timing/_model.py at one thread the first call of a block took
    2-3x a settled one and the third had settled; alternating single calls put 45-60 us on every call
    of both modes (eager 0.13 ms against 0.08 ms timed alone, which torch.utils.benchmark agrees with),
    a cost no program running one mode pays. Each sample is one call between two synchronised clock
    reads, not a block of calls as `torch.utils.benchmark.Timer.blocked_autorange` takes: on a loaded
    machine a block of 10-100 ms is preempted and its mean counts the wait for the CPU (at load 11 on
    2 CPUs, 2-4x the single-call figure, which stayed within 10 % over repeats). A call during which
    the scheduler switched the thread out is left out of the median (see `summary`)."""
    eager_inputs, compiled_inputs = clone((target.args, target.kwargs)), clone((target.args, target.kwargs))
    eager_samples, compiled_samples = Samples(), Samples()
    deadline = time.perf_counter() + 2 * (MIN_RUN_TIME + MIN_RUN_TIME / BLOCK_TIME * BLOCK_WARMUP)
    while len(eager_samples.times) < MIN_CALLS or (
        time.perf_counter() < deadline and len(eager_samples.times) < MAX_CALLS
    ):
        with torch.compiler.set_stance("force_eager"):
            block(eager, eager_inputs, eager_samples)
        block(compiled, compiled_inputs, compiled_samples)
    return summary(eager_samples), summary(compiled_samples)


def block(fn: Callable[..., Any], inputs: tuple[tuple[Any, ...], dict[str, Any]], samples: Samples) -> None:
    """One mode's block: untimed calls for BLOCK_WARMUP seconds (at least one), then timed calls
    for BLOCK_TIME seconds (at least BLOCK_MIN_CALLS), added to `samples`."""
    warm = time.perf_counter() + BLOCK_WARMUP
    timed_call(fn, inputs)
    while time.perf_counter() < warm:
        timed_call(fn, inputs)
    samples.open_block()
    spent, calls = 0.0, 0
    while calls < BLOCK_MIN_CALLS or (spent < BLOCK_TIME and len(samples.times) < MAX_CALLS):
        switches = involuntary_switches()
        seconds = timed_call(fn, inputs)
        samples.add(seconds, involuntary_switches() != switches)
        spent, calls = spent + seconds, calls + 1


def involuntary_switches() -> int:
    return resource.getrusage(RUSAGE_WHO).ru_nivcsw


def timed_call(fn: Callable[..., Any], inputs: tuple[tuple[Any, ...], dict[str, Any]]) -> float:
    args, kwargs = inputs
    start = synced_clock()
    fn(*args, **kwargs)
    return synced_clock() - start


def summary(samples: Samples) -> Summary:
    """The median of the calls the scheduler did not switch out (of all calls when fewer than
    MIN_CALLS ran uninterrupted), its spread, and whether it can be trusted: not when more than
    PREEMPTED_AT_MOST of the calls were switched out (on a machine this busy a call this long rarely
    runs without waiting), nor when the blocks' medians disagree by more than BLOCKS_DISAGREE (the
    machine changed under the measurement)."""
    kept = [t for t, switched in zip(samples.times, samples.preempted, strict=True) if not switched]
    if len(kept) < MIN_CALLS:
        kept = samples.times
    first, _, third = statistics.quantiles(kept, n=4)
    median = statistics.median(kept)
    per_block: dict[int, list[float]] = {}
    for seconds, switched, index in zip(samples.times, samples.preempted, samples.blocks, strict=True):
        if not switched or kept is samples.times:
            per_block.setdefault(index, []).append(seconds)
    medians = sorted(statistics.median(times) for times in per_block.values())
    low, high = (medians[0], medians[-1]) if len(medians) < 4 else statistics.quantiles(medians, n=4)[::2]
    preempted = sum(samples.preempted) / len(samples.times)
    reasons = []
    if preempted > PREEMPTED_AT_MOST:
        reasons.append(f"{preempted:.0%} of its timed calls were preempted by other processes")
    if low > 0 and high / low > BLOCKS_DISAGREE:
        reasons.append(
            f"its blocks disagree (quartiles of the {len(medians)} block medians {low * 1e3:.3g} and "
            f"{high * 1e3:.3g} ms, {high / low:.2f}x apart)"
        )
    return {
        "median_ms": median * 1e3,
        "iqr_ms": (third - first) * 1e3,
        "calls": len(samples.times),
        "calls_used": len(kept),
        "noisy": median > 0 and (third - first) / median > NOISE,
        "preempted": preempted,
        "blocks": len(medians),
        "block_spread": high / low if low > 0 else None,
        "block_quartiles_ms": [low * 1e3, high * 1e3],
        "unreliable": "; ".join(reasons) or None,
    }


def take_metrics() -> list[Any]:
    """Compilation metrics recorded since the last take (per compiled frame)."""
    entries = list(get_compilation_metrics())
    clear_compilation_metrics()
    return entries


def compile_records(entries: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "compile_id": entry.compile_id,
            "code": entry.co_name,
            "file": entry.co_filename,
            "line": entry.co_firstlineno,
            "seconds": entry.entire_frame_compile_time_s or 0.0,
            "recompile_reason": entry.recompile_reason,
            "restart_reasons": sorted(r.splitlines()[0] for r in entry.restart_reasons or ()),
            "cache_hits": (entry.inductor_fx_local_cache_hit_count or 0)
            + (entry.inductor_fx_remote_cache_hit_count or 0),
            "cache_misses": (entry.inductor_fx_local_cache_miss_count or 0)
            + (entry.inductor_fx_remote_cache_miss_count or 0),
        }
        for entry in entries
    ]


def cache_state(records: list[dict[str, Any]]) -> str:
    """cold: inductor compiled at least one graph from scratch; warm: every graph came from its cache."""
    hits, misses = sum(r["cache_hits"] for r in records), sum(r["cache_misses"] for r in records)
    if misses:
        return "cold"
    return "warm" if hits else "no inductor graph"


def warm_compile(target: Target, backend: str, mode: str | None) -> dict[str, Any]:
    """The first call again after `torch._dynamo.reset()`: what a new process with a warm cache pays."""
    torch._dynamo.reset()
    take_metrics()
    state = Snapshot(target)
    _, seconds = first_call(compile_target(target, backend, mode), target)
    state.restore()
    records = compile_records(take_metrics())
    return {
        "first_ms": seconds * 1e3,
        "compile_ms": sum(r["seconds"] for r in records) * 1e3,
        "cache": cache_state(records),
    }


def run_input_sets(fn: Callable[..., Any], sets: list[Target], log: DynamoLog, entries: int) -> list[dict[str, Any]]:
    """Every input set in turn on the compiled function; the first set was compiled already."""
    if len(sets) == 1:
        sets = [sets[0], *grown_batches(sets[0])]
    rows = []
    for index, target in enumerate(sets):
        row = run_input_set(fn, target, log)
        entries += len(row.pop("frames"))
        rows.append({"index": index, **row, "cache_entries": entries})
    flag_out_of_line(rows)
    return rows


def grown_batches(target: Target) -> list[Target]:
    """Without input sets from the factory: dimension 0 of every tensor grown by one, then two."""
    grown = []
    for extra in (1, 2):
        args, kwargs = clone((target.args, target.kwargs))

        def grow(t: torch.Tensor, extra: int = extra) -> torch.Tensor:
            if t.dim() == 0 or t.shape[0] == 0:
                return t
            return torch.cat([t, t[:1].expand(extra, *t.shape[1:])]).requires_grad_(t.requires_grad)

        grown.append(Target(target.fn, map_tensors(args, grow), map_tensors(kwargs, grow)))
    return grown


def run_input_set(fn: Callable[..., Any], target: Target, log: DynamoLog) -> dict[str, Any]:
    recompiles, limits = len(log.recompiles), len(log.limit_hits)
    take_metrics()
    device = device_memory_reset()
    rss_before, peak_before = rss_mb(), peak_rss_mb()
    row: dict[str, Any] = {"inputs": [describe_tensor(t) for t in tensors_in((target.args, target.kwargs))]}
    row["elements"] = sum(t.numel() for t in tensors_in((target.args, target.kwargs)))
    try:
        _, first = first_call(fn, target)
        times = []
        args, kwargs = clone((target.args, target.kwargs))
        for _ in range(SET_CALLS):
            start = synced_clock()
            fn(*args, **kwargs)
            times.append(synced_clock() - start)
    except Exception as error:
        row["error"] = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        first, times = float("nan"), []
    frames = compile_records(take_metrics())
    reasons = [m.group(1) for message in log.recompiles[recompiles:] for m in GUARD_LINE.finditer(message)]
    return {
        **row,
        "first_ms": first * 1e3,
        "median_ms": statistics.median(times) * 1e3 if times else None,
        "recompiled": bool(frames),
        "compile_ms": sum(f["seconds"] for f in frames) * 1e3,
        "recompile_reasons": reasons[:3],
        "recompile_limit_hit": len(log.limit_hits) > limits,
        "rss_mb": rss_mb(),
        "rss_growth_mb": rss_mb() - rss_before,
        "peak_rss_growth_mb": peak_rss_mb() - peak_before,
        "device_peak_mb": device_memory_peak() if device else None,
        "frames": frames,
    }


def flag_out_of_line(rows: list[dict[str, Any]]) -> None:
    """Flags per input set: raised, hit the recompile limit, slower than a set at least as large,
    or grew the process's memory by a jump."""
    for row in rows:
        flags = []
        if "error" in row:
            flags.append("raised")
        if row["recompile_limit_hit"]:
            flags.append("recompile_limit")
        larger = [
            r["median_ms"]
            for r in rows
            if r is not row and r["median_ms"] is not None and r["elements"] >= row["elements"]
        ]
        if row["median_ms"] is not None and larger and row["median_ms"] > OUT_OF_LINE * min(larger):
            flags.append("latency")
        if row["rss_growth_mb"] > MEMORY_JUMP_MB:
            flags.append("memory")
        row["flags"] = flags


def rss_mb() -> float:
    """Resident set size now (Linux /proc; elsewhere the peak is the best there is)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB
    except OSError:
        return peak_rss_mb()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def device_memory_reset() -> bool:
    if not torch.accelerator.is_available():
        return False
    torch.accelerator.memory.reset_peak_memory_stats()
    return True


def device_memory_peak() -> float:
    return float(torch.accelerator.memory.max_memory_allocated()) / MB


def tensors_in(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from tensors_in(item)


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def clone(value: Any) -> Any:
    """Detached copies with the same strides (a non-contiguous input stays non-contiguous)."""

    def one(t: torch.Tensor) -> torch.Tensor:
        copy_ = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
        copy_.copy_(t.detach())
        return copy_.requires_grad_(t.requires_grad) if t.is_leaf else copy_

    return map_tensors(value, one)


def reachable(fn: Any) -> list[Any]:
    """Modules and optimizers a target uses: itself, its `self`, and the names its code reads."""
    found: list[Any] = []
    inner = unwrapped(fn)
    candidates = [inner, getattr(inner, "__self__", None)]
    function = getattr(inner, "__func__", inner)
    if inspect.isfunction(function):
        names = inspect.getclosurevars(function)
        candidates += [*names.nonlocals.values(), *names.globals.values()]
    for value in candidates:
        if isinstance(value, (torch.nn.Module, torch.optim.Optimizer)) and all(value is not f for f in found):
            found.append(value)
    return found


class Snapshot:
    """Parameters, buffers, gradients and optimizer state, so a training step's eager and compiled
    first calls start from the same weights."""

    def __init__(self, target: Target) -> None:
        self.objects = reachable(target.fn)
        self.saved = [copy.deepcopy(obj.state_dict()) for obj in self.objects]
        self.grads = [
            [None if p.grad is None else p.grad.clone() for p in obj.parameters()]
            if isinstance(obj, torch.nn.Module)
            else []
            for obj in self.objects
        ]

    def restore(self) -> None:
        with torch.no_grad():
            for obj, saved, grads in zip(self.objects, self.saved, self.grads, strict=True):
                obj.load_state_dict(copy.deepcopy(saved))
                if isinstance(obj, torch.nn.Module):
                    for parameter, grad in zip(obj.parameters(), grads, strict=True):
                        parameter.grad = None if grad is None else grad.clone()
