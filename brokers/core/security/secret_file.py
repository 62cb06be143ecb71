"""Reading a file that holds secrets (a cluster key, passwords).

A secret anyone on the host can read protects nothing, so a file open to group or others is
refused, as is anything but a regular file and a file larger than a secret has reason to be.
Every problem is one ``UserError`` line naming the file and what it was meant to be.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from brokers.core.errors import UserError


def read_secret_file(path: str | Path, what: str, max_bytes: int) -> bytes:
    """The file's bytes; ``what`` names it in errors ("gossip key file")."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError as exc:
        raise UserError(f"{what} {p}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{what} {p} is not a regular file")
        if st.st_mode & 0o077:
            raise UserError(f"{what} {p} is open to other users (mode "
                            f"{stat.S_IMODE(st.st_mode):04o}); chmod 600 it")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise UserError(f"{what} {p}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UserError(f"{what} {p} is larger than {max_bytes} bytes; is it the right file?")
    return data
