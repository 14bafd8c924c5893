"""The reference of bench/timing_vs_benchmark.py: a persistent child that builds one model, compiles it
(inductor) once, and on each `measure` line from its parent times eager and compiled at one thread with
`torch.utils.benchmark.Timer(num_threads=1)`, then idles until the next line, so that it loads nothing
while compile-lint measures the same model.

Each measurement, per mode: two seconds of `timeit(1)` blocks (one call each, the times per call);
then `blocked_autorange` and `adaptive_autorange` (blocks of the size they choose: their median per
call and that size).

    python bench/timing_reference.py PATH FACTORY   (then `measure` lines on stdin, one JSON line back each)
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.utils.benchmark as benchmark

SINGLES_SECONDS = 2.0


def load(path: str, factory: str) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
    spec = importlib.util.spec_from_file_location("workload", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn, args, *rest = getattr(module, factory)()
    return fn, args, rest[0] if rest else {}


def measure(call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    timer = benchmark.Timer("call(*args, **kwargs)", globals={"call": call, "args": args, "kwargs": kwargs},
                            num_threads=1)  # fmt: skip
    singles, deadline = [], time.perf_counter() + SINGLES_SECONDS
    while time.perf_counter() < deadline:
        singles.append(timer.timeit(1).median * 1e3)
    blocked = timer.blocked_autorange(min_run_time=1.0)
    adaptive = timer.adaptive_autorange(threshold=0.1, min_run_time=1.0, max_run_time=3.0)
    return {
        "timeit1_ms": singles,
        "blocked_autorange": [blocked.median * 1e3, blocked.number_per_run],
        "adaptive_autorange": [adaptive.median * 1e3, adaptive.number_per_run],
    }


def main() -> None:
    torch.set_num_threads(1)
    fn, args, kwargs = load(sys.argv[1], sys.argv[2])
    compiled = torch.compile(fn, backend="inductor")
    compiled(*args, **kwargs)  # the compile happens here, before any measurement
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "measure":
            break
        figures = {}
        for mode, call in (("eager", fn), ("compiled", compiled)):
            with torch.compiler.set_stance("force_eager" if mode == "eager" else "default"):
                figures[mode] = measure(call, args, kwargs)
        print(json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
