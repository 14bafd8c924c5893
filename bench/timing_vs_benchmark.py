"""Is `--timing --threads 1` right? Its eager and compiled medians against
`torch.utils.benchmark.Timer(num_threads=1)` on the same model, bracketing it in the same run.

Per model, a persistent child (bench/timing_reference.py) builds the model, compiles it once and
waits. Each run asks it for the reference, runs compile-lint's `--timing --threads 1` on the same
factory, then asks for the reference again: the load the machine had while compile-lint measured is
the load around both reference measurements. One thread everywhere (`OMP_NUM_THREADS=1` for both
processes, `torch.set_num_threads(1)` and `Timer(num_threads=1)` in the child).

The reference is `Timer(num_threads=1).timeit(1)`, blocks of one call: the median per call over
both bracketing measurements (two seconds each), with a 95 % confidence interval of that median
(order statistics). When the two bracketing medians are more than 1.2x apart the reference itself
measured the machine: "reference unstable" is printed instead of a ratio. Beside it, `blocked_autorange`
and `adaptive_autorange` with the calls per block they chose, before and after. They are no reference
on a loaded machine: they choose 1, 10 or 100 calls per block from how their trial blocks were
preempted, and blocks of 10-100 calls are preempted and their means count the wait for the CPU
(2-9x timeit(1) at load 6 on 2 CPUs). adaptive_autorange at one call per block read 1.2-2.3x timeit(1)
in the same child: between blocks it sorts every time so far and runs torch's quantiles, which we take
to leave the next call its caches to refill (not measured apart).
Each ratio is reference / compile-lint; the goal is 0.7-1.3 (within 30 %), or compile-lint calling its
figure unreliable.

Models: the tiny block of fixtures/timing/_model.py (one `.item()` break) and a one-layer transformers
Llama causal LM (bench/workloads/tiny_llama.py); 3 runs x 2 models x eager/compiled = 12 figures.

    .venv/bin/python bench/timing_vs_benchmark.py [--runs N] [--only block|llama]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"block": ("fixtures/timing/_model.py", "make_one"), "llama": ("bench/workloads/tiny_llama.py", "make")}
ONE_THREAD = {**os.environ, "OMP_NUM_THREADS": "1"}
UNSTABLE = 1.2  # the two bracketing reference medians this many times apart: the reference is no reference
WITHIN = 0.3  # the goal: every ratio within 30 %
Z95 = 1.96


class Reference:
    """The persistent child: one model compiled once, measured on request."""

    def __init__(self, path: str, factory: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "timing_reference.py"), path, factory],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ONE_THREAD,
        )  # fmt: skip
        self.ready = self._reply()

    def measure(self) -> dict[str, Any]:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        stdin.write("measure\n")
        stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)

    def _reply(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the reference child exited ({self.process.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply


@dataclass
class Tally:
    """One torch version's figures: ratios, loads, unstable references, unreliable compile-lint figures."""

    ratios: list[float] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)
    unstable: int = 0
    figures: int = 0


def median_with_interval(values: list[float]) -> tuple[float, float, float]:
    """The median and a 95 % confidence interval of it: the order statistics n/2 -+ 1.96 sqrt(n)/2."""
    ordered = sorted(values)
    n = len(ordered)
    half_width = Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half_width))
    high = min(n - 1, math.ceil(n / 2 + half_width) - 1)
    return statistics.median(ordered), ordered[low], ordered[high]


def compile_lint(path: str, factory: str) -> dict[str, Any]:
    process = subprocess.run(
        [sys.executable, "-m", "compile_lint.cli", "--no-cache", "--format", "json", "--timing", "--threads", "1",
         path, "--target", f"{path}:{factory}"],
        cwd=ROOT, capture_output=True, text=True, check=False, env=ONE_THREAD,
    )  # fmt: skip
    report = json.loads(process.stdout)
    (target,) = [t for t in report["environment"]["targets"] if t["label"].startswith(f"{path}:{factory}")]
    timing: dict[str, Any] = target["timing"]
    return timing


def show_mode(mode: str, ours: dict[str, Any], before: dict[str, Any], after: dict[str, Any], tally: Tally) -> None:
    figure = ours[mode]
    unreliable = f"  UNRELIABLE: {figure['unreliable']}" if figure["unreliable"] else ""
    print(f"  {mode:8} compile-lint {figure['median_ms']:.3f} ms ({figure['preempted']:.0%} of calls preempted, "
          f"{figure['blocks']} blocks {figure['block_spread']:.2f}x apart){unreliable}")  # fmt: skip
    sides = [statistics.median(side[mode]["timeit1_ms"]) for side in (before, after)]
    median, low, high = median_with_interval(before[mode]["timeit1_ms"] + after[mode]["timeit1_ms"])
    spread = max(sides) / min(sides)
    tally.figures += 1
    if spread > UNSTABLE:
        verdict = "reference unstable"
        tally.unstable += 1
    else:
        ratio = median / figure["median_ms"]
        tally.ratios.append(ratio)
        verdict = f"{ratio:.2f}x " + ("within 30 %" if abs(ratio - 1) <= WITHIN else "OUTSIDE 30 %")
    print(f"           reference timeit(1) {median:.3f} ms [95 % CI {low:.3f}-{high:.3f}] (before {sides[0]:.3f}, "
          f"after {sides[1]:.3f}: {spread:.2f}x apart)  {verdict}")  # fmt: skip
    for how in ("blocked_autorange", "adaptive_autorange"):
        (first, size_first), (second, size_second) = before[mode][how], after[mode][how]
        print(f"           {how} {first:.3f}, {second:.3f} ms ({size_first}, {size_second} calls per block; "
              f"{first / figure['median_ms']:.2f}x, {second / figure['median_ms']:.2f}x)")  # fmt: skip


def run_once(run: int, name: str, reference: Reference, tally: Tally) -> None:
    load_before = os.getloadavg()[0]
    before = reference.measure()
    ours = compile_lint(*MODELS[name])
    after = reference.measure()
    load_after = os.getloadavg()[0]
    machine = ours["machine"]
    loads = [load_before, machine["load_average"][0], machine["load_average_after"][0], load_after]
    tally.loads += loads
    print(f"run {run} {name}: compile-lint at {machine['threads']} thread on {machine['cpus_usable']} usable CPUs; "
          "load average " + " / ".join(f"{value:.2f}" for value in loads) +
          " (before the reference, compile-lint's start and end, after the reference)")  # fmt: skip
    for mode in ("eager", "compiled"):
        show_mode(mode, ours, before, after, tally)
    print(f"  speed-up compile-lint {ours['speedup']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=sorted(MODELS))
    arguments = parser.parse_args()
    names = [arguments.only] if arguments.only else list(MODELS)
    references = {name: Reference(*MODELS[name]) for name in names}
    torch_version = next(iter(references.values())).ready["torch"]
    print(f"torch {torch_version}, {os.cpu_count()} CPUs, one thread; figures in ms per call; "
          "ratio = reference / compile-lint")  # fmt: skip
    tally = Tally()
    try:
        for run in range(1, arguments.runs + 1):
            for name in names:
                run_once(run, name, references[name], tally)
    finally:
        for reference in references.values():
            reference.close()
    within = sum(abs(ratio - 1) <= WITHIN for ratio in tally.ratios)
    ratios = f", ratios {min(tally.ratios):.2f}-{max(tally.ratios):.2f}" if tally.ratios else ""
    print(
        f"torch {torch_version}: {within}/{tally.figures} figures within 30 % of the reference{ratios}, "
        f"{tally.unstable} with the reference unstable; load average {min(tally.loads):.2f}-{max(tally.loads):.2f}"
    )


if __name__ == "__main__":
    main()
