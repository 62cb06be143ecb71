"""RaftCoordinator: the Coordinator seam over an embedded Raft metadata quorum (KRaft's design).

Every broker runs a ``RaftDriver`` (node.py): voters vote and replicate, learners (KRaft's
observers) replicate only; all of them apply the committed log to their own
``MetadataImage`` and serve ``cluster()`` from it. The quorum's leader is the controller: its
loop (``_control``) compares what the image says with what should be (brokers whose heartbeats
stopped are fenced, partitions get leaders from the live ISR) and proposes the records that
set it right.

A change asked of any broker (a topic created, an offset committed, an ISR shrunk) is decided
here on the image this broker applied, as a record, and proposed through the leader over the
control channel (control.py). This broker answers once its own image applied the record, so
its own next view shows the change, as the seam asks. Records carry the version they were
decided on, so a decision on a stale image is rejected where it commits, the same way on every
broker; the caller decides again on the newer image (an ISR change, configs) or reports the
conflict (a name already taken).

How the coordination policies land here (docs/architecture.md, fairness rule 2):

* ``partition_state(fresh=True)`` (``metadata_check: per_request``) is a linearizable read: a
  ReadIndex barrier at the leader, then this broker's image once it applied that far.
* ``commit_offsets`` is one committed log append, so ``offset_commit: every_fetch`` pays a
  consensus round (and the quorum's fsyncs) per fetch, where the zk twin pays a ZooKeeper write.
* ``cached`` reads the applied image: ``cluster()`` never waits.

Transactions (the core's ``TransactionStore``, brokers/core/transactions/coordinator.py) are
records in the same log, as KRaft keeps its own state there: a write is a ``TxnState`` record
the image applies only if the id's version is still the one the writer read and the writer
still places the id, so a coordinator that lost the id is refused by the log itself
(NOT_COORDINATOR). Reads go behind a ReadIndex barrier; the core caches what it wrote, so it
reads only when it first meets an id or after the placement moved.

Layout:
- ``config.py``      RaftBrokerConfig: members, timing, sessions
- ``coordinator.py`` this: the seam, the control channel's both ends, the controller's loop
- ``control.py``     the control channel's messages
- ``counters.py``    RaftCounters
- ``node.py``        RaftDriver: the Raft core on asyncio; ``storage.py``, ``transport.py``
- ``raft/``          the sans-IO Raft core and its simulation
- ``metadata/``      the records, the image, the controller's decisions
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import heapq
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from brokers.core.coordinator import (
    NO_LEADER,
    Assignment,
    BrokerInfo,
    ClusterView,
    ConfigChange,
    MemberRecord,
    OffsetAndMetadata,
    PartitionState,
    TopicInfo,
    TopicPartition,
)
from brokers.core.datadir import DataDir
from brokers.core.errors import (
    CoordinatorNotAvailable,
    InvalidPartitions,
    KafkaError,
    NotCoordinator,
    RequestTimedOut,
    TopicAlreadyExists,
    UnknownTopicOrPartition,
    UserError,
)
from brokers.core.transactions.coordinator import NO_VERSION
from brokers.raft_broker import control
from brokers.raft_broker.config import RaftBrokerConfig
from brokers.raft_broker.counters import RaftCounters
from brokers.raft_broker.metadata import decisions
from brokers.raft_broker.metadata.image import MetadataImage, Outcome
from brokers.raft_broker.metadata.records import (
    AddPartitions,
    AllocateProducerIds,
    ChangePartition,
    CommitOffsets,
    CommittedOffset,
    CreateTopic,
    DeleteOffsets,
    DeleteTopic,
    FenceBroker,
    Owner,
    Record,
    RecordDecodeError,
    RecordOwners,
    RegisterBroker,
    RegisterMember,
    SetTopicConfigs,
    TxnState,
    UnregisterBroker,
    UnregisterMember,
    decode,
    encode,
)
from brokers.raft_broker.node import NotLeader, ProposalLost, RaftDriver, ReadFailed

log = logging.getLogger(__name__)

# Records that change what ``cluster()`` shows; the others (groups, offsets, producer ids)
# leave the cached view as it is, so an offset commit per fetch rebuilds no view.
_VIEW_RECORDS = (RegisterBroker, FenceBroker, UnregisterBroker, CreateTopic, AddPartitions,
                 ChangePartition, SetTopicConfigs, DeleteTopic)

T = TypeVar("T")


class RaftCoordinator:
    def __init__(self, node_id: int, data_dir: Path, config: RaftBrokerConfig, *,
                 datadir: DataDir | None = None, rng: random.Random | None = None) -> None:
        config.check_member(node_id)
        self._node_id = node_id
        self.config = config
        self.image = MetadataImage()
        self._me: BrokerInfo | None = None
        self._epoch: int | None = None  # this broker's registration: its RegisterBroker's index
        self._view: ClusterView | None = None
        self._dirty = True
        self._subscribers: list[Callable[[ClusterView], None]] = []
        self._deletion_listeners: list[Callable[[str], None]] = []
        self._notify_scheduled = False
        # (index, sequence, future): callers waiting for this image to apply ``index``.
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiter_seq = 0
        self._changed = asyncio.Event()
        # Requests to the leader awaiting their answer, by request id.
        self._pending: dict[int, asyncio.Future[control.Answer]] = {}
        # Random start: an answer meant for this broker's earlier life (queued at the leader
        # across its restart) must not match a request of this one.
        self._next_rid = secrets.randbits(48) << 8
        self._sessions = decisions.BrokerSessions(config.session_timeout_s)
        self._office_term: int | None = None  # the term this controller took office in
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._pid_next = 0
        self._pid_end = 0
        self._pid_lock = asyncio.Lock()
        self._closed = False
        self._tally: dict[str, int] = dict.fromkeys(
            ("raft_proposals", "raft_proposals_rejected", "raft_proposals_retried",
             "raft_requests_served", "raft_read_barriers", "raft_controller_records",
             "raft_transaction_writes", "raft_transaction_writes_refused"), 0)
        # Last: the driver restores the image from the snapshot on disk, through _restore.
        self._driver = RaftDriver(
            node_id, config.voters, config.learners, directory=data_dir / "raft",
            listen=(config.listen_host, config.listen_port), peers=config.peers,
            key=config.key, apply=self._apply, snapshot=lambda: self.image.snapshot(),
            restore=self._restore, config=config.raft, tick_s=config.tick_s,
            rng=rng,  # the election timeouts' draws: seeded in a simulation, to replay
            on_control=self._on_control,
            # A stopped node halts the broker as a failed data directory does: the metadata
            # log lives there, and a broker that can no longer follow it must not serve.
            on_failure=None if datadir is None else datadir.fail,
            cluster_id=config.cluster_id)

    # --- lifecycle ------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return self._node_id

    @property
    def view_is_store(self) -> bool:
        # The image is a replica of the log that may lag its commit: a per_request check asks
        # the leader for a read barrier first.
        return False

    @property
    def raft_port(self) -> int:
        return self._driver.port

    async def start(self, me: BrokerInfo) -> None:
        self._me = me
        await self._driver.start()
        loop = asyncio.get_running_loop()
        self._loops = [loop.create_task(self._heartbeats(), name="raft-heartbeats"),
                       loop.create_task(self._control(), name="raft-controller")]
        deadline = time.monotonic() + self.config.start_timeout_s
        try:
            index, _ = await self._propose(
                RegisterBroker(me.node_id, me.host, me.port, me.rack), deadline,
                RequestTimedOut)
        except RequestTimedOut:
            refused = self._driver.transport.last_refusal
            raise UserError(
                f"broker {me.node_id}: no Raft leader registered it within "
                f"{self.config.start_timeout_s:.0f} s; "
                + (f"it refused {refused}" if refused is not None else
                   f"are a majority of the voters {list(self.config.voters)} running and "
                   "reachable?")) from None
        self._epoch = index
        self._heartbeat()  # at once: the controller unfences a broker on its heartbeat
        # Served once the controller has seen it caught up and unfenced it (KRaft's rule).
        try:
            await self._until(self._unfenced, deadline, "the controller to unfence it")
        except RequestTimedOut as exc:
            raise UserError(f"broker {me.node_id}: {exc}") from None

    async def start_controller(self) -> None:
        """Start as a dedicated controller (KRaft's ``process.roles=controller``): a voter that
        keeps the log and, when it leads, runs the controller; no broker of its own, so
        nothing to register and no heartbeats. Returns once its Raft listener is bound."""
        if self._node_id not in self.config.voters:
            raise UserError(f"node {self._node_id}: a dedicated controller must be one of the "
                            f"voters {list(self.config.voters)}")
        await self._driver.start()
        self._loops = [asyncio.get_running_loop().create_task(self._control(),
                                                              name="raft-controller")]

    def _unfenced(self) -> bool:
        entry = self.image.brokers.get(self._node_id)
        return entry is not None and entry.epoch == self._epoch and not entry.fenced

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Heartbeats and the controller stop first: a heartbeat sent after the fence (or this
        # node's own controller, if it leads) would unfence it again.
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        if self._epoch is not None and self._driver.leader is not None:
            # A controlled shutdown: fenced now, so its partitions move at once rather than a
            # session later. Best effort: the quorum may be going down too.
            with contextlib.suppress(KafkaError, TimeoutError):
                async with asyncio.timeout(1.5):
                    await self._propose(FenceBroker(self._node_id, self._epoch, True),
                                        time.monotonic() + 1.0, RequestTimedOut)
        for task in [*self._loops, *self._tasks]:
            task.cancel()
        await asyncio.gather(*self._loops, *self._tasks, return_exceptions=True)
        await self._driver.close()
        for answer in self._pending.values():
            answer.cancel()
        for _, _, applied in self._waiters:
            applied.cancel()

    # --- applying the log (called by the driver, on the loop) -------------------------------
    def _apply(self, index: int, data: bytes) -> tuple[int, Outcome]:
        # Deterministic on every broker: the same bytes (undecodable ones too, and a new
        # leader's empty entry) do the same everywhere.
        record, outcome = self.image.apply_entry(index, data)
        if outcome.applied and isinstance(record, _VIEW_RECORDS):
            self._dirty = True
        if outcome.deleted is not None:
            self._topic_deleted(outcome.deleted)
        self._progress()
        return index, outcome

    def _restore(self, data: bytes) -> None:
        new = MetadataImage.restore(data)
        old, self.image = self.image, new
        self._dirty = True
        for name, topic in old.topics.items():
            kept = new.topics.get(name)
            if kept is None or kept.topic_id != topic.topic_id:
                self._topic_deleted(name)
        self._progress()

    def _topic_deleted(self, name: str) -> None:
        self._dirty = True  # no view with the topic is served after its listeners ran
        for listener in list(self._deletion_listeners):
            listener(name)

    def _progress(self) -> None:
        applied = self.image.applied_index
        while self._waiters and self._waiters[0][0] <= applied:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)
        self._changed.set()
        self._changed = asyncio.Event()
        if self._dirty and self._subscribers and not self._notify_scheduled:
            self._notify_scheduled = True
            asyncio.get_running_loop().call_soon(self._notify)

    def _notify(self) -> None:
        self._notify_scheduled = False
        view = self.cluster()
        for listener in list(self._subscribers):
            listener(view)

    async def _applied(self, index: int, deadline: float, error: type[KafkaError]) -> None:
        """Return once this broker's image applied ``index``."""
        if self.image.applied_index >= index:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiter_seq += 1
        heapq.heappush(self._waiters, (index, self._waiter_seq, fut))
        await self._by(fut, deadline, error, f"this broker to apply index {index}")

    async def _until(self, done: Callable[[], bool], deadline: float, what: str) -> None:
        while not done():
            await self._by(self._changed.wait(), deadline, RequestTimedOut, what)

    @staticmethod
    async def _by(awaitable: Awaitable[T], deadline: float, error: type[KafkaError],
                  what: str) -> T:
        # asyncio.timeout, not wait_for, here and below: on 3.11 a wait_for whose timeout
        # fires as its task is cancelled raises TimeoutError and the cancellation is lost (a
        # loop task would then outlive close(), and close() wait for it forever).
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                return await awaitable
        except TimeoutError:
            raise error(f"timed out waiting for {what}") from None

    # --- the control channel: this broker's requests to the leader --------------------------
    async def _ask(self, kind: int, body: bytes, deadline: float,
                   error: type[KafkaError]) -> control.Answer:
        """The leader's answer to a PROPOSE or READ; sent again when unanswered or lost,
        until ``deadline`` (then ``error``)."""
        first = True
        # One request id for every attempt: the leader answers a late copy of an earlier
        # attempt as well as this one.
        self._next_rid += 1
        rid = self._next_rid
        while True:
            if not first:
                self._tally["raft_proposals_retried"] += 1
                await asyncio.sleep(min(self.config.tick_s * 2, 0.1))
            first = False
            if time.monotonic() >= deadline:
                raise error("the Raft quorum's leader did not answer in time")
            leader = self._driver.leader
            if leader is None:
                continue
            wait = min(self.config.attempt_timeout_s, deadline - time.monotonic())
            if leader == self._node_id:
                # Served here, under the same deadline: a leader cut off from its quorum never
                # commits, and the caller must hear so before the heal.
                try:
                    async with asyncio.timeout(max(wait, 0.001)):
                        answer = await self._serve(self._node_id, kind, body)
                except TimeoutError:
                    continue
            else:
                fut: asyncio.Future[control.Answer] = (
                    asyncio.get_running_loop().create_future())
                self._pending[rid] = fut
                self._driver.send_control(leader, control.encode(kind, rid, body))
                try:
                    async with asyncio.timeout(max(wait, 0.001)):
                        answer = await fut
                except TimeoutError:
                    continue
                finally:
                    self._pending.pop(rid, None)
            if answer.status == control.OK:
                return answer
            # NOT_LEADER: the leader moved (the driver learns the new one from the quorum).
            # LOST: the index went to another entry, or the read lost its leader: again.

    async def _serve(self, src: int, kind: int, body: bytes) -> control.Answer:
        """A PROPOSE or READ from broker ``src``, served here as the leader."""
        try:
            if kind == control.PROPOSE:
                self._shutting_down(src, body)
                index, outcome = await self._driver.propose(body)
                return control.Answer(control.OK, self._node_id, index, outcome.applied,
                                      outcome.reason, outcome.topic_id,
                                      outcome.first_producer_id)
            index = await self._driver.read()
            return control.Answer(control.OK, self._node_id, index)
        except NotLeader as exc:
            return control.Answer(control.NOT_LEADER, exc.leader_hint)
        except (ProposalLost, ReadFailed) as exc:
            return control.Answer(control.LOST, reason=str(exc))

    def _shutting_down(self, src: int, body: bytes) -> None:
        """A broker fencing itself is stopping (a controlled shutdown): its session ends now,
        or its last heartbeats would have this controller unfence it again."""
        if self._driver.leader != self._node_id:
            return
        with contextlib.suppress(RecordDecodeError):
            record = decode(body)
            if isinstance(record, FenceBroker) and record.fenced and record.broker_id == src:
                self._sessions.end(src, record.epoch)

    def _on_control(self, src: int, data: bytes) -> None:
        try:
            kind, rid, body = control.decode(data)
            if kind == control.ANSWER:
                answer = control.read_answer(body)
                fut = self._pending.get(rid)
                if fut is not None and not fut.done():
                    fut.set_result(answer)
            elif kind == control.HEARTBEAT:
                epoch, applied = control.read_heartbeat(body)
                if self._driver.leader == self._node_id:
                    self._sessions.heartbeat(src, epoch, applied, time.monotonic())
            else:
                if kind == control.PROPOSE:
                    decode(body)  # never propose what no image can apply
                self._spawn(self._answer(src, kind, rid, body))
        except (control.ControlDecodeError, RecordDecodeError):
            self._driver.undecodable += 1

    async def _answer(self, src: int, kind: int, rid: int, body: bytes) -> None:
        self._tally["raft_requests_served"] += 1
        answer = await self._serve(src, kind, body)
        self._driver.send_control(src, control.encode(control.ANSWER, rid,
                                                      control.answer_body(answer)))

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _propose(self, record: Record, deadline: float,
                       error: type[KafkaError]) -> tuple[int, control.Answer]:
        """Commit ``record`` through the leader; (its index, the leader's answer) once this
        broker's own image applied it too."""
        self._tally["raft_proposals"] += 1
        # Tagged: a retry whose first copy did commit is answered with that copy's outcome
        # (image.py), never applied twice or misreported as rejected.
        answer = await self._ask(control.PROPOSE, encode(record, secrets.token_hex(8)),
                                 deadline, error)
        if not answer.applied:
            self._tally["raft_proposals_rejected"] += 1
        await self._applied(answer.index, deadline, error)
        return answer.index, answer

    async def _barrier(self, deadline: float, error: type[KafkaError]) -> None:
        """Wait until this image holds everything committed before now (ReadIndex)."""
        self._tally["raft_read_barriers"] += 1
        answer = await self._ask(control.READ, b"", deadline, error)
        await self._applied(answer.index, deadline, error)

    def _deadline(self) -> float:
        return time.monotonic() + self.config.request_timeout_s

    # --- the controller (this broker while it leads) ---------------------------------------
    async def _heartbeats(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat_s)
            self._heartbeat()

    def _heartbeat(self) -> None:
        """Tell the controller this broker lives and how far it applied the log."""
        if self._epoch is not None:
            leader = self._driver.leader
            if leader == self._node_id:
                self._sessions.heartbeat(self._node_id, self._epoch,
                                         self.image.applied_index, time.monotonic())
            elif leader is not None:
                self._driver.send_control(leader, control.encode(
                    control.HEARTBEAT, 0,
                    control.heartbeat_body(self._epoch, self.image.applied_index)))

    async def _control(self) -> None:
        while True:
            await asyncio.sleep(self.config.controller_period_s)
            if self._driver.leader != self._node_id:
                self._office_term = None
                continue
            now = time.monotonic()
            term = self._driver.node.term
            if self._office_term != term:
                # Everyone's session starts afresh with each term led: no broker is fenced for
                # a silence this controller did not witness (it may have lost office and won
                # it back between two passes).
                self._sessions.take_office(self.image, now)
                self._office_term = term
            if self._epoch is not None:
                self._sessions.heartbeat(self._node_id, self._epoch, self.image.applied_index,
                                         now)
            records: list[Record] = [*self._sessions.decide(self.image, now),
                                     *decisions.leadership_changes(self.image)]
            if not records:
                continue
            self._tally["raft_controller_records"] += len(records)
            # One round at a time: the next decides on the image these records made.
            proposals = [self._driver.propose(encode(r)) for r in records]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.request_timeout_s):
                    await asyncio.gather(*proposals, return_exceptions=True)

    # --- metadata ---------------------------------------------------------------------------
    def cluster(self) -> ClusterView:
        controller = self._controller_id()
        if self._dirty or self._view is None:
            self._view = self.image.view(controller, self.config.cluster_id)
            self._dirty = False
        elif self._view.controller_id != controller:
            self._view = dataclasses.replace(self._view, controller_id=controller)
        return self._view

    def _controller_id(self) -> int:
        """The controller Metadata names: the quorum's leader when it is a broker (combined
        mode). A dedicated controller serves no Kafka client, so then (as a KRaft broker does)
        a live broker stands in, which forwards what is asked of it: the lowest unfenced one,
        so every broker names the same."""
        leader = self._driver.leader
        if leader is None:
            return NO_LEADER
        brokers = self.image.brokers
        if leader in brokers or leader not in self.config.voters:
            return leader
        live = [b for b, entry in brokers.items() if not entry.fenced]
        return min(live) if live else NO_LEADER

    async def partition_state(self, topic: str, partition: int, *, fresh: bool
                              ) -> PartitionState | None:
        if fresh:
            await self._barrier(self._deadline(), RequestTimedOut)
        return self.cluster().partition(topic, partition)

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: Mapping[str, str] | None = None, *,
                           auto: bool = False) -> TopicInfo:
        return await self._create(lambda token: decisions.create_topic(
            self.image, name, num_partitions, replication_factor, configs, token=token))

    async def create_topic_assigned(self, name: str, assignment: Assignment,
                                    configs: Mapping[str, str] | None = None) -> TopicInfo:
        return await self._create(lambda token: decisions.create_topic(
            self.image, name, len(assignment), len(next(iter(assignment.values()))), configs,
            assignment=assignment, token=token))

    async def _create(self, decide: Callable[[str], CreateTopic]) -> TopicInfo:
        token = secrets.token_hex(8)
        record = decide(token)  # TopicAlreadyExists, InvalidPartitions, ... from this image
        await self._propose(record, self._deadline(), RequestTimedOut)
        topic = self.image.topics.get(record.name)
        # Rejected for the name: another creation won, unless it was this one, committed by
        # an earlier attempt whose answer was lost (the token tells).
        if topic is None or topic.token != token:
            raise TopicAlreadyExists(f"topic {record.name!r} already exists")
        return self._topic_info(record.name)

    def _topic_info(self, name: str) -> TopicInfo:
        info = self.cluster().topics.get(name)
        if info is None:
            raise UnknownTopicOrPartition(f"no topic {name!r}")
        return info

    async def create_partitions(self, topic: str, total: int) -> TopicInfo:
        record = decisions.add_partitions(self.image, topic, total)
        _, answer = await self._propose(record, self._deadline(), RequestTimedOut)
        if not answer.applied:
            if topic not in self.image.topics:
                raise UnknownTopicOrPartition(f"no topic {topic!r}")
            have = len(self.image.topics[topic].partitions)
            raise InvalidPartitions(f"topic {topic!r} has {have} partitions; asked for {total}")
        return self._topic_info(topic)

    async def alter_topic_configs(self, topic: str, change: ConfigChange) -> TopicInfo:
        deadline = self._deadline()
        await self._barrier(deadline, RequestTimedOut)  # ``current`` is the latest committed
        while True:
            record = decisions.set_topic_configs(self.image, topic, change)
            _, answer = await self._propose(record, deadline, RequestTimedOut)
            if answer.applied:
                return self._topic_info(topic)
            # Another change got in first; this image has applied it: change that.

    async def delete_topic(self, topic: str) -> None:
        record = decisions.delete_topic(self.image, topic)  # UnknownTopicOrPartition
        _, answer = await self._propose(record, self._deadline(), RequestTimedOut)
        if not answer.applied:
            # Another deletion removed it first (this image had not applied it yet).
            raise UnknownTopicOrPartition(f"no topic {topic!r}: {answer.reason}")

    def on_topic_deleted(self, listener: Callable[[str], None]) -> None:
        self._deletion_listeners.append(listener)

    def subscribe(self, listener: Callable[[ClusterView], None]) -> None:
        self._subscribers.append(listener)

    # --- replication (IsrChanges) -----------------------------------------------------------
    async def change_isr(self, topic: str, partition: int, leader_epoch: int,
                         isr: Iterable[int]) -> PartitionState:
        wanted = tuple(isr)
        deadline = self._deadline()
        while True:
            # NotLeaderOrFollower, FencedLeaderEpoch, ... when this image says so.
            record = decisions.isr_change(self.image, topic, partition, self._node_id,
                                          leader_epoch, wanted)
            _, answer = await self._propose(record, deadline, RequestTimedOut)
            if answer.applied:
                state = self.cluster().partition(topic, partition)
                if state is None:
                    raise UnknownTopicOrPartition(f"no partition {partition} of {topic!r}")
                return state
            # The partition changed first (its epoch moved): decide again on what it is now.

    # --- groups -----------------------------------------------------------------------------
    def group_coordinator(self, group_id: str) -> BrokerInfo:
        # The image's rule, the one it fences offset writes by.
        node_id = self.image.group_coordinator(group_id)
        if node_id is None:
            raise CoordinatorNotAvailable("no live brokers known")
        return self.image.brokers[node_id].info

    def coordination_epoch(self, group_id: str) -> int:
        # The index at which the live brokers last changed: a log-wide epoch, so the core
        # forgets a group at the same change the image fences this broker's offset writes by.
        return self.image.live_changed_at

    async def _group_write(self, record: Record) -> None:
        await self._propose(record, self._deadline(), CoordinatorNotAvailable)

    async def register_member(self, group_id: str, member: MemberRecord) -> None:
        await self._group_write(RegisterMember(group_id, member.member_id, member.client_id,
                                               member.client_host))

    async def unregister_member(self, group_id: str, member_id: str) -> None:
        await self._group_write(UnregisterMember(group_id, member_id))

    async def record_owners(self, group_id: str, owners: Mapping[TopicPartition, str]) -> None:
        await self._group_write(RecordOwners(group_id, tuple(
            Owner(tp.topic, tp.partition, m) for tp, m in sorted(owners.items()))))

    async def _offsets_write(self, record: CommitOffsets | DeleteOffsets) -> None:
        """Commit an offset write fenced by this broker's hold on the group: a write it keeps
        resending after it lost the group (cut off, then healed) is refused, not applied
        behind the next coordinator's newer commits (image.py, ``_lost_group``)."""
        _, answer = await self._propose(record, self._deadline(), CoordinatorNotAvailable)
        if not answer.applied:
            raise NotCoordinator(f"group {record.group!r}: {answer.reason}")

    async def commit_offsets(self, group_id: str,
                             offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        # Generation -1: the core's group state machine fences commits by its generation
        # before they get here; the record's fencing is for a coordinator of the log's own.
        await self._offsets_write(CommitOffsets(group_id, -1, tuple(
            CommittedOffset(tp.topic, tp.partition, o.offset, o.metadata, o.leader_epoch,
                            o.commit_timestamp_ms) for tp, o in offsets.items()),
            self._node_id, self.image.applied_index))

    async def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None
                            ) -> dict[TopicPartition, OffsetAndMetadata]:
        # Linearizable: a commit acknowledged by any broker (a coordinator before a move)
        # is seen here.
        await self._barrier(self._deadline(), CoordinatorNotAvailable)
        group = self.image.groups.get(group_id)
        if group is None:
            return {}
        if partitions is None:
            return dict(group.offsets)
        return {tp: group.offsets[tp] for tp in partitions if tp in group.offsets}

    async def delete_offsets(self, group_id: str,
                             partitions: Iterable[TopicPartition] | None) -> None:
        await self._offsets_write(DeleteOffsets(group_id, None if partitions is None else tuple(
            (tp.topic, tp.partition) for tp in partitions), self._node_id,
            self.image.applied_index))

    # --- misc -------------------------------------------------------------------------------
    async def allocate_producer_id(self) -> int:
        async with self._pid_lock:
            if self._pid_next >= self._pid_end:
                _, answer = await self._propose(
                    AllocateProducerIds(self._node_id, self.config.producer_id_block),
                    self._deadline(), CoordinatorNotAvailable)
                assert answer.first_producer_id is not None
                self._pid_next = answer.first_producer_id
                self._pid_end = self._pid_next + self.config.producer_id_block
            pid = self._pid_next
            self._pid_next += 1
            return pid

    # --- transactions (brokers.core.transactions.coordinator.TransactionStore) -----------------
    async def read_transaction(self, transactional_id: str) -> tuple[bytes | None, int]:
        # Linearizable: a record the id's previous coordinator wrote is seen, so the first
        # write here names its version. (The local image alone would be safe too, the version
        # check refusing a write decided on a lagging read, but the client would hear
        # NOT_COORDINATOR for nothing.) One barrier per load: the core caches what it wrote.
        await self._barrier(self._deadline(), CoordinatorNotAvailable)
        entry = self.image.transactions.get(transactional_id)
        return (None, NO_VERSION) if entry is None else (entry.record, entry.version)

    async def write_transaction(self, transactional_id: str, record: bytes,
                                version: int) -> int:
        """Commit ``record`` if the id is still at ``version`` and this broker still places
        it (image.py, ``_txn_state``); NotCoordinator if the log refused it."""
        self._tally["raft_transaction_writes"] += 1
        _, answer = await self._propose(
            TxnState(transactional_id, record, version, self._node_id, self.image.applied_index),
            self._deadline(), CoordinatorNotAvailable)
        if not answer.applied:
            self._tally["raft_transaction_writes_refused"] += 1
            raise NotCoordinator(f"transactional id {transactional_id!r}: {answer.reason}")
        # The record's version counter (records.TxnState): known without the entry's index,
        # which a retried proposal's answer does not give.
        return version + 1

    async def list_transactions(self) -> list[str]:
        # Behind a barrier, as a read: listed after the placement moved, it must include the
        # ids the previous coordinators wrote (a prepared one is completed from here).
        await self._barrier(self._deadline(), CoordinatorNotAvailable)
        return sorted(self.image.transactions)

    def counters(self) -> RaftCounters:
        t = self._driver.transport.counters
        node = self._driver.node
        counters = RaftCounters.of(
            self._tally, raft_messages_out=t.frames_sent, raft_bytes_out=t.bytes_sent,
            raft_messages_in=t.frames_received, raft_bytes_in=t.bytes_received,
            raft_dropped=t.dropped, raft_refused=t.refused,
            raft_undecodable=self._driver.undecodable, raft_events=dict(node.counters),
            raft_term=float(node.term), raft_applied_index=float(self.image.applied_index),
            raft_is_leader=float(self._driver.leader == self._node_id))
        counters.coordination_ops = counters.raft_messages_out
        return counters


__all__ = ["RaftCoordinator"]
