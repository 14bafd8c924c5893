"""Is `--timing --threads 1` right on a loaded machine? Its eager and compiled medians against
`torch.utils.benchmark.Timer(num_threads=1)` on the same model, in the same run.

compile-lint times single calls between two clock reads (eager and compiled alternating) and takes
the median; `Timer.blocked_autorange` times blocks of calls and takes the median block's mean per call;
`Timer.timeit` one block. Each figure is printed with its ratio to compile-lint's, and the load average,
so a run on a busy box says how busy it was. Goal: every ratio within 0.7-1.3 at one thread.

    .venv/bin/python bench/timing_vs_benchmark.py [--runs N]   (N runs of each, printed one by one)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "fixtures/timing/_model.py"

BENCHMARK = """
import json, sys, torch, torch.utils.benchmark as benchmark
sys.path.insert(0, "fixtures/timing")
import _model
model, (x,) = _model.make_one()
compiled = torch.compile(model, backend="inductor")
compiled(x)
out = {}
for name, fn in (("eager", model), ("compiled", compiled)):
    timer = benchmark.Timer("fn(x)", globals={"fn": fn, "x": x}, num_threads=1)
    with torch.compiler.set_stance("force_eager" if name == "eager" else "default"):
        blocked = timer.blocked_autorange(min_run_time=2.0)
        once = timer.timeit(200)
    out[name] = {"blocked_autorange": blocked.median * 1e3, "timeit": once.median * 1e3}
print(json.dumps(out))
"""


def compile_lint() -> dict[str, float]:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--no-cache", "--format", "json", "--timing", "--threads", "1",
         MODEL, "--target", f"{MODEL}:make_one"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(process.stdout)
    (target,) = [t for t in report["environment"]["targets"] if t["label"].startswith(f"{MODEL}:make_one")]
    timing = target["timing"]
    return {
        "eager": timing["eager"]["median_ms"],
        "compiled": timing["compiled"]["median_ms"],
        "threads": timing["machine"]["threads"],
        "load": timing["machine"]["load_average"][0],
    }


def torch_benchmark() -> dict[str, dict[str, float]]:
    process = subprocess.run([sys.executable, "-c", BENCHMARK], cwd=ROOT, capture_output=True, text=True, check=True)
    result: dict[str, dict[str, float]] = json.loads(process.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    runs = parser.parse_args().runs
    print(f"{os.cpu_count()} CPUs; figures in ms per call; ratio = torch.utils.benchmark / compile-lint")
    for run in range(1, runs + 1):
        ours, theirs = compile_lint(), torch_benchmark()
        load = os.getloadavg()[0]
        print(f"run {run}: compile-lint at {ours['threads']:.0f} thread, load {ours['load']:.2f} then {load:.2f}")
        for mode in ("eager", "compiled"):
            cells = [f"compile-lint {ours[mode]:.3f}"]
            for how, value in theirs[mode].items():
                cells.append(f"{how} {value:.3f} ({value / ours[mode]:.2f}x)")
            print(f"  {mode:8} " + "   ".join(cells))
        speedups = {how: theirs["eager"][how] / theirs["compiled"][how] for how in theirs["eager"]}
        shown = ", ".join(f"{how} {value:.2f}x" for how, value in speedups.items())
        print(f"  speed-up compile-lint {ours['eager'] / ours['compiled']:.2f}x, {shown}")


if __name__ == "__main__":
    main()
