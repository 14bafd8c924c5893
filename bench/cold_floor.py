"""What any run that parses and indexes every file costs before its analysis, as ratios to the parse floor (a bare
`libcst.parse_module` loop), measured in one process on a sample of `transformers/models`: the index built from
each tree (what the cache stores), and one walk over every node of every tree (the least a rule pass costs).
The cold whole-folder target of `bench/incremental_speed.py` (1.3x the parse floor) is set against these.

    python bench/cold_floor.py --tree /work/tf-tree [--every 5]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path

import libcst

from compile_lint.analysis.nodes import iter_nodes
from compile_lint.engine import DEFAULT_LIMITS, parse_bytes


def cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/work/tf-tree"), help="an unzipped transformers wheel")
    parser.add_argument("--every", type=int, default=5, help="every Nth file of models/ (sorted by path)")
    args = parser.parse_args()
    files = sorted((args.tree / "transformers" / "models").rglob("*.py"))[:: args.every]
    sources = [(str(path), path.read_bytes()) for path in files]
    gc.disable()  # as in a lint run, which pauses the cycle collector while the trees are alive
    trees: list[libcst.Module] = []
    floor = cpu(lambda: trees.extend(libcst.parse_module(data) for _, data in sources))
    indexed = cpu(lambda: [parse_bytes(path, data, DEFAULT_LIMITS) for path, data in sources])
    floor_again = cpu(lambda: [libcst.parse_module(data) for _, data in sources])
    walked = cpu(lambda: [sum(1 for _ in iter_nodes(tree)) for tree in trees])
    floor = (floor + floor_again) / 2
    print(f"{len(files)} files of models/, parse floor {floor:.2f} s CPU (mean of two loops, before and after)")
    print(f"  parse and index:             {indexed / floor:.2f}x")
    print(f"  one walk over every node:    {walked / floor:.2f}x (on top of the parse)")
    print(f"  together, before any rule:   {(indexed + walked) / floor:.2f}x")


if __name__ == "__main__":
    main()
