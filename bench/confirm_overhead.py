"""What `compile-lint --confirm` costs over a bare script that compiles and runs the same targets.

Both run as fresh processes on fixtures with `compile_lint_targets()`: the bare script imports
torch, then compiles (backend eager) and calls each factory's targets once; `--confirm` gets the same
factories as `--target` (so its automatic targets for those regions are skipped) and does its whole
job: static pass, worker, eager trace, break run, fullgraph run, recompile probe.
Two workloads: the seed example (one target; torch's import dominates, as in a project with a few
models) and every fixture (~60 tiny targets; compiling dominates). Prints wall times and ratios
(goal: <= 1.3). Usage: python bench/confirm_overhead.py [repeats]   (medians over repeats, default 1)
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "fixtures").glob("*.py")
    if "def compile_lint_targets" in p.read_text(encoding="utf-8")
)
BARE = """
import functools, importlib, sys
import torch, torch._dynamo
# decorators in the fixtures compile with the eager backend too, as under --confirm
torch.compile = functools.partial(torch.compile, backend="eager")
for path in sys.argv[1:]:
    folder, _, name = path.rpartition("/")
    sys.path.insert(0, folder)
    produced = importlib.import_module(name.removesuffix(".py")).compile_lint_targets()
    for entry in produced if isinstance(produced, list) else [produced]:
        fn = entry[0]
        fn = getattr(fn, "_torchdynamo_orig_callable", getattr(fn, "_orig_mod", fn))
        args = entry[1] if isinstance(entry[1], (tuple, list)) else (entry[1],)
        torch._dynamo.reset()
        torch.compile(fn)(*args, **(entry[2] if len(entry) == 3 else {}))
"""


def timed(command: list[str], ok: tuple[int, ...]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and everything it waited for, e.g. the worker)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in ok:  # a failed run would time the failure, not the work
        sys.exit(f"{command[1:3]} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(label: str, files: list[str], repeats: int, jobs: int = 1) -> None:
    bare = [sys.executable, "-c", BARE, *files]
    targets = [arg for path in files for arg in ("--target", f"{path}:compile_lint_targets")]
    confirm = [sys.executable, "-m", "compile_lint.cli", "--confirm", "-j", str(jobs), "--format", "json"]
    confirm += [*files, *targets]
    bare_runs, confirm_runs = [], []
    for _ in range(repeats):  # interleaved, so machine load affects both alike
        bare_runs.append(timed(bare, ok=(0,)))
        confirm_runs.append(timed(confirm, ok=(0, 1)))
    print(f"{label}: {len(files)} file(s), --confirm -j {jobs}")
    for kind, index in (("wall", 0), ("CPU", 1)):
        bare_median = statistics.median(run[index] for run in bare_runs)
        confirm_median = statistics.median(run[index] for run in confirm_runs)
        print(
            f"  {kind:>4}: bare script {bare_median:6.2f} s, --confirm {confirm_median:6.2f} s, "
            f"ratio {confirm_median / bare_median:.2f}x"
            + (" (goal <= 1.3x)" if kind == "wall" else " (steadier when the machine is busy)")
        )


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (other processes slow both sides alike)")
    measure("seed example", ["fixtures/seed_step.py"], repeats)
    measure("every fixture", FIXTURES, repeats)
    measure("every fixture", FIXTURES, repeats, jobs=2)  # two workers; the bare script stays one process


if __name__ == "__main__":
    main()
