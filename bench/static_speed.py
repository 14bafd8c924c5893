"""Static pass speed on real model code, as ratios measured in one run.

Corpus: every 10th `modeling_*.py` of transformers 5.23.0 (fetched with `pip download --no-deps`).
Prints: cold lint / bare `libcst.parse_module` (target <= 2x), `-j 2` / `-j 1`, and a warm
re-run of the unchanged tree with the content-hash cache / cold (target <= 0.1x).
Each timing is the best of several runs, interleaved so machine noise hits all alike.

    python bench/static_speed.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import libcst

from compile_lint.config import Config
from compile_lint.engine import lint

DATA = Path(__file__).resolve().parent / ".data"
WHEEL_VERSION = "5.23.0"


def corpus() -> list[Path]:
    folder = DATA / f"transformers-{WHEEL_VERSION}-every-10th"
    if not folder.exists():
        DATA.mkdir(exist_ok=True)
        download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(DATA)]
        subprocess.run([*download, f"transformers=={WHEEL_VERSION}"], check=True)
        wheel = next(DATA.glob(f"transformers-{WHEEL_VERSION}-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            names = sorted(
                n for n in archive.namelist()
                if "/models/" in n and Path(n).name.startswith("modeling_") and n.endswith(".py")
            )  # fmt: skip
            for name in names[::10]:
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    return sorted(folder.rglob("*.py"))


def best_of(repeat: int, runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = corpus()
    paths = [str(p) for p in files]
    lines = sum(p.read_text().count("\n") for p in files)
    print(f"corpus: {len(files)} files, {lines} lines (transformers {WHEEL_VERSION}, every 10th modeling file)")

    def parse_only() -> None:
        for path in files:
            libcst.parse_module(path.read_bytes())

    with tempfile.TemporaryDirectory() as cache_root:
        config = Config(root=Path(cache_root))
        lint(paths, config, use_cache=True)  # fill the cache once
        times = best_of(
            args.repeat,
            {
                "parse": parse_only,
                "cold": lambda: lint(paths, config, use_cache=False),
                "cold -j 2": lambda: lint(paths, config, jobs=2, use_cache=False),
                "warm": lambda: lint(paths, config, use_cache=True),
            },
        )
    findings = len(lint(paths, Config(), use_cache=False).findings)
    for name, seconds in times.items():
        print(f"{name:>10}: {seconds:7.3f} s")
    print(f"findings: {findings}")
    print(f"cold lint / bare parse: {times['cold'] / times['parse']:.2f}x (target <= 2x)")
    print(f"-j 2 / -j 1:            {times['cold -j 2'] / times['cold']:.2f}x")
    print(f"warm cache / cold:      {times['warm'] / times['cold']:.3f}x (target <= 0.1x)")


if __name__ == "__main__":
    main()
