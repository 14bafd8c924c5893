"""What `compile-lint --confirm` costs over a bare script that compiles and runs the same targets.

Both run as fresh processes on the regular fixtures (`fixtures/*.py` with `compile_lint_targets()`):
the bare script imports torch, then compiles (backend eager) and calls each factory's targets once;
`--confirm` gets the same factories as `--target` (so its automatic targets for those regions are
skipped) and does its whole job: static pass, worker, eager trace, break run, fullgraph run, probe.
Prints both wall times and the ratio (goal: <= 1.3). Usage: python bench/confirm_overhead.py [repeats]
"""

from __future__ import annotations

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
import importlib, sys
import torch, torch._dynamo
for path in sys.argv[1:]:
    folder, _, name = path.rpartition("/")
    sys.path.insert(0, folder)
    produced = importlib.import_module(name.removesuffix(".py")).compile_lint_targets()
    for entry in produced if isinstance(produced, list) else [produced]:
        fn = entry[0]
        fn = getattr(fn, "_torchdynamo_orig_callable", getattr(fn, "_orig_mod", fn))
        args = entry[1] if isinstance(entry[1], (tuple, list)) else (entry[1],)
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(*args, **(entry[2] if len(entry) == 3 else {}))
"""


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bare = [sys.executable, "-c", BARE, *FIXTURES]
    targets = [arg for path in FIXTURES for arg in ("--target", f"{path}:compile_lint_targets")]
    confirm = [sys.executable, "-m", "compile_lint.cli", "--confirm", "--format", "json", *FIXTURES, *targets]
    bare_times, confirm_times = [], []
    for _ in range(repeats):  # interleaved, so machine load affects both alike
        bare_times.append(wall(bare))
        confirm_times.append(wall(confirm))
    bare_median, confirm_median = statistics.median(bare_times), statistics.median(confirm_times)
    print(f"fixtures: {len(FIXTURES)} files ({', '.join(FIXTURES)})")
    print(f"bare script (import torch, compile + run each target): median {bare_median:.2f} s {bare_times}")
    print(f"compile-lint --confirm on the same targets:            median {confirm_median:.2f} s {confirm_times}")
    print(f"ratio --confirm / bare: {confirm_median / bare_median:.2f}x (goal <= 1.3x)")


if __name__ == "__main__":
    main()
