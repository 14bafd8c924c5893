"""`compile-lint lsp`: a language server on stdin/stdout (the static pass only; torch is never imported).

pygls is an optional dependency (`pip install 'compile-lint[lsp]'`): this module checks for it before
importing the server, so `compile-lint` works without it and says what to install."""

from __future__ import annotations

import sys
from importlib.util import find_spec

USAGE = "usage: compile-lint lsp [--stdio]"


def main(argv: list[str]) -> int:
    if argv not in ([], ["--stdio"]):  # editors' clients add `--stdio`; it is the only transport
        print(USAGE, file=sys.stderr)
        return 2
    if find_spec("pygls") is None:
        print("compile-lint: the language server needs pygls: pip install 'compile-lint[lsp]'", file=sys.stderr)
        return 2
    from compile_lint.lsp.server import create_server

    create_server().start_io()
    return 0
