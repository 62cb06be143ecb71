"""SIGKILL a writer under every_batch: every acknowledged record survives, in order, nothing extra.

The child appends batch after batch and prints each acked base offset only after append()
returned (i.e. after fdatasync). The parent kills it at a moment chosen by counting acks (never a
sleep), reopens the log (recovery) and compares byte for byte against the deterministic batches
the child was writing. Several rounds, each child resuming from the recovered log end, so the
kill also lands on a child that itself recovered, and small segments make it land near rolls.
"""

from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brokers.core.config import StorageConfig
from brokers.core.storage import PartitionLog
from tests.support.batches import parse_batches, stored_form
from tests.support.storage_writer import CONFIG, RECORDS_PER_BATCH, batch_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


class Child:
    def __init__(self, directory: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.storage_writer", str(directory)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.pending = b""

    def line(self, timeout: float = 30.0) -> str | None:
        """Next stdout line, None at EOF; fails the test if nothing arrives in time."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                pytest.fail(f"child said nothing for {timeout}s; stderr: {self.stderr()}")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def close(self) -> None:
        self.kill()
        self.sel.close()
        self.proc.stdout.close()
        self.proc.stderr.close()


def verify(directory: Path, acked: list[int]) -> int:
    """Reopen; the log must be batches 0..n-1 exactly, with every acked one among them."""
    log = PartitionLog.open(directory, StorageConfig(**CONFIG))
    try:
        data = b""
        off = 0
        while off < log.log_end_offset:
            chunk = bytes(log.read(off, 1 << 20))
            assert chunk, off
            data += chunk
            off = parse_batches(chunk)[-1].last_offset + 1
        batches = parse_batches(data)
        n = len(batches)
        for i, b in enumerate(batches):
            assert b.raw == stored_form(batch_for(i), i * RECORDS_PER_BATCH), f"batch {i} differs"
        assert log.log_end_offset == n * RECORDS_PER_BATCH
        assert acked == [i * RECORDS_PER_BATCH for i in range(len(acked))]
        # Every ack is durable; at most the one append in flight at the kill went further.
        assert len(acked) <= n <= len(acked) + 1, (len(acked), n)
        return n
    finally:
        log.close()


def test_sigkill_under_every_batch_loses_no_acked_record(tmp_path):
    directory = tmp_path / "crash-0"
    rng = random.Random(1234)
    acked: list[int] = []
    for _round in range(4):
        child = Child(directory)
        try:
            ready = child.line()
            assert ready is not None and ready.startswith("ready"), child.stderr()
            # The child resumes exactly where the durable log ends.
            assert int(ready.split()[1]) == len(acked)
            target = len(acked) + rng.randint(40, 160)
            while len(acked) < target:
                line = child.line()
                assert line is not None, child.stderr()
                acked.append(int(line))
            child.kill()
            # Acks printed before the kill but not read yet count too.
            while (line := child.line()) is not None:
                acked.append(int(line))
        finally:
            child.close()
        n = verify(directory, acked)
        # A batch that reached the disk but whose ack died with the child is simply kept;
        # the next child continues after it, so account for it as written.
        acked.extend(i * RECORDS_PER_BATCH for i in range(len(acked), n))
    assert len(list(directory.glob("*.log"))) > 1  # the kills happened across segment rolls
