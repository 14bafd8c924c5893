"""No internal error on any installed package tree: `compile-lint --no-cache` over every top-level package folder
of the given site-packages folders (and the corpus sources), in the default mode and with `--mode inference`.

A run passes when it exits 0 (no finding) or 1 (findings) and writes nothing to stderr; anything else (a crash,
a traceback, exit 2, a message) is listed with its package, mode and the last line it wrote. Prints the count of
runs per outcome, so the figure in a closing note is one command away:

    python bench/package_trees.py .venv/lib/python3.11/site-packages bench/corpus/.sources [-j 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MODES: tuple[tuple[str, list[str]], ...] = (("default", []), ("inference", ["--mode", "inference"]))


def package_trees(folder: Path) -> list[Path]:
    """Top-level folders that are Python packages (an `__init__.py`, or `.py` files of a namespace package)."""
    return sorted(
        child
        for child in folder.iterdir()
        if child.is_dir()
        and child.name.isidentifier()
        and ((child / "__init__.py").exists() or any(child.glob("*.py")))
    )


def lint(tree: Path, mode: str, flags: list[str]) -> tuple[Path, str, int, str]:
    command = [sys.executable, "-m", "compile_lint", "--no-cache", "--format", "concise", *flags, str(tree)]
    done = subprocess.run(command, capture_output=True, text=True)
    return tree, mode, done.returncode, done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="site-packages folders (or any folder of packages)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="runs at a time (default 2)")
    args = parser.parse_args()
    trees = [tree for folder in args.folders for tree in package_trees(folder)]
    jobs = [(tree, mode, flags) for tree in trees for mode, flags in MODES]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda job: lint(*job), jobs))
    failed = [(tree, mode, code, err) for tree, mode, code, err in results if code not in (0, 1) or err]
    counts = {code: sum(1 for _, _, c, _ in results if c == code) for code in sorted({r[2] for r in results})}
    print(f"{len(trees)} package trees x {len(MODES)} modes = {len(results)} runs; exit codes: "
          + ", ".join(f"{code}: {count}" for code, count in counts.items()))  # fmt: skip
    for tree, mode, code, err in failed:
        last = err.splitlines()[-1] if err else "(no stderr)"
        print(f"  {tree} [{mode}]: exit {code}: {last}")
    print(f"internal errors or messages on stderr: {len(failed)}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
