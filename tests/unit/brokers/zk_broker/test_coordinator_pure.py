"""Pure parts of the zk broker: znode paths and payloads, assignment, controller decisions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from brokers.core.coordinator import NO_LEADER, BrokerInfo, Coordinator, MemberRecord
from brokers.core.coordinator import TopicPartition as TP
from brokers.core.errors import InvalidPartitions, InvalidReplicationFactor, UserError
from brokers.core.placement import assign_replicas
from brokers.zk_broker import ZkCoordinator, ZkCoordinatorConfig
from brokers.zk_broker import paths as fmt
from brokers.zk_broker.controller import next_partition_state
from brokers.zk_broker.paths import LeaderAndIsr, ZkPaths


def test_zk_coordinator_implements_the_seam() -> None:
    c = ZkCoordinator(ZkCoordinatorConfig("127.0.0.1:2181"), 3)
    assert isinstance(c, Coordinator)
    assert c.node_id == 3
    assert c.counters().zk_requests == 0


def test_paths_follow_kafkas_layout_under_a_chroot() -> None:
    p = ZkPaths("/bench/")
    assert p.broker(1) == "/bench/brokers/ids/1"
    assert p.controller == "/bench/controller"
    assert p.topic("t") == "/bench/brokers/topics/t"
    assert p.partition_state("t", 3) == "/bench/brokers/topics/t/partitions/3/state"
    assert p.member("g", "m") == "/bench/consumers/g/ids/m"
    assert p.owner("g", TP("t", 2)) == "/bench/consumers/g/owners/t/2"
    assert p.offset("g", TP("t", 2)) == "/bench/consumers/g/offsets/t/2"
    assert p.producer_id_block == "/bench/latest_producer_id_block"
    root = ZkPaths()
    assert root.broker(1) == "/brokers/ids/1" and root.root == "/"
    with pytest.raises(ValueError):
        ZkPaths("relative")


def test_free_form_ids_are_one_path_segment() -> None:
    p = ZkPaths()
    assert p.member("a/b", "c/d") == "/consumers/a%2Fb/ids/c%2Fd"
    assert p.group("..") == "/consumers/%2E%2E"
    assert fmt.member_id_from_segment("c%2Fd") == "c/d"


def test_watch_paths_map_back() -> None:
    p = ZkPaths("/x")
    assert p.match_state("/x/brokers/topics/t.1/partitions/12/state") == TP("t.1", 12)
    assert p.match_state("/brokers/topics/t/partitions/1/state") is None
    assert p.match_topic("/x/brokers/topics/t") == "t"
    assert p.match_topic("/x/brokers/topics/t/partitions") is None


def test_broker_registration_round_trips_and_reads_kafka_endpoints() -> None:
    info = BrokerInfo(2, "10.0.0.2", 9093, "r1")
    obj = json.loads(fmt.encode_broker(info, "123"))
    assert obj["version"] == 4 and obj["jmx_port"] == -1 and obj["timestamp"] == "123"
    assert obj["endpoints"] == ["PLAINTEXT://10.0.0.2:9093"]
    assert fmt.decode_broker(2, fmt.encode_broker(info)) == info
    secured = json.loads(fmt.encode_broker(info, protocol="SASL_SSL"))
    assert secured["endpoints"] == ["SASL_SSL://10.0.0.2:9093"]
    assert secured["listener_security_protocol_map"] == {"SASL_SSL": "SASL_SSL"}
    assert fmt.decode_broker(2, fmt.encode_broker(info, protocol="SSL")) == info
    kafka = b'{"endpoints":["PLAINTEXT://h:9092"],"host":null,"port":-1,"version":5}'
    assert fmt.decode_broker(7, kafka) == BrokerInfo(7, "h", 9092, None)


def test_state_assignment_controller_payloads() -> None:
    s = LeaderAndIsr(1, 4, (1,), 2)
    assert json.loads(s.encode()) == {
        "controller_epoch": 2,
        "isr": [1],
        "leader": 1,
        "leader_epoch": 4,
        "version": 1,
    }
    assert LeaderAndIsr.decode(s.encode()) == s
    a = {0: (1,), 1: (2,), 10: (3,)}
    assert json.loads(fmt.encode_assignment(a))["partitions"] == {"0": [1], "1": [2], "10": [3]}
    assert fmt.decode_assignment(fmt.encode_assignment(a)) == a
    assert fmt.decode_controller(fmt.encode_controller(5)) == 5
    assert fmt.decode_controller(b"3") == 3  # Kafka 0.8.0's bare id
    assert fmt.decode_topic_config(fmt.encode_topic_config({"a": "1"})) == {"a": "1"}


def test_registry_payloads() -> None:
    rec = MemberRecord("m-1", "client", "/1.2.3.4")
    assert fmt.decode_member(fmt.encode_member(rec)) == rec
    assert json.loads(fmt.encode_member(rec))["version"] == 1
    assert fmt.encode_offset(42) == b"42" and fmt.decode_offset(b" 42\n") == (42, "", -1)
    # Metadata is kept (the twins must answer clients alike), in a JSON form.
    assert fmt.decode_offset(fmt.encode_offset(7, "note", 3)) == (7, "note", 3)
    assert fmt.decode_owner(fmt.encode_owner("m/1")) == "m/1"
    block = json.loads(fmt.encode_producer_id_block(1, 1000, 1999))
    assert block == {"version": 1, "broker": 1, "block_start": "1000", "block_end": "1999"}
    assert fmt.decode_producer_id_block(fmt.encode_producer_id_block(1, 0, 999)) == (0, 999)
    assert fmt.decode_cluster_id(fmt.encode_cluster_id("abc")) == "abc"


def test_round_robin_assignment() -> None:
    assert assign_replicas(6, 1, [3, 1, 2]) == {
        0: (1,),
        1: (2,),
        2: (3,),
        3: (1,),
        4: (2,),
        5: (3,),
    }
    assert assign_replicas(3, 2, [10, 20, 30]) == {0: (10, 20), 1: (20, 30), 2: (30, 10)}
    assert assign_replicas(1, 3, [1, 2, 3]) == {0: (1, 2, 3)}
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas(1, 2, [1])
    with pytest.raises(InvalidReplicationFactor):
        assign_replicas(1, 0, [1])
    with pytest.raises(InvalidPartitions):
        assign_replicas(0, 1, [1])


def test_controller_decisions() -> None:
    live = {1, 2}
    # New partition: first live replica leads, epoch 0; none live: NO_LEADER.
    assert next_partition_state((1,), live, None, 3) == LeaderAndIsr(1, 0, (1,), 3)
    assert next_partition_state((9,), live, None, 3) == LeaderAndIsr(NO_LEADER, 0, (), 3)
    # Healthy leader: no write.
    assert next_partition_state((1,), live, LeaderAndIsr(1, 4, (1,), 1), 3) is None
    # Leader died: leaderless with a bumped epoch (the ISR still names it, the only replica
    # with every committed record); stays leaderless without more writes.
    gone = next_partition_state((3,), live, LeaderAndIsr(3, 4, (3,), 1), 3)
    assert gone == LeaderAndIsr(NO_LEADER, 5, (3,), 3)
    assert next_partition_state((3,), live, gone, 3) is None
    # It returns: leader again, epoch bumped again.
    assert next_partition_state((3,), live | {3}, gone, 4) == LeaderAndIsr(3, 6, (3,), 4)
    # With replicas, failover goes to the next live replica.
    assert next_partition_state((3, 2), live, LeaderAndIsr(3, 0, (3, 2), 1), 2) == LeaderAndIsr(
        2, 1, (2,), 2
    )


def test_config_knobs() -> None:
    c = ZkCoordinatorConfig("h1:2181,h2:2181/kafka")
    assert c.connect == "h1:2181,h2:2181" and c.chroot == "/kafka"
    assert ZkCoordinatorConfig("h:1", chroot="x/").chroot == "/x"
    with pytest.raises(UserError):
        ZkCoordinatorConfig("")
    with pytest.raises(UserError):
        ZkCoordinatorConfig("h:1", session_timeout_ms=0)
    with pytest.raises(UserError):
        ZkCoordinatorConfig("h:1/a", chroot="/b")


def test_a_session_event_on_a_watch_refreshes_nothing() -> None:
    """kazoo delivers connection-state changes to armed watches with no path: the cache must
    not take them for a znode change (they used to raise TypeError in the path matchers)."""
    from kazoo.protocol.states import EventType, KazooState, WatchedEvent

    from brokers.zk_broker.cache import MetadataCache
    from brokers.zk_broker.paths import ZkPaths

    spawned: list[str] = []

    def spawn(coro: Any, name: str) -> None:
        coro.close()
        spawned.append(name)

    cache = MetadataCache(None, ZkPaths(), spawn=spawn,  # type: ignore[arg-type]
                          on_controller=lambda *_: None, on_change=lambda: None)
    cache._on_watch(WatchedEvent(EventType.NONE, KazooState.SUSPENDED, None))  # type: ignore[arg-type]
    assert spawned == []
    cache._on_watch(WatchedEvent(EventType.CHILD, KazooState.CONNECTED, ZkPaths().topics))
    assert spawned == ["zk-refresh-topics"]
