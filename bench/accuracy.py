"""Static-pass accuracy against real Dynamo on real models from real packages (bench/corpus).

Truth (cached in bench/corpus/truth-torch<version>.json, collected one model per child process):
the (file, line) of package source that ran eagerly, and every graph break of a `torch.compile(backend="eager")`
run, attributed to the innermost frame inside the corpus packages. Prediction: `compile-lint --format json
--torch-version X.Y` over the whole package folders, for the torch of each truth (parsed once for all of them).
Scores: recall of break sites, precision on lines that ran, GB-code agreement.

    python bench/accuracy.py [--refresh-truth] [--details] [--rules] [--json PATH]
    python bench/accuracy.py --sources DIR   # score the committed truth with only the packages' source in DIR

The first run builds the corpus venv (bench/corpus/.venv, from bench/corpus/requirements.txt plus compile-lint
installed editable) and re-executes itself inside it. `--sources DIR` needs no torch and no venv: DIR holds the
corpus packages as `pip install --no-deps --target DIR` puts them (`--install-sources DIR` does that).
"""

from __future__ import annotations

import argparse
import ast
import gc
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
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
REQUIREMENTS = CORPUS / "requirements.txt"
TORCH = re.search(r"^torch==(\S+)$", REQUIREMENTS.read_text(), re.MULTILINE).group(1)  # type: ignore[union-attr]
VENVS = {TORCH: CORPUS / ".venv", "2.14.1": CORPUS / ".venv-torch2.14"}  # truth is collected on each
VENV = VENVS[TORCH]  # the one this run collects with (--torch)
FIGURES = CORPUS / "figures.json"
MODEL_TIMEOUT = 600  # seconds per model (eager + compiled run, including imports)
BATCH = 8  # runs of one package collected in one child process (imports once), each after a dynamo reset
RECOMPILE_LIMIT = 64  # default 8: loops over layers/solver steps must keep compiling so later breaks are seen
FRAME_SKIP_SLACK = 2  # Dynamo may blame a frame skip up to this many lines after its cause
CLEAN_NOISE_PER = 20  # noise is stated as GB-predicting findings per this many clean models

Site = tuple[str, int]  # (file relative to site-packages, line)


# --- environment ---------------------------------------------------------------------------------------------


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def requirements_hash() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def ensure_venv(torch_version: str = TORCH) -> Path:
    """Create the corpus venv for `torch_version` once (again when requirements.txt changes); its folder."""
    venv = VENVS[torch_version]
    stamp = venv / "requirements.sha256"
    if stamp.exists() and stamp.read_text() == requirements_hash():
        return venv
    print(f"building the corpus venv in {venv.relative_to(ROOT)} (a few minutes, once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pinned = REQUIREMENTS.read_text().replace(f"torch=={TORCH}\n", f"torch=={torch_version}\n")
    if torch_version != TORCH:  # another torch brings its own triton and CUDA libraries
        pinned = "\n".join(line for line in pinned.splitlines() if not line.startswith(("triton==", "nvidia-")))
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as requirements:
        requirements.write(pinned)
        requirements.flush()
        pip = [str(venv_python(venv)), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "-r", requirements.name], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(ROOT)], check=True)
    stamp.write_text(requirements_hash())
    return venv


def in_venv() -> bool:
    return any(Path(sys.prefix).resolve() == venv.resolve() for venv in VENVS.values())


@cache
def packages() -> dict[str, str]:
    """import package -> distribution (bench/corpus/packages.py; no torch needed)."""
    sys.path.insert(0, str(CORPUS))
    from packages import PACKAGES

    return dict(PACKAGES)


def pinned_versions() -> dict[str, str]:
    """distribution -> version pinned in requirements.txt (names compared normalised)."""
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[normalised(name)] = version.strip()
    return pins


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def install_sources(target: Path) -> None:
    """The corpus packages' source only (no dependencies, no torch) into `target`, as pinned."""
    pins = pinned_versions()
    wanted = [f"{dist}=={pins[normalised(dist)]}" for dist in packages().values()]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), *wanted],
                   check=True)  # fmt: skip


# --- corpus sources --------------------------------------------------------------------------------------------

SOURCES: list[Path] = []  # set by --sources: read the packages from there instead of the running site-packages


@cache
def corpus_models() -> Any:
    sys.path.insert(0, str(CORPUS))
    import models

    return models


@cache
def site_packages() -> Path:
    if SOURCES:
        return SOURCES[0].resolve()
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"]).resolve()


@cache
def source_roots() -> dict[str, Path]:
    """import package -> its folder (or single module file) in site-packages."""
    roots = {}
    for package in packages():
        folder = site_packages() / package
        roots[package] = folder if folder.is_dir() else folder.with_suffix(".py")
    return roots


def package_versions() -> dict[str, str]:
    """distribution -> installed version (of the venv, or of the --sources folder)."""
    path = [str(site_packages())] if SOURCES else sys.path
    found = {normalised(d.metadata["Name"]): d.version for d in importlib.metadata.distributions(path=path)}
    return {dist: found.get(normalised(dist), "absent") for dist in packages().values()}


def versions() -> dict[str, str]:
    """What the truth depends on: Python, torch and every corpus package."""
    return {"python": platform.python_version(), "torch": importlib.metadata.version("torch"), **package_versions()}


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

    from compile_lint.confirm.run.capture import (
        BREAK_LOGGERS,
        capture_dynamo_log,
        every_break_with_stack,
        parse_break,
    )
    from compile_lint.confirm.run.targets import Target, compiled, original, targets_from_factory

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

    torch._dynamo.reset()
    try:
        targets = targets_from_factory(model.factory)  # built untraced: only the calls count as "ran"
        # a factory's own @torch.compile is undone: a compiled call would run its inductor graph, not the lines
        ran = traced_lines(lambda: run_all(targets, lambda target: original(target.fn)), wanted)
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
    with capture_dynamo_log() as log, every_break_with_stack():
        for logger in BREAK_LOGGERS:
            logging.getLogger(logger).addHandler(unparsed)
        try:  # a fresh model: state set by the eager call (caches, lazy init) must not hide breaks
            run_all(targets_from_factory(model.factory), lambda target: compiled(target, "eager"))
        except Exception:
            result.update(status="compile-error", error=traceback.format_exc(limit=-3))
        finally:
            for logger in BREAK_LOGGERS:
                logging.getLogger(logger).removeHandler(unparsed)
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


def collect_batch(names: list[str], out: Path) -> None:
    """Child process: collect_one for each name in turn (imports paid once), each into out/<name>.json."""
    for name in names:
        collect_one(name, out / f"{name}.json")


def collect(names: list[str]) -> dict[str, dict[str, Any]]:
    """Run collect_batch(names) in a child process. If it times out or crashes, the runs it did not finish are
    collected again one per process; a single run that times out or crashes is a result too."""
    started = time.perf_counter()
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, __file__, "--collect", ",".join(names), scratch]
        failure: dict[str, Any] = {}
        try:
            child = subprocess.run(
                command, capture_output=True, text=True, timeout=MODEL_TIMEOUT * len(names), stdin=subprocess.DEVNULL
            )
            if child.returncode != 0:
                tail = (child.stderr or child.stdout).strip().splitlines()[-5:]
                failure = {"status": "crash", "error": f"exit {child.returncode}: " + "\n".join(tail)}
        except subprocess.TimeoutExpired:
            failure = {"status": "timeout", "error": f"over {MODEL_TIMEOUT} s"}
        for name in names:
            out = Path(scratch) / f"{name}.json"
            if out.exists():
                results[name] = json.loads(out.read_text())
    unfinished = [name for name in names if name not in results]
    if unfinished and len(names) > 1:
        for name in unfinished:
            results.update(collect([name]))
    elif unfinished:
        results[names[0]] = {"package": corpus_models().MODELS[names[0]].package, **failure}
        results[names[0]]["seconds"] = round(time.perf_counter() - started, 1)
    for name in names:
        results[name].setdefault("seconds", round((time.perf_counter() - started) / len(names), 1))
    return results


def truth_dir(torch_version: str) -> Path:
    return CORPUS / f"truth-torch{torch_version.split('+')[0]}"


def truth_versions() -> list[str]:
    """The torch versions with committed truth, oldest first."""
    found = [path.name.removeprefix("truth-torch") for path in CORPUS.glob("truth-torch*") if path.is_dir()]
    return sorted(found, key=lambda version: tuple(int(part) for part in version.split(".")))


def read_truth(torch_version: str) -> dict[str, Any]:
    """Committed truth of one torch version: {"versions": {package: {...}}, "models": {run: entry}}."""
    truth: dict[str, Any] = {"torch": torch_version, "versions": {}, "models": {}}
    for path in sorted(truth_dir(torch_version).glob("*.json")):
        document = json.loads(path.read_text())
        truth["versions"][path.stem] = document["versions"]
        truth["models"].update(document["runs"])
    return truth


def write_truth(torch_version: str, package: str, package_versions: dict[str, str], runs: dict[str, Any]) -> None:
    folder = truth_dir(torch_version)
    folder.mkdir(exist_ok=True)
    document = {"versions": package_versions, "runs": dict(sorted(runs.items()))}
    (folder / f"{package}.json").write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")


def load_truth(refresh: bool, jobs: int) -> dict[str, Any]:
    """The committed truth for the installed torch, collecting runs that are missing (all with `refresh`), a batch
    of runs of one package per child process, `jobs` at a time; each package's file is written as its batches end."""
    current = versions()
    torch_version = current["torch"].split("+")[0]
    truth = read_truth(torch_version)
    wanted = {"python": current["python"], "torch": current["torch"]}
    by_package: dict[str, list[str]] = defaultdict(list)
    for name, model in corpus_models().MODELS.items():
        by_package[model.package].append(name)
    runs: dict[str, dict[str, Any]] = {}
    batches = []
    for package, names in by_package.items():
        package_versions = {**wanted, packages()[package]: current[packages()[package]]}
        stale = truth["versions"].get(package, package_versions) != package_versions
        if stale and not refresh:
            sys.exit(f"truth of {package} was collected with other versions than installed: run with --refresh-truth")
        kept = {} if refresh else {n: truth["models"][n] for n in names if n in truth["models"]}
        runs[package] = kept
        missing = [name for name in names if name not in kept]
        batches += [(package, missing[i : i + BATCH]) for i in range(0, len(missing), BATCH)]
    lock = threading.Lock()
    total = sum(len(names) for _, names in batches)
    done = [0]

    def run(batch: tuple[str, list[str]]) -> None:
        package, names = batch
        results = collect(names)
        with lock:
            runs[package].update(results)
            package_versions = {**wanted, packages()[package]: current[packages()[package]]}
            write_truth(torch_version, package, package_versions, runs[package])
            for name in names:
                done[0] += 1
                entry = results[name]
                print(f"truth [{done[0]}/{total}] {name}: {entry['status']}, {len(entry.get('breaks', []))} breaks, "
                      f"{entry['seconds']} s", flush=True)  # fmt: skip

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(run, batches))
    truth = read_truth(torch_version)
    truth["models"] = {name: truth["models"][name] for name in corpus_models().MODELS}
    return truth


# --- prediction ------------------------------------------------------------------------------------------------


LINT_ERRORS: dict[str, str] = {}  # package -> compile-lint's error, when it failed on that package


@dataclass(frozen=True)
class Prediction:
    file: str
    line: int
    code: str
    gb_codes: tuple[str, ...]


def required_corpus_packages(package: str) -> set[str]:
    """The corpus packages `package` requires (its installed metadata's Requires-Dist, extras left out: what
    installing it brings)."""
    by_dist = {normalised(dist): name for name, dist in packages().items()}
    found = list(importlib.metadata.distributions(path=[str(site_packages())], name=packages()[package]))
    required = set()
    for requirement in (found[0].requires or []) if found else []:
        name, _, marker = requirement.partition(";")
        dist = normalised(re.split(r"[\s\[(<>=!~]", name.strip(), maxsplit=1)[0])
        if dist in by_dist and not re.search(r"\bextra\s*==", marker):
            required.add(by_dist[dist])
    return required


def lint_groups() -> list[list[str]]:
    """The corpus packages joined by required dependencies (connected components), each linted in one process:
    a user of gpytorch lints it with the linear_operator it calls, so the walk from their compiled functions
    enters both. Each package is in one group, so no file is linted (and counted) twice."""
    group_of = {package: {package} for package in packages()}
    for package in packages():
        for dependency in required_corpus_packages(package):
            joined = group_of[package] | group_of[dependency]
            for member in joined:
                group_of[member] = joined
    unique = {id(group): group for group in group_of.values()}.values()
    return sorted(sorted(group) for group in unique)


def lint(roots: list[Path], torch_versions: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The packages (a lint group) together with the corpus factories (the user code whose compiled functions enter
    them), as `compile-lint --torch-version X.Y` would lint them for each torch version: in a child process."""
    command = [sys.executable, __file__, "--lint", os.pathsep.join(map(str, roots)), ",".join(torch_versions)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:  # reported with the figures; the group's sites count as missed
        error = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        for root in roots:
            LINT_ERRORS[package_of(root.name)] = error
        print(f"compile-lint failed on {', '.join(root.name for root in roots)}: {error}", flush=True)
        return {version: [] for version in torch_versions}
    findings: dict[str, list[dict[str, Any]]] = json.loads(done.stdout)
    return findings


def lint_for_versions(roots: list[Path], torch_versions: list[str]) -> None:
    """In the child: the files parsed once, then the project analysed for each torch version (the rules differ
    by version, the parse does not; parsing is most of a lint), the findings filtered as the CLI filters them;
    printed as JSON, torch version -> findings."""
    from compile_lint import engine
    from compile_lint.config import load_config

    gc.disable()  # as the CLI's analysis does: the trees live until the process ends, and hold no cycles
    paths = [*map(str, roots), str(CORPUS / "models.py")]
    config = load_config(paths)
    files, unlisted = engine.find_files(paths, config)
    items, unread = engine.read_all(files)
    indexes, errors = engine.parse_all(items, engine.limits_of(config))
    found = {}
    for version in torch_versions:
        config.torch_version = version
        findings = engine.project_findings(indexes, errors, engine.options_of(config))
        found[version] = [finding.to_json() for finding in engine.apply_filters(unlisted + unread + findings, config)]
    print(json.dumps(found))


def predict(jobs: int, torch_versions: list[str]) -> dict[str, list[Prediction]]:
    """torch version -> the findings of each lint group (`lint_groups`) linted with the corpus factories, as its user
    would lint their code with it for that torch; `jobs` processes, the largest group first."""
    missing = [package for package, root in source_roots().items() if not root.exists()]
    if missing:
        sys.exit(f"corpus packages not found in {site_packages()}: {', '.join(missing)}")
    groups = [[source_roots()[package] for package in group] for group in lint_groups()]
    groups.sort(key=lambda roots: -sum(1 for root in roots for _ in root.rglob("*.py")))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        linted = list(pool.map(lambda roots: lint(roots, torch_versions), groups))
    predictions: dict[str, list[Prediction]] = {version: [] for version in torch_versions}
    for by_version in linted:
        for version, findings in by_version.items():
            for finding in findings:
                file = relative(finding["path"])
                if file is not None:
                    prediction = Prediction(file, finding["line"], finding["code"], tuple(finding["gb_codes"]))
                    predictions[version].append(prediction)
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


def traced_by(entry: dict[str, Any]) -> dict[str, set[int]]:
    """Lines Dynamo traced in one run: those that ran eagerly, less the functions Dynamo gave up on (a frame skip
    runs the whole function eagerly); nothing for a run whose compiled run did not complete (Dynamo may never have
    seen its lines)."""
    if entry["status"] != "ok":
        return {}
    skipped: dict[str, set[int]] = defaultdict(set)
    for brk in entry.get("breaks", []):
        if brk["frame_skip"]:
            skipped[brk["file"]] |= function_lines(brk["file"], brk["line"])
    return {file: expand(ranges) - skipped[file] for file, ranges in entry.get("ran", {}).items()}


def ran_lines(truth: dict[str, Any]) -> dict[str, set[int]]:
    """Lines Dynamo traced in any run."""
    ran: dict[str, set[int]] = defaultdict(set)
    for entry in truth["models"].values():
        for file, lines in traced_by(entry).items():
            ran[file] |= lines
    return ran


def clean(entry: dict[str, Any]) -> bool:
    """A run whose compiled run completed without a single graph break."""
    return entry["status"] == "ok" and not entry.get("breaks") and not entry.get("unattributed")


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
    clean_models: int = 0
    sites: int = 0
    found: int = 0
    gb_agree: int = 0
    on_ran: int = 0
    on_ran_broke: int = 0
    never_ran: int = 0
    clean_findings: int = 0  # GB-predicting findings on lines a clean model ran, counted once per clean model

    def figures(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "recall": ratio(self.found, self.sites),
            "precision_on_ran": ratio(self.on_ran_broke, self.on_ran),
            "gb_agreement": ratio(self.gb_agree, self.found),
            f"clean_findings_per_{CLEAN_NOISE_PER}": (
                round(CLEAN_NOISE_PER * self.clean_findings / self.clean_models, 2) if self.clean_models else None
            ),
        }


@dataclass
class RuleScore:
    findings: int = 0
    predicts_break: bool = False
    on_ran: int = 0
    on_ran_broke: int = 0
    on_clean: int = 0  # distinct findings on lines that a clean model ran
    never_ran: int = 0

    def figures(self) -> dict[str, Any]:
        return {**self.__dict__, "precision_on_ran": ratio(self.on_ran_broke, self.on_ran)}


@dataclass
class Evaluation:
    scores: dict[str, Score]
    rules: dict[str, RuleScore]
    missed: list[tuple[Site, BreakSite]]
    false_positives: list[Prediction]
    clean_noise: list[tuple[Prediction, list[str]]]
    failures: dict[str, dict[str, Any]]


def evaluate(truth: dict[str, Any], predictions: list[Prediction]) -> Evaluation:
    sites = break_sites(truth)
    ran = ran_lines(truth)
    by_file: dict[str, list[Prediction]] = defaultdict(list)
    for prediction in predictions:
        by_file[prediction.file].append(prediction)
    sites_by_file: dict[str, list[tuple[Site, BreakSite]]] = defaultdict(list)
    for site, info in sites.items():
        sites_by_file[site[0]].append((site, info))
    scores: dict[str, Score] = defaultdict(Score)
    clean_ran: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))  # file -> line -> clean runs
    for name, entry in truth["models"].items():
        score = scores[entry["package"]]
        score.models += 1
        score.failed += entry["status"] != "ok"
        if clean(entry):
            score.clean_models += 1
            for file, lines in traced_by(entry).items():
                for line in lines:
                    clean_ran[file][line].append(name)
    missed = []
    for site, info in sorted(sites.items()):
        score = scores[package_of(site[0])]
        score.sites += 1
        hits = [p for p in by_file[site[0]] if explains(p, site, info)]
        score.found += bool(hits)
        score.gb_agree += any(info.gb_codes & set(p.gb_codes) for p in hits)
        if not hits:
            missed.append((site, info))
    rules: dict[str, RuleScore] = defaultdict(RuleScore)
    false_positives = []
    clean_noise = []
    for prediction in predictions:
        rule = rules[prediction.code]
        rule.findings += 1
        if not prediction.gb_codes:
            continue  # predicts no break (a recompile, a numpy result that differs): not a break prediction
        rule.predicts_break = True
        score = scores[package_of(prediction.file)]
        noisy = clean_ran.get(prediction.file, {}).get(prediction.line, [])
        if noisy:
            rule.on_clean += 1
            score.clean_findings += len(noisy)
            clean_noise.append((prediction, noisy))
        if prediction.line not in ran.get(prediction.file, ()):
            score.never_ran += 1
            rule.never_ran += 1
            continue
        score.on_ran += 1
        rule.on_ran += 1
        broke = any(explains(prediction, site, info) for site, info in sites_by_file[prediction.file])
        score.on_ran_broke += broke
        rule.on_ran_broke += broke
        if not broke:
            false_positives.append(prediction)
    failures = {name: entry for name, entry in truth["models"].items() if entry["status"] != "ok"}
    return Evaluation(
        dict(scores),
        dict(sorted(rules.items())),
        missed,
        sorted(false_positives, key=lambda p: (p.file, p.line)),
        sorted(clean_noise, key=lambda item: (item[0].file, item[0].line)),
        failures,
    )


def overall(scores: dict[str, Score]) -> Score:
    total = Score()
    for score in scores.values():
        for key, value in score.__dict__.items():
            setattr(total, key, getattr(total, key) + value)
    return total


def figures(evaluation: Evaluation, truth: dict[str, Any]) -> dict[str, Any]:
    """What --json writes and the ratchet compares: overall, per package, per rule."""
    return {
        "torch": truth["torch"],
        "overall": overall(evaluation.scores).figures(),
        "packages": {package: score.figures() for package, score in sorted(evaluation.scores.items())},
        "rules": {code: rule.figures() for code, rule in evaluation.rules.items()},
        "failed_models": {name: entry["status"] for name, entry in sorted(evaluation.failures.items())},
        "lint_errors": dict(sorted(LINT_ERRORS.items())),
    }


# --- report ----------------------------------------------------------------------------------------------------


def percent(part: int, whole: int) -> str:
    """From the counts, not the 3-decimal ratio the JSON holds (17/19 is 89%, not 0.895 rounded to 90%)."""
    return f"{100 * part / whole:.0f}%" if whole else "-"


def print_table(scores: dict[str, Score]) -> None:
    header = f"{'package':<30}{'runs':>5}{'failed':>7}{'clean':>6}{'sites':>6}{'found':>6}{'recall':>7}{'GB ok':>6}"
    header += f"{'on ran':>7}{'broke':>6}{'prec.':>6}{'never ran':>10}{f'noise/{CLEAN_NOISE_PER}':>9}"
    print(header)
    rows = [*sorted(scores.items()), ("ALL", overall(scores))]
    for package, score in rows:
        f = score.figures()
        noise = f[f"clean_findings_per_{CLEAN_NOISE_PER}"]
        print(
            f"{package:<30}{score.models:>5}{score.failed:>7}{score.clean_models:>6}{score.sites:>6}{score.found:>6}"
            f"{percent(score.found, score.sites):>7}{score.gb_agree:>6}{score.on_ran:>7}{score.on_ran_broke:>6}"
            f"{percent(score.on_ran_broke, score.on_ran):>6}{score.never_ran:>10}{'-' if noise is None else noise:>9}"
        )


def print_rules(rules: dict[str, RuleScore]) -> None:
    print(f"\n{'rule':<8}{'findings':>9}{'on ran':>7}{'broke':>6}{'prec.':>6}{'on clean':>9}{'never ran':>10}")
    for code, rule in rules.items():
        if not rule.predicts_break:
            print(f"{code:<8}{rule.findings:>9}   (predicts no graph break: recompile, correctness or fix advice)")
            continue
        print(f"{code:<8}{rule.findings:>9}{rule.on_ran:>7}{rule.on_ran_broke:>6}"
              f"{percent(rule.on_ran_broke, rule.on_ran):>6}{rule.on_clean:>9}{rule.never_ran:>10}")  # fmt: skip


def source_line(file: str, line: int) -> str:
    lines = (site_packages() / file).read_text(encoding="utf-8", errors="replace").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def print_details(evaluation: Evaluation) -> None:
    print(f"\nmissed break sites ({len(evaluation.missed)}):")
    for (file, line), info in evaluation.missed:
        skip = " frame-skip" if info.frame_skip else ""
        print(f"  {file}:{line}  {','.join(sorted(info.gb_codes))}{skip}  {' | '.join(sorted(info.gb_types))}")
        functions, models = ", ".join(sorted(info.functions)), ", ".join(sorted(info.models)[:4])
        more = f" +{len(info.models) - 4}" if len(info.models) > 4 else ""
        print(f"      in {functions or '?'}: {source_line(file, line)}    [{models}{more}]")
    print(f"\nfalse positives on lines that ran ({len(evaluation.false_positives)}):")
    for p in evaluation.false_positives:
        print(f"  {p.file}:{p.line}  {p.code} ({','.join(p.gb_codes)})  {source_line(p.file, p.line)}")
    print(f"\nGB-predicting findings on lines that clean models ran ({len(evaluation.clean_noise)}):")
    for p, names in evaluation.clean_noise:
        runs = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        print(f"  {p.file}:{p.line}  {p.code}  {source_line(p.file, p.line)}    [{runs}]")


def print_failures(failures: dict[str, dict[str, Any]]) -> None:
    for name, entry in failures.items():
        print(f"model {name}: {entry['status']}: {entry['error'].strip().splitlines()[-1] if entry['error'] else ''}")


def check_sources(truth: dict[str, Any]) -> None:
    """The packages in --sources must be the versions the truth was collected on (the lines must match)."""
    installed = package_versions()
    for package, recorded in truth["versions"].items():
        dist = packages()[package]
        if recorded.get(dist) != installed[dist]:
            sys.exit(
                f"{dist} {installed[dist]} in {site_packages()}, but the truth is of {recorded.get(dist)}: "
                "run `python bench/accuracy.py --install-sources DIR` into an empty folder"
            )


def report(truth: dict[str, Any], predictions: list[Prediction], args: argparse.Namespace) -> dict[str, Any]:
    evaluation = evaluate(truth, predictions)
    print(f"\ntorch {truth['torch']}: {len(truth['models'])} runs")
    print_failures(evaluation.failures)
    for package, error in LINT_ERRORS.items():
        print(f"package {package}: compile-lint failed ({error}): its break sites count as missed")
    print_table(evaluation.scores)
    if args.rules:
        print_rules(evaluation.rules)
    if args.details:
        print_details(evaluation)
    return figures(evaluation, truth)


def score_sources(sources: Path, jobs: int) -> dict[str, dict[str, Any]]:
    """torch version -> figures of the committed truth, the packages' source read from `sources` (no torch)."""
    SOURCES[:] = [sources]
    truths = [read_truth(version) for version in truth_versions()]
    for truth in truths:
        check_sources(truth)
    predictions = predict(jobs, [truth["torch"] for truth in truths])
    return {truth["torch"]: figures(evaluate(truth, predictions[truth["torch"]]), truth) for truth in truths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh-truth", action="store_true", help="re-collect the truth of every model")
    parser.add_argument("--details", action="store_true", help="list every missed break site and false positive")
    parser.add_argument("--rules", action="store_true", help="figures per rule")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the figures to PATH")
    parser.add_argument("--torch", choices=sorted(VENVS), default=TORCH, help=f"collect on this torch ({TORCH})")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="child processes for truth and lint (default 2)")
    parser.add_argument(
        "--sources", type=Path, metavar="DIR", help="score the committed truth of every torch version, reading the "
        "packages' source from DIR (no torch, no venv)"
    )  # fmt: skip
    parser.add_argument("--install-sources", type=Path, metavar="DIR", help="pip install the pinned packages' "
                        "source (no dependencies) into DIR, then exit")  # fmt: skip
    parser.add_argument("--collect", nargs=2, metavar=("MODELS", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--lint", nargs=2, metavar=("ROOTS", "VERSIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lint:
        lint_for_versions([Path(root) for root in args.lint[0].split(os.pathsep)], args.lint[1].split(","))
        return
    if args.install_sources:
        install_sources(args.install_sources)
        return
    if args.sources:
        SOURCES[:] = [args.sources]
        truths = [read_truth(version) for version in truth_versions()]
        for truth in truths:
            check_sources(truth)
    else:
        if not in_venv():
            python = venv_python(ensure_venv(args.torch))
            os.execv(python, [str(python), __file__, *sys.argv[1:]])
        if args.collect:
            collect_batch(args.collect[0].split(","), Path(args.collect[1]))
            return
        truths = [load_truth(args.refresh_truth, args.jobs)]
    started = time.perf_counter()
    predictions = predict(args.jobs, [truth["torch"] for truth in truths])
    counts = ", ".join(f"{len(found)} for torch {version}" for version, found in predictions.items())
    print(f"lint {time.perf_counter() - started:.0f} s ({counts} in corpus packages)")
    document = {truth["torch"]: report(truth, predictions[truth["torch"]], args) for truth in truths}
    if args.json:
        args.json.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
