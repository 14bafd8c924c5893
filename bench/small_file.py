"""CPU time of linting one small file: `compile-lint` cold (`--no-cache`) and warm (its cache entry written by
the run before), flake8 with the compile-lint plugin cold (the project's cache folder removed before each run) and
warm, against `python -c pass` and `python -c "import libcst"` (the floor of any run that parses): user + system
time of the child processes (`resource.getrusage(RUSAGE_CHILDREN)`), so the machine's load does not count.
Target: at most 0.2 s.

The file sits in a project with a pyproject.toml, as in a pre-commit hook. Each command runs once before it is
timed, with bytecode writing allowed (PYTHONDONTWRITEBYTECODE dropped), so the figures are those of an installed
package with its .pyc files, not of compiling compile-lint's sources on every run.

    python bench/small_file.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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
TARGET = 0.2  # seconds of CPU (issue #20)


def child_cpu(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """User + system seconds the command's process used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    python = sys.executable
    lint, flake8 = [python, "-m", "compile_lint"], [python, "-m", "flake8"]
    # name: command, judged against the target, run in the cold project (its cache removed before each run)
    commands = {
        "python -c pass": ([python, "-c", "pass"], False, False),
        'python -c "import libcst"': ([python, "-c", "import libcst"], False, False),
        "compile-lint, cold (--no-cache)": ([*lint, "--no-cache", "small.py"], True, False),
        "compile-lint, warm (cache)": ([*lint, "small.py"], True, False),
        "flake8 with the plugin, cold": ([*flake8, "small.py"], True, True),
        "flake8 with the plugin, warm": ([*flake8, "small.py"], True, False),
    }
    with tempfile.TemporaryDirectory() as folder:
        warm, cold = Path(folder) / "warm", Path(folder) / "cold"
        for project in (warm, cold):
            project.mkdir()
            (project / "small.py").write_text(SMALL)
            (project / "pyproject.toml").write_text('[project]\nname = "small"\nversion = "0"\n')

        def timed(name: str) -> float:
            command, _, in_cold = commands[name]
            shutil.rmtree(cold / ".compile_lint_cache", ignore_errors=True)
            return child_cpu(command, cold if in_cold else warm, env)

        for name in commands:  # writes the .pyc files and the cache entries the warm runs read
            timed(name)
        runs: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):  # interleaved, so a burst of load spreads over every command
            for name in commands:
                runs[name].append(timed(name))
    for name, seconds in runs.items():
        median = statistics.median(seconds)
        verdict = f"  target <= {TARGET} s: {'met' if median <= TARGET else 'NOT met'}" if commands[name][1] else ""
        print(f"{name:34} median CPU {median:.3f} s (min {min(seconds):.3f}){verdict}")


if __name__ == "__main__":
    main()
