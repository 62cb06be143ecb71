"""The control channel of a process twinbench runs on another host: JSON lines over the SSH
session's stdin (from the driver) and one of its output streams (to the driver).

Both remote programs (``keeper.py``, ``worker.py``) obey the same lifetime rule, which is what
guarantees that nothing twinbench starts on a host outlives the run there:

* the driver writes something (at least ``{"op": "ping"}``) every ``HEARTBEAT_S``;
* end of input (the driver closed the session, or its process died and sshd closed it) or
  silence for ``--watchdog-s`` (the driver's host or the link vanished: no end of input ever
  arrives) stops the program and everything it started.

This module holds the pieces both ends share: the message encoding and the watchdog timing.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import IO, Any

# How often the driver proves it is alive on every remote session.
HEARTBEAT_S = 1.0
# How long a remote program waits without a word from the driver before it stops everything
# (the driver passes the hosts file's watchdog_s).
WATCHDOG_S = 30.0


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def decode(line: bytes | str) -> dict[str, Any]:
    """One message; ValueError when the line is not one (a traceback, a stray print)."""
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError(f"not a message: {line!r}")
    return message


def emit(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(encode(message))
    stream.flush()


class Inbox:
    """Blocking reader of the driver's messages on a file descriptor, with the watchdog."""

    def __init__(self, fd: int, watchdog_s: float) -> None:
        self.fd = fd
        self.watchdog_s = watchdog_s
        self.last_heard = time.monotonic()
        self._pending = b""
        self.closed = False

    def next(self, timeout_s: float) -> dict[str, Any] | None:
        """The next message within ``timeout_s``, else None. ``closed`` becomes true at end of
        input; ``silent()`` says the watchdog expired."""
        if b"\n" not in self._pending and not self.closed:
            ready, _, _ = select.select([self.fd], [], [], timeout_s)
            if ready:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    self.closed = True
                self._pending += chunk
        if b"\n" not in self._pending:
            return None
        line, self._pending = self._pending.split(b"\n", 1)
        self.last_heard = time.monotonic()
        try:
            return decode(line)
        except ValueError:
            return {"op": "invalid", "line": line.decode(errors="replace")[:200]}

    def silent(self) -> bool:
        return time.monotonic() - self.last_heard > self.watchdog_s
