"""Static-pass accuracy against real Dynamo on real models from real packages (bench/corpus).

Truth (cached in bench/corpus/truth-torch<version>.json, collected one model per child process):
the (file, line) of package source that ran eagerly, and every graph break of a `torch.compile(backend="eager")`
run, attributed to the innermost frame inside the corpus packages. Prediction: `compile-lint --format json` over
the whole package folders. Scores: recall of break sites, precision on lines that ran, GB-code agreement.

    python bench/accuracy.py [--refresh-truth] [--details] [--json PATH]

The first run builds the corpus venv (bench/corpus/.venv, from bench/corpus/requirements.txt plus compile-lint
installed editable) and re-executes itself inside it.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "corpus"
VENV = CORPUS / ".venv"
REQUIREMENTS = CORPUS / "requirements.txt"
VENV_STAMP = VENV / "requirements.sha256"
MODEL_TIMEOUT = 600  # seconds per model (eager + compiled run, including imports)
RECOMPILE_LIMIT = 64  # default 8: loops over layers/solver steps must keep compiling so later breaks are seen
FRAME_SKIP_SLACK = 2  # Dynamo may blame a frame skip up to this many lines after its cause

Site = tuple[str, int]  # (file relative to site-packages, line)


# --- environment ---------------------------------------------------------------------------------------------


def venv_python() -> Path:
    return VENV / "bin" / "python"


def requirements_hash() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def ensure_venv() -> None:
    """Create the corpus venv once (again when requirements.txt changes)."""
    if VENV_STAMP.exists() and VENV_STAMP.read_text() == requirements_hash():
        return
    print(f"building the corpus venv in {VENV.relative_to(ROOT)} (a few minutes, once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    pip = [str(venv_python()), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    VENV_STAMP.write_text(requirements_hash())


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


# --- corpus sources --------------------------------------------------------------------------------------------


@cache
def corpus_models() -> Any:
    sys.path.insert(0, str(CORPUS))
    import models

    return models


@cache
def site_packages() -> Path:
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"]).resolve()


@cache
def source_roots() -> dict[str, Path]:
    """import package -> its folder (or single module file) in site-packages."""
    roots = {}
    for package in corpus_models().PACKAGES:
        folder = site_packages() / package
        roots[package] = folder if folder.is_dir() else folder.with_suffix(".py")
    return roots


def versions() -> dict[str, str]:
    packages = {dist: importlib.metadata.version(dist) for dist in corpus_models().PACKAGES.values()}
    return {"python": platform.python_version(), "torch": importlib.metadata.version("torch"), **packages}


def relative(path: str) -> str | None:
    """`path` relative to site-packages if it is corpus source, else None."""
    resolved = Path(path).resolve()
    for root in source_roots().values():
        if resolved == root or root in resolved.parents:
            return resolved.relative_to(site_packages()).as_posix()
    return None


def package_of(file: str) -> str:
    return file.split("/", 1)[0].removesuffix(".py")


# --- truth: one model in a child process -----------------------------------------------------------------------


def corpus_filter() -> Callable[[str], bool]:
    prefixes = tuple(str(root) + (os.sep if root.is_dir() else "") for root in source_roots().values())
    seen: dict[str, bool] = {}

    def wanted(filename: str) -> bool:
        if filename not in seen:
            seen[filename] = os.path.realpath(filename).startswith(prefixes)
        return seen[filename]

    return wanted


def traced_lines(run: Callable[[], object], wanted: Callable[[str], bool]) -> dict[str, set[int]]:
    """Lines of corpus source executed by `run()` (line tracing only inside wanted files)."""
    ran: dict[str, set[int]] = defaultdict(set)

    def line_tracer(frame: Any, event: str, arg: object) -> Any:
        if event == "line":
            ran[frame.f_code.co_filename].add(frame.f_lineno)
        return line_tracer

    def call_tracer(frame: Any, event: str, arg: object) -> Any:
        return line_tracer if wanted(frame.f_code.co_filename) else None

    sys.settrace(call_tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return ran


def compact(lines: Iterable[int]) -> str:
    """Sorted line numbers as ranges: '3-5,9'."""
    spans: list[list[int]] = []
    for line in sorted(lines):
        if spans and line == spans[-1][1] + 1:
            spans[-1][1] = line
        else:
            spans.append([line, line])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def expand(ranges: str) -> set[int]:
    lines: set[int] = set()
    for span in filter(None, ranges.split(",")):
        first, _, last = span.partition("-")
        lines.update(range(int(first), int(last or first) + 1))
    return lines


def collect_one(name: str, out: Path) -> None:
    """Child process: eager traced run, then a compiled run under the graph-break log; writes JSON to `out`."""
    import logging

    import torch
    import torch._dynamo

    from compile_lint.confirm.run.capture import BREAK_LOGGERS, capture_dynamo_log, parse_break
    from compile_lint.confirm.run.targets import Target, compiled, targets_from_factory

    model = corpus_models().MODELS[name]
    wanted = corpus_filter()
    result: dict[str, Any] = {"package": model.package, "status": "ok", "error": "", "ran": {}, "breaks": []}

    def run_all(targets: list[Target], call: Callable[[Target], Callable[..., Any]]) -> None:
        for target in targets:
            torch.manual_seed(0)
            with torch.no_grad():
                call(target)(*target.args, **target.kwargs)

    def save() -> None:
        out.write_text(json.dumps(result))

    try:
        targets = targets_from_factory(model.factory)  # built untraced: only the calls count as "ran"
        ran = traced_lines(lambda: run_all(targets, lambda target: target.fn), wanted)
    except Exception:
        result.update(status="eager-error", error=traceback.format_exc(limit=-3))
        save()
        return
    files = {file: relative(file) for file in ran}
    result["ran"] = {name: compact(ran[file]) for file, name in files.items() if name is not None}

    class Unparsed(logging.Handler):
        """Graph-break log records that capture.py cannot parse (e.g. a frame skip raised in convert_frame)."""

        def __init__(self) -> None:
            super().__init__(logging.DEBUG)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if parse_break(message) is None:
                self.messages.append(message.splitlines()[0] if message else "")

    torch._dynamo.reset()
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    unparsed = Unparsed()
    with capture_dynamo_log() as log:
        for logger in BREAK_LOGGERS:
            logging.getLogger(logger).addHandler(unparsed)
        try:  # a fresh model: state set by the eager call (caches, lazy init) must not hide breaks
            run_all(targets_from_factory(model.factory), lambda target: compiled(target, "eager"))
        except Exception:
            result.update(status="compile-error", error=traceback.format_exc(limit=-3))
    for brk in log.breaks:
        frame = brk.innermost(wanted)
        record = {"gb_code": brk.gb_code, "gb_type": brk.gb_type, "frame_skip": brk.frame_skip}
        if frame is not None:
            location = {"file": relative(frame.file), "line": frame.line, "function": frame.function}
            result["breaks"].append({**location, **record})
        elif brk.frames:  # a full stack with no corpus frame (duplicates are logged without a stack: skip those)
            result.setdefault("unattributed", []).append({"file": brk.file, "line": brk.line, **record})
    result["unparsed_log_records"] = unparsed.messages
    result["recompile_limit_hits"] = len(log.limit_hits)
    save()


def collect(name: str) -> dict[str, Any]:
    """Run collect_one(name) in a child process; a timeout or crash is a result too."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "truth.json"
        command = [sys.executable, __file__, "--collect-one", name, str(out)]
        try:
            child = subprocess.run(
                command, capture_output=True, text=True, timeout=MODEL_TIMEOUT, stdin=subprocess.DEVNULL
            )
            if out.exists():
                result: dict[str, Any] = json.loads(out.read_text())
            else:
                tail = (child.stderr or child.stdout).strip().splitlines()[-5:]
                result = {"status": "crash", "error": f"exit {child.returncode}: " + "\n".join(tail)}
        except subprocess.TimeoutExpired:
            result = {"status": "timeout", "error": f"over {MODEL_TIMEOUT} s"}
    result.setdefault("package", corpus_models().MODELS[name].package)
    result["seconds"] = round(time.perf_counter() - started, 1)
    return result


def truth_path() -> Path:
    return CORPUS / f"truth-torch{importlib.metadata.version('torch').split('+')[0]}.json"


def load_truth(refresh: bool) -> dict[str, Any]:
    """The cached truth, collecting models that are missing (all of them with `refresh`)."""
    path = truth_path()
    current = versions()
    truth: dict[str, Any] = {"versions": current, "models": {}}
    if path.exists() and not refresh:
        truth = json.loads(path.read_text())
        if truth["versions"] != current:
            sys.exit(
                f"{path.name} was collected with other versions than the corpus venv has: run with --refresh-truth"
            )
    names = list(corpus_models().MODELS)
    truth["models"] = {name: truth["models"][name] for name in names if name in truth["models"]}
    missing = [name for name in names if name not in truth["models"]]
    for index, name in enumerate(missing, 1):
        print(f"truth [{index}/{len(missing)}] {name} ...", end=" ", flush=True)
        truth["models"][name] = collect(name)
        entry = truth["models"][name]
        print(f"{entry['status']}, {len(entry.get('breaks', []))} breaks, {entry['seconds']} s", flush=True)
        path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    truth["models"] = {name: truth["models"][name] for name in names}
    return truth


# --- prediction ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    file: str
    line: int
    code: str
    gb_codes: tuple[str, ...]


def lint(root: Path) -> list[dict[str, Any]]:
    """The package together with the corpus factories: the user code whose compiled functions enter it."""
    command = [sys.executable, "-m", "compile_lint", "--format", "json", "--no-cache", "--exit-zero", str(root)]
    command.append(str(CORPUS / "models.py"))
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"compile-lint failed on {root.name} (exit {done.returncode}):\n{done.stderr.strip()}")
    findings: list[dict[str, Any]] = json.loads(done.stdout)["findings"]
    return findings


def predict() -> list[Prediction]:
    """Each package linted on its own with the corpus factories, as its user would lint their code with it;
    one process per core, the largest first."""
    roots = sorted(source_roots().values(), key=lambda root: -sum(1 for _ in root.rglob("*.py")))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        findings = [finding for found in pool.map(lint, roots) for finding in found]
    predictions = []
    for finding in findings:
        file = relative(finding["path"])
        if file is not None:
            predictions.append(Prediction(file, finding["line"], finding["code"], tuple(finding["gb_codes"])))
    return predictions


# --- scoring ---------------------------------------------------------------------------------------------------


@dataclass
class BreakSite:
    gb_codes: set[str] = field(default_factory=set)
    gb_types: set[str] = field(default_factory=set)
    frame_skip: bool = False
    models: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)


def break_sites(truth: dict[str, Any]) -> dict[Site, BreakSite]:
    sites: dict[Site, BreakSite] = defaultdict(BreakSite)
    for name, entry in truth["models"].items():
        for brk in entry.get("breaks", []):
            site = sites[(brk["file"], brk["line"])]
            site.gb_codes.add(brk["gb_code"] or "?")
            site.gb_types.add(brk["gb_type"])
            site.frame_skip |= brk["frame_skip"]
            site.models.add(name)
            if brk.get("function"):  # a duplicate break is logged without its stack
                site.functions.add(brk["function"])
    return dict(sites)


def ran_lines(truth: dict[str, Any]) -> dict[str, set[int]]:
    """Lines Dynamo traced: those that ran eagerly in models whose compiled run completed (elsewhere Dynamo may
    never have seen them), less the functions Dynamo gave up on (a frame skip runs the whole function eagerly)."""
    ran: dict[str, set[int]] = defaultdict(set)
    for entry in truth["models"].values():
        if entry["status"] != "ok":
            continue
        skipped: dict[str, set[int]] = defaultdict(set)
        for brk in entry.get("breaks", []):
            if brk["frame_skip"]:
                skipped[brk["file"]] |= function_lines(brk["file"], brk["line"])
        for file, ranges in entry.get("ran", {}).items():
            ran[file] |= expand(ranges) - skipped[file]
    return ran


@cache
def _functions(file: str) -> list[tuple[int, int]]:
    tree = ast.parse((site_packages() / file).read_text(encoding="utf-8", errors="replace"))
    nodes = (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return [(n.lineno, n.end_lineno or n.lineno) for n in nodes]


def function_lines(file: str, line: int) -> set[int]:
    """The lines of the innermost function around `line`."""
    spans = [(start, end) for start, end in _functions(file) if start <= line <= end]
    if not spans:
        return set()
    start, end = max(spans)
    return set(range(start, end + 1))


def explains(prediction: Prediction, site: Site, info: BreakSite) -> bool:
    """Same line; for a frame skip also up to FRAME_SKIP_SLACK lines before where Dynamo blamed it."""
    if prediction.file != site[0]:
        return False
    slack = FRAME_SKIP_SLACK if info.frame_skip else 0
    return site[1] - slack <= prediction.line <= site[1]


def ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


@dataclass
class Score:
    models: int = 0
    failed: int = 0
    sites: int = 0
    found: int = 0
    gb_agree: int = 0
    on_ran: int = 0
    on_ran_broke: int = 0
    never_ran: int = 0

    def figures(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "recall": ratio(self.found, self.sites),
            "precision_on_ran": ratio(self.on_ran_broke, self.on_ran),
            "gb_agreement": ratio(self.gb_agree, self.found),
        }


@dataclass
class Evaluation:
    scores: dict[str, Score]
    missed: list[tuple[Site, BreakSite]]
    false_positives: list[Prediction]
    failures: dict[str, dict[str, Any]]


def evaluate(truth: dict[str, Any], predictions: list[Prediction]) -> Evaluation:
    sites = break_sites(truth)
    ran = ran_lines(truth)
    by_file: dict[str, list[Prediction]] = defaultdict(list)
    for prediction in predictions:
        by_file[prediction.file].append(prediction)
    scores: dict[str, Score] = defaultdict(Score)
    for entry in truth["models"].values():
        scores[entry["package"]].models += 1
        scores[entry["package"]].failed += entry["status"] != "ok"
    missed = []
    for site, info in sorted(sites.items()):
        score = scores[package_of(site[0])]
        score.sites += 1
        hits = [p for p in by_file[site[0]] if explains(p, site, info)]
        score.found += bool(hits)
        score.gb_agree += any(info.gb_codes & set(p.gb_codes) for p in hits)
        if not hits:
            missed.append((site, info))
    false_positives = []
    for prediction in predictions:
        if not prediction.gb_codes:
            continue  # predicts no break (a recompile, a numpy result that differs): not a break prediction
        score = scores[package_of(prediction.file)]
        if prediction.line not in ran.get(prediction.file, ()):
            score.never_ran += 1
            continue
        score.on_ran += 1
        broke = any(explains(prediction, site, info) for site, info in sites.items() if site[0] == prediction.file)
        score.on_ran_broke += broke
        if not broke:
            false_positives.append(prediction)
    failures = {name: entry for name, entry in truth["models"].items() if entry["status"] != "ok"}
    return Evaluation(dict(scores), missed, sorted(false_positives, key=lambda p: (p.file, p.line)), failures)


def overall(scores: dict[str, Score]) -> Score:
    total = Score()
    for score in scores.values():
        for key, value in score.__dict__.items():
            setattr(total, key, getattr(total, key) + value)
    return total


# --- report ----------------------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_table(scores: dict[str, Score]) -> None:
    header = f"{'package':<30}{'models':>7}{'failed':>7}{'sites':>6}{'found':>6}{'recall':>7}{'GB ok':>6}"
    header += f"{'on ran':>7}{'broke':>6}{'prec.':>6}{'never ran':>10}"
    print(header)
    rows = [*sorted(scores.items()), ("ALL", overall(scores))]
    for package, score in rows:
        f = score.figures()
        print(
            f"{package:<30}{score.models:>7}{score.failed:>7}{score.sites:>6}{score.found:>6}{percent(f['recall']):>7}"
            f"{score.gb_agree:>6}{score.on_ran:>7}{score.on_ran_broke:>6}{percent(f['precision_on_ran']):>6}"
            f"{score.never_ran:>10}"
        )


def source_line(file: str, line: int) -> str:
    lines = (site_packages() / file).read_text(encoding="utf-8", errors="replace").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def print_details(evaluation: Evaluation) -> None:
    print(f"\nmissed break sites ({len(evaluation.missed)}):")
    for (file, line), info in evaluation.missed:
        skip = " frame-skip" if info.frame_skip else ""
        print(f"  {file}:{line}  {','.join(sorted(info.gb_codes))}{skip}  {' | '.join(sorted(info.gb_types))}")
        functions, models = ", ".join(sorted(info.functions)), ", ".join(sorted(info.models))
        print(f"      in {functions or '?'}: {source_line(file, line)}    [{models}]")
    print(f"\nfalse positives on lines that ran ({len(evaluation.false_positives)}):")
    for p in evaluation.false_positives:
        print(f"  {p.file}:{p.line}  {p.code} ({','.join(p.gb_codes)})  {source_line(p.file, p.line)}")


def print_failures(failures: dict[str, dict[str, Any]]) -> None:
    for name, entry in failures.items():
        print(f"model {name}: {entry['status']}: {entry['error'].strip().splitlines()[-1] if entry['error'] else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh-truth", action="store_true", help="re-collect the truth of every model")
    parser.add_argument("--details", action="store_true", help="list every missed break site and false positive")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the figures to PATH")
    parser.add_argument("--collect-one", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not in_venv():
        ensure_venv()
        os.execv(venv_python(), [str(venv_python()), __file__, *sys.argv[1:]])
    if args.collect_one:
        collect_one(args.collect_one[0], Path(args.collect_one[1]))
        return
    truth = load_truth(args.refresh_truth)
    started = time.perf_counter()
    predictions = predict()
    linted = time.perf_counter()
    evaluation = evaluate(truth, predictions)
    print(f"corpus: {len(truth['models'])} models, torch {truth['versions']['torch']}; lint {linted - started:.0f} s, "
          f"scoring {time.perf_counter() - linted:.1f} s")  # fmt: skip
    print_failures(evaluation.failures)
    print_table(evaluation.scores)
    if args.details:
        print_details(evaluation)
    if args.json:
        figures = {package: score.figures() for package, score in sorted(evaluation.scores.items())}
        document = {"versions": truth["versions"], "overall": overall(evaluation.scores).figures(), "packages": figures}
        document["failed_models"] = {name: entry["status"] for name, entry in evaluation.failures.items()}
        args.json.write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
