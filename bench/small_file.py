"""CPU time of `compile-lint` on one small file, cold (`--no-cache`) and warm (its cache entry written
by the run before), against `python -c pass`: user + system time of the child processes
(`resource.getrusage(RUSAGE_CHILDREN)`), so the machine's load does not count. Target: at most 0.2 s.

    python bench/small_file.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SMALL = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.item()
        return x
"""


def child_cpu(command: list[str], cwd: Path) -> float:
    """User + system seconds the command's process used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    lint = [sys.executable, "-m", "compile_lint"]
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "small.py").write_text(SMALL)
        runs: dict[str, list[float]] = {"python -c pass": [], "cold (--no-cache)": [], "warm (cache)": []}
        child_cpu([*lint, "small.py"], cwd)  # writes the cache entry the warm runs read
        for _ in range(repeat):
            runs["python -c pass"].append(child_cpu([sys.executable, "-c", "pass"], cwd))
            runs["cold (--no-cache)"].append(child_cpu([*lint, "--no-cache", "small.py"], cwd))
            runs["warm (cache)"].append(child_cpu([*lint, "small.py"], cwd))
    for name, seconds in runs.items():
        median = statistics.median(seconds)
        verdict = "" if name.startswith("python") else f"  target <= 0.2 s: {'met' if median <= 0.2 else 'NOT met'}"
        print(f"{name:20} median CPU {median:.3f} s{verdict}")


if __name__ == "__main__":
    main()
