"""What `compile-lint --confirm` costs over a plain script that compiles and runs the same targets.

Both run as fresh processes. The plain script imports torch, then compiles (backend eager, with
`TORCH_LOGS=graph_breaks`) and calls each factory's targets once; `--confirm` lints the same files,
gets the same factories as `--target` (so its automatic targets for those regions are skipped) and
does its whole job with the default probes. Workloads:

- real models from packages, built from their configs with random weights (bench/workloads/: an
  x-transformers decoder, a PyTorch Geometric GCN, a kornia augmentation pipeline, a MONAI UNet, and
  a user's own model around PyG layers whose `.item()` and `print` breaks get confirmed and fix-checked);
- the seed example (one target; torch's import dominates) and every fixture (~60 tiny targets).

The figure is CPU time (user + sys of the process and everything it waited for, e.g. the worker):
steadier than wall time on a shared machine. Goal: `--confirm` <= 1.3x the plain script on each
workload. A last column times `--confirm --deep` (every probe) for comparison.

    python bench/confirm_overhead.py [--repeats N] [--only NAME ...]   (medians over N, default 1)

Run it from the repo root with any Python 3.11: like bench/accuracy.py, it builds bench/corpus/.venv
(torch 2.13.0 and the pinned packages of bench/corpus/requirements.txt) once and re-executes itself there.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import ensure_venv, in_venv, venv_python  # the same corpus venv

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "fixtures").glob("*.py")
    if "def compile_lint_targets" in p.read_text(encoding="utf-8")
)
PLAIN = """
import functools, importlib, sys
import torch, torch._dynamo
# decorators in the fixtures compile with the eager backend too, as under --confirm
torch.compile = functools.partial(torch.compile, backend="eager")
for target in sys.argv[1:]:
    path, _, factory = target.rpartition(":")
    folder, _, name = path.rpartition("/")
    sys.path.insert(0, folder)
    produced = getattr(importlib.import_module(name.removesuffix(".py")), factory)()
    for entry in produced if isinstance(produced, list) else [produced]:
        fn = entry[0]
        fn = getattr(fn, "_torchdynamo_orig_callable", getattr(fn, "_orig_mod", fn))
        args = entry[1] if isinstance(entry[1], (tuple, list)) else (entry[1],)
        torch._dynamo.reset()
        torch.compile(fn)(*args, **(entry[2] if len(entry) == 3 else {}))
"""


@dataclass(frozen=True)
class Workload:
    name: str
    files: list[str]
    factory: str = "make"
    jobs: int = 1

    @property
    def targets(self) -> list[str]:
        return [f"{path}:{self.factory}" for path in self.files]


WORKLOADS = [
    *(Workload(name, [f"bench/workloads/{name}.py"]) for name in ("xt_decoder", "pyg_gcn", "kornia_augment")),
    *(Workload(name, [f"bench/workloads/{name}.py"]) for name in ("monai_unet", "gnn_project")),
    Workload("seed example", ["fixtures/seed_step.py"], "compile_lint_targets"),
    Workload("every fixture", FIXTURES, "compile_lint_targets"),
    Workload("every fixture -j 2", FIXTURES, "compile_lint_targets", jobs=2),  # the plain script stays one process
]


def timed(command: list[str], env: dict[str, str], ok: tuple[int, ...]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and everything it waited for, e.g. the worker)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if done.returncode not in ok:  # a failed run would time the failure, not the work
        sys.exit(f"{' '.join(command[:4])} ... exited with {done.returncode}:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(workload: Workload, repeats: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}  # this checkout's compile-lint, whatever is installed
    plain = [sys.executable, "-c", PLAIN, *workload.targets]
    confirm = [sys.executable, "-m", "compile_lint.cli", "--confirm", "-j", str(workload.jobs), "--format", "json"]
    confirm += [*workload.files, *(arg for target in workload.targets for arg in ("--target", target))]
    commands = {
        "plain": (plain, {**env, "TORCH_LOGS": "graph_breaks"}, (0,)),
        "confirm": (confirm, env, (0, 1)),
        "deep": ([*confirm, "--deep"], env, (0, 1)),
    }
    runs: dict[str, list[tuple[float, float]]] = {kind: [] for kind in commands}
    for _ in range(repeats):  # interleaved, so machine load affects every kind alike
        for kind, (command, command_env, ok) in commands.items():
            runs[kind].append(timed(command, command_env, ok))
    cpu = {kind: statistics.median(run[1] for run in timed_runs) for kind, timed_runs in runs.items()}
    wall = {kind: statistics.median(run[0] for run in timed_runs) for kind, timed_runs in runs.items()}
    print(
        f"| {workload.name} | {cpu['plain']:.1f} | {cpu['confirm']:.1f} | **{cpu['confirm'] / cpu['plain']:.2f}x** "
        f"| {wall['confirm'] / wall['plain']:.2f}x | {cpu['deep']:.1f} | {cpu['deep'] / cpu['plain']:.2f}x |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each command (medians are printed)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these workloads")
    args = parser.parse_args()
    if not in_venv():
        ensure_venv()
        os.execv(venv_python(), [str(venv_python()), __file__, *sys.argv[1:]])
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.1f} (other processes slow every kind alike)\n")
    print("| workload | plain CPU s | --confirm CPU s | CPU ratio | wall ratio | --deep CPU s | --deep ratio |")
    print("|---|---|---|---|---|---|---|")
    for workload in WORKLOADS:
        if not args.only or workload.name in args.only:
            measure(workload, args.repeats)


if __name__ == "__main__":
    main()
