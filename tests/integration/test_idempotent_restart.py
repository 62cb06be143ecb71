"""Idempotent produce across a broker restart: the producer table comes back from the log.

A real broker process is stopped (SIGKILL, so nothing is written at shutdown that a crash would
not write) and started again on the same data directory; the producer's retry of its last batch
must still be answered with the first copy's offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.errors import OutOfOrderSequenceNumber
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.init_producer_id import InitProducerIdRequest
from tests.support.brokers import start_single_broker
from tests.support.ops import connect, create_topic, fetch_values, produce
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration


def test_a_retry_after_a_broker_crash_and_restart_is_still_a_duplicate(tmp_path: Path) -> None:
    data = tmp_path / "broker"
    broker = start_single_broker(data, flush="every_batch")
    try:
        assert create_topic(broker, "idem", 1).error_code == 0
        with connect(broker) as c:
            init = c.request(ApiKey.INIT_PRODUCER_ID, 1, InitProducerIdRequest(
                transactional_id=None, transaction_timeout_ms=60_000))
        pid, epoch = init.producer_id, init.producer_epoch
        batches = [build_batch([(None, f"v{i}".encode())], producer_id=pid,
                               producer_epoch=epoch, base_sequence=i) for i in range(8)]
        for i, b in enumerate(batches):
            assert produce(broker, "idem", 0, b).base_offset == i
        broker.process.kill()
        broker.process.wait(10)
        broker = start_single_broker(data, flush="every_batch")
        for i in (3, 7):  # within the last 5 batches
            again = produce(broker, "idem", 0, batches[i])
            assert (again.error_code, again.base_offset) == (0, i)
        gap = build_batch([(None, b"x")], producer_id=pid, producer_epoch=epoch,
                          base_sequence=20)
        assert produce(broker, "idem", 0, gap).error_code == OutOfOrderSequenceNumber.code
        nxt = build_batch([(None, b"v8")], producer_id=pid, producer_epoch=epoch,
                          base_sequence=8)
        assert produce(broker, "idem", 0, nxt).base_offset == 8
        assert fetch_values(broker, "idem", 0) == [f"v{i}".encode() for i in range(9)]
    finally:
        broker.process.stop()
