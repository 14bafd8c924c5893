"""`[tool.compile-lint]` in pyproject.toml, found by walking up from the linted paths."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from compile_lint import versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

TOP_KEYS = {
    "select": "list of code prefixes to report (default: all)",
    "ignore": "list of code prefixes not to report",
    "per-file-ignores": "table of glob -> list of code prefixes",
    "extra-regions": "function names or qualified names (`Model.step`) to treat as compiled",
    "exclude-regions": "function or class names never to treat as compiled (e.g. a class wrongly assumed a module)",
    "mode": '"all" (default), "inference" (self.training is False: training-only findings dropped) or "training"',
    "capture-scalar-outputs": "true if the project sets torch._dynamo.config.capture_scalar_outputs",
    "capture-dynamic-output-shape-ops": "true if the project sets capture_dynamic_output_shape_ops",
    "torch-version": 'the torch release the project runs, e.g. "2.14" (default: the installed torch)',
    "confirm": "table of settings for `--confirm`",
    "max-file-seconds": "a file needing longer to parse and analyse alone is reported (TCL000) (default 30)",
    "max-file-mb": "a file needing more memory (MB) to parse and analyse alone is reported (TCL000) (default 1024)",
}
CONFIRM_KEYS = {
    "targets": "list of `module:factory` entries",
    "timeout": "seconds per target",
    "shape": "default input shape for tensor parameters, e.g. [4, 8]",
    "backend": "torch.compile backend (default eager)",
}


Mode = Literal["all", "inference", "training"]
MODES: tuple[str, ...] = get_args(Mode)
TOML_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "table"}


class ConfigError(Exception):
    """A configuration problem the user can fix; its message names the file and key."""


@dataclass
class ConfirmConfig:
    targets: list[str] = field(default_factory=list)
    timeout: float = 120.0
    shape: list[int] = field(default_factory=lambda: [4, 8])
    backend: str = "eager"


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)  # folder of the pyproject.toml, or the cwd
    source: Path | None = None
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    extra_regions: list[str] = field(default_factory=list)
    exclude_regions: list[str] = field(default_factory=list)
    mode: Mode = "all"
    capture_scalar_outputs: bool = False
    capture_dynamic_output_shape_ops: bool = False
    torch_version: str | None = None  # as written; see versions.target_version
    confirm: ConfirmConfig = field(default_factory=ConfirmConfig)
    max_file_seconds: float = 30.0
    max_file_mb: int = 1024

    def flags(self) -> set[str]:
        names = ("capture_scalar_outputs", "capture_dynamic_output_shape_ops")
        return {name for name in names if getattr(self, name)}

    def is_selected(self, code: str, path: str) -> bool:
        if self.select and not code.startswith(tuple(self.select)):
            return False
        if code.startswith(tuple(self.ignore)):
            return False
        relative = _relative(path, self.root)
        for pattern, prefixes in self.per_file_ignores.items():
            if fnmatch.fnmatch(relative, pattern) and code.startswith(tuple(prefixes)):
                return False
        return True


def _relative(path: str, root: Path) -> str:
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: match the path as written
        return Path(path).as_posix()
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.compile-lint]` table, walking up from `start`."""
    folder = start.resolve()
    if folder.is_file():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and "compile-lint" in _read_toml(pyproject).get("tool", {}):
            return pyproject
    return None


def _read_toml(path: Path) -> dict[str, Any]:
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
    config.ignore = _codes(table.get("ignore", []), "ignore", source)
    per_file = _typed(table.get("per-file-ignores", {}), dict, "per-file-ignores", source)
    config.per_file_ignores = {k: _codes(v, f"per-file-ignores.{k}", source) for k, v in per_file.items()}
    config.extra_regions = _typed(table.get("extra-regions", []), list, "extra-regions", source, str)
    config.exclude_regions = _typed(table.get("exclude-regions", []), list, "exclude-regions", source, str)
    mode = _typed(table.get("mode", "all"), str, "mode", source)
    if mode not in MODES:
        raise ConfigError(f"{source}: `mode` must be one of {', '.join(MODES)}, got {mode!r}")
    config.mode = mode
    for key in ("capture-scalar-outputs", "capture-dynamic-output-shape-ops"):
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
    config.confirm = ConfirmConfig(
        targets=_typed(confirm.get("targets", defaults.targets), list, "confirm.targets", source, str),
        timeout=float(_typed(confirm.get("timeout", defaults.timeout), float, "confirm.timeout", source)),
        shape=_typed(confirm.get("shape", defaults.shape), list, "confirm.shape", source, int),
        backend=_typed(confirm.get("backend", defaults.backend), str, "confirm.backend", source),
    )
    return config


def _parse_bounds(table: dict[str, Any], config: Config, source: Path) -> None:
    seconds = float(_typed(table.get("max-file-seconds", config.max_file_seconds), float, "max-file-seconds", source))
    megabytes = _typed(table.get("max-file-mb", config.max_file_mb), int, "max-file-mb", source)
    if seconds <= 0 or megabytes <= 0:
        raise ConfigError(f"{source}: `max-file-seconds` and `max-file-mb` must be > 0")
    config.max_file_seconds, config.max_file_mb = seconds, megabytes
