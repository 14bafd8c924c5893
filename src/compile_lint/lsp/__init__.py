"""`compile-lint lsp`: a language server on stdin/stdout (the static pass only; torch is never imported).

pygls is an optional dependency (`pip install 'compile-lint[lsp]'`): only `main` imports the server, so
`compile-lint` works without it and says what to install."""

from __future__ import annotations

import sys

USAGE = "usage: compile-lint lsp [--stdio]"
NEEDS = ("pygls", "lsprotocol")


def main(argv: list[str]) -> int:
    if argv not in ([], ["--stdio"]):  # editors' clients add `--stdio`; it is the only transport
        print(USAGE, file=sys.stderr)
        return 2
    try:
        from compile_lint.lsp.server import create_server
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] not in NEEDS:
            raise
        print("compile-lint: the language server needs pygls: pip install 'compile-lint[lsp]'", file=sys.stderr)
        return 2
    from compile_lint.lsp.framing import FramedStdin

    create_server().start_io(FramedStdin(sys.stdin.buffer, sys.stdout.buffer), sys.stdout.buffer)  # type: ignore[arg-type]
    return 0
