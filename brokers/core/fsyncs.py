"""Every fsync a broker process makes, counted (``BrokerCounters.fsyncs``).

How often a twin forces data to disk is part of what its design costs (the DSBS offset log, the
segment rolls, the state files of both twins), and it is counted, not timed, so the CI
regression's exact layer can check it per 1,000 records. Segments, state files and the DSBS
offset writer (a thread) all call ``fsync`` or ``fdatasync`` here instead of ``os``.
"""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_count = 0


def fsync(fd: int) -> None:
    """``os.fsync``, counted."""
    os.fsync(fd)
    _tally()


def fdatasync(fd: int) -> None:
    """``os.fdatasync``, counted."""
    os.fdatasync(fd)
    _tally()


def count() -> int:
    """fsyncs and fdatasyncs completed by this process so far."""
    return _count


def _tally() -> None:
    global _count
    # The DSBS offset writer syncs from its own thread; ``+=`` on a global is not atomic, and a
    # lost increment would make a deterministic count flicker. A sync costs milliseconds, the
    # lock nanoseconds.
    with _lock:
        _count += 1
