"""`[tool.compile-lint]` in pyproject.toml, found by walking up from the linted paths."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, get_args

from compile_lint import versions

TOP_KEYS = {
    "select": "list of code prefixes to report (default: all)",
    "extend-select": "list of code prefixes to report besides `select` (e.g. the opt-in TCL902)",
    "ignore": "list of code prefixes not to report",
    "per-file-ignores": "table of glob -> list of code prefixes",
    "extra-regions": "function names or qualified names (`Model.step`) to treat as compiled",
    "exclude-regions": "function or class names never to treat as compiled (e.g. a class wrongly assumed a module)",
    "mode": '"all" (default), "inference" (self.training is False: training-only findings dropped) or "training"',
    "capture-scalar-outputs": "true if the project sets torch._dynamo.config.capture_scalar_outputs",
    "capture-dynamic-output-shape-ops": "true if the project sets capture_dynamic_output_shape_ops",
    "half-precision": "true if the project runs models in float16/bfloat16: code behind a dtype check then counts",
    "torch-version": 'the torch release the project runs, e.g. "2.14" (default: the installed torch)',
    "exclude": "list of globs of files and folders not to lint (replaces the default list)",
    "extend-exclude": "list of globs of files and folders not to lint, besides `exclude`",
    "force-exclude": "true to skip excluded files even when they are named explicitly (pre-commit)",
    "confirm": "table of settings for `--confirm`",
    "max-file-seconds": "a file needing longer to parse and analyse alone is reported (TCL000) (default 30)",
    "max-file-mb": "a file needing more memory (MB) to parse and analyse alone is reported (TCL000) (default 1024)",
}
CONFIRM_KEYS = {
    "targets": "list of `module:factory` entries; when given, only these run",
    "auto-targets": "true: also run the compiled regions compile-lint can call itself when targets are named",
    "max-auto-targets": "most automatic targets to run (default 50)",
    "timeout": "seconds per target (default 900); a factory can set its own: `make.compile_lint_timeout = 900`",
    "memory-limit": "GB of memory per worker before its target is stopped (default 70% of the machine's memory)",
    "shape": "default input shape for tensor parameters, e.g. [4, 8]",
    "backend": "torch.compile backend (default eager)",
}


# Folders and files never linted unless `exclude` replaces this list (virtualenvs are always skipped).
DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox", ".nox",
    "*.egg-info", ".ipynb_checkpoints", ".mypy_cache", ".ruff_cache", ".pytest_cache",
)  # fmt: skip
# Codes reported only when a `select`/`extend-select` prefix with a digit names them: TCL902 (unused noqa)
# would flag noqa comments that only a whole-project run needs when pre-commit lints a few files; TCL703
# (an uncaught `raise`) predicts no break on the default path: input validation only fires on bad input.
OPT_IN = frozenset({"TCL703", "TCL902"})
# A project that runs half precision: findings on that path (Cond.HALF_PRECISION) are reported only then.
HALF_PRECISION = "half_precision"

Mode = Literal["all", "inference", "training"]
MODES: tuple[str, ...] = get_args(Mode)
TOML_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "table"}


class ConfigError(Exception):
    """A configuration problem the user can fix; its message names the file and key."""


@dataclass
class ConfirmConfig:
    targets: list[str] = field(default_factory=list)
    auto_targets: bool = False
    max_auto_targets: int = 50
    timeout: float = 900.0  # --confirm of a small real model with inductor on a loaded 2-core CPU; see README
    memory_limit: float | None = None  # GB; None: a share of the machine's memory
    shape: list[int] = field(default_factory=lambda: [4, 8])
    backend: str = "eager"


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)  # folder of the pyproject.toml, or the cwd
    source: Path | None = None
    select: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    extra_regions: list[str] = field(default_factory=list)
    exclude_regions: list[str] = field(default_factory=list)
    mode: Mode = "all"
    capture_scalar_outputs: bool = False
    capture_dynamic_output_shape_ops: bool = False
    half_precision: bool = False  # findings behind `x.dtype == torch.float16` are dropped unless set
    torch_version: str | None = None  # as written; see versions.target_version
    confirm: ConfirmConfig = field(default_factory=ConfirmConfig)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    force_exclude: bool = False
    max_file_seconds: float = 30.0
    max_file_mb: int = 1024

    def flags(self) -> set[str]:
        names = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops", HALF_PRECISION)
        return {name for name in names if getattr(self, name)}

    def is_selected(self, code: str, path: str) -> bool:
        chosen = [*self.select, *self.extend_select]
        if code in OPT_IN:
            if not any(code.startswith(prefix) and prefix[3:] for prefix in chosen):
                return False
        elif self.select and not code.startswith(tuple(chosen)):
            return False
        if code.startswith(tuple(self.ignore)):
            return False
        relative = _relative(path, self.root)
        for pattern, prefixes in self.per_file_ignores.items():
            if fnmatch.fnmatch(relative, pattern) and code.startswith(tuple(prefixes)):
                return False
        return True

    def is_excluded(self, path: str) -> bool:
        """`path` matches `exclude` or `extend-exclude`: a pattern without a slash matches a file or folder
        name anywhere (`build`, `*_pb2.py`), one with a slash the path from the project root (`src/gen/*`)."""
        names, paths = _exclude_matchers((*self.exclude, *self.extend_exclude))
        if names is not None and names.match(os.path.basename(os.path.normpath(path))):
            return True
        return paths is not None and paths.match(_relative(path, self.root)) is not None

    def is_excluded_within(self, path: str) -> bool:
        """`path` or a folder above it (up to the project root) is excluded: for paths named explicitly."""
        candidate = Path(os.path.realpath(path))  # never raises: a symlink loop stays as written
        root = Path(os.path.realpath(self.root))
        while True:
            if self.is_excluded(str(candidate)):
                return True
            if candidate == root or candidate.parent == candidate or root not in candidate.parents:
                return False
            candidate = candidate.parent


@lru_cache(maxsize=64)
def _exclude_matchers(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """One regex for the name patterns and one for the path patterns (discovery asks for every file)."""
    names = [fnmatch.translate(p.strip("/")) for p in patterns if "/" not in p.strip("/")]
    paths = [fnmatch.translate(p.strip("/")) for p in patterns if "/" in p.strip("/")]
    return (re.compile("|".join(names)) if names else None, re.compile("|".join(paths)) if paths else None)


def _relative(path: str, root: Path) -> str:
    """`path` from `root`, as posix, with the folders' symlinks resolved (absolute if outside `root`)."""
    folder, name = os.path.split(os.path.abspath(path))
    try:
        resolved = _resolved(folder) / name
    except (OSError, RuntimeError):  # a symlink loop: match the path as written
        return Path(path).as_posix()
    try:
        return resolved.relative_to(_resolved(str(root))).as_posix()
    except ValueError:
        return resolved.as_posix()


@lru_cache(maxsize=4096)
def _resolved(folder: str) -> Path:
    """Cached: discovery asks for every file of a folder (resolving is a system call per path component)."""
    return Path(folder).resolve()


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.compile-lint]` table, walking up from `start`."""
    folder = Path(os.path.realpath(start))  # a symlink loop named on the command line: the folder it sits in
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        found = pyproject.is_file() and _mentions_compile_lint(pyproject)
        if found and "compile-lint" in _read_toml(pyproject).get("tool", {}):
            return pyproject
    return None


def _mentions_compile_lint(path: Path) -> bool:
    """The file's bytes name compile-lint (a table for it must): only then is TOML parsed, which costs a
    one-file run more than reading the bytes (tomllib's import and its parse)."""
    try:
        return b"compile-lint" in path.read_bytes()
    except OSError:
        return True  # `_read_toml` says what went wrong


def _read_toml(path: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):  # imported here: a run without a pyproject.toml does not need it
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with path.open("rb") as handle:
            document: dict[str, Any] = tomllib.load(handle)
            return document
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: cannot read: {error}") from None


def load_config(paths: list[str], pyproject: Path | None = None) -> Config:
    start = Path(paths[0]) if paths else Path.cwd()
    pyproject = pyproject or find_pyproject(start)
    if pyproject is None:
        return Config()
    table = _read_toml(pyproject).get("tool", {}).get("compile-lint", {})
    return parse_table(_typed(table, dict, "tool.compile-lint", pyproject), pyproject)


def _check_keys(table: dict[str, Any], known: dict[str, str], where: str, source: Path) -> None:
    for key in table:
        if key not in known:
            choices = ", ".join(sorted(known))
            raise ConfigError(f"{source}: unknown key `{key}` in [{where}] (known keys: {choices})")


def _typed(value: Any, kind: type, key: str, source: Path, item: type | None = None) -> Any:
    """`value` if it is a `kind` (of `item`s, for lists); bools never pass as numbers."""
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and item is not None:
        ok = all(isinstance(v, item) and not isinstance(v, bool) for v in value)
    if not ok:
        expected = f"list of {TOML_NAMES[item]}s" if item else TOML_NAMES[kind]
        raise ConfigError(f"{source}: `{key}` must be a {expected}, got {value!r}")
    return value


def _codes(value: Any, key: str, source: Path) -> list[str]:
    """Code prefixes, upper-cased as the CLI does (`tcl1` selects TCL101)."""
    return [code.upper() for code in _typed(value, list, key, source, str)]


def parse_table(table: dict[str, Any], source: Path) -> Config:
    _check_keys(table, TOP_KEYS, "tool.compile-lint", source)
    config = Config(root=source.parent, source=source)
    config.select = _codes(table.get("select", []), "select", source)
    config.extend_select = _codes(table.get("extend-select", []), "extend-select", source)
    config.ignore = _codes(table.get("ignore", []), "ignore", source)
    per_file = _typed(table.get("per-file-ignores", {}), dict, "per-file-ignores", source)
    config.per_file_ignores = {k: _codes(v, f"per-file-ignores.{k}", source) for k, v in per_file.items()}
    config.extra_regions = _typed(table.get("extra-regions", []), list, "extra-regions", source, str)
    config.exclude_regions = _typed(table.get("exclude-regions", []), list, "exclude-regions", source, str)
    if "exclude" in table:
        config.exclude = _typed(table["exclude"], list, "exclude", source, str)
    config.extend_exclude = _typed(table.get("extend-exclude", []), list, "extend-exclude", source, str)
    config.force_exclude = _typed(table.get("force-exclude", False), bool, "force-exclude", source)
    mode = _typed(table.get("mode", "all"), str, "mode", source)
    if mode not in MODES:
        raise ConfigError(f"{source}: `mode` must be one of {', '.join(MODES)}, got {mode!r}")
    config.mode = mode
    for key in ("capture-scalar-outputs", "capture-dynamic-output-shape-ops", "half-precision"):
        setattr(config, key.replace("-", "_"), _typed(table.get(key, False), bool, key, source))
    if "torch-version" in table:
        written = _typed(table["torch-version"], str, "torch-version", source)
        if versions.parse(written) is None:
            raise ConfigError(f'{source}: `torch-version` must look like "2.14", got {written!r}')
        config.torch_version = written
    _parse_bounds(table, config, source)
    confirm = _typed(table.get("confirm", {}), dict, "confirm", source)
    _check_keys(confirm, CONFIRM_KEYS, "tool.compile-lint.confirm", source)
    defaults = ConfirmConfig()
    memory_limit = confirm.get("memory-limit")
    config.confirm = ConfirmConfig(
        targets=_typed(confirm.get("targets", defaults.targets), list, "confirm.targets", source, str),
        auto_targets=_typed(confirm.get("auto-targets", False), bool, "confirm.auto-targets", source),
        max_auto_targets=_positive(confirm, "max-auto-targets", defaults.max_auto_targets, int, source),
        timeout=_positive(confirm, "timeout", defaults.timeout, float, source),
        memory_limit=None if memory_limit is None else _positive(confirm, "memory-limit", 0, float, source),
        shape=_typed(confirm.get("shape", defaults.shape), list, "confirm.shape", source, int),
        backend=_typed(confirm.get("backend", defaults.backend), str, "confirm.backend", source),
    )
    return config


def _positive(table: dict[str, Any], key: str, default: float, kind: type, source: Path) -> Any:
    value = _typed(table.get(key, default), kind, f"confirm.{key}", source)
    if value <= 0:
        raise ConfigError(f"{source}: `confirm.{key}` must be greater than 0, got {value!r}")
    return kind(value)


def _parse_bounds(table: dict[str, Any], config: Config, source: Path) -> None:
    seconds = float(_typed(table.get("max-file-seconds", config.max_file_seconds), float, "max-file-seconds", source))
    megabytes = _typed(table.get("max-file-mb", config.max_file_mb), int, "max-file-mb", source)
    if seconds <= 0 or megabytes <= 0:
        raise ConfigError(f"{source}: `max-file-seconds` and `max-file-mb` must be > 0")
    config.max_file_seconds, config.max_file_mb = seconds, megabytes


@dataclass
class Options:
    """What changes the analysis (the engine's cache keys on it)."""

    flags: set[str] = field(default_factory=set)  # capture flags from the config: they hold for every file
    extra_regions: list[str] = field(default_factory=list)
    exclude_regions: list[str] = field(default_factory=list)
    mode: Mode = "all"
    torch_version: versions.TorchVersion = versions.NEWEST
