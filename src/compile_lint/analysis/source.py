"""Reading Python source as Python does: the encoding comes from the BOM or coding cookie."""

from __future__ import annotations

import tokenize
from pathlib import Path


def encoding_of(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    return encoding


def decode(data: bytes) -> str:
    return data.decode(encoding_of(data))


def read_source(path: str) -> str:
    return decode(Path(path).read_bytes())
