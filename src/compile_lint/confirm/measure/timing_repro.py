"""`--repro-dir` with `--timing`: one standalone timing script per measured target, with the
versions and log switches used, to rerun the measurement without compile-lint."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compile_lint import __version__
from compile_lint.confirm.plan import TargetSpec
from compile_lint.confirm.report.repro import load_target

if TYPE_CHECKING:
    from compile_lint.confirm.measure.measure import MeasureOptions

LOGS = "graph_breaks,recompiles"

TEMPLATE = '''\
"""Times `{label}` as `compile-lint --timing` did: eager against torch.compile on the same inputs.

Recorded: python {python}, torch {torch}, compile-lint {version}, device {device}
Compiled: torch.compile(fn, backend={backend!r}{mode_text}); eager under set_stance("force_eager")
Logs:     TORCH_LOGS={logs} (graph breaks and recompiles on stderr; run with TORCH_LOGS= to silence)
Measured: eager {eager_ms:.4f} ms, compiled {compiled_ms:.4f} ms per call (median), speed-up {speedup:.2f}x
Run it:   python {name}
A training step mutates its weights: here eager and compiled do not start from the same ones
(compile-lint restores them in between), so their outputs may differ.
"""

import os

os.environ.setdefault("TORCH_LOGS", {logs!r})  # must be set before torch is imported

import importlib
import statistics
import sys
import time

import torch
import torch._dynamo
from torch._dynamo.utils import get_compilation_metrics

{load_target}

def clock():
    """Every timing point waits for the device in use (nothing to wait for on CPU)."""
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    return time.perf_counter()


def clone(value):
    if isinstance(value, torch.Tensor):
        copy = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=value.device)
        copy.copy_(value.detach())  # same strides: a non-contiguous input stays non-contiguous
        return copy.requires_grad_(value.requires_grad) if value.is_leaf else copy
    if isinstance(value, (list, tuple)):
        return type(value)(clone(v) for v in value)
    if isinstance(value, dict):
        return {{k: clone(v) for k, v in value.items()}}
    return value


def first_call(f):
    a, k = clone(args), clone(kwargs)
    torch.manual_seed(0)
    start = clock()
    out = f(*a, **k)
    return clone(out), clock() - start


def steady(f):
    """Median and interquartile range (seconds) of single calls over at least a second, after a warm-up."""
    a, k = clone(args), clone(kwargs)
    for _ in range(3):
        f(*a, **k)
    times, deadline = [], time.perf_counter() + 1.0
    while len(times) < 10 or (time.perf_counter() < deadline and len(times) < 100_000):
        start = clock()
        f(*a, **k)
        times.append(clock() - start)
    first, _, third = statistics.quantiles(times, n=4)
    return statistics.median(times), third - first


torch.manual_seed(0)
{setup}
{inputs}fn = getattr(fn, "_torchdynamo_orig_callable", getattr(fn, "_orig_mod", fn))  # undo any torch.compile

with torch.compiler.set_stance("force_eager"):
    eager_out, eager_first = first_call(fn)
    eager, eager_iqr = steady(fn)
torch._dynamo.reset()
compiled = torch.compile(fn, backend={backend!r}{mode_text})
{step_begin}compiled_out, compiled_first = first_call(compiled)
compile_s = sum(m.entire_frame_compile_time_s or 0.0 for m in get_compilation_metrics())
compiled_median, compiled_iqr = steady(compiled)
print(f"eager:    first call {{eager_first * 1e3:.2f}} ms, median {{eager * 1e3:.4f}} ms (IQR {{eager_iqr * 1e3:.4f}})")
print(f"compiled: first call {{compiled_first * 1e3:.2f}} ms ({{compile_s * 1e3:.0f}} ms compiling), "
      f"median {{compiled_median * 1e3:.4f}} ms (IQR {{compiled_iqr * 1e3:.4f}})")
print(f"speed-up: {{eager / compiled_median:.2f}}x")
torch.testing.assert_close(compiled_out, eager_out{tolerance})
print("outputs agree")
'''


def write_timing_script(
    directory: Path,
    label: str,
    spec: TargetSpec,
    run: dict[str, Any],
    backend: str,
    options: MeasureOptions,
    environment: dict[str, Any],
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"timing_{re.sub(r'[^0-9A-Za-z]+', '_', label).strip('_')[:80]}.py"
    repro, timing = run["repro"], run["timing"]
    inputs = ""
    if repro["args"] or repro["kwargs"] or not repro["setup"].startswith("fn, args"):
        args = "".join(f"{a}, " for a in repro["args"])
        kwargs = ", ".join(f"{k!r}: {v}" for k, v in repro["kwargs"].items())
        inputs = f"args = ({args})\nkwargs = {{{kwargs}}}\n"
    mode = options.compile_mode
    text = TEMPLATE.format(
        label=label,
        python=environment.get("python", "?"),
        torch=environment.get("torch", "?"),
        device=environment.get("device", "?"),
        version=__version__,
        backend=backend,
        mode_text=f", mode={mode!r}" if mode else "",
        step_begin="compiled = (lambda f: lambda *a, **k: (torch.compiler.cudagraph_mark_step_begin(), f(*a, **k))[1])"
        "(compiled)  # CUDA graphs: a new step per call\n"
        if mode == "reduce-overhead"
        else "",
        logs=LOGS,
        eager_ms=timing["eager"]["median_ms"],
        compiled_ms=timing["compiled"]["median_ms"],
        speedup=timing["speedup"],
        name=name,
        load_target=load_target(spec.root, spec.module),
        setup=repro["setup"],
        inputs=inputs,
        tolerance=""
        if options.tolerance is None
        else f", rtol={options.tolerance[0]!r}, atol={options.tolerance[1]!r}",
    )
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path
