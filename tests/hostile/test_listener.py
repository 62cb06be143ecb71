"""Hostile clients against a real broker of every architecture: it stays up, bounded and correct.

Each attack runs against one broker process started with small limits (``LIMITS``), and while
it runs a well-behaved client must still be served and the broker's resident memory and open
descriptors (psutil, sampled every 10 ms) must stay under the bound the test states. The
listener, server and handlers are shared core code, so the same attacks run on the one-node
broker and on one-broker zk and dsbs clusters (the coordinator behind them differs).

Client addresses: every 127.0.0.0/8 address reaches the loopback interface on Linux, so a socket
bound to 127.0.0.2 before connecting is a different client address for max_connections_per_ip.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import time
import uuid

import pytest
from crc32c import crc32c

from brokers.core.errors import (
    CorruptMessage,
    GroupMaxSizeReached,
    InvalidPartitions,
    MemberIdRequired,
    PolicyViolation,
)
from brokers.core.protocol.api import ApiKey, decode_response, request_frame
from brokers.core.protocol.header import RequestHeader
from brokers.core.protocol.messages.api_versions import ApiVersionsRequest
from brokers.core.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from brokers.core.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from brokers.core.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from brokers.core.protocol.records import decode_records
from brokers.core.protocol.schema import Message
from harness.cluster.kafka_probe import KafkaProbe
from tests.support.clusters import ARCHITECTURES, start_cluster
from tests.support.ops import create_topic, eventually, fetch, produce
from tests.support.record_builder import build_batch
from tests.support.usage import MiB, Usage

pytestmark = [pytest.mark.integration, pytest.mark.hostile]

MAX_CONNECTIONS = 60
PER_IP = 20
# Short, so the idle tests wait seconds, not tens of them (a long poll of 2 x the limit, a
# slow loris closed at ~1.25 x); long enough that a test's well-behaved client is never idle
# that long between its requests.
IDLE_MS = 1500
QUEUED_BYTES = 4 * MiB
# The broker-wide pool of request bytes (every connection's unfinished and unanswered requests).
POOL_BYTES = 16 * MiB
MAX_PARTITIONS = 200
GROUP_MAX = 20
OPEN_SEGMENTS = 32
LIMITS = (
    "--max-connections", str(MAX_CONNECTIONS), "--max-connections-per-ip", str(PER_IP),
    "--connections-max-idle-ms", str(IDLE_MS), "--queued-max-request-bytes", str(QUEUED_BYTES),
    "--max-partitions-per-topic", str(MAX_PARTITIONS), "--group-max-size", str(GROUP_MAX),
    "--max-open-segments", str(OPEN_SEGMENTS), "--request-memory-bytes", str(POOL_BYTES),
)
# What an attack may add to the broker's resident memory: the per-connection budget, one answer,
# and room for allocator noise. Without the budget these attacks pin hundreds of MiB.
RSS_BOUND_MIB = 64
# Descriptors an attack may add beyond what its limit allows (transient index files, sockets
# still being torn down).
FD_SLACK = 12
ATTACK_S = 1.5  # how long each attack holds its ground while the broker is measured


@pytest.fixture(scope="module", params=ARCHITECTURES)
def cluster(request, tmp_path_factory):
    c = start_cluster(request.param, tmp_path_factory.mktemp(f"hostile-{request.param}"),
                      brokers=1, extra=LIMITS)
    yield c
    c.stop()


@pytest.fixture
def broker(cluster):
    b = cluster.brokers[0]
    yield b
    assert b.process.poll() is None, "the broker died under attack"


# --- helpers ----------------------------------------------------------------------------------
def served(broker) -> bool:
    """A fresh, well-behaved client gets an answer."""
    with KafkaProbe(broker.host, broker.port, timeout_s=10) as c:
        return c.request(ApiKey.API_VERSIONS, 2, ApiVersionsRequest()).error_code == 0


def still_served(client: KafkaProbe) -> bool:
    """An already connected well-behaved client gets an answer."""
    return client.request(ApiKey.API_VERSIONS, 2, ApiVersionsRequest()).error_code == 0


def connect_from(broker, source: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(10)
    s.connect((broker.host, broker.port))
    return s


def closed_by_peer(s: socket.socket) -> bool:
    """True once the broker has closed ``s`` (EOF or reset); never waits."""
    if not select.select([s], [], [], 0)[0]:
        return False  # nothing to read, not even EOF
    try:
        return s.recv(1, socket.MSG_PEEK) == b""
    except ConnectionError:
        return True


def frame(api_key: int, version: int, correlation: int, request: Message) -> bytes:
    header = RequestHeader(api_key, version, correlation, "hostile")
    return b"".join(bytes(p) for p in request_frame(header, request))


def read_frame(s: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = s.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return bytes(out)

    return exactly(struct.unpack(">i", exactly(4))[0])


def fetch_request(topic: str, partition: int, wait_ms: int, max_bytes: int = 2 * MiB):
    return FetchRequest(replica_id=-1, max_wait_ms=wait_ms, min_bytes=1, max_bytes=max_bytes,
                        topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                            partition=partition, fetch_offset=0,
                            partition_max_bytes=max_bytes)])])


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def big_topic(broker) -> str:
    """A topic whose partition 0 holds one 1 MiB batch and whose partition 1 is empty."""
    topic = fresh("big")
    assert create_topic(broker, topic, 2).error_code == 0
    eventually(lambda: produce(broker, topic, 0, build_batch([(None, b"x" * MiB)])
                               ).error_code == 0, what="1 MiB produced")
    return topic


def report(attack: str, bound: str, usage: Usage) -> None:
    print(f"\nATTACK {attack}: bound {bound}; {usage}")


# --- connections ------------------------------------------------------------------------------
def test_connection_flood_from_one_address_is_capped_per_address(broker):
    with Usage(broker.process.pid) as usage:
        flood = [connect_from(broker, "127.0.0.2") for _ in range(100)]
        try:
            eventually(lambda: sum(closed_by_peer(s) for s in flood) == 100 - PER_IP,
                       timeout_s=10, what=f"all but {PER_IP} flood connections closed")
            assert served(broker)
            survivors = [s for s in flood if not closed_by_peer(s)]
            for i, s in enumerate(survivors):  # the admitted ones are served normally
                s.sendall(frame(ApiKey.API_VERSIONS, 2, i, ApiVersionsRequest()))
                assert struct.unpack_from(">i", read_frame(s))[0] == i
            usage.observe(0.2)
        finally:
            for s in flood:
                s.close()
    report("100 connections from one address", f"{PER_IP} kept, fds +{PER_IP + FD_SLACK}",
           usage)
    assert usage.fd_growth <= PER_IP + FD_SLACK


def test_connection_flood_from_many_addresses_is_capped_in_total(broker):
    with KafkaProbe(broker.host, broker.port) as normal, Usage(broker.process.pid) as usage:
        flood = [connect_from(broker, f"127.0.0.{10 + i // PER_IP}")
                 for i in range(5 * PER_IP)]
        try:
            eventually(lambda: sum(not closed_by_peer(s) for s in flood) <= MAX_CONNECTIONS - 1,
                       timeout_s=10, what=f"at most {MAX_CONNECTIONS} connections in all")
            assert still_served(normal)
            usage.observe(0.2)
        finally:
            for s in flood:
                s.close()
        # Room again once the flood is gone.
        eventually(lambda: served(broker), timeout_s=10, what="a new connection accepted")
    report(f"{5 * PER_IP} connections from 5 addresses",
           f"{MAX_CONNECTIONS} in all, fds +{MAX_CONNECTIONS + FD_SLACK}", usage)
    assert usage.fd_growth <= MAX_CONNECTIONS + FD_SLACK


def test_idle_connection_is_closed_but_a_long_poll_is_not(broker):
    topic = fresh("idle")
    assert create_topic(broker, topic, 1).error_code == 0
    idle = connect_from(broker, "127.0.0.3")
    t0 = time.monotonic()
    with KafkaProbe(broker.host, broker.port) as poller:
        # A long poll (2 x the idle limit) owes an answer: it is not idle.
        res = poller.request(ApiKey.FETCH, 11, fetch_request(topic, 0, wait_ms=2 * IDLE_MS))
        assert res.responses[0].partitions[0].error_code == 0
        assert time.monotonic() - t0 >= 2 * IDLE_MS / 1000 * 0.9
    eventually(lambda: closed_by_peer(idle), timeout_s=10, what="idle connection closed")
    idle.close()
    assert served(broker)


def test_slow_loris_trickling_a_frame_is_closed(broker):
    """Bytes of an unfinished frame are not activity: a frame trickled slower than the idle
    limit never completes, and the connection is closed."""
    with Usage(broker.process.pid) as usage:
        lorises = [connect_from(broker, "127.0.0.4") for _ in range(10)]
        try:
            for s in lorises:
                s.sendall(struct.pack(">i", 1 << 20))  # announce 1 MiB, send it a byte at a time
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not all(closed_by_peer(s) for s in lorises):
                for s in lorises:
                    with contextlib.suppress(OSError):  # closed (reset) by the broker
                        s.send(b"\0", socket.MSG_DONTWAIT)
                time.sleep(0.1)  # the attack's pace: one byte per connection per 100 ms
            assert all(closed_by_peer(s) for s in lorises), "slow-loris connections still open"
            assert served(broker)
        finally:
            for s in lorises:
                s.close()
    report("10 slow-loris connections", f"closed after ~{IDLE_MS} ms idle", usage)


def test_many_connections_stalling_inside_large_frames_are_bounded_broker_wide(broker):
    """Twelve clients each announce a 32 MiB request and send 24 MiB of it, then stall: each
    is within every per-connection limit (frames up to 100 MiB), together they would hold
    288 MiB. The broker-wide pool (16 MiB) stops reading the large holders and closes the
    largest past 9/8 of it, while a well-behaved client is answered throughout."""
    frame_bytes, sent_bytes, chunk = 32 * MiB, 24 * MiB, MiB
    attackers = [connect_from(broker, "127.0.0.8") for _ in range(12)]
    sent = [0] * len(attackers)
    with KafkaProbe(broker.host, broker.port) as normal, Usage(broker.process.pid) as usage:
        for a in attackers:
            a.sendall(struct.pack(">i", frame_bytes))
            # A socket with a timeout waits for room before a send, MSG_DONTWAIT or not.
            a.setblocking(False)
        deadline = time.monotonic() + ATTACK_S
        body = b"\0" * chunk
        while time.monotonic() < deadline:
            for i, a in enumerate(attackers):
                if sent[i] >= sent_bytes:
                    continue
                with contextlib.suppress(OSError):  # full (not read) or closed by the broker
                    sent[i] += a.send(body[: sent_bytes - sent[i]])
            assert still_served(normal)
        usage.observe(0.2)
        assert served(broker)
    report("12 connections stalled 24 MiB into 32 MiB frames",
           f"RSS +{POOL_BYTES // MiB} MiB pool +{RSS_BOUND_MIB} MiB", usage)
    for a in attackers:
        a.close()
    assert usage.rss_growth_mib < POOL_BYTES / MiB + RSS_BOUND_MIB
    assert served(broker)


# --- pipelining -------------------------------------------------------------------------------
def test_fetches_queued_behind_a_long_poll_cannot_pin_memory(broker):
    topic = big_topic(broker)
    attacker = connect_from(broker, "127.0.0.5")
    n = 300  # 300 answers of 1 MiB each
    with Usage(broker.process.pid) as usage:
        # A long poll on the empty partition, then fetches of the full one stacked behind it.
        data = [frame(ApiKey.FETCH, 11, 0, fetch_request(topic, 1, wait_ms=4000))]
        data += [frame(ApiKey.FETCH, 11, i, fetch_request(topic, 0, wait_ms=0))
                 for i in range(1, n + 1)]
        attacker.sendall(b"".join(data))
        usage.observe(ATTACK_S)
        assert served(broker)
    report(f"long poll + {n} pipelined 1 MiB fetches", f"RSS +{RSS_BOUND_MIB} MiB", usage)
    assert usage.rss_growth_mib < RSS_BOUND_MIB
    # Throttled, not broken: every answer arrives, in order, once the client reads.
    got = []
    for _ in range(n + 1):
        got.append(struct.unpack_from(">i", read_frame(attacker))[0])
    assert got == list(range(n + 1))
    attacker.close()


def test_pipelined_requests_whose_answers_are_not_read_cannot_pin_memory(broker):
    topic = big_topic(broker)
    attacker = connect_from(broker, "127.0.0.6")
    n = 300
    with Usage(broker.process.pid) as usage:
        attacker.sendall(b"".join(frame(ApiKey.FETCH, 11, i, fetch_request(topic, 0, wait_ms=0))
                                  for i in range(n)))
        usage.observe(ATTACK_S)  # the client never reads
        assert served(broker)
    report(f"{n} pipelined 1 MiB fetches, answers never read", f"RSS +{RSS_BOUND_MIB} MiB",
           usage)
    assert usage.rss_growth_mib < RSS_BOUND_MIB
    attacker.close()
    assert served(broker)


# --- groups -----------------------------------------------------------------------------------
def join_request(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=2000, rebalance_timeout_ms=2000,
                            member_id=member_id, protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"m")])


def test_join_flood_of_new_member_ids_is_capped_and_expires(broker):
    group = fresh("flood")
    attacker = connect_from(broker, "127.0.0.7")
    n = 500
    with Usage(broker.process.pid) as usage:
        attacker.sendall(b"".join(frame(ApiKey.JOIN_GROUP, 5, i, join_request(group))
                                  for i in range(n)))
        codes = []
        for _ in range(n):
            body = read_frame(attacker)
            codes.append(decode_response(ApiKey.JOIN_GROUP, 5, body[4:]).error_code)
        # A well-behaved consumer of another group joins meanwhile.
        with KafkaProbe(broker.host, broker.port) as c:
            other = fresh("normal")
            first = c.request(ApiKey.JOIN_GROUP, 5, join_request(other))
            assert first.error_code == MemberIdRequired.code
            joined = c.request(ApiKey.JOIN_GROUP, 5, join_request(other, first.member_id))
            assert joined.error_code == 0 and joined.generation_id >= 1
    report(f"{n} JoinGroups asking for new member ids", f"{GROUP_MAX} pending ids", usage)
    assert codes[:GROUP_MAX] == [MemberIdRequired.code] * GROUP_MAX
    assert codes[GROUP_MAX:] == [GroupMaxSizeReached.code] * (n - GROUP_MAX)
    # Pending ids nobody claims expire after their session timeout (2 s): room again.
    def again() -> bool:
        attacker.sendall(frame(ApiKey.JOIN_GROUP, 5, 0, join_request(group)))
        body = read_frame(attacker)
        return decode_response(ApiKey.JOIN_GROUP, 5, body[4:]).error_code == (
            MemberIdRequired.code)

    eventually(again, timeout_s=15, what="expired pending member ids")
    attacker.close()


# --- records and partitions -------------------------------------------------------------------
def test_batch_claiming_two_billion_records_is_refused(broker):
    """A 1-record gzip batch whose header claims 2^31 - 1 records (recordsCount is an int32):
    believed, it burns 2^31 offsets and forces a segment roll every second batch."""
    topic = fresh("absurd")
    assert create_topic(broker, topic, 1).error_code == 0
    batch = bytearray(build_batch([(None, b"v")], compression=1))
    struct.pack_into(">i", batch, 23, 2**31 - 2)  # lastOffsetDelta
    struct.pack_into(">i", batch, 57, 2**31 - 1)  # recordsCount
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))  # a valid CRC: only the
    # count gives it away
    for _ in range(3):
        assert produce(broker, topic, 0, bytes(batch)).error_code == CorruptMessage.code
    ok = produce(broker, topic, 0, build_batch([(None, b"fine")]))
    assert (ok.error_code, ok.base_offset) == (0, 0)  # no offsets were burnt
    assert [r.value for r in decode_records(fetch(broker, topic, 0).records)] == [b"fine"]


def test_too_many_partitions_is_invalid_partitions(broker):
    res = create_topic(broker, fresh("wide"), MAX_PARTITIONS + 1)
    assert res.error_code == InvalidPartitions.code


def test_many_partitions_do_not_exhaust_descriptors(broker):
    topic = fresh("many")
    n = 150
    assert create_topic(broker, topic, n).error_code == 0
    with Usage(broker.process.pid) as usage:
        req = ProduceRequest(acks=1, timeout_ms=10_000, topic_data=[TopicProduceData(
            name=topic, partition_data=[
                PartitionProduceData(index=p, records=build_batch([(None, f"p{p}".encode())]))
                for p in range(n)])])
        with KafkaProbe(broker.host, broker.port, timeout_s=30) as c:
            parts = eventually(lambda: (r := c.request(ApiKey.PRODUCE, 8, req).responses[0]
                                        .partition_responses) and all(
                                            x.error_code == 0 for x in r) and r,
                               what="every partition written")
        assert len(parts) == n
        for p in range(n):  # every partition still readable (its file reopened on demand)
            assert [r.value for r in decode_records(fetch(broker, topic, p).records)] == [
                f"p{p}".encode()]
        usage.observe(0.1)
    report(f"{n} partitions written and read", f"fds +{OPEN_SEGMENTS + FD_SLACK}", usage)
    assert usage.fd_growth <= OPEN_SEGMENTS + FD_SLACK


# --- topics per cluster -----------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_topics_beyond_max_topics_are_a_policy_violation(arch, tmp_path):
    c = start_cluster(arch, tmp_path, brokers=1, extra=("--max-topics", "3"))
    try:
        b = c.brokers[0]
        for i in range(3):
            assert create_topic(b, f"t{i}", 1).error_code == 0
        assert create_topic(b, "t3", 1).error_code == PolicyViolation.code
        with KafkaProbe(b.host, b.port) as p:  # auto-creation is refused the same way
            md = p.request(ApiKey.METADATA, 8, MetadataRequest(
                topics=[MetadataRequestTopic(name="auto")], allow_auto_topic_creation=True))
        assert md.topics[0].error_code == PolicyViolation.code
        assert served(b)
    finally:
        c.stop()


@pytest.mark.interop
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_the_record_count_bound_accepts_what_real_producers_compress(broker, codec):
    """The other side of the bound: librdkafka batches of many tiny, near-identical records
    (the most compressible batches a producer makes) are all accepted and read back."""
    ck = pytest.importorskip("confluent_kafka")
    topic = fresh(f"codec-{codec}")
    assert create_topic(broker, topic, 1).error_code == 0
    producer = ck.Producer({"bootstrap.servers": f"{broker.host}:{broker.port}",
                            "compression.type": codec, "linger.ms": 200,
                            "batch.num.messages": 10_000, "batch.size": 1 << 20})
    failed: list[object] = []
    for _ in range(20_000):
        producer.produce(topic, b"", partition=0,
                         on_delivery=lambda err, _m: err is not None and failed.append(err))
    assert producer.flush(60) == 0 and failed == []
    end = fetch(broker, topic, 0).high_watermark
    assert end == 20_000
