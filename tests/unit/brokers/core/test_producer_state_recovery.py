"""The idempotence table rebuilt from a real segment log after a restart (header scan only)."""

from pathlib import Path

import pytest

from brokers.core.config import StorageConfig
from brokers.core.errors import OutOfOrderSequenceNumber
from brokers.core.logs import NullPartitionLog, stored_batch_headers
from brokers.core.producer_state import ProducerStates
from brokers.core.storage import PartitionLog
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.filesystem


def idempotent(pid: int, seq: int, n: int, epoch: int = 0) -> bytes:
    return build_batch([(None, f"{pid}-{seq + i}".encode()) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_a_restarted_partition_still_knows_its_producers_last_batches(tmp_path: Path) -> None:
    config = StorageConfig(segment_bytes=1024)  # several segments: the scan crosses them
    log = PartitionLog.open(tmp_path / "t-0", config)
    states = ProducerStates(stored_batch_headers)
    sent: dict[int, list[tuple[int, int, int]]] = {1: [], 2: []}
    for i in range(40):
        pid = 1 + i % 2
        seq = sum(n for _, n, _ in sent[pid])
        n = 1 + i % 3
        table = states.get("t", 0, log)
        assert table.check(pid, 0, seq, n - 1) is None
        base = log.append(idempotent(pid, seq, n)).base_offset
        table.record(pid, 0, seq, n - 1, base)
        sent[pid].append((seq, n, base))
    log.append(build_batch([(None, b"plain")]))  # a non-idempotent batch in between
    assert log.segment_count > 1
    log.close()

    reopened = PartitionLog.open(tmp_path / "t-0", config)
    table = ProducerStates(stored_batch_headers).get("t", 0, reopened)
    for pid, batches in sent.items():
        for seq, n, base in batches[-5:]:
            assert table.check(pid, 0, seq, n - 1) == base  # a retry after the restart
        with pytest.raises(OutOfOrderSequenceNumber):
            table.check(pid, 0, sum(n for _, n, _ in batches) + 7, 0)
    reopened.close()


def test_the_null_sink_has_nothing_to_scan() -> None:
    log = NullPartitionLog()
    log.append(idempotent(1, 0, 3))
    assert list(stored_batch_headers(log)) == []
