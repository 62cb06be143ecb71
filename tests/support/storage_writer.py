"""A child program for the storage crash test: append deterministic batches until killed.

``python -m tests.support.storage_writer DIRECTORY`` opens the partition log in DIRECTORY under
the ``every_batch`` flush policy (recovering whatever a previous writer left), prints
``ready <next batch number>``, then appends ``batch_for(i)`` for i = next, next + 1, ... and
prints each acknowledged base offset only after ``append()`` returned, i.e. after fdatasync. The
parent (tests/integration/test_storage_crash.py) kills it with SIGKILL and checks that every
printed offset survived.
"""

from __future__ import annotations

import sys
from pathlib import Path

from brokers.core.config import FlushMode, FlushPolicy, StorageConfig
from brokers.core.storage import PartitionLog
from tests.support.batches import build_batch

RECORDS_PER_BATCH = 3
# Small segments and a dense index, so the kills land near segment rolls.
CONFIG = dict(segment_bytes=64 * 1024, index_interval_bytes=1024)


def batch_for(i: int) -> bytes:
    """Batch number i: fixed record count (offset = 3 i), varying sizes and contents."""
    size = 50 + (i * 7919) % 1500
    return build_batch(
        [f"{i}:{j}:".encode() + bytes([(i + j) % 256]) * size for j in range(RECORDS_PER_BATCH)],
        base_timestamp=1_700_000_000_000 + i,
    )


def main(directory: Path) -> None:
    log = PartitionLog.open(directory, StorageConfig(
        flush=FlushPolicy(FlushMode.EVERY_BATCH), **CONFIG))
    assert log.log_end_offset % RECORDS_PER_BATCH == 0, log.log_end_offset
    i = log.log_end_offset // RECORDS_PER_BATCH
    print("ready", i, flush=True)
    while True:
        r = log.append(batch_for(i))
        print(r.base_offset, flush=True)
        i += 1


if __name__ == "__main__":
    main(Path(sys.argv[1]))
