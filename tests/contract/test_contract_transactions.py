"""Transactions, the partition side, on every architecture: transactional batches stay
invisible to read_committed consumers until their marker, an aborted transaction's records are
listed for the client to drop, and a committed one's are read (docs/transactions.md).

The transaction coordinator is not served yet, so the test plays it: it writes the batches a
transactional producer writes (the transactional bit, a producer id and epoch) and sends the
WriteTxnMarkers a coordinator sends. What reads them is real: the raw Fetch and ListOffsets
answers, and confluent-kafka consumers at both isolation levels.
"""

from __future__ import annotations

import uuid

import confluent_kafka as ck
import pytest

from brokers.core.errors import InvalidProducerEpoch
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.init_producer_id import InitProducerIdRequest
from brokers.core.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from brokers.core.protocol.messages.transactions import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from brokers.core.protocol.records import decode_records, iter_batches
from tests.contract.test_contract_semantics import leader_of
from tests.support.ops import connect, create_everywhere, fetch, produce
from tests.support.record_builder import build_batch

pytestmark = pytest.mark.integration
READ_COMMITTED = 1


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def producer_id(broker) -> int:
    with connect(broker) as c:
        init = c.request(ApiKey.INIT_PRODUCER_ID, 1, InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=60_000))
    assert init.error_code == 0
    return init.producer_id


def marker(broker, topic: str, pid: int, epoch: int, commit: bool) -> int:
    with connect(broker) as c:
        res = c.request(ApiKey.WRITE_TXN_MARKERS, 0, WriteTxnMarkersRequest(markers=[
            WritableTxnMarker(producer_id=pid, producer_epoch=epoch, transaction_result=commit,
                              topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                              coordinator_epoch=0)]))
    return res.markers[0].topics[0].partitions[0].error_code


def latest(broker, topic: str, isolation_level: int) -> int:
    with connect(broker) as c:
        res = c.request(ApiKey.LIST_OFFSETS, 5, ListOffsetsRequest(
            replica_id=-1, isolation_level=isolation_level, topics=[ListOffsetsTopic(
                name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
    return res.topics[0].partitions[0].offset


def consume(cluster, topic: str, isolation: str, want: int) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": fresh("g"),
                            "auto.offset.reset": "earliest", "isolation.level": isolation,
                            "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, 0)])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) >= want and msg is None:
                break
    finally:
        consumer.close()
    return got


def test_read_committed_sees_committed_transactions_only(cluster):
    topic = fresh("txn")
    create_everywhere(cluster.brokers, topic, 1)
    leader = leader_of(cluster, topic)
    aborting, committing = producer_id(leader), producer_id(leader)

    def txn_batch(pid: int, seq: int, values: list[bytes]) -> bytes:
        return build_batch([(None, v) for v in values], producer_id=pid, producer_epoch=0,
                           base_sequence=seq, transactional=True)

    assert produce(leader, topic, 0, txn_batch(aborting, 0, [b"a0", b"a1"]), -1).error_code == 0
    assert produce(leader, topic, 0, txn_batch(committing, 0, [b"c0"]), -1).error_code == 0
    assert produce(leader, topic, 0, build_batch([(None, b"plain")]), -1).error_code == 0
    assert produce(leader, topic, 0, txn_batch(aborting, 2, [b"a2"]), -1).error_code == 0

    # Both transactions open: read_committed stops at the first one's first offset.
    part = fetch(leader, topic, 0, 0, READ_COMMITTED)
    assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 5, 0)
    assert bytes(part.records) == b""
    assert latest(leader, topic, READ_COMMITTED) == 0 and latest(leader, topic, 0) == 5
    assert fetch(leader, topic, 0, 0).last_stable_offset == 0  # reported at either level

    assert marker(leader, topic, aborting, 0, commit=False) == 0  # offset 5
    part = fetch(leader, topic, 0, 0, READ_COMMITTED)
    assert (part.high_watermark, part.last_stable_offset) == (6, 2)  # c0 still open
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(aborting, 0)]
    assert max(h.last_offset for h in iter_batches(part.records)) < 2

    assert marker(leader, topic, committing, 0, commit=True) == 0  # offset 6
    part = fetch(leader, topic, 0, 0, READ_COMMITTED)
    assert (part.high_watermark, part.last_stable_offset) == (7, 7)
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(aborting, 0)]
    assert [r.value for r in decode_records(part.records)][:5] == [
        b"a0", b"a1", b"c0", b"plain", b"a2"]

    # A zombie's marker (an older epoch) is fenced and writes nothing.
    assert marker(leader, topic, committing, 0, commit=True) == 0
    bumped = build_batch([(None, b"x")], producer_id=committing, producer_epoch=1,
                         base_sequence=0, transactional=True)
    assert produce(leader, topic, 0, bumped, -1).error_code == 0
    assert marker(leader, topic, committing, 0, commit=False) == InvalidProducerEpoch.code
    assert marker(leader, topic, committing, 1, commit=False) == 0

    # Real clients: librdkafka drops the aborted records and the markers itself.
    assert consume(cluster, topic, "read_committed", 2) == [b"c0", b"plain"]
    assert consume(cluster, topic, "read_uncommitted", 6) == [
        b"a0", b"a1", b"c0", b"plain", b"a2", b"x"]
