"""Source -> parse -> per-file summaries (cached, optionally in parallel) -> project -> findings."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import libcst as cst

from compile_lint import __version__
from compile_lint.analysis.source import decode, read_source
from compile_lint.analysis.summary import FileSummary
from compile_lint.analysis.walker import FileWalker, Visitor, collect
from compile_lint.config import Config
from compile_lint.finding import Finding
from compile_lint.project import ProjectContext
from compile_lint.rules import all_rules, rule_by_code
from compile_lint.versions import NEWEST, TorchVersion, label, target_version

EXCLUDED_DIRS = frozenset({".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox"})
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
CACHE_DIR = ".compile_lint_cache"
COMPILE_CALL = re.compile(r"\bcompile\(\s*([A-Za-z_][\w.]*)")


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    cached: int = 0  # files whose summary came from the cache


def discover(paths: Iterable[str]) -> list[str]:
    """Python files under `paths` (files are taken as given), sorted, each once."""
    found: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS and not d.endswith(".egg-info")]
                found.update(os.path.join(folder, f) for f in files if f.endswith((".py", ".pyi")))
        else:
            found.add(path)
    return sorted(os.path.normpath(p) for p in found)


def module_name(path: str) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`, climbing while the folder is a package."""
    absolute = Path(path).resolve()
    parts = [absolute.stem] if absolute.stem != "__init__" else []
    folder = absolute.parent
    while (folder / "__init__.py").exists():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts))


@cache
def dispatch_table() -> dict[type[cst.CSTNode], list[Visitor]]:
    table: dict[type[cst.CSTNode], list[Visitor]] = {}
    for rule in all_rules():
        for node_type, method in rule.visitors():
            table.setdefault(node_type, []).append(method)
    return table


def unreadable(path: str, message: str, line: int = 1, col: int = 1) -> FileSummary:
    rule = rule_by_code("TCL000")
    assert rule is not None
    error = Finding(path, line, col, line, col, rule.code, f"{rule.summary}: {message}", severity="error", fix=rule.fix)
    return FileSummary(path=path, module="", error=error)


def compiled_names(text: str) -> frozenset[str]:
    """Last names of what the text passes to `compile(...)`: `step` for `torch.compile(self.step)`.

    A regex over the text, so a rule can know them before the walk reaches the call (it usually
    comes after the function's definition)."""
    return frozenset(match.rsplit(".", 1)[-1] for match in COMPILE_CALL.findall(text))


def analyze_source(path: str, text: str, torch_version: TorchVersion = NEWEST) -> FileSummary:
    """Everything the project needs from one file's text; never raises."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        return _syntax_error(path, text, error)
    try:
        walker = FileWalker(path, module_name(path), dispatch_table(), compiled_names(text), torch_version)
        return collect(module, walker)
    except RecursionError:
        return unreadable(path, "too deeply nested to analyse")


def _syntax_error(path: str, text: str, error: cst.ParserSyntaxError) -> FileSummary:
    """Python's own message and location when it agrees the file is invalid: they are clearer."""
    try:
        ast.parse(text)
    except SyntaxError as python_error:
        line, col = python_error.lineno or 1, python_error.offset or 1
        return unreadable(path, f"syntax error: {python_error.msg}", line, col)
    except (ValueError, RecursionError, MemoryError):
        pass
    return unreadable(path, f"syntax error: {error.message}", error.raw_line, error.raw_column + 1)


def analyze_bytes(path: str, data: bytes, torch_version: TorchVersion = NEWEST) -> FileSummary:
    try:
        text = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as error:
        return unreadable(path, f"cannot decode: {error}")
    return analyze_source(path, text, torch_version)


@cache
def engine_fingerprint() -> str:
    """Changes whenever compile-lint's own code does, so stale cache entries are never used."""
    digest = hashlib.sha256(__version__.encode())
    package = Path(__file__).parent
    for source in sorted(package.rglob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


class SummaryCache:
    """Summaries keyed by a hash of the file's bytes, path, the target torch and the engine's own code."""

    def __init__(self, root: Path, torch_version: TorchVersion) -> None:
        self.folder = root / CACHE_DIR / f"{engine_fingerprint()}-torch{label(torch_version)}"

    def key(self, path: str, data: bytes) -> str:
        return hashlib.sha256(path.encode() + b"\0" + data).hexdigest()

    def get(self, key: str) -> FileSummary | None:
        try:
            return FileSummary.from_json(json.loads((self.folder / f"{key}.json").read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, summary: FileSummary) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore = self.folder.parent / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by compile-lint\n*\n")
            temporary = self.folder / f"{key}.{os.getpid()}.tmp"
            temporary.write_text(json.dumps(summary.to_json()))
            temporary.replace(self.folder / f"{key}.json")
        except OSError:
            pass  # a read-only tree lints fine, just without a cache


def summarize(
    paths: list[str], torch_version: TorchVersion, jobs: int = 1, cache_root: Path | None = None
) -> tuple[list[FileSummary], int]:
    """Summaries for `paths`, in order; returns (summaries, how many came from the cache)."""
    store = SummaryCache(cache_root, torch_version) if cache_root else None
    results: dict[str, FileSummary] = {}
    missing: list[tuple[str, bytes]] = []
    cached = 0
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            results[path] = unreadable(path, f"cannot read: {error.strerror or error}")
            continue
        hit = store.get(store.key(path, data)) if store else None
        if hit is None:
            missing.append((path, data))
        else:
            results[path] = hit
            cached += 1
    items = [(path, data, torch_version) for path, data in missing]
    for (path, data), summary in zip(missing, _run(items, jobs), strict=True):
        results[path] = summary
        if store is not None:
            store.put(store.key(path, data), summary)
    return [results[p] for p in paths], cached


def _analyze_item(item: tuple[str, bytes, TorchVersion]) -> FileSummary:
    return analyze_bytes(*item)


def _run(items: list[tuple[str, bytes, TorchVersion]], jobs: int) -> Iterator[FileSummary]:
    if jobs <= 1 or len(items) < 2:
        yield from map(_analyze_item, items)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(_analyze_item, items, chunksize=max(1, len(items) // (jobs * 4)))


def suppressed_by_noqa(finding: Finding, lines: list[str]) -> bool:
    if not 0 < finding.line <= len(lines):
        return False
    match = NOQA.search(lines[finding.line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or finding.code in re.split(r"[\s,]+", codes.upper())


def apply_filters(findings: list[Finding], config: Config) -> list[Finding]:
    kept: list[Finding] = []
    lines_of: dict[str, list[str]] = {}
    for finding in findings:
        if not config.is_selected(finding.code, finding.path):
            continue
        if finding.path not in lines_of:
            try:
                lines_of[finding.path] = read_source(finding.path).splitlines()
            except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
                lines_of[finding.path] = []
        if not suppressed_by_noqa(finding, lines_of[finding.path]):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.sort_key)


def lint_source(
    text: str, path: str = "<source>", flags: set[str] | None = None, torch_version: TorchVersion = NEWEST
) -> list[Finding]:
    """Findings for one file's text on its own (no noqa or select filtering): for the flake8
    plugin, which has read the file already, and for the rules' own examples."""
    summary = analyze_source(path, text, torch_version)
    project = ProjectContext([summary], flags=set(flags or ()), read_source={path: text}.__getitem__)
    return sorted(project.findings(), key=lambda f: f.sort_key)


def lint(paths: list[str], config: Config, jobs: int = 1, use_cache: bool = True) -> LintResult:
    files = discover(paths)
    torch_version = target_version(config.torch_version)
    summaries, cached = summarize(files, torch_version, jobs, config.root if use_cache else None)
    project = ProjectContext(summaries, flags=config.flags(), extra_regions=config.extra_regions)
    return LintResult(apply_filters(project.findings(), config), len(files), cached)
