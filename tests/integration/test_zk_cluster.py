"""A three-broker ZooKeeper-coordinated cluster of real processes under failures.

Brokers run with a 4 s ZooKeeper session (the minimum at ZooKeeper's default 2 s tick) so that
expiry-driven behaviour is observable in seconds; everything else is as `twinbench cluster`
starts it.
"""

from __future__ import annotations

import time
import uuid

import pytest

from brokers.core import errors
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from tests.support.ops import (
    connect,
    create_everywhere,
    eventually,
    fetch_values,
    leaders,
    produce_values,
)

pytestmark = [pytest.mark.integration, pytest.mark.zookeeper]

SESSION_MS = 4000
CHROOT = "/twinbench"


@pytest.fixture
def cluster(tmp_path):
    from harness.services.zookeeper import ZooKeeperUnavailable

    spec = ClusterSpec("zk", brokers=3, data_dir=tmp_path,
                       broker_args=("--zk-session-timeout-ms", str(SESSION_MS)))
    try:
        c = ProcessCluster(spec).start()
    except ZooKeeperUnavailable as exc:
        pytest.skip(f"no ZooKeeper on this machine: {exc}")
    yield c
    c.stop()


def kazoo(cluster):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=f"{cluster.endpoint('zookeeper')}{CHROOT}")
    zk.start(timeout=15)
    return zk


def probe(broker):
    return connect(broker)


def controller(cluster, via: int = 0) -> int:
    with connect(cluster.brokers[via]) as p:
        return p.metadata([]).controller_id


def test_confluent_group_across_three_brokers_commits_into_zookeeper_znodes(cluster):
    ck = pytest.importorskip("confluent_kafka")
    topic, group = f"zkg-{uuid.uuid4().hex[:8]}", f"grp-{uuid.uuid4().hex[:8]}"
    create_everywhere(cluster.brokers, topic, 3)
    consumers = [ck.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                              "auto.offset.reset": "earliest", "enable.auto.commit": False,
                              "session.timeout.ms": 10_000})
                 for _ in range(2)]
    for c in consumers:
        c.subscribe([topic])

    def settled() -> bool:
        # Both members hold partitions and together all three: the rebalance is over, so no
        # partition changes hands (and is re-read) while the test consumes.
        for c in consumers:
            c.poll(0.1)
        owned = [{tp.partition for tp in c.assignment()} for c in consumers]
        return all(owned) and set().union(*owned) == {0, 1, 2} and not set.intersection(*owned)

    eventually(settled, timeout_s=60, what="the group to settle")
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(90):
        producer.produce(topic, f"m{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 90 and time.monotonic() < deadline:
        for c in consumers:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg.value())
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(90))
    for c in consumers:
        if c.assignment():
            c.commit(asynchronous=False)
    zk = kazoo(cluster)
    try:
        committed = {p: int(zk.get(f"/consumers/{group}/offsets/{topic}/{p}")[0])
                     for p in range(3)}
        assert committed == {0: 30, 1: 30, 2: 30}
        # While the consumers live, the Kafka paper's other two registries are populated.
        assert len(zk.get_children(f"/consumers/{group}/ids")) == 2
        owners = zk.get_children(f"/consumers/{group}/owners/{topic}")
        assert sorted(owners) == ["0", "1", "2"]
    finally:
        for c in consumers:
            c.close()
        zk.stop()


def test_controller_death_elects_another_controller(cluster):
    first = controller(cluster)
    cluster.kill_broker(first)
    survivors = [b.node_id for b in cluster.brokers if b.node_id != first]
    # A 1-tuple, so that a new controller with id 0 still counts as "reached".
    (new,) = eventually(lambda: (c := controller(cluster, via=survivors[0])) not in (-1, first)
                        and (c,), what="a new controller")
    assert new in survivors


def test_killed_broker_loses_leadership_then_restarts_with_all_acknowledged_data(cluster):
    topic = f"kill-{uuid.uuid4().hex[:8]}"
    lead = create_everywhere(cluster.brokers, topic, 3)
    victim = next(b for b in cluster.brokers if b.node_id == lead[0] and b.node_id != 0) \
        if lead[0] != 0 else next(b for b in cluster.brokers if b.node_id == lead[1])
    partition = next(p for p, n in lead.items() if n == victim.node_id)
    values = [f"v{i}".encode() for i in range(50)]
    assert produce_values(victim, topic, partition, values) == 0
    zk = kazoo(cluster)
    try:
        cluster.kill_broker(victim.node_id)
        eventually(lambda: str(victim.node_id) not in zk.get_children("/brokers/ids"),
                   what="the killed broker's registration to expire")
        eventually(lambda: leaders(cluster.brokers[0], topic)[partition] == -1,
                   what="its partition to lose its leader")
        cluster.restart_broker(victim.node_id)
        eventually(lambda: leaders(cluster.brokers[0], topic)[partition] == victim.node_id,
                   what="the restarted broker to lead again")
        assert fetch_values(victim, topic, partition) == values
    finally:
        zk.stop()


def test_zookeeper_outage_keeps_data_path_but_refuses_commits_retriably(cluster):
    topic = f"zkdown-{uuid.uuid4().hex[:8]}"
    lead = create_everywhere(cluster.brokers, topic, 3)
    broker = cluster.brokers[lead[0]]
    ensemble = cluster.services["zookeeper"].handle.ensemble  # type: ignore[attr-defined]
    assert ensemble is not None, "needs a ZooKeeper started by the harness"
    commit = OffsetCommitRequest(group_id="outage", generation_id_or_member_epoch=-1,
                                 member_id="", topics=[OffsetCommitRequestTopic(
                                     name=topic, partitions=[OffsetCommitRequestPartition(
                                         partition_index=0, committed_offset=1)])])

    def commit_code() -> int:
        from brokers.core.protocol.messages.find_coordinator import FindCoordinatorRequest

        with probe(broker) as p:
            found = p.request(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="outage"))
        if found.error_code:
            return found.error_code
        target = next(b for b in cluster.brokers if b.port == found.port)
        with probe(target) as p:
            return p.request(ApiKey.OFFSET_COMMIT, 7, commit).topics[0].partitions[0].error_code

    assert commit_code() == 0
    ensemble.stop()
    try:
        # Produce and fetch keep working for partitions this broker already leads.
        assert produce_values(broker, topic, 0, [b"during-outage"]) == 0
        assert fetch_values(broker, topic, 0) == [b"during-outage"]
        code = eventually(lambda: (c := commit_code()) != 0 and c,
                          what="commits to be refused while ZooKeeper is down")
        assert errors.error_for_code(code).retriable, code
    finally:
        ensemble.start()
    eventually(lambda: commit_code() == 0, what="commits to work again after ZooKeeper returns")
    assert produce_values(broker, topic, 0, [b"after"]) == 0
