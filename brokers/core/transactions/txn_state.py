"""One transactional id's state and every transition the transaction coordinator makes (sans-IO).

The coordinator keeps, per transactional id, a ``TxnRecord``: the producer id and epoch that
own it, the transaction timeout, the state, and the partitions and groups of the transaction
in progress. Each function below takes the stored record and a request, and either raises the
Kafka error the client must see or returns the record to store next (None: nothing changes).
The I/O (storing the record behind the Coordinator seam, writing markers) is
``coordinator.py``'s. The rules are Kafka 2.8's TransactionCoordinator's:

* InitProducerId: a new id gets a producer id at epoch 0; a known one is bumped one epoch
  (which fences its previous incarnation everywhere: partitions refuse the old epoch); an
  open transaction is aborted first and the client told CONCURRENT_TRANSACTIONS until that
  abort completes; a transaction being committed or aborted: CONCURRENT_TRANSACTIONS. KIP-360
  (v3+): a client naming its producer id and epoch is only bumped if they are the current or
  the previous pair; else PRODUCER_FENCED.
* AddPartitionsToTxn / AddOffsetsToTxn: the producer id must match (INVALID_PRODUCER_ID_MAPPING)
  and the epoch too (PRODUCER_FENCED); a transaction being ended: CONCURRENT_TRANSACTIONS;
  otherwise the transaction is (or stays) ONGOING with the partitions or group added; nothing
  is written when nothing new is added.
* EndTxn: an ONGOING transaction goes to PREPARE_COMMIT or PREPARE_ABORT: the decision, durable
  before the client hears of it; the markers follow, then COMPLETE_*. A retried EndTxn of a
  completed transaction with the same outcome succeeds; the other outcome is
  INVALID_TXN_STATE, as is ending a transaction that never began.
* A transaction ONGOING for longer than its timeout is aborted by the coordinator with the
  epoch bumped (``fence_for_abort``), so the producer's late writes are refused.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from brokers.core.coordinator import TopicPartition
from brokers.core.errors import (
    ConcurrentTransactions,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
)

# transaction.max.timeout.ms: Kafka's default ceiling on a producer's transaction.timeout.ms.
MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000
# An epoch is an int16; Kafka gives the id a new producer id before the epoch would overflow.
MAX_EPOCH = 32767 - 1
RECORD_VERSION = 1


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"

    @property
    def preparing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass(frozen=True, slots=True)
class TxnRecord:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = frozenset()
    groups: frozenset[str] = frozenset()
    started_ms: int = -1  # when the transaction in progress began (-1: none)
    updated_ms: int = -1
    # The previous (producer id, epoch): a client retrying its InitProducerId after the bump
    # got lost still names it (KIP-360).
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    # The number of the transaction in progress or last ended: one more for each transaction
    # the id begins. Its markers carry it (in the coordinator-epoch field), so a partition or
    # group recognises a late repeat of an earlier transaction's marker and does not let it
    # end a later one (partition.py). Never reset, so it only grows for an id whose record
    # is written in one order (ZooKeeper's versions, the Raft log).
    txn_seq: int = 0

    @property
    def commits(self) -> bool:
        return self.state in (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT)

    def expired(self, now_ms: int) -> bool:
        return self.state is TxnState.ONGOING and now_ms > self.started_ms + self.timeout_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION, "transactional_id": self.transactional_id,
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms, "state": self.state.value,
            "partitions": sorted([tp.topic, tp.partition] for tp in self.partitions),
            "groups": sorted(self.groups), "started_ms": self.started_ms,
            "updated_ms": self.updated_ms, "last_producer_id": self.last_producer_id,
            "last_producer_epoch": self.last_producer_epoch, "txn_seq": self.txn_seq,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TxnRecord:
        return cls(
            transactional_id=str(d["transactional_id"]), producer_id=int(d["producer_id"]),
            producer_epoch=int(d["producer_epoch"]), timeout_ms=int(d["timeout_ms"]),
            state=TxnState(d["state"]),
            partitions=frozenset(TopicPartition(str(t), int(p)) for t, p in d["partitions"]),
            groups=frozenset(str(g) for g in d["groups"]), started_ms=int(d["started_ms"]),
            updated_ms=int(d["updated_ms"]),
            last_producer_id=int(d.get("last_producer_id", -1)),
            last_producer_epoch=int(d.get("last_producer_epoch", -1)),
            txn_seq=int(d.get("txn_seq", 0)),
        )


def check_timeout(timeout_ms: int) -> None:
    if not 0 < timeout_ms <= MAX_TRANSACTION_TIMEOUT_MS:
        raise InvalidTransactionTimeout(
            f"transaction.timeout.ms {timeout_ms} must be in (0, {MAX_TRANSACTION_TIMEOUT_MS}]")


def init_producer(
    current: TxnRecord | None, transactional_id: str, timeout_ms: int, now_ms: int,
    new_producer_id: int, expected: tuple[int, int] | None = None,
) -> tuple[TxnRecord, bool]:
    """(the record to store, whether an open transaction must be aborted first: then the client
    is answered CONCURRENT_TRANSACTIONS once the abort is under way). ``new_producer_id`` is
    used when the id is new or its epochs are exhausted; ``expected`` is the KIP-360 pair."""
    check_timeout(timeout_ms)
    if current is None:
        return TxnRecord(transactional_id, new_producer_id, 0, timeout_ms, TxnState.EMPTY,
                         updated_ms=now_ms), False
    if expected is not None and expected != (-1, -1) and expected not in (
            (current.producer_id, current.producer_epoch),
            (current.last_producer_id, current.last_producer_epoch)):
        raise ProducerFenced(
            f"producer {expected[0]} epoch {expected[1]} is not transactional id "
            f"{transactional_id!r}'s current producer")
    if current.state.preparing:
        raise ConcurrentTransactions(f"{transactional_id!r} is completing a transaction")
    if current.state is TxnState.ONGOING:
        return fence_for_abort(current, now_ms), True
    pid, epoch = current.producer_id, current.producer_epoch + 1
    if epoch > MAX_EPOCH:
        pid, epoch = new_producer_id, 0
    return dataclasses.replace(
        current, producer_id=pid, producer_epoch=epoch, timeout_ms=timeout_ms,
        state=TxnState.EMPTY, partitions=frozenset(), groups=frozenset(), started_ms=-1,
        updated_ms=now_ms, last_producer_id=current.producer_id,
        last_producer_epoch=current.producer_epoch), False


def _check_producer(current: TxnRecord | None, transactional_id: str, producer_id: int,
                    epoch: int) -> TxnRecord:
    if current is None or current.producer_id != producer_id:
        raise InvalidProducerIdMapping(
            f"producer {producer_id} does not own transactional id {transactional_id!r}")
    if current.producer_epoch != epoch:
        raise ProducerFenced(
            f"producer {producer_id} epoch {epoch} is fenced by epoch {current.producer_epoch}")
    return current


def add_to_transaction(
    current: TxnRecord | None, transactional_id: str, producer_id: int, epoch: int,
    now_ms: int, partitions: Iterable[TopicPartition] = (), groups: Iterable[str] = (),
) -> TxnRecord | None:
    rec = _check_producer(current, transactional_id, producer_id, epoch)
    if rec.state.preparing:
        raise ConcurrentTransactions(f"{transactional_id!r} is completing a transaction")
    new_parts, new_groups = frozenset(partitions), frozenset(groups)
    if rec.state is TxnState.ONGOING and new_parts <= rec.partitions and (
            new_groups <= rec.groups):
        return None
    if rec.state is TxnState.ONGOING:
        return dataclasses.replace(rec, partitions=rec.partitions | new_parts,
                                   groups=rec.groups | new_groups, updated_ms=now_ms)
    return dataclasses.replace(rec, state=TxnState.ONGOING, partitions=new_parts,
                               groups=new_groups, started_ms=now_ms, updated_ms=now_ms,
                               txn_seq=rec.txn_seq + 1)


def end_transaction(current: TxnRecord | None, transactional_id: str, producer_id: int,
                    epoch: int, commit: bool, now_ms: int) -> TxnRecord | None:
    """The PREPARE_* record to store, or None when the transaction already ended this way (a
    retry: answer success)."""
    rec = _check_producer(current, transactional_id, producer_id, epoch)
    outcome = "commit" if commit else "abort"
    if rec.state is TxnState.ONGOING:
        return dataclasses.replace(
            rec, state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
            updated_ms=now_ms)
    if rec.state.complete and rec.commits == commit:
        return None
    if rec.state.preparing and rec.commits == commit:
        raise ConcurrentTransactions(f"{transactional_id!r} is completing its {outcome}")
    raise InvalidTxnState(f"cannot {outcome} transactional id {transactional_id!r} in state "
                          f"{rec.state.value}")


def fence_for_abort(rec: TxnRecord, now_ms: int) -> TxnRecord:
    """The coordinator's own abort (a timeout, a new incarnation): PREPARE_ABORT one epoch up,
    so the old producer's late requests and batches are fenced."""
    return dataclasses.replace(
        rec, producer_epoch=min(rec.producer_epoch + 1, MAX_EPOCH + 1),
        state=TxnState.PREPARE_ABORT, updated_ms=now_ms,
        last_producer_id=rec.producer_id, last_producer_epoch=rec.producer_epoch)


def complete(rec: TxnRecord, now_ms: int) -> TxnRecord:
    """Every marker is written: COMPLETE_*, the transaction's partitions and groups cleared."""
    if not rec.state.preparing:
        raise InvalidTxnState(f"{rec.transactional_id!r} is {rec.state.value}, not preparing")
    return dataclasses.replace(
        rec, state=TxnState.COMPLETE_COMMIT if rec.commits else TxnState.COMPLETE_ABORT,
        partitions=frozenset(), groups=frozenset(), started_ms=-1, updated_ms=now_ms)
