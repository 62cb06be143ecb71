"""The transaction coordinator: one per broker, for the transactional ids placed on it.

Placement is the group rule on a key of its own (``placement_key``): the Coordinator seam's
``group_coordinator`` places it, so every architecture places transactions exactly as it
places groups, and FindCoordinator (key type 1) answers from the same rule.

Where a transaction's record lives is the architecture's business (``TransactionStore``, the
seam's transaction extension): a znode under ZooKeeper, a record in the Raft log, the
coordinating broker's gossiped table under DSBS, a journal on the single node. The coordinator
reads a record once and caches it with its store version; every write is conditional on that
version, so a broker that lost the placement and still believes it coordinates is refused by
the store (where the store can refuse: docs/transactions.md says which can) and drops its copy.

A transaction's life here (the transitions are ``txn_state``'s):

1. InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn: checked, stored, answered.
2. EndTxn: PREPARE_COMMIT / PREPARE_ABORT is stored (the decision), the client answered, and a
   completion task writes the markers: WriteTxnMarkers to each partition's leader and, for
   each group whose offsets the transaction carries, to the group's coordinator (a marker
   "topic" of its own, ``GROUP_MARKER_PREFIX``), retried until every one is written. Then
   COMPLETE_* is stored.
3. ``tick`` (every second): a transaction ONGOING past its timeout is aborted with the epoch
   bumped; a PREPARE_* without a completion task (a coordinator that died mid-commit, its
   successor reading the record) gets one. After the brokers that place transactions change,
   the store is listed again so the records placed here now are loaded.

So a transaction whose decision was stored is completed, by whichever broker coordinates it
next, in every partition; one whose decision was not stored is aborted when it times out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from brokers.core.coordinator import BrokerInfo, Coordinator, TopicPartition
from brokers.core.errors import (
    ConcurrentTransactions,
    CoordinatorNotAvailable,
    InvalidProducerEpoch,
    KafkaError,
    NotCoordinator,
    error_for_code,
)
from brokers.core.protocol.messages.transactions import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from brokers.core.transactions import txn_state
from brokers.core.transactions.txn_state import TxnRecord, TxnState

log = logging.getLogger("twinbench.transactions")

# Transactions are placed like groups, on keys no group id can be mistaken for by a reader.
PLACEMENT_PREFIX = "__transaction__:"
# The marker "topic" that tells a group's coordinator to commit or drop a producer's pending
# offsets: ':' is not a topic-name character, so no topic can be taken for it.
GROUP_MARKER_PREFIX = ":group:"
# How often the completion task retries the markers not yet written.
MARKER_RETRY_S = 0.2
MARKER_TIMEOUT_S = 35.0
NO_VERSION = -1


def placement_key(transactional_id: str) -> str:
    return PLACEMENT_PREFIX + transactional_id


@runtime_checkable
class TransactionStore(Protocol):
    """Where an architecture keeps transaction records (the Coordinator seam's extension).

    Records are opaque bytes to the store. Versions make every write conditional: a write
    names the version it read (NO_VERSION: the id must be absent) and returns the new one;
    a store that can tell another writer got there first raises NotCoordinator instead.
    """

    async def read_transaction(self, transactional_id: str) -> tuple[bytes | None, int]:
        """(the record, its version), or (None, NO_VERSION) for an unknown id."""

    async def write_transaction(self, transactional_id: str, record: bytes,
                                version: int) -> int:
        """Store ``record`` if the stored version is still ``version``; the new version."""

    async def list_transactions(self) -> list[str]:
        """Every transactional id the store holds a record for."""


class MarkerSender(Protocol):
    async def send(self, broker: BrokerInfo, request: WriteTxnMarkersRequest,
                   timeout_s: float) -> WriteTxnMarkersResponse: ...


def encode(rec: TxnRecord) -> bytes:
    return json.dumps(rec.to_dict(), sort_keys=True, separators=(",", ":")).encode()


def decode(raw: bytes) -> TxnRecord:
    return TxnRecord.from_dict(json.loads(raw))


class TransactionCoordinator:
    def __init__(self, coordinator: Coordinator, store: TransactionStore, sender: MarkerSender,
                 *, clock: Callable[[], float] = time.time) -> None:
        self._coordinator = coordinator
        self._store = store
        self._sender = sender
        self._clock = clock
        self._records: dict[str, tuple[TxnRecord, int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._completions: dict[str, asyncio.Task[None]] = {}
        self._listed_epoch: int | None = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # --- placement ------------------------------------------------------------------------
    def coordinator_for(self, transactional_id: str) -> BrokerInfo:
        return self._coordinator.group_coordinator(placement_key(transactional_id))

    def _check_placed_here(self, transactional_id: str) -> None:
        owner = self.coordinator_for(transactional_id)
        if owner.node_id != self._coordinator.node_id:
            self._records.pop(transactional_id, None)
            raise NotCoordinator(
                f"transactional id {transactional_id!r} is coordinated by {owner.node_id}")

    def _lock(self, transactional_id: str) -> asyncio.Lock:
        lock = self._locks.get(transactional_id)
        if lock is None:
            lock = self._locks[transactional_id] = asyncio.Lock()
        return lock

    # --- the store ---------------------------------------------------------------------------
    async def _load(self, transactional_id: str) -> tuple[TxnRecord | None, int]:
        cached = self._records.get(transactional_id)
        if cached is not None:
            return cached
        raw, version = await self._store.read_transaction(transactional_id)
        if raw is None:
            return None, NO_VERSION
        rec = decode(raw)
        self._records[transactional_id] = (rec, version)
        return rec, version

    async def _write(self, rec: TxnRecord, version: int) -> int:
        tid = rec.transactional_id
        try:
            new_version = await self._store.write_transaction(tid, encode(rec), version)
        except KafkaError:
            self._records.pop(tid, None)  # another writer, or the store out of reach: reload
            raise
        self._records[tid] = (rec, new_version)
        return new_version

    # --- the client's requests -----------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> tuple[int, int]:
        self._check_placed_here(transactional_id)
        async with self._lock(transactional_id):
            rec, version = await self._load(transactional_id)
            fresh_pid = -1
            if rec is None or rec.producer_epoch >= txn_state.MAX_EPOCH:
                fresh_pid = await self._coordinator.allocate_producer_id()
            new, abort_first = txn_state.init_producer(
                rec, transactional_id, timeout_ms, self._now_ms(), fresh_pid, expected)
            await self._write(new, version)
        if abort_first:
            self._start_completion(transactional_id)
            raise ConcurrentTransactions(
                f"{transactional_id!r}: aborting the previous incarnation's transaction")
        return new.producer_id, new.producer_epoch

    async def add(self, transactional_id: str, producer_id: int, epoch: int, *,
                  partitions: Iterable[TopicPartition] = (), groups: Iterable[str] = ()) -> None:
        self._check_placed_here(transactional_id)
        async with self._lock(transactional_id):
            rec, version = await self._load(transactional_id)
            new = txn_state.add_to_transaction(rec, transactional_id, producer_id, epoch,
                                               self._now_ms(), partitions, groups)
            if new is not None:
                await self._write(new, version)

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int,
                      commit: bool) -> None:
        self._check_placed_here(transactional_id)
        async with self._lock(transactional_id):
            rec, version = await self._load(transactional_id)
            new = txn_state.end_transaction(rec, transactional_id, producer_id, epoch, commit,
                                            self._now_ms())
            if new is None:
                return
            await self._write(new, version)
        self._start_completion(transactional_id)

    # --- completion ---------------------------------------------------------------------------
    def _start_completion(self, transactional_id: str) -> None:
        task = self._completions.get(transactional_id)
        if task is not None and not task.done():
            return
        self._completions[transactional_id] = asyncio.get_running_loop().create_task(
            self._complete(transactional_id), name=f"txn-complete-{transactional_id}")

    async def _complete(self, transactional_id: str) -> None:
        """Write every marker of the prepared transaction, then store it COMPLETE."""
        try:
            rec, _ = await self._load(transactional_id)
            if rec is None or not rec.state.preparing:
                return
            await self._write_markers(rec)
            async with self._lock(transactional_id):
                current, version = await self._load(transactional_id)
                if current != rec:
                    return  # someone else moved it on (a reload found a newer record)
                await self._write(txn_state.complete(rec, self._now_ms()), version)
            log.info("transactional id %r: %s complete", transactional_id,
                     "commit" if rec.commits else "abort")
        except KafkaError as exc:
            # Not coordinator any more, or the store refused: the next tick (here or on the
            # new coordinator) resumes from the stored record.
            log.info("transactional id %r: completion stopped (%s)", transactional_id, exc)
        finally:
            self._completions.pop(transactional_id, None)

    async def _write_markers(self, rec: TxnRecord) -> None:
        pending: set[TopicPartition | str] = {*rec.partitions, *rec.groups}
        deadline = self._clock() + rec.timeout_ms / 1000 + MARKER_TIMEOUT_S
        refusals: dict[TopicPartition | str, str] = {}
        while pending:
            self._check_placed_here(rec.transactional_id)
            by_broker: dict[int, tuple[BrokerInfo, list[TopicPartition | str]]] = {}
            view = self._coordinator.cluster()
            for target in list(pending):  # a deleted topic is dropped from it below
                if isinstance(target, str):
                    try:
                        broker = self._coordinator.group_coordinator(target)
                    except KafkaError:
                        continue
                else:
                    state = view.partition(target.topic, target.partition)
                    if state is None:
                        if target.topic not in view.topics:
                            # A deleted topic holds nothing to end (Kafka skips it too).
                            pending.discard(target)
                        continue
                    found = view.broker(state.leader)
                    if found is None:
                        continue
                    broker = found
                by_broker.setdefault(broker.node_id, (broker, []))[1].append(target)
            results = await asyncio.gather(*(
                self._send(rec, broker, targets) for broker, targets in by_broker.values()))
            for done, refused in results:
                pending -= done
                for target, why in refused.items():
                    if refusals.get(target) != why:  # each new answer once, not every retry
                        refusals[target] = why
                        log.info("transactional id %r: marker for %s refused (%s); retrying",
                                 rec.transactional_id, target, why)
            if pending:
                if self._clock() > deadline:
                    log.warning("transactional id %r: markers still unwritten for %s",
                                rec.transactional_id, sorted(map(str, pending)))
                    deadline = self._clock() + MARKER_TIMEOUT_S
                await asyncio.sleep(MARKER_RETRY_S)

    async def _send(self, rec: TxnRecord, broker: BrokerInfo, targets: list[TopicPartition | str]
                    ) -> tuple[set[TopicPartition | str], dict[TopicPartition | str, str]]:
        """(the targets written, the others' answers from ``broker``)."""
        by_topic: dict[str, list[int]] = {}
        for target in targets:
            if isinstance(target, str):
                by_topic.setdefault(GROUP_MARKER_PREFIX + target, []).append(0)
            else:
                by_topic.setdefault(target.topic, []).append(target.partition)
        request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
            producer_id=rec.producer_id, producer_epoch=rec.producer_epoch,
            transaction_result=rec.commits,
            topics=[WritableTxnMarkerTopic(name=t, partition_indexes=ps)
                    for t, ps in by_topic.items()],
            # The transaction's number, not Kafka's coordinator epoch: what lets a partition
            # or group tell a late repeat from the producer's next transaction (partition.py).
            # Wraps after 2**31 transactions of one id (int32 on the wire).
            coordinator_epoch=rec.txn_seq % (1 << 31))])
        try:
            response = await self._sender.send(broker, request, MARKER_TIMEOUT_S)
        except (TimeoutError, OSError, KafkaError) as exc:
            log.info("markers to broker %d failed (%s); retrying", broker.node_id, exc)
            return set(), {}
        done: set[TopicPartition | str] = set()
        refused: dict[TopicPartition | str, str] = {}
        for result in response.markers:
            for topic in result.topics:
                for part in topic.partitions:
                    written: TopicPartition | str = (
                        topic.name[len(GROUP_MARKER_PREFIX):]
                        if topic.name.startswith(GROUP_MARKER_PREFIX)
                        else TopicPartition(topic.name, part.partition_index))
                    if part.error_code in _MARKER_DONE:
                        done.add(written)
                    else:
                        known = error_for_code(part.error_code)
                        name = known.wire_name if known else str(part.error_code)
                        refused[written] = f"{name} from broker {broker.node_id}"
        return done, refused

    # --- time ---------------------------------------------------------------------------------
    async def tick(self) -> None:
        """Abort timed-out transactions, resume prepared ones, and load the records placed here
        after the placement changed."""
        epoch = self._coordinator.coordination_epoch(PLACEMENT_PREFIX)
        if epoch != self._listed_epoch:
            try:
                ids = await self._store.list_transactions()
            except KafkaError:
                return
            self._listed_epoch = epoch
            self._records.clear()  # what another coordinator may have written meanwhile
            for tid in ids:
                if self._placed_here(tid):
                    try:
                        await self._load(tid)
                    except KafkaError:
                        self._listed_epoch = None
        now = self._now_ms()
        for tid, (rec, _) in list(self._records.items()):
            if not self._placed_here(tid):
                self._records.pop(tid, None)
            elif rec.state.preparing:
                self._start_completion(tid)
            elif rec.expired(now):
                await self._abort_expired(tid)

    def _placed_here(self, transactional_id: str) -> bool:
        try:
            return self.coordinator_for(transactional_id).node_id == self._coordinator.node_id
        except CoordinatorNotAvailable:
            return False

    async def _abort_expired(self, transactional_id: str) -> None:
        async with self._lock(transactional_id):
            rec, version = await self._load(transactional_id)
            if rec is None or not rec.expired(self._now_ms()):
                return
            log.info("transactional id %r: transaction timed out after %d ms; aborting",
                     transactional_id, rec.timeout_ms)
            try:
                await self._write(txn_state.fence_for_abort(rec, self._now_ms()), version)
            except KafkaError:
                return
        self._start_completion(transactional_id)

    async def close(self) -> None:
        for task in list(self._completions.values()):
            task.cancel()
        for task in list(self._completions.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task


# Marker answers that end the retrying: written, or nothing left to end (a newer epoch's marker
# already fenced this one). Everything else is retried, UNKNOWN_TOPIC_OR_PARTITION included: a
# broker answers it while its metadata does not list the partition yet (a restarted leader that
# has not loaded it), so it proves nothing about the topic. Taking it for "deleted" left an
# aborted transaction's records without their marker, and the producer's next transaction's
# commit marker then made them visible (the nemesis, seed 930555609 on zk). A deleted topic is
# dropped by ``_write_markers`` when the coordinator's own view no longer lists it, as Kafka's
# marker channel drops partitions its metadata cache no longer has.
_MARKER_DONE = frozenset({0, InvalidProducerEpoch.code})
__all__ = ["TransactionCoordinator", "TransactionStore", "TxnRecord", "TxnState",
           "placement_key"]
