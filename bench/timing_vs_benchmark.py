"""Is `--timing --threads 1` right? Its eager and compiled medians against
`torch.utils.benchmark.Timer(num_threads=1)` on the same model, in the same run.

compile-lint times single calls between two clock reads, eager and compiled in alternating blocks
(each block opened by untimed calls), and takes the median; `Timer.blocked_autorange` times blocks
of calls and takes the median block's mean per call, on the wall clock (its default) and on the
process's CPU clock (`timer=time.process_time`: at one thread, the call's own work; on a loaded
machine the wall-clock blocks also hold the time other processes had the CPU). Each figure is printed
with its ratio to compile-lint's, and the load average, so a run on a busy box says how busy it was.
Goal: every ratio within 0.7-1.3 at one thread.

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
    out[name] = {}
    for clock, timer in (("wall", time.perf_counter), ("cpu", time.process_time)):
        measure = benchmark.Timer("call(*args, **kwargs)", globals={"call": call, "args": args, "kwargs": kwargs},
                                  timer=timer, num_threads=1)
        with torch.compiler.set_stance("force_eager" if name == "eager" else "default"):
            out[name][clock] = measure.blocked_autorange(min_run_time=2.0).median * 1e3
print(json.dumps(out))
"""


def compile_lint(path: str, factory: str) -> dict[str, float]:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--no-cache", "--format", "json", "--timing", "--threads", "1",
         path, "--target", f"{path}:{factory}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(process.stdout)
    (target,) = [t for t in report["environment"]["targets"] if t["label"].startswith(f"{path}:{factory}")]
    timing = target["timing"]
    return {
        "eager": timing["eager"]["median_ms"],
        "compiled": timing["compiled"]["median_ms"],
        "threads": timing["machine"]["threads"],
        "load": timing["machine"]["load_average"][0],
    }


def torch_benchmark(path: str, factory: str) -> dict[str, dict[str, float]]:
    process = subprocess.run(
        [sys.executable, "-c", BENCHMARK, path, factory], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: dict[str, dict[str, float]] = json.loads(process.stdout.strip().splitlines()[-1])
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
                cells = [f"compile-lint {ours[mode]:.3f}"]
                for clock, value in theirs[mode].items():
                    cells.append(f"blocked_autorange {clock} {value:.3f} ({value / ours[mode]:.2f}x)")
                print(f"  {mode:8} " + "   ".join(cells))
            speedups = {clock: theirs["eager"][clock] / theirs["compiled"][clock] for clock in theirs["eager"]}
            shown = ", ".join(f"{clock} {value:.2f}x" for clock, value in speedups.items())
            print(f"  speed-up compile-lint {ours['eager'] / ours['compiled']:.2f}x, blocked_autorange {shown}")


if __name__ == "__main__":
    main()
