"""Files replaced whole: written beside the target under a temporary name, then renamed over it, so
whoever reads it (or a run stopped midway) sees the old file or the new one, never a truncated one."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Replace `path` (through a symlink: its target) with `text`, keeping an existing file's mode. What is not a
    regular file (`/dev/null`, a pipe such as `-o >(jq .)`) is written to, never replaced by a file."""
    import tempfile  # ~5 ms of imports (shutil, random): only when writing

    target = os.path.realpath(path)
    if _exists_as_other_than_file(target):
        with open(target, "w", encoding="utf-8") as stream:
            stream.write(text)
        return
    folder, name = os.path.split(target)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _mode(target))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _exists_as_other_than_file(target: str) -> bool:
    try:
        return not stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        return False


def _mode(target: str) -> int:
    """An existing file's permissions; a new file's as `open` would create it (0o666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def destination_problem(path: Path, option: str, folder: bool) -> str:
    """Why `path` cannot receive a report file (`folder`: a folder of files, created if missing), or ""."""
    if folder and path.exists() and not path.is_dir():
        return f"{option} {path}: a file is there; name a folder (it is created if missing)"
    if not folder and path.is_dir():
        return f"{option} {path}: a folder is there; name a file"
    existing = path if folder and path.is_dir() else path.parent
    while not existing.exists() and folder:  # a folder is created with its missing parents
        existing = existing.parent
    if not existing.exists():
        return f"{option} {path}: the folder {existing} does not exist"
    if not existing.is_dir():
        return f"{option} {path}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{option} {path}: cannot write in {existing} (permission denied)"
    if not folder and path.exists() and read_only(path):
        return f"{option} {path}: the file is read-only"
    return ""


def read_only(path: str | Path) -> bool:
    """Not writable by us, or without its owner's write bit (which root could ignore, but should not:
    read-only usually means generated, or not checked out)."""
    return not os.access(path, os.W_OK) or not os.stat(path).st_mode & stat.S_IWUSR
