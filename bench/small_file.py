"""CPU time of linting one small file: `compile-lint` cold (`--no-cache`) and warm (its cache entry written by
the run before), and flake8 with the compile-lint plugin, against `python -c pass` and `python -c "import libcst"`
(the floor of any run that parses): user + system time of the child processes
(`resource.getrusage(RUSAGE_CHILDREN)`), so the machine's load does not count. Target: at most 0.2 s.

The file sits in a project with a pyproject.toml, as in a pre-commit hook. Each command runs once before it is
timed, with bytecode writing allowed (PYTHONDONTWRITEBYTECODE dropped), so the figures are those of an installed
package with its .pyc files, not of compiling compile-lint's sources on every run.

    python bench/small_file.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
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
    lint = [python, "-m", "compile_lint"]
    commands = {
        "python -c pass": ([python, "-c", "pass"], False),
        'python -c "import libcst"': ([python, "-c", "import libcst"], False),
        "compile-lint, cold (--no-cache)": ([*lint, "--no-cache", "small.py"], True),
        "compile-lint, warm (cache)": ([*lint, "small.py"], True),
        "flake8 with the plugin": ([python, "-m", "flake8", "small.py"], True),
    }
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "small.py").write_text(SMALL)
        (cwd / "pyproject.toml").write_text('[project]\nname = "small"\nversion = "0"\n')
        for command, _ in commands.values():  # writes the .pyc files and the cache entry the warm runs read
            child_cpu(command, cwd, env)
        runs: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):  # interleaved, so a burst of load spreads over every command
            for name, (command, _) in commands.items():
                runs[name].append(child_cpu(command, cwd, env))
    for name, seconds in runs.items():
        median = statistics.median(seconds)
        verdict = f"  target <= {TARGET} s: {'met' if median <= TARGET else 'NOT met'}" if commands[name][1] else ""
        print(f"{name:32} median CPU {median:.3f} s (min {min(seconds):.3f}){verdict}")


if __name__ == "__main__":
    main()
