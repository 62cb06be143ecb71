"""Transactions, the partition side, on every architecture: transactional batches stay
invisible to read_committed consumers until their marker, an aborted transaction's records are
listed for the client to drop, and a committed one's are read (docs/transactions.md).

The first test plays the transaction coordinator, to pin the partition side down alone: it
writes the batches a transactional producer writes (the transactional bit, a producer id and
epoch) and sends the WriteTxnMarkers a coordinator sends, and reads the raw Fetch and ListOffsets
answers and what confluent-kafka consumers get at both isolation levels. The rest use
confluent-kafka's transactional API as an application does: commit, abort, fencing, timeout,
consume-transform-produce, and that again over a coordinator killed mid-stream.
"""

from __future__ import annotations

import threading
import time
import uuid

import confluent_kafka as ck
import pytest

from brokers.core.errors import InvalidProducerEpoch
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.find_coordinator import FindCoordinatorRequest
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


# --- the transactional API, as confluent-kafka users call it ------------------------------------


def txn_producer(cluster, txn_id: str, **conf) -> ck.Producer:
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
                     "linger.ms": 5, **conf})
    p.init_transactions(30)
    return p


def read_all(cluster, topic: str, partitions: int, isolation: str, want: int,
             timeout_s: float = 30.0) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": fresh("r"),
                            "auto.offset.reset": "earliest", "isolation.level": isolation,
                            "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        quiet = 0
        while time.monotonic() < deadline and quiet < 4:
            msg = consumer.poll(0.5)
            if msg is None:
                quiet = quiet + 1 if len(got) >= want else 0
            elif msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_committed_transactions_are_read_and_aborted_ones_are_not(cluster):
    topic = fresh("txn-api")
    create_everywhere(cluster.brokers, topic, 3)
    p = txn_producer(cluster, fresh("tid"))
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, b"c%d" % i, partition=i % 3)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(9):
        p.produce(topic, b"a%d" % i, partition=i % 3)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"last", partition=0)
    p.commit_transaction(30)
    committed = read_all(cluster, topic, 3, "read_committed", 31)
    assert sorted(committed) == sorted([b"c%d" % i for i in range(30)] + [b"last"])
    everything = read_all(cluster, topic, 3, "read_uncommitted", 40)
    assert len(everything) == 40


def test_a_new_incarnation_fences_the_old_and_aborts_its_transaction(cluster):
    topic = fresh("txn-fence")
    create_everywhere(cluster.brokers, topic, 1)
    tid = fresh("tid")
    old = txn_producer(cluster, tid)
    old.begin_transaction()
    old.produce(topic, b"zombie", partition=0)
    old.flush(30)
    new = txn_producer(cluster, tid)  # aborts the old incarnation's open transaction
    with pytest.raises(ck.KafkaException) as raised:
        old.commit_transaction(30)
    assert raised.value.args[0].fatal(), raised.value
    new.begin_transaction()
    new.produce(topic, b"successor", partition=0)
    new.commit_transaction(30)
    assert read_all(cluster, topic, 1, "read_committed", 1) == [b"successor"]


def test_a_transaction_past_its_timeout_is_aborted_and_stops_holding_readers(cluster):
    topic = fresh("txn-timeout")
    create_everywhere(cluster.brokers, topic, 1)
    p = txn_producer(cluster, fresh("tid"), **{"transaction.timeout.ms": 2000})
    p.begin_transaction()
    p.produce(topic, b"abandoned", partition=0)
    p.flush(30)
    plain = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    plain.produce(topic, b"after", partition=0)
    plain.flush(30)
    # The coordinator aborts it (its tick, after 2 s): the record after it becomes readable.
    assert read_all(cluster, topic, 1, "read_committed", 1, timeout_s=20) == [b"after"]
    with pytest.raises(ck.KafkaException):
        p.commit_transaction(30)


def copy_exactly_once(cluster, source: str, sink: str, group: str, tid: str, total: int,
                      during=None, timeout_s: float = 120.0) -> None:
    """Consume-transform-produce: every batch read from ``source`` is written to ``sink`` with
    its offsets in one transaction; an abortable failure aborts and rewinds to the committed
    offsets, as confluent-kafka's exactly-once example does. ``during(n)`` is called after each
    committed transaction (a fault schedule)."""
    consumer = ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                            "enable.auto.commit": False})
    producer = txn_producer(cluster, tid)
    consumer.subscribe([source])
    copied = 0
    transactions = 0
    deadline = time.monotonic() + timeout_s
    try:
        while copied < total:
            assert time.monotonic() < deadline, f"copied {copied} of {total} in {timeout_s} s"
            batch = [m for m in consumer.consume(20, 1.0) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for m in batch:
                producer.produce(sink, m.value().upper(), partition=m.partition())
            positions = consumer.position(consumer.assignment())
            try:
                retrying(lambda at=positions: producer.send_offsets_to_transaction(
                    at, consumer.consumer_group_metadata(), 30))
                retrying(lambda: producer.commit_transaction(30))
            except ck.KafkaException as exc:
                if not exc.args[0].txn_requires_abort():
                    raise
                producer.abort_transaction(30)
                rewind(consumer)
                continue
            copied += len(batch)
            transactions += 1
            if during is not None:
                during(transactions)
    finally:
        consumer.close()


_MOVING = {ck.KafkaError.NOT_COORDINATOR, ck.KafkaError.COORDINATOR_NOT_AVAILABLE,
           ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS, ck.KafkaError._TIMED_OUT}


def retrying(call) -> None:
    """What confluent-kafka asks of an application: a retriable error (the previous
    transaction's markers still being written: CONCURRENT_TRANSACTIONS; a coordinator moving)
    means call again."""
    for _ in range(60):
        try:
            call()
            return
        except ck.KafkaException as exc:
            # committed() reports a coordinator moving (a broker was killed) without the
            # retriable flag; it is the same "ask again" as the rest.
            if not exc.args[0].retriable() and exc.args[0].code() not in _MOVING:
                raise
            time.sleep(0.5)
    raise AssertionError("a transactional call kept failing with retriable errors")


def group_coordinated_elsewhere(cluster, node_id: int) -> str:
    """A fresh group id whose coordinator is not broker ``node_id``."""
    for _ in range(100):
        group = fresh("g")
        with connect(cluster.brokers[0]) as c:
            found = c.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(
                key=group, key_type=0))
        assert found.error_code == 0, found
        if found.node_id != node_id:
            return group
    raise AssertionError(f"every group id tried is coordinated by broker {node_id}")


def rewind(consumer: ck.Consumer) -> None:
    committed: list[ck.TopicPartition] = []
    retrying(lambda: committed.extend(consumer.committed(consumer.assignment(), 30)))
    for tp in committed:
        consumer.seek(ck.TopicPartition(tp.topic, tp.partition,
                                        tp.offset if tp.offset >= 0 else 0))


def fill(cluster, topic: str, partitions: int, n: int) -> list[bytes]:
    values = [b"v-%04d" % i for i in range(n)]
    plain = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for i, v in enumerate(values):
        plain.produce(topic, v, partition=i % partitions)
    assert plain.flush(30) == 0
    return values


def test_consume_transform_produce_is_exactly_once(cluster):
    source, sink = fresh("ctp-in"), fresh("ctp-out")
    create_everywhere(cluster.brokers, source, 2)
    create_everywhere(cluster.brokers, sink, 2)
    values = fill(cluster, source, 2, 200)
    copy_exactly_once(cluster, source, sink, fresh("g"), fresh("tid"), len(values))
    out = read_all(cluster, sink, 2, "read_committed", len(values))
    assert sorted(out) == sorted(v.upper() for v in values)


@pytest.mark.multi_broker
def test_consume_transform_produce_stays_exactly_once_when_the_coordinator_is_killed(cluster):
    """The transaction coordinator of the copying producer is killed (SIGKILL) right after a
    commit was answered, before its markers are surely written, and restarted 3 s later; the
    copy goes on through its successor, and every record is in the output exactly once: no
    transaction was left committed in some partitions and not in others."""
    source, sink, tid = fresh("kill-in"), fresh("kill-out"), fresh("tid")
    create_everywhere(cluster.brokers, source, 2)
    create_everywhere(cluster.brokers, sink, 2)
    values = fill(cluster, source, 2, 300)
    with connect(cluster.brokers[0]) as c:
        found = c.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(
            key=tid, key_type=1))
    assert found.error_code == 0, found
    victim = found.node_id
    # The group's coordinator is another broker. Killing it too would stall the copy in the
    # client, not in the broker: librdkafka (2.x) keeps the coordinator it last used for a group
    # in a cache, and when that broker vanished from Metadata while down (its session expired)
    # and came back, the cached handle is a decommissioned one. TxnOffsetCommit then waits for
    # it to come up, which never happens, with no timeout (coord_req), and
    # send_offsets_to_transaction never returns (seen in CI: 300 s and more, on raft).
    group = group_coordinated_elsewhere(cluster, victim)
    restarted = threading.Event()

    def restart() -> None:
        try:
            cluster.restart_broker(victim)
        finally:
            restarted.set()

    def kill_once(transactions: int) -> None:
        # Killed right after a commit was answered: its markers may not all be written. It
        # comes back 3 s later, as a crashed broker restarted by its supervisor: partitions it
        # alone holds (replication factor 1) wait for it, and so does the copy meanwhile.
        if transactions == 2 and not timer.is_alive() and not restarted.is_set():
            cluster.kill_broker(victim)
            timer.start()

    timer = threading.Timer(3.0, restart)
    try:
        copy_exactly_once(cluster, source, sink, group, tid, len(values), during=kill_once)
    finally:
        if timer.is_alive() or restarted.is_set():
            restarted.wait(90)
        else:
            timer.cancel()
    out = read_all(cluster, sink, 2, "read_committed", len(values), timeout_s=60)
    assert sorted(out) == sorted(v.upper() for v in values)
