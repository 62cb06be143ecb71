"""The ZooKeeper-coordinated broker: a Coordinator backed by a real ZooKeeper, through kazoo and,
for the data path's reads and writes, an asyncio-native session.

Layout::

    config.py       ZkCoordinatorConfig: connect string, chroot, session/connection/request
                    timeouts, producer-id block size, data path client (frozen, a comment per
                    knob)
    paths.py        the znode layout (Kafka 0.8-era) and every payload format, JSON like Kafka's;
                    pure, unit-tested
    bridge.py       KazooBridge: the ONLY module where kazoo's threads meet the event loop
                    (async results -> futures, watches and session states -> call_soon_threadsafe)
                    and where ZooKeeper requests are counted
    direct.py       the data path's own session: ZkWire (sans-IO, kazoo's jute records) and
                    DirectSession (asyncio: handshake, pings, reconnect); no threads, no watches
    session.py      ZkSession: the ZooKeeper session every part shares (kazoo client and
                    bridge, the direct data-path session, "usable now", ensure_path, broker
                    registration); which errors mean "ZooKeeper cannot answer right now"
    cache.py        MetadataCache: the watch-fed metadata cache (brokers, controller id,
                    assignments, partition states) and the ClusterView built from it; fresh
                    per-request partition-state reads
    election.py     Election: the /controller election, the epoch bump, taking office
                    (a Controller) and resigning
    counters.py     ZkCounters: this twin's counters (brokers/core/counters.py's contract)
    controller.py   the controller's duties (round-robin assignment, leader per partition,
                    broker join/leave, fenced writes) as pure decisions + a reconcile loop
    isr.py          IsrWriter: a leader's conditional ISR shrink/expand of its partition state
                    znode (the IsrChanges seam), its decision pure
    topics.py       TopicCreator: create_topic (assignment written in one multi, then a wait for
                    the leaders)
    deletion.py     topic deletion: the /admin/delete_topics marker a request writes, and the
                    controller's duty that removes a marked topic's znodes and offsets
    group_znodes.py GroupZnodes: the consumer registries (ids/owners/offsets), offset
                    commits kept in arrival order per znode, and their restoration after a
                    session loss
    producer_ids.py ProducerIds: producer-id blocks claimed by compare-and-set
    coordinator.py  ZkCoordinator: the Coordinator seam; owns the parts above and wires them;
                    start/close, session SUSPENDED/LOST handling, counters()
    __main__.py     `python -m brokers.zk_broker`: the broker process (core server + this
                    coordinator), written with the broker server

Only ``bridge.py`` imports kazoo's threading machinery for callbacks; the rest runs on the loop.
"""

from brokers.zk_broker.config import ZkCoordinatorConfig
from brokers.zk_broker.coordinator import ZkCoordinator, ZooKeeperUnreachable

__all__ = ["ZkCoordinator", "ZkCoordinatorConfig", "ZooKeeperUnreachable"]
