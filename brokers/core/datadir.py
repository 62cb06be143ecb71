"""A broker's data directory: exclusive use, and what happens when its disk fails.

Exclusive use: an ``flock`` on ``<dir>/.lock``, taken before anything in the directory is read
or rewritten (the entry points take it before they build the coordinator, whose local state lives
there too). Two brokers on one directory would each rewrite files the other has open, and the
one that started first would silently lose what it writes afterwards; the second is refused.

Disk failure: the first failed write, fsync or read of durable state (``fail``) takes the
directory offline for good, as Kafka takes a log directory offline on an IOException and halts
when its last one is gone. Nothing is retried: after a failed fsync the kernel may already have
dropped the dirty pages, so a retry that succeeds would report data durable that is not. The
broker listens (``on_failure``), logs one line and stops; every request that needs the
directory meanwhile gets KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable
from pathlib import Path

from brokers.core.errors import KafkaStorageError, UserError

log = logging.getLogger("twinbench.datadir")

LOCK_NAME = ".lock"


class DataDir:
    def __init__(self, path: Path, lock_name: str = LOCK_NAME) -> None:
        self.path = Path(path)
        self._lock_path = self.path / lock_name
        self._lock_fd = -1
        # The first failure's description; None while the directory is healthy.
        self.offline: str | None = None
        self._listeners: list[Callable[[str], None]] = []

    # --- exclusive use ----------------------------------------------------------------------
    def lock(self) -> DataDir:
        """Create the directory if needed and lock it; UserError when another process holds
        it, KafkaStorageError when the disk refuses."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise KafkaStorageError(f"cannot use data directory {self.path}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(
                f"data directory {self.path} is in use by another process (or another broker "
                f"in this one); give each broker its own data directory"
            ) from None
        self._lock_fd = fd
        return self

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = -1

    @property
    def locked(self) -> bool:
        return self._lock_fd >= 0

    # --- failure ----------------------------------------------------------------------------
    def on_failure(self, listener: Callable[[str], None]) -> None:
        """Call ``listener(reason)`` once, when the directory goes offline."""
        self._listeners.append(listener)
        if self.offline is not None:
            listener(self.offline)

    def fail(self, what: str, exc: BaseException | None = None) -> KafkaStorageError:
        """Record a failure (the first one wins) and return the error to raise for it."""
        reason = f"{what}: {exc}" if exc is not None else what
        if self.offline is None:
            self.offline = reason
            log.critical("data directory %s is offline: %s", self.path, reason)
            for listener in self._listeners:
                listener(reason)
        return KafkaStorageError(f"data directory {self.path} is offline: {self.offline}")

    def check(self) -> None:
        """Raise KAFKA_STORAGE_ERROR when the directory is offline."""
        if self.offline is not None:
            raise KafkaStorageError(f"data directory {self.path} is offline: {self.offline}")
