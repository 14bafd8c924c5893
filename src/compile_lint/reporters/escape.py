"""Terminal control characters escaped for human-readable output, as the JSON reporter escapes them.

A source line, a file name, a target's label or a user's exception message can hold `ESC ] 0 ; ... BEL`
(retitles the terminal), `ESC [ 2 J` (clears it) or a carriage return (overwrites what was printed);
printed raw they act on the user's terminal instead of showing. Tab and newline stay as they are."""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1


def printable(text: str) -> str:
    """`text` with each control character written as `\\u001b` (JSON's spelling)."""
    return CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
