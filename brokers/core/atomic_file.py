"""Replacing a file atomically, and durably unless the caller says otherwise.

Every file the project rewrites whole (broker state documents, compacted journals, segment
indexes, the harness's state and run-log manifests) goes through ``replace_file``: the content
is written to a temporary file in the same directory, which is then renamed over the target, so a
reader (or a restart after a crash) sees the old content or the new, never a mix. Durable by
default: the temporary file is fsynced before the rename and the directory after it, since
without the second fsync a crash can undo the rename itself. A caller that does not need
durability says so at the call site, with the reason.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from brokers.core import fsyncs

__all__ = ["TMP_SUFFIX", "fsync_dir", "replace_file"]

# Every temporary file ends so; a reader of a directory may delete leftovers of a crash by it.
TMP_SUFFIX = ".tmp"


def fsync_dir(directory: Path) -> None:
    """Make file creations, renames and unlinks in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fsyncs.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes | str, *, sync_file: bool = True,
                 sync_dir: bool = True, mode: int | None = None) -> None:
    """Atomically replace ``path`` with ``data`` (a str is written as UTF-8).

    ``sync_file``: fsync the new content before the rename, so the file is never found empty or
    torn after a crash. ``sync_dir``: fsync the directory after the rename, so the rename itself
    survives a crash; a caller that changes several entries of one directory may pass False and
    fsync it once itself. ``mode``: exact permission bits from creation on (a private key);
    None gives what ``open()`` gives (0o666 less the umask). OSError propagates; the temporary
    file is removed when it can be.
    """
    if sync_dir and not sync_file:
        raise ValueError("syncing the directory without the file would publish unsynced data")
    # Named per process: two processes replacing the same file (two clusters writing the
    # shared state copy) must not write into one temporary file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    content = memoryview(data.encode() if isinstance(data, str) else data)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)  # O_CREAT's mode does not apply to a file left by a crash
            while content:
                content = content[os.write(fd, content):]
            if sync_file:
                fsyncs.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        fsync_dir(path.parent)
