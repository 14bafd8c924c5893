"""Is `--timing --threads 1` right? Its eager and compiled medians against
`torch.utils.benchmark.Timer(num_threads=1)` on the same model, in the same run.

compile-lint times single calls between two clock reads, eager and compiled in alternating blocks
(each block opened by untimed calls), and takes the median of the calls the scheduler did not switch
out. torch.utils.benchmark two ways: `blocked_autorange`, the median block's mean per call, with the
calls per block it chose (`_estimate_block_size`); and `timeit(1)`, blocks of one call repeated for
2 s and merged (`Measurement.merge`), the median call. On an idle machine the two agree. On a loaded
one a block of 10-100 ms is preempted and its mean counts the wait for the CPU, and the block size
blocked_autorange chooses depends on how its trial blocks were preempted: one call per block agrees
with timeit(1), 10 or 100 read 2-4x higher (at load 11 on 2 CPUs, the same process). timeit(1) is
the reference a loaded machine can give. Each figure is printed with its ratio to compile-lint's,
with the share of compile-lint's calls preempted, how far its blocks were apart and whether it
called itself unreliable, and the load average, so a run on a busy box says how busy it was.
Goal: every timeit(1) ratio within 0.7-1.3 at one thread, or compile-lint saying it is unreliable.

Models: the tiny block of fixtures/timing/_model.py (one `.item()` break) and a one-layer transformers
Llama causal LM (bench/workloads/tiny_llama.py).

    .venv/bin/python bench/timing_vs_benchmark.py [--runs N] [--only block|llama]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"block": ("fixtures/timing/_model.py", "make_one"), "llama": ("bench/workloads/tiny_llama.py", "make")}

BENCHMARK = """
import importlib.util, json, sys, time, torch, torch.utils.benchmark as benchmark
spec = importlib.util.spec_from_file_location("model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
fn, args, *rest = getattr(module, sys.argv[2])()
kwargs = rest[0] if rest else {}
compiled = torch.compile(fn, backend="inductor")
compiled(*args, **kwargs)
out = {}
for name, call in (("eager", fn), ("compiled", compiled)):
    measure = benchmark.Timer("call(*args, **kwargs)", globals={"call": call, "args": args, "kwargs": kwargs},
                              num_threads=1)
    with torch.compiler.set_stance("force_eager" if name == "eager" else "default"):
        blocked = measure.blocked_autorange(min_run_time=2.0)
        singles, deadline = [], time.perf_counter() + 2.0
        while time.perf_counter() < deadline:
            singles.append(measure.timeit(1))
    (merged,) = benchmark.Measurement.merge(singles)
    out[name] = {"blocked_autorange": [blocked.median * 1e3, blocked.number_per_run],
                 "timeit(1)": [merged.median * 1e3, 1]}
print(json.dumps(out))
"""


def compile_lint(path: str, factory: str) -> dict[str, Any]:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--no-cache", "--format", "json", "--timing", "--threads", "1",
         path, "--target", f"{path}:{factory}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(process.stdout)
    (target,) = [t for t in report["environment"]["targets"] if t["label"].startswith(f"{path}:{factory}")]
    timing = target["timing"]
    return {
        **{mode: timing[mode] for mode in ("eager", "compiled")},
        "threads": timing["machine"]["threads"],
        "load": timing["machine"]["load_average"][0],
    }


def torch_benchmark(path: str, factory: str) -> dict[str, dict[str, list[float]]]:
    process = subprocess.run(
        [sys.executable, "-c", BENCHMARK, path, factory], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, dict[str, list[float]]] = json.loads(process.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--only", choices=sorted(MODELS))
    arguments = parser.parse_args()
    names = [arguments.only] if arguments.only else list(MODELS)
    print(f"{os.cpu_count()} CPUs; figures in ms per call; ratio = torch.utils.benchmark / compile-lint")
    for run in range(1, arguments.runs + 1):
        for name in names:
            ours, theirs = compile_lint(*MODELS[name]), torch_benchmark(*MODELS[name])
            load = os.getloadavg()[0]
            print(f"run {run} {name}: compile-lint at {ours['threads']:.0f} thread, load {ours['load']:.2f} "
                  f"then {load:.2f}")  # fmt: skip
            for mode in ("eager", "compiled"):
                figure = ours[mode]
                unreliable = f"  UNRELIABLE: {figure['unreliable']}" if figure["unreliable"] else ""
                cells = [
                    f"compile-lint {figure['median_ms']:.3f} ({figure['preempted']:.0%} of calls preempted, "
                    f"{figure['blocks']} blocks {figure['block_spread']:.2f}x apart){unreliable}"
                ]
                for how, (value, number) in theirs[mode].items():
                    calls = f", {number:.0f} calls per block" if how == "blocked_autorange" else ""
                    cells.append(f"{how} {value:.3f} ({value / figure['median_ms']:.2f}x{calls})")
                print(f"  {mode:8} " + "   ".join(cells))
            speedups = {how: theirs["eager"][how][0] / theirs["compiled"][how][0] for how in theirs["eager"]}
            shown = ", ".join(f"{how} {value:.2f}x" for how, value in speedups.items())
            ours_speedup = ours["eager"]["median_ms"] / ours["compiled"]["median_ms"]
            print(f"  speed-up compile-lint {ours_speedup:.2f}x, {shown}")


if __name__ == "__main__":
    main()
