"""`make sim-replication`: whole DSBS or Raft twin brokers under seeded fault schedules, simulated.

Three brokers run as the product runs them (``Broker`` with a ``DsbsCoordinator`` or a
``RaftCoordinator``: the Kafka server, request handlers, storage on disk, replica manager,
fetcher, gossip socket or Raft quorum), each on its own simulated process (harness/sim: one
event loop per process, one virtual clock, an in-memory network). Nothing in them is replaced
or re-implemented; only the sockets and the clock are simulated, so a scenario of minutes of
faults runs in seconds and replays from its seed.

A scenario:

* a topic of one partition, replication factor 3, ``min.insync.replicas`` 2, created through
  the coordinator of broker 0;
* one idempotent producer (a process of its own, speaking the Kafka protocol over the simulated
  network): one batch in flight, acks as set, the leader found with Metadata from a broker it
  can reach; a failed batch is sent again with the same sequence, so a broker that already
  holds it answers DUPLICATE_SEQUENCE or its offset, never a second copy;
* faults, by mix: ``kill-leader`` kills the leader every few seconds and restarts it a little
  later; ``nemesis`` is the nemesis's own schedule generator (harness/nemesis/schedule.py:
  kills, restarts, pauses, two-sided isolation, one-sided cuts, a third aimed at the leader);
  ``lossy`` is that schedule over a network that also drops 5%, duplicates 5% and delays 5% of
  datagrams by up to a second (stale gossip);
* then everything heals, production stops, and once every broker agrees on the leader, the ISR
  is whole and every log has caught up, the final leader's log below its high watermark is
  checked against what was acknowledged.

On the Raft twin (``--arch raft``, three voters) each broker's process also runs a metadata
client calling its coordinator as the request handlers do (``Scenario._meta_client``): every
broker creating the same new names on the same half second, offset commits and fetches through
the broker each group's coordinator is, producer ids. After the heal the answers are checked
against what the twin promises: no name reported created twice, no "already exists" for a name
never created, no acknowledged commit missing from the final offsets, no fetch missing a commit
acknowledged before it began, no producer id handed out twice. DSBS promises none of these
(docs/dsbs-metadata.md) and runs no metadata client. Raft's quorum runs on TCP streams, which
the network delays and holds but never drops: ``lossy`` is ``nemesis`` there.

A scenario *loses* when an acknowledged batch is not in that log, *duplicates* when one is in it
twice, and reorders when acknowledged batches appear out of order; *unsettled* when the cluster
never came back together (a liveness failure, reported with its seed). Both gossip timer presets
run: ``local`` (detection in about a second; replica.lag.time.max.ms 1.5 s, request timeout 2 s)
and ``lan`` (detection in several seconds; Kafka's 30 s defaults, and a schedule stretched
4 times so faults outlast detection as often as on ``local``).

``--plant`` runs a scenario set with a known bug put back into the broker (for instance the
leader's epoch check on follower fetches removed): the table must then show losses, or the
simulation cannot see what it claims to check. Every failing scenario prints its seed and the
command that replays it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import math
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from unittest import mock

from crc32c import crc32c

from brokers.core.broker import Broker
from brokers.core.config import BrokerConfig
from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.core.datadir import DataDir
from brokers.core.errors import KafkaError, ProtocolViolation, TopicAlreadyExists
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from brokers.core.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from brokers.core.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from brokers.core.protocol.records import decode_records, iter_batches
from brokers.core.replication.config import ReplicationConfig
from brokers.core.replication.fetcher import LeaderConnection
from brokers.core.replication.leader import LeaderPartition
from brokers.core.replication.truncation import Cut
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.gossip.simnet import SIM_KEY
from brokers.raft_broker.config import RaftBrokerConfig
from brokers.raft_broker.coordinator import RaftCoordinator
from harness.nemesis.schedule import LEADER, Step, generate
from harness.sim.net import NetConfig, SimNetwork
from harness.sim.world import SimStalled, World, virtual_time

TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
ARCHES = ("dsbs", "raft")
# The twins whose metadata is linearizable (one creation per name, committed offsets read back
# anywhere, producer ids unique): their brokers also run the metadata clients
# (``Scenario._meta_client``). DSBS claims none of it (docs/dsbs-metadata.md), and it commits
# offsets on a thread of its own (tables/offset_writer.py), real time a seed cannot replay.
CLAIMS_METADATA = ("raft",)
MIXES = ("kill-leader", "nemesis", "lossy")
PRESETS = ("local", "lan")
CLIENT = "client"
KAFKA_PORT, GOSSIP_PORT, RAFT_PORT = 9092, 7946, 7947
# Topic names the metadata clients create each half second and groups they commit to (small
# pools: names are raced, groups move between coordinators).
META_NAMES, META_GROUPS = 2, 4
# Kafka error codes the producer acts on.
DUPLICATE_SEQUENCE, OUT_OF_ORDER, INVALID_EPOCH, UNKNOWN_PRODUCER = 46, 45, 47, 59
PRODUCE_VERSION, METADATA_VERSION, INIT_PID_VERSION = 8, 8, 1
# One loop iteration of a process costs 20-200 us of its CPU (what a small request costs a
# Python broker), so a batch spends a realistic while appended and not yet copied.
CPU_S = (0.00002, 0.0002)


@dataclass(frozen=True)
class Settings:
    # The twin under test: its coordinator in every broker (the zk twin needs a real ZooKeeper,
    # which does not run on simulated time).
    arch: str = "dsbs"
    mix: str = "nemesis"
    preset: str = "local"
    acks: int = -1
    min_insync_replicas: int = 2
    brokers: int = 3
    # Idempotent producers writing the partition at once: with two, a leader's unreplicated
    # tail differs from what its successor writes at the same offsets, so a replica that does
    # not truncate to its new leader holds another history (one producer's retry would write
    # the very same batch there, and the difference would not show).
    producers: int = 2
    fault_phase_s: float = 30.0  # virtual seconds of faults (stretched on lan)
    produce_every_s: float = 0.02  # the producer's pause after an acknowledged batch
    settle_timeout_s: float = 120.0
    plant: str = ""  # a known bug put back (PLANTS), or none

    @property
    def stretch(self) -> float:
        return 4.0 if self.preset == "lan" else 1.0


@dataclass
class Result:
    seed: int = 0
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: bool = False
    diverged: bool = False  # a replica's log differs from the leader's below its HW
    converged: bool = True
    failovers: list[float] = field(default_factory=list)
    producer_resets: int = 0  # OUT_OF_ORDER / UNKNOWN_PRODUCER_ID: a new producer id taken
    steps: list[str] = field(default_factory=list)
    note: str = ""
    errors: list[str] = field(default_factory=list)  # the producers' last errors
    # The metadata clients (one in every broker's process, calling its coordinator as the
    # request handlers do): operations answered, and what contradicts the seam's promises.
    meta_ops: int = 0
    double_created: int = 0  # names two CreateTopics were both told they created
    phantom_exists: int = 0  # "already exists" for a name no creation ever committed
    lost_commits: int = 0  # groups whose final offset is below one acknowledged
    stale_reads: int = 0  # offset fetches that missed a commit acknowledged before they began
    duplicate_pids: int = 0  # producer ids handed out twice
    meta_notes: list[str] = field(default_factory=list)

    @property
    def meta_violations(self) -> int:
        return (self.double_created + self.phantom_exists + self.lost_commits
                + self.stale_reads + self.duplicate_pids)


# --- planted bugs: each a known-wrong broker, to show the simulation sees what it checks -------
# Each is one attribute of the product swapped for the run (``mock.patch.object`` puts it back).
def _plant_fetch_epoch() -> contextlib.AbstractContextManager[object]:
    """The leader serves follower fetches of any epoch (its FENCED_LEADER_EPOCH check gone)."""
    from brokers.core.handlers import fetch

    return mock.patch.object(fetch, "_check_epoch", lambda leader, current_leader_epoch: None)


def _plant_follower_offset() -> contextlib.AbstractContextManager[object]:
    """The leader counts a follower's fetch offset even past its own log end."""
    checked = LeaderPartition.on_follower_fetch

    def unchecked(self: LeaderPartition, replica_id: int, fetch_offset: int, now_ms: int
                  ) -> int | None:
        leo = self._leo
        self._leo = max(leo, fetch_offset)
        try:
            return checked(self, replica_id, fetch_offset, now_ms)
        finally:
            self._leo = leo

    return mock.patch.object(LeaderPartition, "on_follower_fetch", unchecked)


def _plant_no_truncation() -> contextlib.AbstractContextManager[object]:
    """A new follower appends after its own log end without cutting to its leader's log."""
    from brokers.core.replication import fetcher

    return mock.patch.object(fetcher, "next_cut", lambda cache, leo, *answer: Cut(leo, True))


def _plant_no_fencing() -> contextlib.AbstractContextManager[object]:
    """DSBS: a replica's promise to a candidate fences nothing (the old leader's ISR changes
    still count it), the hole the adversarial review found."""
    from brokers.dsbs_broker.gossip.leadership import Leadership

    return mock.patch.object(Leadership, "pending", lambda self, key, rec: None)


def _plant_ack_early() -> contextlib.AbstractContextManager[object]:
    """acks=-1 is answered at the leader's append, before the ISR has the batch."""
    from brokers.core.replication.manager import ReplicaManager

    waiting = ReplicaManager.appended

    def early(self: ReplicaManager, tp: TopicPartition, leader: LeaderPartition,
              end_offset: int, acks: int, timeout_ms: int
              ) -> asyncio.Future[KafkaError | None] | None:
        waiting(self, tp, leader, end_offset, 1, timeout_ms)
        if acks != -1:
            return None
        fut: asyncio.Future[KafkaError | None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    return mock.patch.object(ReplicaManager, "appended", early)


def _plant_raft_stale_read() -> contextlib.AbstractContextManager[object]:
    """Raft: offsets are fetched from the broker's image without the ReadIndex barrier (what
    the ``cached`` policy does for leaderships, wrongly applied to committed offsets)."""

    async def no_barrier(self: RaftCoordinator, deadline: float, error: type) -> None:
        return None

    return mock.patch.object(RaftCoordinator, "_barrier", no_barrier)


def _plant_raft_unchecked_creation() -> contextlib.AbstractContextManager[object]:
    """Raft: a creation is answered "created" once its record applied, without checking
    that it was its own record that made the topic (two brokers racing a name both say so)."""

    async def unchecked(self: RaftCoordinator, decide: Callable[[str], Any]) -> Any:
        record = decide("")
        await self._propose(record, self._deadline(), KafkaError)
        return self._topic_info(record.name)

    return mock.patch.object(RaftCoordinator, "_create", unchecked)


PLANTS: dict[str, Callable[[], contextlib.AbstractContextManager[object]]] = {
    "raft-stale-read": _plant_raft_stale_read,
    "raft-unchecked-creation": _plant_raft_unchecked_creation,
    "ack-early": _plant_ack_early,
    "no-fencing": _plant_no_fencing,
    "fetch-epoch": _plant_fetch_epoch,
    "follower-offset": _plant_follower_offset,
    "no-truncation": _plant_no_truncation,
}


# --- the producer's wire -----------------------------------------------------------------------
_BATCH_TAIL = struct.Struct(">hiqqqhii")


def one_record_batch(value: bytes, producer_id: int, epoch: int, sequence: int,
                     timestamp_ms: int) -> bytes:
    """A RecordBatch v2 of one record (no key, no headers), CRC-correct."""
    # attributes, timestamp delta, offset delta, key length -1 (zig-zag 1), value, 0 headers
    body = b"\x00\x00\x00\x01" + bytes([len(value) * 2]) + value + b"\x00"
    record = bytes([len(body) * 2]) + body
    tail = _BATCH_TAIL.pack(0, 0, timestamp_ms, timestamp_ms, producer_id, epoch, sequence,
                            1) + record
    return struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), -1, 2, crc32c(tail)) + tail


class Scenario:
    def __init__(self, settings: Settings, seed: int, workdir: Path) -> None:
        self.s = settings
        self.seed = seed
        self.rng = random.Random(seed)
        self.workdir = workdir
        lossy = settings.mix == "lossy"
        net_config = NetConfig(loss=0.05 if lossy else 0.0, duplicate=0.05 if lossy else 0.0,
                               delayed=0.05 if lossy else 0.0, delay_max_s=1.0)
        self.world = World(lambda w: SimNetwork(w, random.Random(seed * 7 + 1), net_config),
                           seed=seed, cpu_s=CPU_S)
        self.net: SimNetwork = self.world.net
        self.ids = tuple(range(settings.brokers))
        for i in self.ids:
            self.net.add_host(str(i), f"10.77.0.{i + 1}")
        self.net.add_host(CLIENT, "10.77.1.1")
        self.brokers: dict[int, Broker] = {}
        self.starting: dict[int, asyncio.Task[tuple[str, int]]] = {}
        self.result = Result(seed=seed)
        # Acknowledged batches as (producer, batch number), in the order acknowledged.
        self.acked: list[tuple[int, int]] = []
        self.producing = True
        self.trace: list[str] = []  # the producers' errors, for a failing seed's post-mortem
        self.started = 0.0  # when the load (and the schedule's clock) began
        # The metadata clients' history (``_meta_client``).
        self.created: dict[str, list[str]] = {}  # name -> who was told "created"
        self.exists_answers: set[str] = set()  # names answered "already exists"
        self.commit_acked: dict[str, int] = {}  # group -> highest offset acknowledged
        self.commit_tried: dict[str, set[int]] = {}  # group -> offsets sent, answered or not
        self.committing: dict[str, int] = {}  # group -> the broker with a commit in flight
        self.pids: list[int] = []
        self.meta_clients: dict[int, asyncio.Task[None]] = {}
        self.killed_leader_at: float | None = None
        local = settings.preset == "local"
        self.gossip = GossipConfig.LOCAL if local else GossipConfig.LAN
        self.replication = ReplicationConfig(
            replica_lag_time_max_ms=1_500 if local else 30_000,
            min_insync_replicas=settings.min_insync_replicas,
            replica_fetch_wait_max_ms=500, replica_fetch_backoff_ms=200 if local else 1_000)
        self.request_timeout_s = 2.0 if local else 30.0
        # The Raft controller's session: about DSBS's detection on each preset.
        self.raft_session_s = 1.5 if local else 9.0

    # --- the brokers -----------------------------------------------------------------------
    def _start(self, i: int) -> None:
        name = str(i)
        self.world.spawn(name)
        host = self.net.host_of[name]
        data = self.workdir / f"broker-{i}"
        data.mkdir(exist_ok=True)
        datadir = DataDir(data)
        config = BrokerConfig(node_id=i, host=host, port=KAFKA_PORT, data_dir=data,
                              replication=self.replication)
        rng = random.Random(self.seed * 1_000_003 + i * 7919 + int(self.world.now * 1000))
        coordinator: DsbsCoordinator | RaftCoordinator
        if self.s.arch == "raft":
            peers = {j: (self.net.host_of[str(j)], RAFT_PORT) for j in self.ids}
            coordinator = RaftCoordinator(i, data, RaftBrokerConfig(
                listen_host=host, listen_port=RAFT_PORT, peers=peers, voters=self.ids,
                key=SIM_KEY, session_timeout_s=self.raft_session_s,
                request_timeout_s=self.request_timeout_s * 4), datadir=datadir, rng=rng)
        else:
            seeds = tuple(f"{self.net.host_of[str(j)]}:{GOSSIP_PORT}" for j in self.ids)
            coordinator = DsbsCoordinator(i, data, DsbsConfig(
                gossip_host=host, gossip_port=GOSSIP_PORT, seeds=seeds, gossip=self.gossip,
                gossip_key=SIM_KEY), datadir=datadir, rng=rng)
        broker = Broker(config, coordinator, None, datadir)
        self.brokers[i] = broker
        self.starting[i] = self.world.start(name, broker.start())
        if self.producing and self.started and self.s.arch in CLAIMS_METADATA:
            # Back after a kill: its process gets a metadata client again.
            self.meta_clients[i] = self.world.start(name, self._meta_client(i))

    def _alive(self, i: int) -> bool:
        return self.world.alive(str(i))

    def leader(self) -> int:
        """Who leads the partition now: the live broker leading it in the highest epoch."""
        best, epoch = -1, -1
        for i, b in self.brokers.items():
            lp = b.replicas.leaders.get(TP) if self._alive(i) else None
            if lp is not None and lp.leader_epoch > epoch:
                best, epoch = i, lp.leader_epoch
        return best

    async def _create_topic(self) -> None:
        """Create the topic once every member has joined (a replication factor of 3 needs
        three live brokers)."""
        coordinator = self.brokers[0].coordinator
        configs = {"min.insync.replicas": str(self.s.min_insync_replicas)}
        while True:
            try:
                await coordinator.create_topic(TOPIC, 1, len(self.ids), configs)
                return
            except KafkaError:
                await asyncio.sleep(0.2)

    # --- the producer ----------------------------------------------------------------------
    async def _producer(self, me: int) -> None:
        conns: dict[int, LeaderConnection] = {}

        def conn(i: int) -> LeaderConnection:
            if i not in conns:
                conns[i] = LeaderConnection(self.net.host_of[str(i)], KAFKA_PORT, "sim-producer")
            return conns[i]

        async def call(i: int, key: ApiKey, version: int, request: object,
                       answer: type, timeout_s: float) -> object | None:
            try:
                return await conn(i).call(key, version, request, answer,  # type: ignore[arg-type]
                                          timeout_s)
            except (TimeoutError, OSError, ProtocolViolation, EOFError,
                    asyncio.IncompleteReadError):
                conns.pop(i).close()
                return None

        async def init_pid() -> tuple[int, int]:
            while True:
                for i in self.rng.sample(self.ids, len(self.ids)):
                    r = await call(i, ApiKey.INIT_PRODUCER_ID, INIT_PID_VERSION,
                                   InitProducerIdRequest(None, 60_000),
                                   InitProducerIdResponse, 1.0)
                    if isinstance(r, InitProducerIdResponse) and r.error_code == 0:
                        return r.producer_id, r.producer_epoch
                await asyncio.sleep(0.1)

        async def find_leader() -> int:
            for i in self.rng.sample(self.ids, len(self.ids)):
                r = await call(i, ApiKey.METADATA, METADATA_VERSION,
                               MetadataRequest([MetadataRequestTopic(name=TOPIC)], False),
                               MetadataResponse, 1.0)
                if isinstance(r, MetadataResponse):
                    for t in r.topics:
                        if t.name == TOPIC and t.partitions and t.partitions[0].leader_id >= 0:
                            return t.partitions[0].leader_id
            return -1

        pid, epoch = await init_pid()
        batch_id, sequence = 0, 0
        backoff = 0.05
        while self.producing:
            leader = await find_leader()
            if leader < 0:
                await asyncio.sleep(backoff)
                continue
            batch = one_record_batch(struct.pack(">II", me, batch_id), pid, epoch, sequence,
                                     int(time.time() * 1000))
            request = ProduceRequest(None, self.s.acks, int(self.request_timeout_s * 1000),
                                     [TopicProduceData(TOPIC, [PartitionProduceData(0, batch)])])
            r = await call(leader, ApiKey.PRODUCE, PRODUCE_VERSION, request, ProduceResponse,
                           self.request_timeout_s + 1.0)
            code = -1
            if isinstance(r, ProduceResponse):
                code = r.responses[0].partition_responses[0].error_code
            if code:
                self.trace.append(f"{self.world.now:.3f} producer {me} batch {batch_id} seq "
                                  f"{sequence} pid {pid} to {leader}: error {code}")
                if code == OUT_OF_ORDER:
                    self.trace.append(f"   its log: {self._tail(leader)}")
            if code in (0, DUPLICATE_SEQUENCE):
                self.acked.append((me, batch_id))
                if self.killed_leader_at is not None:
                    self.result.failovers.append(self.world.now - self.killed_leader_at)
                    self.killed_leader_at = None
                batch_id, sequence = batch_id + 1, sequence + 1
                # Drawn, so faults (on a 0.1 s grid) meet batches at every phase.
                await asyncio.sleep(self.rng.uniform(0, 2 * self.s.produce_every_s))
            elif code in (OUT_OF_ORDER, UNKNOWN_PRODUCER, INVALID_EPOCH):
                # The leader has no record of this producer's earlier batches (a leader whose
                # log lost them, or one that never learnt the producer): a new id, as
                # librdkafka's idempotent producer takes after such an error.
                self.result.producer_resets += 1
                pid, epoch = await init_pid()
                # The batch is given up (it may yet be appended: a request still queued at a
                # paused leader); its content goes again as a new batch, so a copy of both in
                # the log is the client's doing, never counted against the broker.
                batch_id, sequence = batch_id + 1, 0
            else:
                await asyncio.sleep(backoff)
        for c in conns.values():
            c.close()

    # --- the metadata clients --------------------------------------------------------------
    async def _meta_client(self, i: int) -> None:
        """Metadata asked of broker ``i``'s coordinator in its own process, as the request
        handlers ask it, while the faults run: topic creations raced over a few names; offset
        commits and fetches of the groups this broker's view makes it the coordinator of (as
        OffsetCommit and OffsetFetch are served), one commit per group at a time cluster-wide
        and ever higher; producer ids. Each answer is logged for ``_check_meta``; a timeout
        or an error says nothing (the outcome is unknown)."""
        try:
            await self.starting[i]
        except Exception:
            return
        coordinator = self.brokers[i].coordinator
        rng = random.Random(self.seed * 31 + i * 1009 + int(self.world.now * 1000))
        tp = TopicPartition(TOPIC, 0)
        while self.producing:
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            op = rng.random()
            group = f"g{rng.randrange(META_GROUPS)}"
            try:
                if op < 0.3:
                    # On the next half second, a name of that half second: brokers that
                    # create at once race for it, as clients asking different brokers do.
                    slot = math.floor(self.world.now * 2) + 1
                    await asyncio.sleep(slot / 2 - self.world.now)
                    name = f"m{slot}-{rng.randrange(META_NAMES)}"
                    try:
                        await coordinator.create_topic(name, 1, 1)
                        self.created.setdefault(name, []).append(
                            f"broker {i} at {self.world.now:.2f}")
                    except TopicAlreadyExists:
                        self.exists_answers.add(name)
                elif op < 0.9 and coordinator.group_coordinator(group).node_id != i:
                    continue  # NOT_COORDINATOR: a client asks the broker it names
                elif op < 0.6:
                    if group in self.committing:
                        continue
                    tried = self.commit_tried.setdefault(group, set())
                    offset = max(tried, default=-1) + 1 + rng.randrange(3)
                    tried.add(offset)
                    self.committing[group] = i
                    try:
                        await coordinator.commit_offsets(group, {tp: OffsetAndMetadata(offset)})
                    finally:
                        self.committing.pop(group, None)
                    self.commit_acked[group] = max(self.commit_acked.get(group, -1), offset)
                elif op < 0.9:
                    before = self.commit_acked.get(group, -1)
                    got = await coordinator.fetch_offsets(group, [tp])
                    seen = got[tp].offset if tp in got else -1
                    if seen < before:
                        self.result.stale_reads += 1
                        self.result.meta_notes.append(
                            f"{self.world.now:.2f} broker {i} read {group} at {seen}, "
                            f"{before} was acknowledged before the read")
                else:
                    self.pids.append(await coordinator.allocate_producer_id())
                self.result.meta_ops += 1
            except (KafkaError, TimeoutError):
                pass  # unknown outcome: nothing to check

    def _check_meta(self) -> None:
        r = self.result
        alive = next(i for i in self.ids if self._alive(i))
        final = self.world.run(str(alive), self._final_meta(alive), 60.0)
        topics, offsets = final
        for name, who in self.created.items():
            if len(who) > 1:
                r.double_created += 1
                r.meta_notes.append(f"{name!r} created for {', '.join(who)}")
        for name in self.exists_answers:
            if name not in topics:
                r.phantom_exists += 1
                r.meta_notes.append(f"{name!r} answered 'already exists', never created")
        for group, acked in self.commit_acked.items():
            final_offset = offsets.get(group, -1)
            # Higher offsets than the last acknowledged may have committed unanswered.
            if final_offset < acked or (final_offset > acked and final_offset
                                        not in self.commit_tried.get(group, set())):
                r.lost_commits += 1
                r.meta_notes.append(f"{group} ends at {final_offset}, {acked} was "
                                    "acknowledged")
        r.duplicate_pids = len(self.pids) - len(set(self.pids))

    async def _final_meta(self, i: int) -> tuple[set[str], dict[str, int]]:
        coordinator = self.brokers[i].coordinator
        tp = TopicPartition(TOPIC, 0)
        offsets = {}
        for k in range(META_GROUPS):
            got = await coordinator.fetch_offsets(f"g{k}", [tp])
            if tp in got:
                offsets[f"g{k}"] = got[tp].offset
        return set(coordinator.cluster().topics), offsets

    def _tail(self, i: int, n: int = 8) -> str:
        """The last ``n`` batches in broker ``i``'s log as offset:producer id/sequence."""
        plog = self.brokers[i].store.get(TOPIC, 0)
        if plog is None:
            return "none"
        start = max(plog.log_start_offset, plog.log_end_offset - 4 * n)
        data = memoryview(plog.read(start, 1 << 20))
        heads = list(iter_batches(data))[-n:]
        return " ".join(f"{h.base_offset}:{h.producer_id % 1000}/{h.base_sequence}"
                        for h in heads)

    # --- faults ----------------------------------------------------------------------------
    def _schedule(self) -> list[Step]:
        s = self.s
        length = s.fault_phase_s * s.stretch
        if s.mix == "kill-leader":
            steps, t = [], 3.0 * s.stretch
            while t < length:
                down = self.rng.uniform(0.5, 4.0) * s.stretch
                steps.append(Step(round(t, 1), "kill", LEADER, lasts_s=round(down, 1)))
                t += down + self.rng.uniform(2.0, 6.0) * s.stretch
            return steps
        steps = generate(self.seed, s.brokers, s.fault_phase_s)
        return [replace(st, at_s=st.at_s * s.stretch, lasts_s=st.lasts_s * s.stretch)
                for st in steps]

    def _apply(self, step: Step, undo: list[tuple[float, Step]]) -> None:
        target = self.leader() if step.target == LEADER else step.target
        if target < 0:
            self.result.steps.append(f"{step} (no leader: skipped)")
            return
        self.result.steps.append(f"{step}" + (f" (leader {target})"
                                              if step.target == LEADER else ""))
        name = str(target)
        op = step.op
        if op == "kill" and self._alive(target):
            if step.target == LEADER:
                self.killed_leader_at = self.world.now
            self.world.kill(name)
            # Its commit in flight never answers: the group is free for the others (what it
            # sent stays among the tried offsets).
            for group in [g for g, b in self.committing.items() if b == target]:
                del self.committing[group]
        elif op == "restart" and not self._alive(target):
            self._start(target)
        elif op == "pause" and self._alive(target):
            self.world.pause(name)
        elif op == "resume":
            self.world.resume(name)
        elif op == "isolate":
            for other in self.net.host_of:
                if other != name:
                    self.net.cut(name, other)
                    self.net.cut(other, name)
        elif op == "heal":
            for other in self.net.host_of:
                if other != name:
                    self.net.uncut(name, other)
                    self.net.uncut(other, name)
        elif op == "cut" and step.other >= 0 and step.other != target:
            self.net.cut(name, str(step.other))
        elif op == "uncut":
            self.net.uncut(name, str(step.other))
        if step.target == LEADER and step.lasts_s:
            back = {"kill": "restart", "pause": "resume", "isolate": "heal", "cut": "uncut"}[op]
            at = self.world.now + step.lasts_s
            undo.append((at, Step(round(at - self.started, 1), back, target, step.other)))

    def _heal_all(self) -> None:
        self.net.uncut_all()
        for i in self.ids:
            self.world.resume(str(i))
            if not self._alive(i):
                self._start(i)

    # --- the run ---------------------------------------------------------------------------
    def run(self) -> Result:
        s, world = self.s, self.world
        for i in self.ids:
            self._start(i)
        world.run_until(lambda: all(t.done() for t in self.starting.values()),
                        30 * s.stretch, "the brokers' start")
        for t in self.starting.values():
            t.result()  # a broker that failed to start is a bug: its traceback
        world.run("0", self._create_topic(), 60 * s.stretch)
        world.run_until(lambda: self.leader() >= 0, 30 * s.stretch, "the first leader")
        world.spawn(CLIENT)
        producers = [world.start(CLIENT, self._producer(k)) for k in range(s.producers)]
        start = self.started = world.now
        if s.arch in CLAIMS_METADATA:
            for i in self.ids:
                self.meta_clients[i] = world.start(str(i), self._meta_client(i))
        pending = sorted(self._schedule(), key=lambda st: st.at_s)
        undo: list[tuple[float, Step]] = []
        while pending or undo:
            nexts = [start + pending[0].at_s] if pending else []
            nexts += [min(at for at, _ in undo)] if undo else []
            world.advance(max(0.0, min(nexts) - world.now))
            due_undo = [u for u in undo if u[0] <= world.now]
            for u in due_undo:
                undo.remove(u)
                self._apply(u[1], [])
            while pending and start + pending[0].at_s <= world.now:
                self._apply(pending.pop(0), undo)
        world.advance(max(0.0, start + s.fault_phase_s * s.stretch - world.now))
        self._heal_all()
        world.advance(2.0 * s.stretch)  # production goes on across the heal
        self.producing = False
        try:
            world.run_until(lambda: all(p.done() for p in producers),
                            s.settle_timeout_s * s.stretch, "the producer's last batch")
            world.run_until(lambda: all(t.done() for i, t in self.meta_clients.items()
                                        if self._alive(i)),
                            s.settle_timeout_s * s.stretch, "the metadata clients' last call")
            world.run_until(self.settled, s.settle_timeout_s * s.stretch, "settling")
        except SimStalled as exc:
            self.result.converged = False
            self.result.note = str(exc)
        return self.check()

    def settled(self) -> bool:
        leader = self.leader()
        if leader < 0:
            return False
        views = set()
        for i, b in self.brokers.items():
            if not self._alive(i):
                return False
            topic = b.coordinator.cluster().topics.get(TOPIC)
            if topic is None:
                return False
            p = topic.partitions[0]
            views.add((p.leader, p.leader_epoch, tuple(sorted(p.isr))))
        if len(views) != 1:
            return False
        view_leader, _, isr = views.pop()
        if view_leader != leader or set(isr) != set(self.ids):
            return False
        lp = self.brokers[leader].replicas.leaders[TP]
        ends = set()
        for b in self.brokers.values():
            plog = b.store.get(TOPIC, 0)
            ends.add(plog.log_end_offset if plog is not None else -1)
        return len(ends) == 1 and lp.high_watermark == ends.pop()

    def final_log(self, i: int | None = None) -> list[tuple[int, int]]:
        """Batch ids below the final leader's high watermark in broker ``i``'s log (the
        leader's own by default)."""
        leader = self.leader()
        hw = self.brokers[leader].replicas.leaders[TP].high_watermark
        broker = self.brokers[leader if i is None else i]
        plog = broker.store.get(TOPIC, 0)
        out: list[tuple[int, int]] = []
        if plog is None:
            return out
        offset = plog.log_start_offset
        while offset < hw:
            data = memoryview(plog.read(offset, 1 << 20))
            whole = list(iter_batches(data))  # a cut tail batch is read next time
            if not whole:
                break
            last = whole[-1]
            records = [r for r in decode_records(data[:last.position + last.size])
                       if r.offset < hw]
            out += [struct.unpack(">II", r.value) for r in records if r.value]
            offset = last.next_offset
        return out

    def check(self) -> Result:
        r = self.result
        r.acked = len(self.acked)
        r.errors = self.trace[-6:]
        if not r.converged:
            return r
        try:
            if self.s.arch in CLAIMS_METADATA:
                self._check_meta()
        except (SimStalled, KafkaError) as exc:
            r.converged = False
            r.note = f"the final metadata read: {exc}"
            return r
        final = self.final_log()
        present = set(final)
        r.lost = sum(1 for b in self.acked if b not in present)
        r.duplicated = len(final) - len(present)
        order = {b: k for k, b in enumerate(final)}
        for k in range(self.s.producers):
            kept = [order[b] for b in self.acked if b[0] == k and b in order]
            r.reordered |= kept != sorted(kept)
        # Every replica holds the same records below the high watermark, or one of them is a
        # leader-in-waiting that would serve another history.
        r.diverged = any(self.final_log(i) != final for i in self.ids if i != self.leader())
        return r


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The brokers' logs (thousands of lines per scenario) are not the table."""
    root = logging.getLogger()
    saved = root.level, logging.getLogger("asyncio").level
    root.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        root.setLevel(saved[0])


def run_scenario(settings: Settings, seed: int) -> Result:
    workdir = Path(tempfile.mkdtemp(prefix=f"twinbench-sim-{seed}-"))
    plant = PLANTS[settings.plant]() if settings.plant else contextlib.nullcontext()
    scenario = Scenario(settings, seed, workdir)
    try:
        with _quiet(), virtual_time(scenario.world), plant, warnings.catch_warnings():
            # A request task cancelled with its connection before it ran: normal, and noise.
            warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
            return scenario.run()
    finally:
        # Everything of the processes goes inside close()'s collection: the network's
        # connections hold their protocols and tasks, and a coroutine of a killed process
        # collected later would run its finally blocks on a closed loop, outside any world.
        world = scenario.world
        del scenario
        world.net = None
        world.close()
        shutil.rmtree(workdir, ignore_errors=True)


def replay_command(settings: Settings, seed: int) -> str:
    plant = f" --plant {settings.plant}" if settings.plant else ""
    return (f"python -m harness.bench.replication_sim --first-seed {seed} --seeds 1 "
            f"--arch {settings.arch} --mix {settings.mix} --preset {settings.preset} "
            f"--acks {settings.acks} "
            f"--min-isr {settings.min_insync_replicas}{plant}")


@dataclass
class Cell:
    settings: Settings
    results: list[Result]

    def row(self) -> list[str]:
        rs = self.results
        fo = [f for r in rs for f in r.failovers]
        s = self.settings
        return [s.arch, s.mix, s.preset, str(s.acks), str(s.min_insync_replicas), str(len(rs)),
                str(sum(r.lost > 0 for r in rs)), str(sum(r.duplicated > 0 for r in rs)),
                str(sum(r.reordered for r in rs)), str(sum(r.diverged for r in rs)),
                str(sum(not r.converged for r in rs)),
                str(sum(r.acked for r in rs)), str(sum(r.lost for r in rs)),
                f"{statistics.median(fo):.2f}" if fo else "-",
                str(sum(r.meta_ops for r in rs)), str(sum(r.double_created for r in rs)),
                str(sum(r.phantom_exists for r in rs)), str(sum(r.lost_commits for r in rs)),
                str(sum(r.stale_reads for r in rs)), str(sum(r.duplicate_pids for r in rs))]

    def failures(self) -> list[Result]:
        return [r for r in self.results
                if r.lost or r.duplicated or r.reordered or r.diverged or not r.converged
                or r.meta_violations]
HEADER = ["arch", "mix", "preset", "acks", "min_isr", "scenarios", "losing", "duplicating",
          "reordering", "diverging", "unsettled", "acked", "lost", "failover_s_p50",
          "meta_ops", "created_twice", "phantom_exists", "lost_commits", "stale_reads",
          "dup_pids"]


def measure(mixes: Sequence[str], presets: Sequence[str], acks: Sequence[int],
            min_isrs: Sequence[int], seeds: int, first_seed: int = 0, plant: str = "",
            fault_phase_s: float = 30.0, arches: Sequence[str] = ("dsbs",)) -> list[Cell]:
    cells = []
    for arch, mix in itertools.product(arches, mixes):
        for preset in presets:
            for a in acks:
                for m in min_isrs:
                    settings = Settings(arch=arch, mix=mix, preset=preset, acks=a,
                                        min_insync_replicas=m, plant=plant,
                                        fault_phase_s=fault_phase_s)
                    cells.append(Cell(settings, [run_scenario(settings, first_seed + k)
                                                 for k in range(seeds)]))
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.bench.replication_sim", description=(
        "Whole DSBS brokers under seeded fault schedules on a simulated network and clock: "
        "how often acknowledged records are lost, duplicated or reordered "
        "(docs/replication.md)."))
    p.add_argument("--seeds", type=int, default=20, help="scenarios per cell (default 20)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--arch", choices=ARCHES, action="append",
                   help="the twins whose brokers run (default: dsbs)")
    p.add_argument("--mix", choices=MIXES, action="append", help="fault mixes (default: all)")
    p.add_argument("--preset", choices=PRESETS, action="append",
                   help="gossip timer presets (default: both)")
    p.add_argument("--acks", type=int, choices=(-1, 1), action="append",
                   help="producer acks (default -1)")
    p.add_argument("--min-isr", type=int, choices=(1, 2, 3), action="append",
                   help="min.insync.replicas (default 2)")
    p.add_argument("--faults-s", type=float, default=30.0,
                   help="virtual seconds of faults per scenario (default 30; lan: x4)")
    p.add_argument("--plant", choices=sorted(PLANTS), default="",
                   help="put a known bug back into the broker: the table must show it")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error("--seeds must be at least 1")
    if args.faults_s <= 0:
        p.error("--faults-s must be above 0")
    cells = measure(args.mix or MIXES, args.preset or PRESETS, args.acks or (-1,),
                    args.min_isr or (2,), args.seeds, args.first_seed, args.plant,
                    args.faults_s, args.arch or ("dsbs",))
    rows = [HEADER, *(c.row() for c in cells)]
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER))]
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    for c in cells:
        for bad in c.failures():
            what = (f"lost {bad.lost}" if bad.lost else f"duplicated {bad.duplicated}"
                    if bad.duplicated else "reordered" if bad.reordered else
                    "replicas diverged" if bad.diverged else f"unsettled: {bad.note}"
                    if not bad.converged else f"metadata: {'; '.join(bad.meta_notes[:3])}")
            print(f"seed {bad.seed}: {what}; replay: {replay_command(c.settings, bad.seed)}")
            print(f"  schedule: {', '.join(bad.steps)}")
            for line in bad.errors:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
