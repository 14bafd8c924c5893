"""Where a lint's CPU goes, as shares of one in-process run: parsing the linted files, loading their context from
the index cache, walking the reached functions with the rules, and the summaries of the functions they call (by
the package or folder that defines them). Run it on the 10 files of `bench/incremental_speed.py` to see what the
10-file target is made of, or with `--per-file` to analyse each file alone, as the flake8 plugin does.

The run reads and writes the index cache under `--cache` (run it twice: the first run fills it); findings cache
entries are removed first, so the analysis is what is measured.

    python bench/analysis_phases.py --tree /work/tf-tree [--per-file] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from compile_lint import engine
from compile_lint.analysis import flow
from compile_lint.cli import main as lint
from compile_lint.flake8_plugin import CompileLintPlugin
from incremental_speed import TEN

EXCLUSIVE: Counter[str] = Counter()  # CPU seconds by phase, without the phases nested inside
_stack: list[float] = []


def timed(label: Callable[..., str], function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, its CPU time (less that of timed calls inside it) added to the phase `label(*args)` names."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        _stack.append(0.0)
        try:
            return function(*args, **kwargs)
        finally:
            spent, inner = time.process_time() - start, _stack.pop()
            EXCLUSIVE[label(*args)] += spent - inner
            if _stack:
                _stack[-1] += spent

    return wrapper


def where(path: str) -> str:
    """The folder a function's file is in, after `site-packages/` or the tree's `transformers/`."""
    for marker in ("site-packages/", "transformers/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return os.path.dirname(path) or path


def flow_phase(run: flow.Flow, *_: object) -> str:
    if run.function is None:
        return f"module-level code: {where(run.index.path)}"
    kind = "walks with the rules" if run.visitor is not None else "summaries"
    return f"{kind}: {where(run.function.path)}"


@contextmanager
def instrumented() -> Iterator[None]:
    patches = [
        (flow.Flow, "run", timed(flow_phase, flow.Flow.run)),
        (flow.Flow, "run_module", timed(flow_phase, flow.Flow.run_module)),
        (engine, "parse_all", timed(lambda *_: "parsing the linted files", engine.parse_all)),
        (engine.IndexStore, "load", timed(lambda *_: "loading context from the index cache", engine.IndexStore.load)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, patched in patches:
        setattr(owner, name, patched)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=Path("/work/tf-tree"), help="an unzipped transformers wheel")
    parser.add_argument("--per-file", action="store_true", help="each file alone, through the flake8 plugin")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/analysis-phases"), help="where the caches go")
    args = parser.parse_args()
    files = [str((args.tree / "transformers" / "models" / name).resolve()) for name in TEN]
    args.cache.mkdir(parents=True, exist_ok=True)
    os.chdir(args.cache)
    for findings in args.cache.glob(".compile_lint_cache/*/*.json"):
        findings.unlink()
    start = time.process_time()
    with instrumented():
        if args.per_file:
            for path in files:
                list(CompileLintPlugin(None, Path(path).read_text().splitlines(keepends=True), path).run())
        else:
            with suppress(SystemExit):  # the exit status of a lint with findings
                lint(["--format", "concise", "--output-file", os.devnull, *files])
    total = time.process_time() - start
    print(f"{'each file alone' if args.per_file else 'one project'}: {total:.2f} s CPU in this process")
    kinds: Counter[str] = Counter()
    for phase, seconds in EXCLUSIVE.items():
        kinds[phase.split(":")[0]] += seconds
    kinds["the rest (program set-up, regions, positions, output)"] = total - sum(EXCLUSIVE.values())
    for kind, seconds in kinds.most_common():
        print(f"  {seconds / total:6.1%}  {kind}")
    print("largest places:")
    for phase, seconds in EXCLUSIVE.most_common(12):
        print(f"  {seconds / total:6.1%}  {phase}")


if __name__ == "__main__":
    sys.exit(main())
