"""Source -> parse -> index -> project (regions, kinds, rules) -> findings, cached and in parallel.

The analysis is whole-program (a helper's return value or a base class may live in another file),
so the unit of parallelism is a group of files that import one another, and the cache keeps the
findings of a whole run, keyed by every file's content and the options.
"""

from __future__ import annotations

import ast
import fcntl
import gc
import hashlib
import hmac
import importlib.util
import json
import os
import pickle
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from compile_lint import __version__, guard, notebooks
from compile_lint.analysis.packages import relative_module
from compile_lint.analysis.source import (
    CONTINUATION_ONLY_LINE,
    Normalised,
    decode,
    normalise_odd_whitespace,
    read_source,
    source_lines,
)
from compile_lint.config import Config, Options
from compile_lint.finding import Finding, Severity, Status
from compile_lint.guard import Limits
from compile_lint.versions import NEWEST, TorchVersion, label, target_version

if TYPE_CHECKING:  # libcst, the analysis and the rules are imported when a file is parsed, not before
    import libcst as cst

    from compile_lint.analysis.index import FileIndex
    from compile_lint.analysis.sharing import SharedSummaries
    from compile_lint.project import Project

SUFFIXES = (".py", ".pyi", notebooks.SUFFIX)
CODES = r"[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*"
NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{CODES}))?", re.IGNORECASE)
# `# compile-lint: noqa` (or `...: noqa: TCL101, TCL2`) on a line of its own exempts the whole file.
FILE_NOQA = re.compile(rf"\s*#\s*compile-lint:\s*noqa(?::\s*(?P<codes>{CODES}))?\s*$", re.IGNORECASE)
UNUSED_NOQA = "TCL902"
CACHE_DIR = ".compile_lint_cache"
DEFAULT_LIMITS = Limits()
IMPORTS = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import|import\s+([\w.]+))", re.M)


@dataclass
class LintResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    cached: int = 0  # files whose findings came from the cache


def discover(paths: Iterable[str], config: Config | None = None) -> list[str]:
    """Python files and notebooks under `paths`, sorted, each once, without the excluded ones. Paths named
    explicitly are taken as given, unless `force_exclude` is set (pre-commit names every changed file)."""
    return find_files(paths, config)[0]


def find_files(paths: Iterable[str], config: Config | None = None) -> tuple[list[str], list[Finding]]:
    """`discover`, and a TCL000 finding for each folder that cannot be listed and each file that cannot
    be reached (a symlink loop, a dangling link): those are skipped."""
    config = config or Config()
    found: set[str] = set()
    errors: list[Finding] = []

    def unlisted(error: OSError) -> None:
        errors.append(unreadable(str(error.filename), f"cannot list folder: {error.strerror or error}"))

    for path in paths:
        if config.force_exclude and config.is_excluded_within(path):
            continue
        if os.path.isdir(path):
            for folder, dirs, files in os.walk(path, onerror=unlisted):
                dirs[:] = [d for d in dirs if not _excluded_folder(os.path.join(folder, d), config)]
                found.update(
                    os.path.join(folder, f)
                    for f in files
                    if f.endswith(SUFFIXES) and not config.is_excluded(os.path.join(folder, f))
                )
        else:
            found.add(path)
    reachable = []
    for path in sorted(os.path.normpath(p) for p in found):
        try:
            os.stat(path)
            reachable.append(path)
        except OSError as error:
            errors.append(unreadable(path, f"cannot read: {error.strerror or error}"))
    return reachable, errors


def _excluded_folder(folder: str, config: Config) -> bool:
    """Excluded by the config, or a virtualenv (a folder with a pyvenv.cfg, e.g. `.venv-torch2.14`)."""
    return config.is_excluded(folder) or os.path.exists(os.path.join(folder, "pyvenv.cfg"))


def module_name(path: str) -> str:
    """`pkg/sub/mod.py` -> `pkg.sub.mod`, climbing while the folder is a package."""
    absolute = Path(path).resolve()
    parts = [absolute.stem] if absolute.stem != "__init__" else []
    folder = absolute.parent
    while (folder / "__init__.py").exists():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts))


def options_of(config: Config) -> Options:
    return Options(
        flags=config.flags(),
        extra_regions=list(config.extra_regions),
        exclude_regions=list(config.exclude_regions),
        mode=config.mode,
        torch_version=target_version(config.torch_version),
    )


def limits_of(config: Config) -> Limits:
    return Limits(seconds=config.max_file_seconds, megabytes=config.max_file_mb)


def unreadable(path: str, message: str, line: int = 1, col: int = 1) -> Finding:
    from compile_lint.rules import rule_by_code

    rule = rule_by_code("TCL000")
    assert rule is not None
    return Finding(path, line, col, line, col, rule.code, f"{rule.summary}: {message}", severity="error", fix=rule.fix)


def parse_source(path: str, text: str, limits: Limits = DEFAULT_LIMITS) -> FileIndex | Finding:
    """The file's index, or one TCL000 finding saying why it cannot be linted; never raises."""
    return _guarded_index(path, module_name(path), text, limits)


def parse_bytes(path: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> FileIndex | Finding:
    try:
        text = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as error:
        return unreadable(path, f"cannot decode: {error}")
    return parse_source(path, text, limits)


# -- the guarded parse -------------------------------------------------------------------------------
LONE_CR = re.compile(r"\r(?!\n)")


def _guarded_index(path: str, module: str, text: str, limits: Limits) -> FileIndex | Finding:
    if "\r" in text:  # Python ends a line at a lone CR; libcst and the span recorder need LF to count it
        text = LONE_CR.sub("\n", text)
    tree = guard.python_tree(text)
    refused = _refusal(path, module, text, limits, tree)
    if refused is not None:
        return refused
    index = _index(path, module, text)
    if not isinstance(index, Finding) and not isinstance(tree, SyntaxError) and index.text == text:
        from compile_lint.analysis.positions import function_starts

        index.starts = function_starts(text, tree)
    return index


def _refusal(path: str, module: str, text: str, limits: Limits, tree: ast.Module | SyntaxError) -> Finding | None:
    """A TCL000 finding if the file must not reach libcst here: Python rejects it (`tree`, the guard's
    parse), or it would run over the limits (then it is first tried alone in a bounded child)."""
    if isinstance(tree, SyntaxError):
        python_error = unreadable(path, f"syntax error: {tree.msg}", tree.lineno or 1, tree.offset or 1)
        if isinstance(tree, guard.TooComplex) or not guard.can_fork():
            return python_error
        # Syntax newer than this Python (3.12's `type` statements on 3.11) may still be libcst's to parse.
        return python_error if guard.run_bounded(lambda: _lint_alone(path, module, text, True), limits) else None
    in_half_time = guard.depth_for(limits.seconds / 2)
    cost = guard.estimate(text, tree, in_half_time)
    if guard.within_half(cost, limits):
        return None
    advice = "raise max-file-seconds / max-file-mb in [tool.compile-lint] to lint it"
    if cost.depth > in_half_time and guard.cheapest_seconds(cost.depth) > limits.seconds:
        seconds = f"{limits.seconds:g} s"
        return unreadable(path, f"expressions nested {cost.depth} deep: libcst needs over {seconds} for that; {advice}")
    if not guard.can_fork():
        return unreadable(path, f"estimated to need {cost.seconds:.0f} s and {cost.megabytes:.0f} MB; {advice}")
    problem = guard.run_bounded(lambda: _lint_alone(path, module, text, False), limits)
    return unreadable(path, f"{problem}; {advice}") if problem else None


def _lint_alone(path: str, module: str, text: str, must_parse: bool) -> None:
    from compile_lint.project import Project

    parsed = _index(path, module, text)
    if not isinstance(parsed, Finding):
        Project([parsed], Options(), (), load_source).findings()
    elif must_parse:
        raise ValueError(parsed.message)


def _index(path: str, module: str, text: str) -> FileIndex | Finding:
    import libcst as cst

    from compile_lint.analysis.index import build_index

    try:
        tree, plain = _parse(text)
    except cst.ParserSyntaxError as error:
        message = f"Python accepts it but libcst's parser does not ({error.message})"
        return unreadable(path, message, error.raw_line, error.raw_column + 1)
    try:
        index = build_index(path, module, tree, text if plain is None else plain.text)
    except RecursionError:
        return unreadable(path, "too deeply nested to analyse")
    index.column_shifts = None if plain is None else plain.column_shifts
    return index


def _parse(text: str) -> tuple[cst.Module, Normalised | None]:
    """libcst's tree of the text, or of the text with odd whitespace made plain (see
    `normalise_odd_whitespace`) when libcst rejects it or would misplace lines; raises libcst's error
    for the text as it is."""
    import libcst as cst

    # After a line holding only `\`, libcst puts the next statement on the backslash's line.
    plain = normalise_odd_whitespace(text) if CONTINUATION_ONLY_LINE.search(text) else None
    if plain is not None:
        return cst.parse_module(plain.text), plain
    try:
        return cst.parse_module(text), None
    except cst.ParserSyntaxError as error:
        plain = normalise_odd_whitespace(text)
        if plain is None:
            raise
        try:
            return cst.parse_module(plain.text), plain
        except cst.ParserSyntaxError:
            raise error from None


def load_source(path: str, module: str) -> FileIndex | None:
    """A file the linted code imports from (never reported on); None if it cannot be parsed. Each is
    parsed once per process and content, or read from the disk cache of the last `use_index_cache`."""
    return _STORE.load(path, module)


class IndexStore:
    """Parsed files (their `FileIndex`), by path, module name, limits and content: kept in memory for
    the files linted code imports from, and pickled under the cache folder for every file, so a run
    parses only what changed since the last one. A pickle is read only if it carries the HMAC of this
    user's secret (`secret_key`): a cache folder committed to a repository cannot run code."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._loaded: dict[tuple[str, str], tuple[str, FileIndex | None]] = {}  # by path and module: digest, index
        self.sources: dict[str, str] = {}  # SHA-256 of each file `load` read since the last clear()
        self._stamps: dict[str, tuple[tuple[int, int, int, int], str]] = {}  # by path: stat when read, SHA-256
        self._secret = secret_key() if folder is not None else None
        self._pid = os.getpid()
        self._summaries: SharedSummaries | None = None

    def shared_summaries(self) -> SharedSummaries:
        """The summaries this process's projects share: of the files this store loads (another store, another
        set of loaded files: their summaries would never be taken)."""
        from compile_lint.analysis.sharing import SharedSummaries

        if self._summaries is None:
            self._summaries = SharedSummaries()
        return self._summaries

    def parse(self, path: str, data: bytes, limits: Limits = DEFAULT_LIMITS, keep: bool = True) -> FileIndex | Finding:
        """`parse_bytes`, from the cache when these bytes were parsed before; written to it if `keep`."""
        found = self.cached(path, data, limits)
        if found is not None:
            return found
        parsed = parse_bytes(path, data, limits)
        if keep and not isinstance(parsed, Finding):
            self._write(self._key(path, module_name(path), data, limits), self._dump(parsed))
        return parsed

    def cached(self, path: str, data: bytes, limits: Limits) -> FileIndex | None:
        return self._read(self._key(path, module_name(path), data, limits))

    def add(
        self, path: str, data: bytes, limits: Limits, result: Finding | bytes | None, keep: bool
    ) -> FileIndex | Finding:
        """What `_parse_job` returned for the file, loaded (and written to the cache if `keep`)."""
        if isinstance(result, Finding):
            return result
        if keep:
            self._write(self._key(path, module_name(path), data, limits), result)
        return (self._unpickle(result) if result is not None else None) or parse_bytes(path, data, limits)

    def load(self, path: str, module: str) -> FileIndex | None:
        """The index of a file linted code imports from, parsed again only when its bytes changed."""
        try:
            digest, data = self._digest(path)
        except OSError:
            self.sources[path] = ""
            return None
        self.sources[path] = digest
        known = self._loaded.get((path, module))
        if known is None or known[0] != digest:
            if known is not None:  # the file changed: summaries that read its old functions are not asked again
                self._summaries = None
            if data is None:  # known by its stat, but not yet loaded under this module name
                data = Path(path).read_bytes()
            known = self._loaded[path, module] = (digest, self._load(path, module, data))
        return known[1]

    def _digest(self, path: str) -> tuple[str, bytes | None]:
        """The SHA-256 of the file, and its bytes when they were read: not while its stat is the one it had when
        last read, unless it was written within `RECENT` seconds of that read (as `engine_fingerprint` does).
        Each flake8 file's project loads its context again: reading and hashing it was 2-3 % of the plugin's
        time on `transformers/models`, whose files often have the whole package as context."""
        stat = os.stat(path)
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_ctime_ns)
        known = self._stamps.get(path)
        if known is not None and known[0] == stamp:
            return known[1], None
        read_at = time.time()
        data = Path(path).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if read_at - stat.st_mtime >= RECENT and read_at - stat.st_ctime >= RECENT:
            self._stamps[path] = (stamp, digest)
        return digest, data

    def _load(self, path: str, module: str, data: bytes) -> FileIndex | None:
        key = self._key(path, module, data, DEFAULT_LIMITS)
        found = self._read(key)  # written whole (renamed into place): read without the lock, as most loads are
        if found is not None:
            return found
        try:
            text = decode(data)
        except (UnicodeDecodeError, SyntaxError, LookupError):
            return None
        with self._parsing(key):  # another process parsing the same file (flake8's workers) writes it first
            found = self._read(key)
            if found is not None:
                return found
            parsed = _guarded_index(path, module, text, DEFAULT_LIMITS)
            if isinstance(parsed, Finding):
                return None
            self._write(key, self._dump(parsed))
            return parsed

    @contextmanager
    def _parsing(self, key: str) -> Iterator[None]:
        """Held while this process parses the file of `key` for the cache: one of 64 lock files. Not in a
        child forked while the parent holds one (`guard.run_bounded`), which could wait for it forever."""
        if self.folder is None or self._secret is None or os.getpid() != self._pid:
            yield
            return
        try:
            make_cache_folder(self.folder)
            stream = (self.folder / f"lock-{int(key[:4], 16) % 64}").open("a")
        except OSError:
            yield
            return
        with stream:
            fcntl.flock(stream, fcntl.LOCK_EX)
            yield

    @staticmethod
    def _key(path: str, module: str, data: bytes, limits: Limits) -> str:
        digest = hashlib.sha256(repr((path, module, limits)).encode() + b"\0" + data)
        return digest.hexdigest()

    def _read(self, key: str) -> FileIndex | None:
        if self.folder is None or self._secret is None:
            return None
        try:
            blob = (self.folder / f"{key}.pickle").read_bytes()
        except OSError:
            return None
        signature, payload = blob[:32], blob[32:]
        if not hmac.compare_digest(signature, hmac.digest(self._secret, payload, "sha256")):
            return None
        return self._unpickle(payload)

    @staticmethod
    def _unpickle(payload: bytes) -> FileIndex | None:
        from compile_lint.analysis.packing import deep_recursion

        with deep_recursion():
            try:
                index = pickle.loads(payload)
            except (RecursionError, pickle.UnpicklingError, EOFError, AttributeError, TypeError, ValueError):
                return None
        return index if type(index).__name__ == "FileIndex" else None

    def _dump(self, index: FileIndex) -> bytes | None:
        if self.folder is None or self._secret is None:
            return None
        return _packed(index)

    def _write(self, key: str, payload: bytes | None) -> None:
        if self.folder is None or self._secret is None or payload is None:
            return
        try:
            make_cache_folder(self.folder)
            temporary = self.folder / f"{key}.{os.getpid()}.tmp"
            temporary.write_bytes(hmac.digest(self._secret, payload, "sha256") + payload)
            temporary.replace(self.folder / f"{key}.pickle")
        except OSError:
            pass  # a read-only tree lints fine, just without a cache


_STORE = IndexStore()


def use_index_cache(root: Path | None, torch_version: TorchVersion = NEWEST) -> IndexStore:
    """The store `load_source` reads from: with the disk cache of `root`'s `.compile_lint_cache`, or
    in memory only (None). Parsed files already in memory are kept when the folder stays the same."""
    global _STORE
    folder = None if root is None else cache_folder(root, torch_version) / "index"
    if _STORE.folder != folder:
        _STORE = IndexStore(folder)
    return _STORE


def cache_folder(root: Path, torch_version: TorchVersion) -> Path:
    """Where this version of compile-lint keeps what it cached for `root` (findings and parsed files)."""
    return root / CACHE_DIR / f"{engine_fingerprint()}-torch{label(torch_version)}"


@cache
def secret_key() -> bytes | None:
    """This user's key for the cache's signatures (created once, readable by the user only), or None
    (then parsed files are not cached on disk) if there is no writable place for it."""
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(home) / "compile-lint" / "secret"
    try:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _create_secret(path)
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _create_secret(path: Path) -> None:
    """32 random bytes at `path`, readable by the user only; a key another process made first is kept."""
    temporary = path.with_name(f"secret.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(os.urandom(32))
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def _without_cycle_collection(freeze: bool = False) -> Iterator[None]:
    """Every tree stays alive until the project is done, and the cycle collector would rescan those
    millions of objects again and again (measured: a third of the analysis); they hold no cycles.

    `freeze`, for the command line and flake8's processes, which end after their files: what the block
    allocated leaves the collector's sight for good (`gc.freeze`) instead of being scanned once when
    collection resumes and again at interpreter exit (measured on 10 transformers files: 0.4 s and 2 s
    of a 6.6 s run). Frozen objects are still freed when their last reference goes; a reference cycle
    would not be, and a run leaves none (`nodes.string_value` replaces libcst's `evaluated_value`, whose
    `ast.literal_eval` left one per call). Not for the language server, which runs for hours."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()


def analyze(
    items: list[tuple[str, bytes]],
    options: Options,
    limits: Limits = DEFAULT_LIMITS,
    jobs: int = 1,
    freeze: bool = False,
    share: bool = False,
) -> list[Finding]:
    """Findings of the files as one project (no noqa or select filtering): each file parsed (in `jobs`
    processes, or read from the index cache), then the cross-file phase over all of them. `freeze`: see
    `_without_cycle_collection`; `share`: see `project_findings`."""
    with _without_cycle_collection(freeze):  # also while parsing: the trees parsed so far would be rescanned
        indexes, errors = parse_all(items, limits, jobs)
        return project_findings(indexes, errors, options, share)


def project_findings(
    indexes: list[FileIndex], errors: list[Finding], options: Options, share: bool = False
) -> list[Finding]:
    """`share`: for a process that analyses many projects (the flake8 plugin, one per file), whose summaries of
    the same context functions are then walked once (`analysis/sharing.py`; the findings stay the same)."""
    from compile_lint.project import Project

    shared = _STORE.shared_summaries() if share else None
    try:
        return Project(indexes, options, errors, load_source, shared=shared).findings()
    except RecursionError:
        paths = ", ".join(index.path for index in indexes[:3])
        return [*errors, *(unreadable(i.path, f"too deeply nested to analyse (with {paths})") for i in indexes)]


def read_all(paths: list[str]) -> tuple[list[tuple[str, bytes]], list[Finding]]:
    """(path, bytes) of every file, and a TCL000 finding for each that cannot be read."""
    items: list[tuple[str, bytes]] = []
    errors: list[Finding] = []
    for path in paths:
        try:
            items.append((path, read_linted(path)))
        except OSError as error:
            errors.append(unreadable(path, f"cannot read: {error.strerror or error}"))
        except notebooks.NotebookError as error:
            errors.append(unreadable(path, str(error)))
    return items, errors


def read_linted(path: str) -> bytes:
    """The bytes the analysis reads: the file's, or a notebook's code cells as one Python source."""
    if notebooks.is_notebook(path):
        return notebooks.load(path).text.encode()
    return Path(path).read_bytes()


def parse_all(
    items: list[tuple[str, bytes]], limits: Limits = DEFAULT_LIMITS, jobs: int = 1
) -> tuple[list[FileIndex], list[Finding]]:
    """The index of every file that parses, and a TCL000 finding for each that does not: from the index
    cache (`use_index_cache`) when the file is there, else parsed, in `jobs` processes if there are several.
    Of the files parsed, those another file imports are written to the cache (a later run over that other
    file alone reads them; the rest would cost more to write than they save, the findings cache has them)."""
    store = _STORE
    context = {imported for _, imported in import_edges(items)} if store.folder is not None else set()
    parsed: dict[str, FileIndex | Finding] = {}
    missing: list[tuple[str, bytes]] = []
    for path, data in items:
        found = store.cached(path, data, limits)
        if found is None:
            missing.append((path, data))
        else:
            parsed[path] = found
    if jobs > 1 and len(missing) > 1:
        from compile_lint.workers import map_in_processes  # multiprocessing's imports: only when there is a pool

        jobs_ = [(path, data, limits) for path, data in missing]
        with closing(map_in_processes(_parse_job, jobs_, jobs, chunk=4)) as answers:  # stopped: processes end now
            for (path, data), answer in zip(missing, answers, strict=True):
                parsed[path] = store.add(path, data, limits, answer, path in context)
    else:
        for path, data in missing:
            parsed[path] = store.parse(path, data, limits, path in context)
    results = [parsed[path] for path, _ in items]
    return [r for r in results if not isinstance(r, Finding)], [r for r in results if isinstance(r, Finding)]


def _parse_job(job: tuple[str, bytes, Limits]) -> Finding | bytes | None:
    """In a worker: the file's TCL000 finding, or its index packed (the parent caches and loads it;
    None: it cannot be pickled, the parent parses it again)."""
    parsed = parse_bytes(*job)
    return parsed if isinstance(parsed, Finding) else _packed(parsed)


def _packed(index: FileIndex) -> bytes | None:
    """The index as the cache stores it (`packing`), or None if it cannot be pickled."""
    from compile_lint.analysis.packing import pack_index

    try:
        return pack_index(index)
    except (RecursionError, pickle.PicklingError, TypeError):
        return None


def build_project(paths: list[str], config: Config) -> Project:
    """The project of these paths, for what needs more than findings (confirm's targets, --show-regions)."""
    from compile_lint.project import Project

    files, unlisted = find_files(paths, config)
    items, unreadable_files = read_all(files)
    indexes, errors = parse_all(items, limits_of(config))
    return Project(indexes, options_of(config), unlisted + unreadable_files + errors, load_source)


# -- import edges -----------------------------------------------------------------------------------
def import_edges(items: list[tuple[str, bytes]]) -> Iterator[tuple[str, str]]:
    """(importer, imported) for each import statement of a file naming another file of `items` (as written
    at the start of a line: a quick scan of the text, not a parse)."""
    modules = {module_name(path): path for path, _ in items}
    for path, data in items:
        text = data.decode("utf-8", errors="replace")
        own = module_name(path)
        for match in IMPORTS.finditer(text):
            written = match.group(1) or match.group(2)
            if written.startswith("."):
                written = relative_module(own, path.endswith("__init__.py"), written)
            for candidate in prefixes(written):
                other = modules.get(candidate)
                if other is not None:
                    yield path, other


def prefixes(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


# -- the cache ---------------------------------------------------------------------------------------
RECENT = 2.0  # seconds: a file written this recently may be written again with the same mtime (coarse clocks)


@cache
def engine_fingerprint() -> str:
    """Changes whenever compile-lint's own code or data does, so stale cache entries are never used: the
    version, where the package is, and each file's name, size and mtime (in nanoseconds), the stamp Python
    itself trusts (in seconds) to run a module's cached bytecode; an editable install edited in place changes
    them. A file written in the last `RECENT` seconds is hashed too: a second edit within the filesystem's
    clock tick would keep its stamp. Stats instead of reading every file (a tenth of a warm run). Python's
    version (its parser decides which files are syntax errors) and libcst's install (its stamp) count too."""
    libcst = importlib.util.find_spec("libcst")  # found, not imported
    parser = os.stat(libcst.origin) if libcst is not None and libcst.origin else None
    installed = f"{parser.st_size}\0{parser.st_mtime_ns}" if parser else ""
    return folder_fingerprint(os.path.dirname(__file__), f"{sys.version}\0{installed}")


def folder_fingerprint(folder: str, dependencies: str = "") -> str:
    """`engine_fingerprint` of the package in `folder`, run with `dependencies` (their versions)."""
    digest = hashlib.sha256(f"{__version__}\0{folder}\0{dependencies}".encode())
    now = time.time()
    for entry in sorted(_package_files(folder), key=lambda e: e.path):
        stat = entry.stat()
        digest.update(f"\0{entry.path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
        if now - stat.st_mtime < RECENT:  # or in the future
            digest.update(Path(entry.path).read_bytes())
    return digest.hexdigest()[:16]


def _package_files(folder: str) -> Iterator[os.DirEntry[str]]:
    """Every file under the package's folder but compiled bytecode."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir():
                if entry.name != "__pycache__":
                    yield from _package_files(entry.path)
            elif entry.is_file():
                yield entry


class RunCache:
    """The findings of a whole run, keyed by every linted file's path and bytes, the options and the
    engine; valid while the files it read from (imported, not linted) keep their bytes."""

    def __init__(self, root: Path, torch_version: TorchVersion) -> None:
        self.folder = cache_folder(root, torch_version)

    def key(self, items: list[tuple[str, bytes]], options: Options, limits: Limits = DEFAULT_LIMITS) -> str:
        digest = hashlib.sha256(repr((sorted(asdict(options).items()), limits)).encode())
        for path, data in items:
            digest.update(path.encode() + b"\0" + hashlib.sha256(data).digest())
        return digest.hexdigest()

    def get(self, key: str) -> list[Finding] | None:
        """The entry's findings, or None (then it is rebuilt) if it is missing, truncated, does not fit,
        or a file it read from changed."""
        try:
            entry = json.loads((self.folder / f"{key}.json").read_text())
            sources = json.loads((self.folder / f"{key}.sources").read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(entry, list) or not isinstance(sources, dict) or not unchanged(sources):
            return None
        findings = [_finding_from_json(item) for item in entry]
        return None if None in findings else findings  # type: ignore[return-value]

    def put(self, key: str, findings: list[Finding], sources: dict[str, str]) -> None:
        """Write the entry; `sources`: the SHA-256 of each file the run read from (`IndexStore.sources`)."""
        try:
            make_cache_folder(self.folder)
            for name, text in (
                (f"{key}.sources", json.dumps(sources)),
                (f"{key}.json", json.dumps([asdict(f) for f in findings])),
            ):
                temporary = self.folder / f"{name}.{os.getpid()}.tmp"
                temporary.write_text(text)
                temporary.replace(self.folder / name)
        except OSError:
            pass  # a read-only tree lints fine, just without a cache


def unchanged(sources: Mapping[str, object]) -> bool:
    """Each file has the digest it had ("": it still cannot be read)."""
    for path, digest in sources.items():
        try:
            now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            now = ""
        if now != digest:
            return False
    return True


def make_cache_folder(folder: Path) -> None:
    """`folder` (under `.compile_lint_cache`, which gets a .gitignore of everything); raises OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    top = next(parent for parent in folder.parents if parent.name == CACHE_DIR)
    ignore = top / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by compile-lint\n*\n")


FINDING_FIELDS: dict[str, tuple[type, ...]] = {
    "path": (str,), "line": (int,), "col": (int,), "end_line": (int,), "end_col": (int,), "code": (str,),
    "message": (str,), "gb_codes": (list,), "severity": (str,), "fix": (str,), "status": (str,),
    "function": (str, type(None)), "details": (dict,), "path_condition": (str,), "cell": (int, type(None)),
}  # fmt: skip
CHOICES = {"severity": get_args(Severity), "status": get_args(Status)}


def _finding_from_json(item: object) -> Finding | None:
    """A finding as the cache wrote it, or None if `item` is anything else."""
    if not isinstance(item, dict) or set(item) != set(FINDING_FIELDS):
        return None
    for name, kinds in FINDING_FIELDS.items():
        value = item[name]
        if not isinstance(value, kinds) or isinstance(value, bool) or value not in CHOICES.get(name, (value,)):
            return None
    if not all(isinstance(code, str) for code in item["gb_codes"]):
        return None
    return Finding(**item)


# -- filters -----------------------------------------------------------------------------------------
def suppressed_by_noqa(finding: Finding, lines: list[str]) -> bool:
    if not 0 < finding.line <= len(lines):
        return False
    match = NOQA.search(lines[finding.line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    return codes is None or finding.code in _code_list(codes)


def _code_list(codes: str) -> list[str]:
    return re.split(r"[\s,]+", codes.upper())


def file_noqa(lines: list[str]) -> set[str] | None:
    """Codes `# compile-lint: noqa: ...` lines exempt the whole file from; an empty set exempts it from
    every code; None if there is no such line."""
    exempt: set[str] | None = None
    for line in lines:
        if "compile-lint" in line.lower():
            match = FILE_NOQA.match(line)
            if match is not None:
                codes = match.group("codes")
                if codes is None:
                    return set()
                exempt = (exempt or set()) | set(_code_list(codes))
    return exempt


def exempt_by_file_noqa(code: str, exempt: set[str] | None) -> bool:
    return exempt is not None and (not exempt or code in exempt)


@dataclass
class LintedText:
    """A file's lines as the analysis read them (a notebook's joined cells) and its file-level noqa."""

    lines: list[str]
    exempt: set[str] | None
    notebook: notebooks.NotebookSource | None

    @classmethod
    def read(cls, path: str, data: bytes | None = None) -> LintedText:
        """From `data` (what `read_linted` returned) if given, else from the file; empty if unreadable."""
        notebook = None
        try:
            if notebooks.is_notebook(path):
                notebook = notebooks.load(path)
                text = notebook.text
            else:
                text = decode(data) if data is not None else read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError, notebooks.NotebookError):
            text = ""
        lines = source_lines(text)
        return cls(lines, file_noqa(lines), notebook)


def apply_filters(
    findings: list[Finding], config: Config, items: Iterable[tuple[str, bytes]] | None = None
) -> list[Finding]:
    """What the user sees: selected codes, minus `noqa` (line and file level); plus, for the files in
    `items` (path and what `read_linted` returned), a TCL902 for each noqa code that suppressed nothing;
    notebook findings moved onto their cells; sorted."""
    given = dict(items or ())
    texts: dict[str, LintedText] = {}

    def text_of(path: str) -> LintedText:
        if path not in texts:
            texts[path] = LintedText.read(path, given.get(path))
        return texts[path]

    used: dict[str, set[tuple[int, str]]] = {}
    kept: list[Finding] = []
    for finding in findings:
        if not config.is_selected(finding.code, finding.path):
            continue
        text = text_of(finding.path)
        if exempt_by_file_noqa(finding.code, text.exempt):
            continue
        if suppressed_by_noqa(finding, text.lines):
            used.setdefault(finding.path, set()).add((finding.line, finding.code))
        else:
            kept.append(finding)
    for path in given:
        if config.is_selected(UNUSED_NOQA, path):
            text = text_of(path)
            for unused in unused_noqa(path, text.lines, used.get(path, set()), config):
                if not exempt_by_file_noqa(unused.code, text.exempt) and not suppressed_by_noqa(unused, text.lines):
                    kept.append(unused)
    placed = [_on_cells(finding, text_of(finding.path).notebook) for finding in kept]
    return sorted(placed, key=lambda f: f.sort_key)


def _on_cells(finding: Finding, notebook: notebooks.NotebookSource | None) -> Finding:
    return finding if notebook is None else notebooks.to_cells(finding, notebook)


def unused_noqa(path: str, lines: list[str], used: set[tuple[int, str]], config: Config) -> list[Finding]:
    """TCL902 for each line whose `# noqa: ...` names a TCL code that suppressed nothing there: a selected
    code with no finding, or an unknown code. Other tools' codes and bare `# noqa` are left alone."""
    from compile_lint.rules import rule_by_code

    rule = rule_by_code(UNUSED_NOQA)
    assert rule is not None
    found: list[Finding] = []
    for number, line in enumerate(lines, start=1):
        match = NOQA.search(line) if "noqa" in line.lower() else None
        if match is None or match.group("codes") is None:
            continue
        listed = [code for code in _code_list(match.group("codes")) if code.startswith("TCL") and code != rule.code]
        unknown = [code for code in listed if rule_by_code(code) is None]
        unused = [
            code for code in listed
            if code not in unknown and (number, code) not in used and config.is_selected(code, path)
        ]  # fmt: skip
        if unused or unknown:
            parts = [f"unused: {', '.join(unused)}"] if unused else []
            parts += [f"unknown: {', '.join(unknown)}"] if unknown else []
            message = f"{rule.summary} ({'; '.join(parts)})"
            start, end = match.span()
            finding = Finding(path, number, start + 1, number, end + 1, rule.code, message, severity=rule.severity)
            finding.fix, finding.details = rule.fix, {"unused": unused, "unknown": unknown}
            found.append(finding)
    return found


def lint_source(
    text: str, path: str = "<source>", flags: set[str] | None = None, torch_version: TorchVersion = NEWEST
) -> list[Finding]:
    """Findings for one file's text on its own (no noqa or select filtering): for the flake8
    plugin, which has read the file already, and for the rules' own examples."""
    from compile_lint.project import Project

    parsed = parse_source(path, text)
    if isinstance(parsed, Finding):
        return [parsed]
    options = Options(flags=set(flags or ()), torch_version=torch_version)
    return Project([parsed], options, (), load_source).findings()


def lint(paths: list[str], config: Config, jobs: int = 1, use_cache: bool = True) -> LintResult:
    files, unlisted = find_files(paths, config)
    options, limits = options_of(config), limits_of(config)
    items, unread = read_all(files)
    root = config.root if use_cache else None
    findings, cached = cached_analysis(items, options, limits, root, jobs, freeze=True)  # the CLI's run ends
    return LintResult(apply_filters(unlisted + unread + findings, config, items), len(files), len(items) * cached)


def cached_analysis(
    items: list[tuple[str, bytes]],
    options: Options,
    limits: Limits,
    root: Path | None,
    jobs: int = 1,
    freeze: bool = False,
    share: bool = False,
) -> tuple[list[Finding], bool]:
    """`analyze`, answered from the findings cache of `root` (None: no cache) when the files and every file
    the analysis read from are unchanged; and whether it was. Shared by the CLI and the flake8 plugin."""
    store = RunCache(root, options.torch_version) if root is not None else None
    key = store.key(items, options, limits) if store else ""
    findings = store.get(key) if store else None
    if findings is not None:
        return findings, True
    indexes = use_index_cache(root, options.torch_version)
    indexes.sources.clear()
    findings = analyze(items, options, limits, jobs, freeze, share)
    if store is not None:
        store.put(key, findings, dict(indexes.sources))
    return findings, False
