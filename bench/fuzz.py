"""Fuzz the static pass: programs from hypothesmith's Python grammar and mutated real model files (torch's
own nn modules: lines deleted, duplicated, swapped; brackets, random bytes, CR / CRLF line ends, a BOM,
tabs, form feeds and backslashes inserted). Every program must give findings or one TCL000 diagnostic,
never a traceback. Prints: programs tried, tracebacks, diagnostics by kind, time.

    python bench/fuzz.py [--programs 5000] [--grammar 300] [--seed 0]

tests/test_fuzz.py runs the same checks on a small budget.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import random
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from compile_lint.analysis.source import decode
from compile_lint.config import Options
from compile_lint.engine import analyze
from compile_lint.guard import Limits

SEED_MODULES = ("linear", "conv", "activation", "container", "normalization", "rnn", "transformer", "pooling")
LIMITS = Limits(seconds=20, megabytes=1024)


def seed_sources() -> list[bytes]:
    """Real model code from the installed torch, found without importing it."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("fuzz: torch is not installed; its nn modules are the seed files")
    modules = Path(next(iter(spec.submodule_search_locations))) / "nn" / "modules"
    return [(modules / f"{name}.py").read_bytes() for name in SEED_MODULES]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"".join(lines)


def _duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines.insert(at, lines[at])
    return b"".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _insert(what: Callable[[random.Random], bytes]) -> Callable[[bytes, random.Random], bytes]:
    def insert(data: bytes, rng: random.Random) -> bytes:
        at = rng.randrange(len(data) + 1)
        return data[:at] + what(rng) + data[at:]

    return insert


def _at_line_start(what: bytes) -> Callable[[bytes, random.Random], bytes]:
    def insert(data: bytes, rng: random.Random) -> bytes:
        lines = _lines(data)
        at = rng.randrange(len(lines))
        lines[at] = what + lines[at]
        return b"".join(lines)

    return insert


def _tabs(data: bytes, rng: random.Random) -> bytes:
    return b"".join(line.replace(b"    ", b"\t", 1) if rng.random() < 0.3 else line for line in _lines(data))


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "delete line": _delete_line,
    "duplicate line": _duplicate_line,
    "swap lines": _swap_lines,
    "bracket": _insert(lambda rng: rng.choice([b"(", b")", b"[", b"]", b"{", b"}"]) * rng.choice([1, 1, 3, 300])),
    "random bytes": _insert(lambda rng: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))),
    "CR": lambda data, rng: data.replace(b"\n", b"\r"),
    "CRLF": lambda data, rng: data.replace(b"\n", b"\r\n"),
    "BOM": lambda data, rng: b"\xef\xbb\xbf" + data,
    "tabs": _tabs,
    "form feed": _at_line_start(b"\x0c"),
    "backslash": _insert(lambda rng: rng.choice([b"\\\n", b"\\", b" \\\n    "])),
    "truncate": lambda data, rng: data[: rng.randrange(len(data) + 1)],
}


def mutated(seeds: list[bytes], rng: random.Random) -> Iterator[tuple[str, bytes]]:
    while True:
        data = rng.choice(seeds)
        names = rng.sample(sorted(MUTATIONS), rng.choice([1, 1, 2, 3]))
        for name in names:
            data = MUTATIONS[name](data, rng)
        yield "+".join(names), data


@dataclass
class Tally:
    programs: int = 0
    tracebacks: list[str] = field(default_factory=list)
    diagnostics: Counter[str] = field(default_factory=Counter)
    refused_valid: list[bytes] = field(default_factory=list)  # Python accepts, compile-lint did not lint


def check(data: bytes, tally: Tally) -> None:
    """One program: findings, or exactly one TCL000 and nothing else; never an exception."""
    tally.programs += 1
    try:
        findings = analyze([("fuzzed.py", data)], Options(), LIMITS)
    except Exception:  # the failure this fuzzer looks for
        tally.tracebacks.append(traceback.format_exc())
        return
    diagnostics = [f for f in findings if f.code == "TCL000"]
    if diagnostics and len(findings) != 1:
        tally.tracebacks.append(f"TCL000 together with other findings: {findings}")
    for diagnostic in diagnostics:
        kind = diagnostic.message.split(": ", 2)[1] if ": " in diagnostic.message else diagnostic.message
        tally.diagnostics[kind.split(" (")[0][:60]] += 1
        if _python_accepts(data) and "libcst" not in diagnostic.message and "max-file" not in diagnostic.message:
            tally.refused_valid.append(data)


def _python_accepts(data: bytes) -> bool:
    try:
        ast.parse(decode(data))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError):
        return False
    return True


def grammar_programs(count: int, seed: int) -> list[str]:
    """`count` programs from hypothesmith's grammar strategy (they may or may not compile)."""
    import hypothesmith
    from hypothesis import HealthCheck, given, settings

    programs: list[str] = []

    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar())
    def collect(source: str) -> None:
        programs.append(source)

    random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    return programs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=5000, help="mutated real files")
    parser.add_argument("--grammar", type=int, default=300, help="hypothesmith programs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    tally = Tally()
    rng = random.Random(args.seed)
    kinds: Counter[str] = Counter()
    for name, data in islice(mutated(seed_sources(), rng), args.programs):
        kinds.update(name.split("+"))
        check(data, tally)
        if tally.programs % 250 == 0:
            print(f"... {tally.programs} programs, {len(tally.tracebacks)} tracebacks", flush=True)
    for source in grammar_programs(args.grammar, args.seed):
        check(source.encode(), tally)
    print(f"programs tried: {tally.programs} ({args.programs} mutated torch.nn files, {args.grammar} hypothesmith)")
    print(f"mutations: {dict(sorted(kinds.items()))}")
    print(f"tracebacks: {len(tally.tracebacks)}")
    for problem in tally.tracebacks[:3]:
        print(problem)
    print(f"TCL000 diagnostics: {sum(tally.diagnostics.values())}")
    for kind, count in tally.diagnostics.most_common():
        print(f"  {count:6}  {kind}")
    print(f"valid Python refused without naming libcst or a bound: {len(tally.refused_valid)}")
    print(f"time: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
