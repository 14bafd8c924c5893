"""The server's stdin, framed so one malformed message cannot wedge it.

pygls reads header lines until a blank one and needs `Content-Length: N` among them; a header block
without a valid one is skipped, but its body (which ends without a newline) is then read as part of the
next header line, and every message after it is misread in the same way. Here such a block is answered
with a JSON-RPC parse error (id null, as JSON-RPC prescribes when the id cannot be read), and the stream
is skipped to the next `Content-Length:` header, so the messages after it are served."""

from __future__ import annotations

import json
import re
import sys
from typing import BinaryIO

CONTENT_LENGTH = re.compile(rb"content-length:\s*(\d+)\s*", re.IGNORECASE)
NEXT_HEADER = re.compile(rb"content-length:", re.IGNORECASE)


class FramedStdin:
    """What pygls reads from (readline for headers, read(n) for a body): each header block as
    `Content-Length: N`, then a blank line; a malformed block is answered on `replies` and dropped."""

    def __init__(self, stream: BinaryIO, replies: BinaryIO) -> None:
        self.stream = stream
        self.replies = replies
        self.pending: list[bytes] = []
        self.carried = b""  # the start of the next header block, found glued to a skipped body

    def readline(self) -> bytes:
        if self.pending:
            return self.pending.pop(0)
        block: list[bytes] = []
        while True:
            line, self.carried = (self.carried, b"") if self.carried else (self.stream.readline(), b"")
            if not line:
                return b""  # end of input
            if line.strip():
                block.append(line)
                continue
            if not block:
                continue  # a blank line between messages
            length = next((m for m in map(CONTENT_LENGTH.fullmatch, block) if m), None)
            if length is not None:
                self.pending = [b"\r\n"]
                return b"Content-Length: %d\r\n" % int(length.group(1))
            self._reject(block)
            block = []
            self._skip_body()

    def read(self, size: int) -> bytes:
        return self.stream.read(size)

    def _skip_body(self) -> None:
        """Drop the malformed message's body: everything up to the next `Content-Length:`."""
        while line := self.stream.readline():
            found = NEXT_HEADER.search(line)
            if found:
                self.carried = line[found.start() :]
                return

    def _reject(self, block: list[bytes]) -> None:
        shown = b"".join(block).decode("utf-8", "replace").strip()
        message = f"malformed message header (no valid Content-Length): {shown[:200]!r}; message skipped"
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": message}})
        frame = f"Content-Length: {len(body.encode())}\r\n\r\n{body}".encode()
        self.replies.write(frame)  # one write: the buffered stream's lock keeps pygls's replies whole
        self.replies.flush()
        print(f"compile-lint lsp: {message}", file=sys.stderr)
