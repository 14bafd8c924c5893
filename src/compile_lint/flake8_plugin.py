"""flake8 plugin: the static engine on the lines flake8 has already read, reported as TCLnnn.

flake8 lints file by file, so a helper is a compiled region here only when this file shows it
(a `forward`, an `@torch.compile` function, or a function reached from one in the same file).
Helpers reached from another file need `compile-lint` itself, which sees the whole project.
flake8 does `--select`, `--ignore`, `--extend-select`, per-file-ignores and `# noqa` itself; from
`[tool.compile-lint]` the plugin takes only what changes the analysis: the capture flags and
`extra-regions`. The opt-in codes (TCL703, TCL902) join flake8's default ignore list, so they are
reported only when `--select`/`--extend-select` names them. The findings come from the same caches as
`compile-lint`'s (`.compile_lint_cache` of the project's root): a file unchanged since it was last linted, with
every file it imports unchanged, is answered from the findings cache without parsing anything (libcst is not
even imported); otherwise the files it imports are read from the index cache, so each is parsed once for every
flake8 process and run, not once per linted file, and what their functions return is summarised once per process
too: a file's project takes a summary another file's project made when its program answers that summary's
questions alike (`analysis/sharing.py`), so a file's findings are the same whatever flake8 linted before it.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from compile_lint import __version__
from compile_lint.analysis.source import decode
from compile_lint.config import OPT_IN, Config, ConfigError, load_config
from compile_lint.engine import (
    cached_analysis,
    limits_of,
    options_of,
    parse_source,
    project_findings,
    use_index_cache,
)
from compile_lint.finding import Finding

Error = tuple[int, int, str, type]


@cache
def _config_for(folder: Path) -> Config:
    return load_config([str(folder)])


def flake8_message(finding: Finding) -> str:
    predicted = f" [{', '.join(finding.gb_codes)}]" if finding.gb_codes else ""
    return f"{finding.code} {finding.message}{predicted}"


class CompileLintPlugin:
    name = "compile-lint"
    version = __version__

    # flake8 picks a plugin's kind from its parameter names: `tree` makes this a per-file plugin.
    # The tree itself is unused: the rules need libcst, which parses `lines`.
    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        """flake8 calls this once with its option manager: off by default, like `compile-lint` itself."""
        option_manager.extend_default_ignore(sorted(OPT_IN))

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[Error]:
        try:
            config = _config_for(Path(self.filename).resolve().parent)
        except ConfigError as error:  # a flake8 error line, not a traceback from inside flake8
            yield 1, 0, f"TCL000 file not linted: configuration error: {error}", type(self)
            return
        path, text = os.path.normpath(self.filename), "".join(self.lines)
        options, limits = options_of(config), limits_of(config)
        data = _as_read(text)
        if data is not None:  # what `compile-lint` would analyse from a file holding these bytes
            findings, _ = cached_analysis([(path, data)], options, limits, config.root, freeze=True, share=True)
        else:
            use_index_cache(config.root, options.torch_version)
            parsed = parse_source(path, text, limits)
            findings = [parsed] if isinstance(parsed, Finding) else project_findings([parsed], [], options, share=True)
        for finding in sorted(findings, key=lambda f: f.sort_key):
            # flake8 columns are 0-based; it adds 1 when it prints them.
            yield finding.line, finding.col - 1, flake8_message(finding), type(self)


def _as_read(text: str) -> bytes | None:
    """The text as UTF-8 bytes, when the engine reads these bytes back as this very text (not if an
    encoding cookie names another codec and the text is not ASCII): only then can the findings cache
    key on them, shared with `compile-lint`'s runs over the same file."""
    try:
        data = text.encode()
        return data if decode(data) == text else None
    except (UnicodeError, SyntaxError, LookupError):
        return None
