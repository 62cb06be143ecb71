"""``DsbsCoordinator``: the Coordinator seam backed by the broker's own tables and UDP gossip.

Metadata answers come from the local topic records and member table
(``partition_state(fresh=True)`` recomputes from them on every call, which is the paper's point:
the "coordination store" is in the broker), offsets are committed to the local table and file,
and everything spreads to peers in the background through ``SwimNode``. Topic creation is the
one thing that waits on other brokers (``gossip/creation.py``): the name's arbiter commits a record
only once every live member has voted for it, so a name never has two records at once.

Behaviour worth knowing:

* ``commit_offsets``/``fetch_offsets`` act on the local table; whether this broker coordinates
  the group is checked by the request handlers (``group_coordinator``), as for every twin.
* The controller id reported in Metadata is the lowest live node id (DSBS has no controller; any
  broker accepts CreateTopics, but admin clients want a controller to send it to).
* Concurrent creation of one name on two brokers: the arbiter takes them one at a time; the
  first wins, the other gets TOPIC_ALREADY_EXISTS (an auto-creation gets the topic). Only
  arbiters that each count the other as dead (a partition) can both create it; the residual
  race and its resolution are in ``gossip/creation.py`` and ``docs/dsbs-metadata.md``.
* Topic records are appended to ``dsbs/topics.jsonl`` as they are taken (without fsync: the
  other members hold them too) and loaded at start, so a restarted broker, or a whole cluster
  restarted, keeps its topics and their replica rings.
* DeleteTopics writes a deletion record (``metadata.tombstone``) here and pushes it like a
  changed record; no round trip. A broker's deletion event (its partitions' files go) is a live
  record of the name that a tombstone, or a record of another creation, replaced in its table,
  or a tombstone loaded at start (``_deletions``); the offsets committed for the topic are
  deleted by each group's coordinator, as tombstones that replicate.
* A commit is acknowledged once it is on this broker's disk and ``offset_commit_acks`` of the
  group's successors hold it; after the live set changed (and after this broker's start) a
  group's first OffsetCommit or OffsetFetch waits until the group's offsets have been pulled
  from its other top ranks (``gossip/offset_replication.py``; COORDINATOR_LOAD_IN_PROGRESS if
  that takes over ``offset_commit_timeout_s``), so a new or returning coordinator never serves
  an offset older than one it could know was acknowledged.
* Gossip is authenticated with the cluster key unless ``gossip_insecure`` was chosen; start()
  refuses to run with neither. Host names in the gossip address and the seeds are resolved once
  at start (peers are only ever told, and only ever sent to, address literals).
* Transactions (``TransactionStore``, brokers/core/transactions/coordinator.py): every broker
  keeps every transactional id's record (``tables/transactions.py``, ``dsbs/transactions.jsonl``);
  the id's coordinator writes it, conditional on the version the core read, and the write
  returns once a peer holds it (``gossip/txn_replication.py``); reads, writes and listings wait
  until the records have been pulled from the live peers after the live set changed, and need
  a quorate broker, as offsets do. What that guarantees, and what not, is in
  docs/dsbs-metadata.md, "Transactions".
* close()/abort() are bounded by ``shutdown_timeout_s``: whatever has not finished by then is
  logged and abandoned (commits were fsynced before they were acknowledged).
* Replication (docs/replication.md): topics may have more than one replica. Each such
  partition's leader, leader epoch and ISR come from its gossiped record (``tables/leaders.py``,
  ``gossip/leadership.py``), elections included; ``change_isr`` (``IsrChanges``) writes the leader's
  ISR changes and returns once every live in-sync replica holds them. The records are appended
  to ``dsbs/partitions.jsonl`` and loaded at start; a partition they say this broker leads is
  handed on (or led in a new epoch) only once a majority of its replicas has answered with
  their records. Election promises go to ``dsbs/promises.jsonl``, fsynced before the ballot
  that announces them leaves (``_persist_promise``), and a partition whose epoch a promise
  fences shows no leader. A replicated
  partition shows no leader until ``start`` has returned, so nothing is appended before the
  broker's replica manager follows the view; view listeners are called synchronously for the
  same reason (a produce must never reach a new leader before its replica manager knows it
  leads). Topics with one replica keep the deterministic leader and epoch below, with no
  record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from brokers.core.coordinator import (
    NO_LEADER,
    Assignment,
    BrokerInfo,
    ClusterView,
    ConfigChange,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
    validate_replication_factor,
    validate_topic_name,
)
from brokers.core.datadir import DataDir
from brokers.core.errors import (
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    InvalidConfig,
    InvalidPartitions,
    InvalidReplicaAssignment,
    KafkaError,
    NotCoordinator,
    RequestTimedOut,
    TopicAlreadyExists,
    UnknownServerError,
    UnknownTopicOrPartition,
    UserError,
    error_for_code,
)
from brokers.core.group_registry import GroupRegistry
from brokers.core.local_state import JsonJournal
from brokers.core.transactions.coordinator import NO_VERSION, placement_key
from brokers.dsbs_broker.config import DsbsConfig, parse_address
from brokers.dsbs_broker.counters import DsbsCounters
from brokers.dsbs_broker.gossip.creation import CreateOutcome, refusal
from brokers.dsbs_broker.gossip.leadership import IsrOutcome
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.gossip.txn_replication import WriteOutcome
from brokers.dsbs_broker.gossip.udp import GossipDriver, bind, resolve
from brokers.dsbs_broker.packets.wire import Promise, TopicRecord, TxnEntry, encode_update
from brokers.dsbs_broker.tables import replica_placement
from brokers.dsbs_broker.tables.leaders import NO_LEADER as NOBODY
from brokers.dsbs_broker.tables.offset_writer import OffsetWriter
from brokers.dsbs_broker.tables.offsets import DELETED, OffsetLog
from brokers.dsbs_broker.tables.state import NodeState, StateFile
from brokers.dsbs_broker.tables.topics import (
    grown,
    partition_from_json,
    partition_to_json,
    promise_from_json,
    promise_to_json,
    record_from_json,
    record_to_json,
    tombstone,
    with_configs,
)
from brokers.dsbs_broker.tables.transactions import TxnLog
from brokers.dsbs_broker.tables.validation import (
    MAX_INCARNATION,
    address_literal_problem,
    partition_problem,
    txn_problem,
)

log = logging.getLogger("twinbench.dsbs")

OFFSETS_FILE = "offsets.jsonl"
# How long replicated offsets gather before they are handed to the writer (one thread handoff).
REPLICA_WRITE_DELAY_S = 0.1
TOPICS_FILE = "topics.jsonl"
PARTITIONS_FILE = "partitions.jsonl"
PROMISES_FILE = "promises.jsonl"
TRANSACTIONS_FILE = "transactions.jsonl"


@dataclass
class _GroupQueue:
    lock: asyncio.Lock
    users: int = 0  # requests holding or waiting for the lock: the queue goes at 0


class DsbsCoordinator(GroupRegistry):
    def __init__(
        self, node_id: int, data_dir: Path, config: DsbsConfig | None = None,
        datadir: DataDir | None = None, rng: random.Random | None = None,
    ) -> None:
        super().__init__()
        # The gossip's random choices (probe order, fan-out); None: seeded from the OS. A
        # simulation passes a seeded one, so a run replays from its seed.
        self._rng = rng
        self._node_id = node_id
        # Our own subdirectory: partition directories are "<topic>-<n>", never "dsbs".
        self._dir = Path(data_dir) / "dsbs"
        # Where a failed write of our durable state is reported (the broker halts on it);
        # alone (tests), a private one.
        self._datadir = datadir if datadir is not None else DataDir(self._dir)
        self.config = config or DsbsConfig()
        self._node: SwimNode | None = None
        self._driver: GossipDriver | None = None
        self._state_file = StateFile(self._dir)
        self._state = NodeState(node_id)
        self._pid_counter = 0
        self._offset_log = OffsetLog(self._dir / OFFSETS_FILE)
        self._writer: OffsetWriter | None = None  # owns the open offsets file
        self._topics_file: JsonJournal | None = None
        self._partitions_file: JsonJournal | None = None
        self._promises_file: JsonJournal | None = None
        # start() has returned: replicated partitions may show a leader (see the docstring).
        self._serving = False
        self._io_lock = asyncio.Lock()  # the state file (incarnation, producer-id blocks)
        self._listeners: list[Callable[[ClusterView], None]] = []
        self._deletion_listeners: list[Callable[[str], None]] = []
        # The creation (token) of every live topic as of the last deletion check: a name whose
        # live record went, or changed creation, was deleted (``_deletions``).
        self._live_tokens: dict[str, int] = {}
        self._deletions_at = -1
        self._view: ClusterView | None = None
        self._view_key: tuple[int, int] = (-1, -1)
        # cluster()'s, per record and stamp of its partitions' records (replicated topics)
        self._infos: dict[str, tuple[TopicRecord, int, TopicInfo]] = {}
        self._infos_version = -1
        self._seen_key: tuple[int, int] = (-1, -1)
        self._persisted_incarnation = 0
        self._coord_cache: dict[str, BrokerInfo] = {}
        self._coord_cache_version = -1
        # coordination_epoch(): bumped whenever the live members (which place groups) change.
        self._live_epoch = 0
        self._live_epoch_ids: tuple[int, ...] = ()
        self._live_epoch_version = -1
        # partition_state(fresh=True) answers: a pure function of the member table and the topic
        # records, so kept until either version moves (the per_request check runs per request).
        self._part_cache: dict[tuple[str, int], PartitionState] = {}
        self._part_cache_key: tuple[int, int] = (-1, -1)
        # The membership/ownership registries live with the group's coordinator, in memory:
        # they describe live connections and are rebuilt by the next rebalance after a restart.
        self._background: set[asyncio.Task] = set()
        # Creations this broker asked for, by request id, until their outcome arrives.
        self._creates: dict[int, asyncio.Future[CreateOutcome]] = {}
        # ISR changes this broker's replica manager asked for, by request id.
        self._isr_changes: dict[int, asyncio.Future[IsrOutcome]] = {}
        # Commits waiting for their successors: request id -> held (True) or not in time.
        self._commits: dict[int, asyncio.Future[bool]] = {}
        self._commit_rid = 0
        # The pending hand-over of replicated offsets to the writer (_after_io).
        self._replicas_write: asyncio.TimerHandle | None = None
        # Groups with offset requests waiting their turn (_group_turn).
        self._group_queues: dict[str, _GroupQueue] = {}
        # Requests waiting for a group's pull (OffsetReplication.loaded wakes them).
        self._pull_waiters: dict[str, asyncio.Future[None]] = {}
        # Transaction records: their file (written on a worker thread, one write at a time
        # under the lock), the writes waiting for a peer to hold them, the pull's waiters.
        self._txn_log = TxnLog(self._dir / TRANSACTIONS_FILE)
        self._txn_io = asyncio.Lock()
        self._txn_flush_queued = False
        self._txn_writes: dict[int, asyncio.Future[WriteOutcome]] = {}
        self._txn_rid = 0
        self._txn_pull_waiter: asyncio.Future[None] | None = None
        self._closed = False

    # --- lifecycle --------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def view_is_store(self) -> bool:
        # The member table and topic records are the coordination store, and cluster() is
        # computed from them whenever either changes: the paper's point.
        return True

    @property
    def node(self) -> SwimNode:
        if self._node is None:
            raise CoordinatorNotAvailable("DSBS coordinator not started")
        return self._node

    @property
    def gossip_address(self) -> tuple[str, int]:
        return self.node.addr

    async def start(self, me: BrokerInfo) -> None:
        if me.node_id != self._node_id:
            raise ValueError(f"BrokerInfo is node {me.node_id}, coordinator is {self._node_id}")
        cfg = self.config
        if cfg.gossip_key is None and not cfg.gossip_insecure:
            raise UserError("gossip needs the cluster key (--gossip-key-file), or "
                            "--gossip-insecure to run unauthenticated")
        # Names are resolved once, here: peers are told (and sent to) address literals only.
        host, _ = await resolve(cfg.gossip_host, cfg.gossip_port, what="gossip address")
        if address_literal_problem(host) is not None:
            raise UserError(f"gossip address {cfg.gossip_host!r} is {host}, which peers cannot "
                            "send to; give this broker's own address")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        seeds = tuple([await resolve(*parse_address(s), family=family, what="gossip seed")
                       for s in cfg.seeds])
        self._dir.mkdir(parents=True, exist_ok=True)
        state = self._state_file.load(self._node_id)
        if not 0 <= state.incarnation <= MAX_INCARNATION:
            raise UserError(f"{self._state_file.path}: incarnation {state.incarnation} is "
                            f"outside 0..{MAX_INCARNATION}")
        # A fresh incarnation per run, persisted before we say anything: the cluster may
        # remember us as dead at the previous one. It cannot pass the wire's maximum (gossip
        # never accepts the maximum itself, so a refutation or a restart always fits).
        if state.incarnation >= MAX_INCARNATION:
            log.warning("incarnation exhausted (%d): starting at it again; peers that remember "
                        "this broker dead at it will not see it alive", state.incarnation)
        state.incarnation = min(state.incarnation + 1, MAX_INCARNATION)
        self._state_file.store(state)
        self._state = state
        self._persisted_incarnation = state.incarnation
        self._pid_counter = state.producer_id_next  # the rest of the last block is abandoned
        entries = await asyncio.to_thread(self._offset_log.open)
        self._writer = OffsetWriter(self._offset_log, asyncio.get_running_loop())

        sock = await bind(host, cfg.gossip_port, max_queued=cfg.limits.receive_queue_packets)
        port = sock.sockname[1]
        loop = asyncio.get_running_loop()
        node = SwimNode(
            cfg.gossip, node_id=self._node_id, gossip_addr=(host, port),
            kafka_addr=(me.host, me.port), incarnation=state.incarnation, now=loop.time(),
            cluster=cfg.cluster_name, seeds=seeds, offset_replicas=cfg.offset_replicas,
            offset_replication_interval_s=cfg.offset_replication_interval_s,
            offset_commit_acks=cfg.offset_commit_acks,
            offset_commit_timeout_s=cfg.offset_commit_timeout_s,
            key=cfg.gossip_key, limits=cfg.limits, rng=self._rng,
        )
        node.offsets.load(entries)
        for txn in await asyncio.to_thread(self._txn_log.open):
            problem = txn_problem(txn, cfg.limits)  # checked as gossip would be
            if problem is not None:
                log.warning("%s: skipping transactional id %r (%s)", self._txn_log.path,
                            txn.transactional_id, problem)
                continue
            node.transactions.load([txn])
        self._topics_file = await asyncio.to_thread(JsonJournal, self._dir / TOPICS_FILE)
        for entry in self._topics_file.entries:
            try:
                rec = record_from_json(entry)
            except ValueError as exc:
                log.warning("%s: skipping %s", self._topics_file.path, exc)
                continue
            problem = node.topic_problem(rec)
            if problem is not None:  # checked as gossip would be: the file is input too
                log.warning("%s: skipping topic %r (%s)", self._topics_file.path, rec.name,
                            problem)
                continue
            node.topics.apply(rec)
        node.topics.unpersisted = []
        self._partitions_file = await asyncio.to_thread(JsonJournal,
                                                        self._dir / PARTITIONS_FILE)
        for entry in self._partitions_file.entries:
            try:
                part = partition_from_json(entry)
            except ValueError as exc:
                log.warning("%s: skipping %s", self._partitions_file.path, exc)
                continue
            problem = partition_problem(part, cfg.limits)
            if problem is not None or node.topics.apply_partition(part) is None:
                log.warning("%s: skipping %s-%d (%s)", self._partitions_file.path, part.topic,
                            part.partition, problem or "no such replicated partition held")
        node.topics.unpersisted_partitions = []
        await asyncio.to_thread(self._load_promises, node)
        node.promise_sink = self._persist_promise
        node.leadership.resume()  # what the files say this broker leads, a majority confirms
        # Tombstones loaded: their files may still be here (a crash before they went).
        for name, rec in list(node.topics.records.items()):
            if rec.deleted:
                self._tell_deleted(name)
        self._live_tokens = {r.name: r.token for r in node.topics.live()}
        self._deletions_at = node.topics.version
        self._node = node
        self._driver = GossipDriver(node, sock, on_activity=self._after_io)
        self._driver.start()
        log.info("dsbs node %d gossiping on %s:%d (incarnation %d, seeds %s, %s)",
                 self._node_id, host, port, state.incarnation, ",".join(cfg.seeds) or "-",
                 "authenticated" if cfg.gossip_key is not None else "INSECURE: unauthenticated")
        if node.seeds:
            deadline = loop.time() + cfg.join_timeout_s
            # The seed's SYNC answer comes last, after its member table and topic records.
            while node.counters["sync_replies_in"] == 0 and loop.time() < deadline:
                await asyncio.sleep(cfg.gossip.tick_s)
            if node.counters["sync_replies_in"] == 0:
                log.warning("no seed answered within %.1fs; serving alone for now",
                            cfg.join_timeout_s)
        self._serving = True
        self._view = None  # replicated partitions may show their leaders from now on
        self._infos.clear()
        self._after_io()

    async def close(self) -> None:
        """Leave gracefully: peers learn LEFT at once instead of waiting for suspicion."""
        await self._shutdown(leave=True)

    async def abort(self) -> None:
        """Stop as if killed (tests, failure scenarios): no goodbye, peers must detect it."""
        await self._shutdown(leave=False)

    async def _shutdown(self, *, leave: bool) -> None:
        if self._closed:
            return
        self._closed = True
        timeout = self.config.shutdown_timeout_s
        try:
            async with asyncio.timeout(timeout):
                await self._shutdown_steps(leave, timeout)
        except TimeoutError:
            log.error("dsbs node %d: shutdown did not finish within %.1fs; abandoning the rest",
                      self._node_id, timeout)

    async def _shutdown_steps(self, leave: bool, timeout: float) -> None:
        if self._driver is not None:
            await self._driver.close(leave=leave, timeout_s=timeout / 2)
        for held in self._commits.values():  # no successor can answer them any more
            if not held.done():
                held.set_result(False)
        for waiting in self._pull_waiters.values():
            if not waiting.done():
                waiting.set_result(None)
        for write in self._txn_writes.values():  # as commits: no peer can answer any more
            if not write.done():
                write.set_result(WriteOutcome.TIMED_OUT)
        if self._txn_pull_waiter is not None and not self._txn_pull_waiter.done():
            self._txn_pull_waiter.set_result(None)
        if self._replicas_write is not None:
            self._replicas_write.cancel()
            self._replicas_write = None
        for t in list(self._background):
            await asyncio.gather(t, return_exceptions=True)
        async with self._io_lock:
            if self._node is not None:
                await self._persist_incarnation()
        if self._writer is not None:
            if self._node is not None:
                self._submit_offsets(fsync=False)
            try:
                await self._writer.close()  # drains and fsyncs everything handed over
            except OSError as exc:
                raise self._datadir.fail(f"writing {self._offset_log.path}", exc) from exc
        if self._txn_log.is_open:
            if self._node is not None:
                await self._persist_txns(fsync=False)  # records taken since the last flush
            async with self._txn_io:
                self._txn_log.close()
        if self._topics_file is not None:
            if self._node is not None:
                self._persist_topics()  # records taken since the last I/O event
            self._topics_file.close()
            self._topics_file = None
        if self._partitions_file is not None:
            self._partitions_file.close()
            self._partitions_file = None
        if self._promises_file is not None:
            self._promises_file.close()
            self._promises_file = None

    # --- change propagation -----------------------------------------------------------------
    def _after_io(self) -> None:
        """After every receive/tick: publish view changes, persist what gossip changed."""
        node = self._node
        if node is None:
            return
        if node.topics.version != self._deletions_at:
            self._deletions()  # first: no view without the topic is served before its data goes
        key = (node.members.version, node.topics.version)
        if key != self._seen_key:
            self._seen_key = key
            if self._listeners:
                # Synchronously: a replica manager must know it leads before any request
                # this loop serves next can see it as the leader.
                view = self.cluster()
                for listener in list(self._listeners):
                    try:
                        listener(view)
                    except Exception:
                        log.exception("cluster view listener failed")
        if node.incarnation != self._persisted_incarnation:
            self._spawn(self._persist_background())
        if node.offsets.unpersisted and self._replicas_write is None and not self._closed:
            # Replicated copies: handed to the writer without fsync (the coordinator holding
            # them has them durably) and without waiting, gathered for REPLICA_WRITE_DELAY_S
            # first: a thread handoff per received commit cost a successor ~half its CPU per
            # commit. The file matters only after a restart, and a restarted broker pulls a
            # group's offsets before serving them anyway.
            self._replicas_write = asyncio.get_running_loop().call_later(
                REPLICA_WRITE_DELAY_S, self._write_replicas)
        if node.topics.unpersisted:
            self._persist_topics()
        if node.topics.unpersisted_partitions:
            self._persist_partitions()
        if node.offset_replication.completed:
            self._settle_commits()
        loaded = node.offset_replication.loaded
        if loaded:
            for group in loaded:
                waiting = self._pull_waiters.pop(group, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(None)
            loaded.clear()
        changed = node.leadership.completed
        if changed:
            for rid, result in list(changed.items()):
                del changed[rid]
                waiter = self._isr_changes.pop(rid, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(result)
        txns = node.txn_replication
        if txns.completed:
            self._settle_txn_writes()
        if txns.loaded:
            txns.loaded = False
            pulled, self._txn_pull_waiter = self._txn_pull_waiter, None
            if pulled is not None and not pulled.done():
                pulled.set_result(None)
        if node.transactions.unpersisted and not self._txn_flush_queued and not self._closed:
            # Peers' records: appended without fsync (their writer holds them durably), off the
            # loop, behind whatever write holds the file now.
            self._txn_flush_queued = True
            self._spawn(self._persist_txns_background())
        done = node.creations.completed
        if done:
            for rid, outcome in list(done.items()):
                del done[rid]
                fut = self._creates.pop(rid, None)
                if fut is not None and not fut.done():
                    fut.set_result(outcome)

    def _deletions(self) -> None:
        """Deletion events for the live topics whose record went or changed creation."""
        node = self.node
        self._deletions_at = node.topics.version
        live = {r.name: r.token for r in node.topics.live()}
        for name, token in self._live_tokens.items():
            if live.get(name) != token:
                self._tell_deleted(name)
        self._live_tokens = live

    def _tell_deleted(self, name: str) -> None:
        for listener in list(self._deletion_listeners):
            try:
                listener(name)
            except Exception:
                log.exception("topic deletion listener failed")
        if self._node is not None:
            self._spawn(self._delete_topic_offsets(name))

    async def _delete_topic_offsets(self, topic: str) -> None:
        """The deleted topic's offsets in the groups this broker coordinates."""
        node = self.node
        for group in node.offsets.groups():
            tps = [TopicPartition(t, p) for g, t, p in node.offsets.group_keys(group)
                   if t == topic]
            if not tps:
                continue
            try:
                if self.group_coordinator(group).node_id != self._node_id:
                    continue
                await self.delete_offsets(group, tps)
            except KafkaError as exc:
                log.warning("offsets of deleted topic %r in group %r stay: %s", topic, group, exc)

    def _persist_topics(self) -> None:
        # A few hundred bytes per new topic, rarely: appended in place, not on a thread.
        node = self.node
        recs, node.topics.unpersisted = node.topics.unpersisted, []
        if self._topics_file is not None and recs:
            try:
                self._topics_file.append([record_to_json(r) for r in recs])
            except OSError as exc:
                # As for offsets: the directory goes offline and the broker halts; no retry.
                self._datadir.fail(f"writing {self._topics_file.path}", exc)
                self._topics_file = None

    def _persist_partitions(self) -> None:
        node = self.node
        recs, node.topics.unpersisted_partitions = node.topics.unpersisted_partitions, []
        if self._partitions_file is not None and recs:
            try:
                self._partitions_file.append([partition_to_json(r) for r in recs])
            except OSError as exc:
                self._datadir.fail(f"writing {self._partitions_file.path}", exc)
                self._partitions_file = None

    def _load_promises(self, node: SwimNode) -> None:
        """The election promises this broker made (``gossip/leadership.py``), the newest per
        partition; the file keeps only those."""
        journal = JsonJournal(self._dir / PROMISES_FILE, fsync=True)
        newest: dict[tuple[str, int], tuple[int, Promise]] = {}
        for entry in journal.entries:
            try:
                key, token, promise = promise_from_json(entry)
            except ValueError as exc:
                log.warning("%s: skipping %s", journal.path, exc)
                continue
            cur = newest.get(key)
            if cur is None or (cur[0], cur[1].epoch) < (token, promise.epoch):
                newest[key] = (token, promise)
        if len(newest) < len(journal.entries):
            journal.rewrite([promise_to_json(k[0], k[1], t, p)
                             for k, (t, p) in sorted(newest.items())])
        node.leadership.load_promises(newest)
        self._promises_file = journal

    def _persist_promise(self, topic: str, partition: int, token: int,
                         promise: Promise) -> None:
        """Write and fsync a promise before its ballot is queued: a replica that forgot a
        grant after a crash could grant the epoch again. A few hundred bytes per election,
        on the loop: the answer must not leave before the sync, and elections are rare."""
        if self._promises_file is None:
            raise OSError(f"{self._dir / PROMISES_FILE} is closed")
        try:
            self._promises_file.append([promise_to_json(topic, partition, token, promise)])
        except OSError as exc:
            self._promises_file = None
            raise self._datadir.fail(f"writing {self._dir / PROMISES_FILE}", exc) from exc

    def _spawn(self, coro) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    async def _persist_background(self) -> None:
        async with self._io_lock:
            if self._closed:
                return
            await self._persist_incarnation()

    async def _persist_incarnation(self) -> None:
        """Store a changed incarnation; caller holds the I/O lock."""
        node = self.node
        if node.incarnation != self._persisted_incarnation:
            self._state.incarnation = node.incarnation
            await asyncio.to_thread(self._state_file.store, self._state)
            self._persisted_incarnation = node.incarnation

    def _write_replicas(self) -> None:
        self._replicas_write = None
        if self._node is not None and self._node.offsets.unpersisted:
            self._submit_offsets(fsync=False)

    def _submit_offsets(self, *, fsync: bool, wait: bool = False) -> asyncio.Future[None] | None:
        """Hand every accepted, unwritten entry to the writer (None: nothing to wait for)."""
        writer = self._writer
        node = self.node
        if writer is None or writer.closed:
            # Closed (or never started): as before, entries accepted after close stay in memory.
            node.offsets.unpersisted = []
            return None
        pending, node.offsets.unpersisted = node.offsets.unpersisted, []
        if not pending and not wait:
            return None
        return writer.submit(pending, fsync=fsync, live=node.offsets.entries, wait=wait)

    # --- metadata ---------------------------------------------------------------------------
    def _lookup(self, node_id: int) -> tuple[int, bool] | None:
        m = self.node.members.get(node_id)
        return None if m is None else (m.incarnation, m.live)

    def _partition(self, rec: TopicRecord, p: int) -> PartitionState:
        reps = replica_placement.replicas(rec.ring, rec.replication_factor, p)
        if rec.replication_factor == 1:
            leader, epoch, live = replica_placement.leader_and_epoch(reps, self._lookup)
            return PartitionState(rec.name, p, leader, epoch, reps, live)
        node = self.node
        held = node.topics.partition(rec.name, p)
        assert held is not None  # rec is the live record of the name
        leader = held.leader
        if (leader == NOBODY or not self._serving or not node.leadership.live(leader)
                or (rec.name, p) in node.leadership.resuming
                or node.leadership.pending((rec.name, p), held) is not None):
            leader = NO_LEADER
        return PartitionState(rec.name, p, leader, held.leader_epoch, reps,
                              node.leadership.view_isr(held))

    def _topic_info(self, rec: TopicRecord) -> TopicInfo:
        parts = tuple(self._partition(rec, p) for p in range(rec.num_partitions))
        return TopicInfo(rec.name, parts, MappingProxyType(dict(rec.configs)))

    def cluster(self) -> ClusterView:
        node = self._node
        if node is None:
            return ClusterView((), NO_LEADER, MappingProxyType({}))
        key = (node.members.version, node.topics.version)
        if self._view is None or key != self._view_key:
            brokers = []
            for nid in node.members.live_ids():
                s = node.members.members[nid].state
                brokers.append(BrokerInfo(nid, s.kafka_host, s.kafka_port))
            if self._infos_version != node.members.version:
                self._infos.clear()  # leaders and epochs follow the member table
                self._infos_version = node.members.version
            # A new topic changes one entry: the others' TopicInfo (one PartitionState per
            # partition) are reused while their record and the member table are unchanged.
            infos = self._infos
            stamps = node.topics.stamps
            topics = {}
            for rec in node.topics.live():
                name = rec.name
                cached = infos.get(name)
                stamp = stamps.get(name, 0)
                if cached is None or cached[0] is not rec or cached[1] != stamp:
                    cached = infos[name] = (rec, stamp, self._topic_info(rec))
                topics[name] = cached[2]
            controller = brokers[0].node_id if brokers else NO_LEADER
            self._view = ClusterView(tuple(brokers), controller, MappingProxyType(topics),
                                     cluster_id=self.config.cluster_name)
            self._view_key = key
        return self._view

    async def partition_state(
        self, topic: str, partition: int, *, fresh: bool
    ) -> PartitionState | None:
        if fresh:
            # The authoritative store is this broker's own tables, in memory: no network. The
            # answer is a pure function of (member table, topic records), so it is recomputed
            # only when either has changed since (both versions move on every accepted change).
            node = self.node
            key = (node.members.version, node.topics.version)
            if key != self._part_cache_key:
                self._part_cache.clear()
                self._part_cache_key = key
            state = self._part_cache.get((topic, partition))
            if state is None:
                rec = node.topics.get(topic)
                if rec is None or not 0 <= partition < rec.num_partitions:
                    return None
                state = self._partition(rec, partition)
                if len(self._part_cache) < 100_000:
                    self._part_cache[(topic, partition)] = state
            return state
        return self.cluster().partition(topic, partition)

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        configs: Mapping[str, str] | None = None,
        *,
        auto: bool = False,
    ) -> TopicInfo:
        """Ask the name's arbiter (perhaps ourselves) to create the topic and wait for its
        answer; the record is in our table by the time this returns or raises
        TopicAlreadyExists. Invalid definitions are refused here, without a round trip."""
        return await self._create(name, num_partitions, replication_factor, configs,
                                  auto=auto)

    async def create_topic_assigned(
        self, name: str, assignment: Assignment, configs: Mapping[str, str] | None = None
    ) -> TopicInfo:
        """As ``create_topic``, with the ring that puts partition p on ``assignment[p]``
        (``replica_placement.manual_ring``) carried to the arbiter in the CREATE."""
        rf = len(assignment[0])
        ring = replica_placement.manual_ring(assignment, rf)
        if ring is None:
            raise InvalidReplicaAssignment(
                "DSBS places a topic's replicas on a ring (partition p on ring[p], ring[p+1], "
                "...); this assignment is not one")
        return await self._create(name, len(assignment), rf, configs, auto=False, ring=ring)

    async def _create(
        self, name: str, num_partitions: int, replication_factor: int,
        configs: Mapping[str, str] | None, *, auto: bool, ring: tuple[int, ...] = (),
    ) -> TopicInfo:
        node = self.node
        validate_topic_name(name)
        if name in node.topics:
            raise TopicAlreadyExists(f"topic {name!r} already exists")
        if num_partitions < 1:
            raise InvalidPartitions(f"{num_partitions} partitions requested")
        rf = validate_replication_factor(replication_factor, replicates=True)
        limits = self.config.limits
        if num_partitions > limits.max_topic_partitions:
            raise InvalidPartitions(f"{num_partitions} partitions requested; this cluster allows "
                                    f"at most {limits.max_topic_partitions} per topic")
        items = tuple(sorted((configs or {}).items()))
        # The arbiter builds the ring over its live members and checks everything again; ours
        # are the best estimate of its length, so most refusals cost no round trip.
        ring_len = min(num_partitions + rf - 1, max(node.members.live_count(), 1))
        probe = TopicRecord(name, 1, self._node_id, num_partitions, rf,
                            ring or tuple(range(ring_len)), items, True, 0)
        problem = node.topic_problem(probe)
        if problem is not None:
            raise refusal(name, problem, limits)
        if len(encode_update(probe)) > node.record_room():
            raise InvalidConfig(f"topic {name!r}: definition exceeds one gossip packet")
        fut: asyncio.Future[CreateOutcome] = asyncio.get_running_loop().create_future()
        rid = node.creations.request(name, num_partitions, rf, items, explicit=not auto,
                                     now=self._now(), ring=ring)
        self._creates[rid] = fut
        if self._driver is not None:
            self._driver.flush()  # the CREATE or PROPOSE leaves now, not at the next timer
        self._after_io()
        try:
            outcome = await fut
        finally:
            if self._creates.pop(rid, None) is not None:
                node.creations.cancel(rid)  # the caller gave up (timeout, cancellation)
                self._after_io()
        if outcome.code == 0:
            return self.cluster().topics[name]
        cls: type[KafkaError] = error_for_code(outcome.code) or UnknownServerError
        raise cls(outcome.message)

    async def change_isr(
        self, topic: str, partition: int, leader_epoch: int, isr: Sequence[int]
    ) -> PartitionState:
        """IsrChanges (brokers/core/isr_changes.py): the leader's ISR change, gossiped and
        pushed to the partition's replicas; returns once every live member of the new ISR
        holds it (``gossip/leadership.py``), or raises if another record superseded it."""
        node = self.node
        rid = node.leadership.change_isr(topic, partition, leader_epoch, list(isr),
                                         self._now())
        fut: asyncio.Future[IsrOutcome] = asyncio.get_running_loop().create_future()
        self._isr_changes[rid] = fut
        if self._driver is not None:
            self._driver.flush()
        self._after_io()
        try:
            async with asyncio.timeout(self.config.gossip.create_timeout_s):
                outcome = await fut
        except TimeoutError:
            raise RequestTimedOut(f"{topic}-{partition}: the in-sync replicas did not confirm "
                                  "the ISR change in time") from None
        finally:
            if self._isr_changes.pop(rid, None) is not None:
                node.leadership.cancel(rid)
        if outcome.code or outcome.record is None:
            cls: type[KafkaError] = error_for_code(outcome.code) or UnknownServerError
            raise cls(outcome.message)
        state = await self.partition_state(topic, partition, fresh=True)
        if state is None:
            raise UnknownTopicOrPartition(f"{topic}-{partition}")
        return state

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        """Write the grown record here and push it to every live member (``metadata.grown``
        says why it outranks the old one everywhere); no round trip to wait for."""
        node = self.node
        rec = node.topics.get(topic)
        if rec is None:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        if total <= rec.num_partitions:
            raise InvalidPartitions(f"topic {topic!r} has {rec.num_partitions} partitions; "
                                    f"{total} would not add any")
        new = grown(rec, total, self._node_id, tuple(node.members.live_ids()))
        problem = node.topic_problem(new)
        if problem is not None:
            raise refusal(topic, problem, self.config.limits)
        if len(encode_update(new)) > node.record_room():
            raise InvalidPartitions(f"topic {topic!r}: its record would exceed one gossip packet")
        self._publish_record(new)
        return self.cluster().topics[topic]

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        """As ``create_partitions``: a record with the new configs, one version up, written
        here and pushed (``metadata.merge`` keeps it over the old one everywhere)."""
        node = self.node
        rec = node.topics.get(topic)
        if rec is None:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        new = with_configs(rec, change(dict(rec.configs)), self._node_id)
        if len(encode_update(new)) > node.record_room():
            raise InvalidConfig(f"topic {topic!r}: its configs would exceed one gossip packet")
        self._publish_record(new)
        return self.cluster().topics[topic]

    async def delete_topic(self, topic: str) -> None:
        """A deletion record written here and pushed to every live member (``metadata.merge``:
        no stale record of the topic outranks it); this broker's view drops the topic now."""
        rec = self.node.topics.get(topic)
        if rec is None:
            raise UnknownTopicOrPartition(f"unknown topic {topic!r}")
        self._publish_record(tombstone(rec, self._node_id))

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._deletion_listeners.append(listener)

    def _publish_record(self, new: TopicRecord) -> None:
        """Take a record changed here and push it to every live member at once."""
        node = self.node
        if node.store_topic(new):
            node.push_topic(new)
        if self._driver is not None:
            self._driver.flush()
        self._after_io()

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._listeners.append(listener)

    # --- groups -----------------------------------------------------------------------------
    def coordination_epoch(self, group_id: str) -> int:
        # This broker's own count of changes to the live members it places groups by: no
        # consensus, so no cluster-wide epoch; a broker cut off sees its peers die, and that
        # is a change too.
        node = self.node
        if self._live_epoch_version != node.members.version:
            self._live_epoch_version = node.members.version
            live = tuple(node.members.live_ids())
            if live != self._live_epoch_ids:
                self._live_epoch_ids = live
                self._live_epoch += 1
        return self._live_epoch

    def group_coordinator(self, group_id: str) -> BrokerInfo:
        node = self.node
        if self._coord_cache_version != node.members.version:
            self._coord_cache.clear()
            self._coord_cache_version = node.members.version
        info = self._coord_cache.get(group_id)
        if info is None:
            order = node.live_order(group_id)
            if not order:
                raise CoordinatorNotAvailable(f"no live broker for group {group_id!r}")
            s = node.members.members[order[0]].state
            info = BrokerInfo(s.node_id, s.kafka_host, s.kafka_port)
            if len(self._coord_cache) < 100_000:
                self._coord_cache[group_id] = info
        return info

    async def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._datadir.check()  # a failed write is not retried: the broker is halting
        node = self.node
        self._check_quorate(group_id)
        async with self._group_turn(group_id):
            entries = node.offsets.commit(group_id, offsets, int(time.time() * 1000))
            # Sent to the successors now; held there is awaited after our own write below.
            self._commit_rid += 1
            rid = self._commit_rid
            held = asyncio.get_running_loop().create_future()
            self._commits[rid] = held
            node.offset_replication.commit(rid, group_id, entries, self._now())
            if self._driver is not None:
                self._driver.flush()
            self._settle_commits()
            # Our entries are in this job (nothing awaits between commit() and here), so waiting
            # for it means they are written, and fsynced when offsets_fsync is on. Other commits
            # queued while the writer is busy share its next write and fsync.
            done = self._submit_offsets(fsync=self.config.offsets_fsync, wait=True)
        try:
            if done is not None:
                try:
                    await done
                except OSError as exc:
                    raise self._datadir.fail(f"writing {self._offset_log.path}", exc) from exc
            # The node fails the wait at its deadline (offset_commit_timeout_s); a node that
            # stops first fails it in _shutdown_steps.
            ok = await held
        finally:
            self._commits.pop(rid, None)
        if not ok:
            # Not acknowledged; it may still reach the successors later (as a timed-out write
            # to Kafka's __consumer_offsets may), and the client retries it.
            raise CoordinatorNotAvailable(
                f"offset commit for group {group_id!r} not held by "
                f"{node.offset_replication.required()} successor(s) within "
                f"{self.config.offset_commit_timeout_s:g}s")

    def _check_quorate(self, group_id: str) -> None:
        """COORDINATOR_LOAD_IN_PROGRESS from a broker that is not ``OffsetReplication.quorate``:
        it is the group's coordinator in its own view, not ready to serve it. Clients retry the
        same request, as they do while Kafka loads a ``__consumer_offsets`` partition, and get
        an answer once this broker sees a majority. COORDINATOR_NOT_AVAILABLE would be wrong
        here: librdkafka then looks the coordinator up again and, finding the same broker,
        never sends again the OffsetFetch of a new assignment (its partitions wait for
        committed offsets for ever; the nemesis's group stall of seed 668362305)."""
        node = self.node
        if not node.offset_replication.quorate():
            raise CoordinatorLoadInProgress(
                f"group {group_id!r}: this broker sees {node.members.live_count()} of "
                f"{len(node.members)} known brokers alive"
                f"{'' if node.has_synced else ' and no seed has answered'}; it serves no "
                "committed offsets without a majority")

    @contextlib.asynccontextmanager
    async def _group_turn(self, group_id: str) -> AsyncIterator[None]:
        """A group's offset requests, one at a time in arrival order, once it may be served.

        Commits are stamped (ordered) when they are applied, so a commit must not overtake an
        earlier one of its group that waits for the group's pull: while any request of the
        group waits, later ones queue behind it (asyncio.Lock is first come, first served).
        The common case, a pulled group nobody waits for, takes no lock."""
        if group_id not in self._group_queues and self.node.offset_replication.ensure_pulled(
                group_id, self._now()):
            yield
            return
        queue = self._group_queues.get(group_id)
        if queue is None:
            queue = self._group_queues[group_id] = _GroupQueue(asyncio.Lock())
        queue.users += 1
        try:
            async with queue.lock:
                await self._pulled(group_id)
                yield
        finally:
            queue.users -= 1
            if queue.users == 0:
                del self._group_queues[group_id]

    async def _pulled(self, group_id: str) -> None:
        """Return once this broker may serve ``group_id``'s offsets: at once, unless the live
        set changed since it last pulled them (``OffsetReplication.ensure_pulled``); then it
        waits for the pull, up to ``offset_commit_timeout_s`` (a peer that died unseen answers
        no pull until gossip declares it dead), and answers COORDINATOR_LOAD_IN_PROGRESS (the
        client retries) if that was not enough. Waiting rather than answering at once keeps a
        group's commits in order: a refused commit that the client retries later would land
        after commits sent behind it."""
        repl = self.node.offset_replication
        if repl.ensure_pulled(group_id, self._now()):
            return
        if self._driver is not None:
            self._driver.flush()
        fut = self._pull_waiters.get(group_id)
        if fut is None:
            fut = self._pull_waiters[group_id] = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(fut), self.config.offset_commit_timeout_s)
        if not repl.is_pulled(group_id, self._now()):
            raise CoordinatorLoadInProgress(
                f"group {group_id!r}: the live brokers changed; its committed offsets are "
                "still being pulled from their other holders")

    def _settle_commits(self) -> None:
        """Hand finished successor waits (``OffsetReplication.completed``) to their commits."""
        node = self._node
        if node is None:
            return
        done = node.offset_replication.completed
        for rid, ok in list(done.items()):
            del done[rid]
            fut = self._commits.get(rid)
            if fut is not None and not fut.done():
                fut.set_result(ok)

    async def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        self._check_quorate(group_id)
        async with self._group_turn(group_id):
            return self.node.offsets.fetch(group_id, partitions)

    async def delete_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> None:
        """Tombstones (``offsets.DELETED``) committed and replicated like offsets, so the
        group's replicas drop them too and no stale copy revives them."""
        live = self.node.offsets.fetch(group_id, partitions)
        if live:
            await self.commit_offsets(group_id, {
                tp: OffsetAndMetadata(DELETED, None) for tp in live})

    # --- transactions (brokers.core.transactions.coordinator.TransactionStore) ---------------
    async def read_transaction(self, transactional_id: str) -> tuple[bytes | None, int]:
        """The newest record of the id this broker holds, once it may serve transactions."""
        await self._txn_ready()
        node = self.node
        if not node.txn_replication.serves(transactional_id):
            raise CoordinatorLoadInProgress(
                f"transactional id {transactional_id!r}: its last record, written here, is not "
                "held by any peer yet")
        e = node.transactions.get(transactional_id)
        return (None, NO_VERSION) if e is None else (e.record, e.version)

    async def write_transaction(self, transactional_id: str, record: bytes,
                                version: int) -> int:
        """Store the record here if this broker places the id and still holds ``version``,
        send it to every live peer, and return its version once a peer holds it."""
        self._datadir.check()
        self._check_places(transactional_id)
        await self._txn_ready()
        self._check_places(transactional_id)  # the live set may have moved during the pull
        node = self.node
        table = node.transactions
        entry = table.candidate(transactional_id, record, version)
        if entry is None:
            raise NotCoordinator(
                f"transactional id {transactional_id!r} holds version "
                f"{table.version(transactional_id)} here, not {version}: another coordinator "
                "wrote it since")
        problem = txn_problem(entry, self.config.limits)
        if problem is not None or not table.has_room(transactional_id):
            limits = self.config.limits
            raise UnknownServerError(
                f"transactional id {transactional_id!r}: its record ({len(record)} bytes) "
                f"cannot be stored ({problem or 'transactions_full'}; this cluster keeps "
                f"{limits.max_transactions} ids of at most {limits.max_transaction_bytes} bytes)")
        table.put(entry)
        self._txn_rid += 1
        rid = self._txn_rid
        held: asyncio.Future[WriteOutcome] = asyncio.get_running_loop().create_future()
        self._txn_writes[rid] = held
        node.txn_replication.write(rid, entry, self._now())
        if self._driver is not None:
            self._driver.flush()
        self._settle_txn_writes()  # alone (or lazy), or too few peers: decided at once
        try:
            # On our disk (fsynced as commits are) while the peers receive it.
            await self._persist_txns(fsync=self.config.offsets_fsync)
            outcome = await held
        finally:
            self._txn_writes.pop(rid, None)
        if outcome is WriteOutcome.HELD:
            return entry.version
        if outcome is WriteOutcome.SUPERSEDED:
            raise NotCoordinator(f"transactional id {transactional_id!r}: a peer holds a newer "
                                 "record written by another coordinator")
        # Not acknowledged; it may still reach the peers later, as a timed-out write to Kafka's
        # __transaction_state may. The client retries.
        raise CoordinatorNotAvailable(
            f"transactional id {transactional_id!r}: the record was not held by "
            f"{node.txn_replication.required()} peer(s) within "
            f"{self.config.offset_commit_timeout_s:g}s")

    async def list_transactions(self) -> list[str]:
        await self._txn_ready()
        return self.node.transactions.ids()

    def _check_places(self, transactional_id: str) -> None:
        owner = self.group_coordinator(placement_key(transactional_id)).node_id
        if owner != self._node_id:
            raise NotCoordinator(f"transactional id {transactional_id!r} is placed on broker "
                                 f"{owner}, not on {self._node_id}")

    async def _txn_ready(self) -> None:
        """Return once this broker may serve transaction records: quorate (as for offsets: a
        minority side holds what its side had), and pulled from the live peers since its live
        set last changed (``TxnReplication.ensure_pulled``), waiting up to
        ``offset_commit_timeout_s`` for the pull; COORDINATOR_LOAD_IN_PROGRESS otherwise, which
        clients retry."""
        node = self.node
        if not node.offset_replication.quorate():
            raise CoordinatorLoadInProgress(
                f"this broker sees {node.members.live_count()} of {len(node.members)} known "
                "brokers alive; it serves no transactions without a majority")
        repl = node.txn_replication
        if repl.ensure_pulled(self._now()):
            return
        if self._driver is not None:
            self._driver.flush()
        waiter = self._txn_pull_waiter
        if waiter is None or waiter.done():
            waiter = self._txn_pull_waiter = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(waiter), self.config.offset_commit_timeout_s)
        if not repl.is_pulled():
            raise CoordinatorLoadInProgress(
                "the live brokers changed; their transaction records are still being pulled")

    def _settle_txn_writes(self) -> None:
        node = self._node
        if node is None:
            return
        done = node.txn_replication.completed
        for rid, outcome in list(done.items()):
            del done[rid]
            fut = self._txn_writes.get(rid)
            if fut is not None and not fut.done():
                fut.set_result(outcome)

    async def _persist_txns(self, *, fsync: bool) -> None:
        """Append every record taken and not yet written (``fsync``: and sync the file, which
        covers lines an earlier flush wrote without); compact when the file has grown."""
        async with self._txn_io:
            self._txn_flush_queued = False  # records taken from now on need another flush
            node = self._node
            if node is None or not self._txn_log.is_open:
                return
            table = node.transactions
            pending, table.unpersisted = table.unpersisted, []
            live = (list(table.entries.values())
                    if self._txn_log.compaction_due(len(table)) else None)
            try:
                await asyncio.to_thread(self._write_txn_log, pending, fsync, live)
            except OSError as exc:
                raise self._datadir.fail(f"writing {self._txn_log.path}", exc) from exc

    def _write_txn_log(self, pending: list[TxnEntry], fsync: bool,
                       live: list[TxnEntry] | None) -> None:
        self._txn_log.append(pending, fsync=fsync)
        if live is not None:
            self._txn_log.rewrite(live)

    async def _persist_txns_background(self) -> None:
        # A KafkaError here is the data dir failing, reported by _persist_txns: the broker halts.
        with contextlib.suppress(KafkaError):
            await self._persist_txns(fsync=False)

    # --- misc -------------------------------------------------------------------------------
    async def allocate_producer_id(self) -> int:
        async with self._io_lock:
            if self._pid_counter >= self._state.producer_id_next:
                self._state.producer_id_next = self._pid_counter + self.config.producer_id_block
                self._state.incarnation = max(self._state.incarnation, self.node.incarnation)
                await asyncio.to_thread(self._state_file.store, self._state)
            pid = (self._node_id << 40) | self._pid_counter
            self._pid_counter += 1
            return pid

    def counters(self) -> DsbsCounters:
        node = self._node
        if node is None:
            return DsbsCounters()
        return DsbsCounters.from_gossip(node.counters, members_live=node.members.live_count(),
                                        members_known=len(node.members),
                                        incarnation=node.incarnation)

    def _now(self) -> float:
        return asyncio.get_running_loop().time()
